"""Fixtures for the preflight tests: the seed points (real select_points on configs/), the repo's
cards and runners, and a REAL local OCI registry (Debian docker-registry on a free 127.0.0.1 port,
stopped by PID). Plain helpers (hand-built launches, pushing an image) are in pfhelpers.py."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from pfhelpers import CONFIGS, REPO, SEED_KEY

from infx.matrix.point import Point


@pytest.fixture(scope="session")
def cards():
    from infx.preflight.cards import load_cards

    return load_cards()


@pytest.fixture(scope="session")
def runners():
    from infx.catalog import load_runners

    return load_runners(CONFIGS / "runners.yaml")


@pytest.fixture(scope="session")
def seed_points() -> list[Point]:
    from infx.matrix.select import select_points

    return select_points([CONFIGS / "amd-master.yaml"], CONFIGS / "runners.yaml", [SEED_KEY])


# ---------------------------------------------------------------- real local OCI registry


def _installed_registry() -> str | None:
    fallback = "/usr/bin/docker-registry"
    return shutil.which("docker-registry") or (fallback if os.path.exists(fallback) else None)


def _registry_bin() -> str | None:
    found = _installed_registry()
    if found:
        return found
    # Try to install it the way CI does (root + apt); skip below if that is not possible here.
    try:
        subprocess.run([str(REPO / ".ci" / "registry.sh"), "install"], check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError):
        return None
    return _installed_registry()


@pytest.fixture(scope="session")
def registry(tmp_path_factory) -> Iterator[str]:
    """URL of a real Debian docker-registry on a free loopback port, stopped (by PID) at the end."""
    binary = _registry_bin()
    if binary is None:
        pytest.skip("docker-registry is not installed and could not be installed "
                    "(needs root + apt: .ci/registry.sh install)")
    from infx.engines.ports import MAX_PORT_ATTEMPTS, PortClaims, lost_port

    d = tmp_path_factory.mktemp("registry")
    claims = PortClaims()  # the port is picked right before the start; a lost one is relaunched (bounded)
    for launch in range(1, MAX_PORT_ATTEMPTS + 1):
        port = claims.pick("registry")
        claims.launched("registry")
        (d / "config.yml").write_text(
            f"version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {d / 'data'}}}}}\n"
            f"http: {{addr: 127.0.0.1:{port}}}\n"
        )
        with open(d / "registry.log", "ab") as log:  # the registry holds its own copy of the descriptor
            proc = subprocess.Popen([binary, "serve", str(d / "config.yml")], stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        deadline, ready = time.monotonic() + 30, False
        while not ready and time.monotonic() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(url + "/v2/", timeout=1)
                ready = proc.poll() is None  # our registry answered, not a process that took the port
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        if ready:
            break
        text = (d / "registry.log").read_text(errors="replace")
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            pytest.fail("docker-registry did not answer within 30 s")
        lost = lost_port("docker-registry", text)
        if lost is None or launch == MAX_PORT_ATTEMPTS:
            pytest.fail(f"docker-registry exited: {text[-2000:]}")
        claims.record("registry", port, lost, None)  # another process took the port first: relaunch
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


