"""Fixtures for the preflight tests: the seed points (real select_points on configs/), the repo's
cards and runners, and a REAL local OCI registry (Debian docker-registry on a free 127.0.0.1 port,
stopped by PID). Plain helpers (hand-built launches, pushing an image) are in pfhelpers.py."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from infx.matrix.point import Point
from pfhelpers import CONFIGS, REPO, SEED_KEY


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _registry_bin() -> str | None:
    found = shutil.which("docker-registry") or ("/usr/bin/docker-registry" if os.path.exists("/usr/bin/docker-registry") else None)
    if found:
        return found
    # Try to install it the way CI does (root + apt); skip below if that is not possible here.
    try:
        subprocess.run([str(REPO / ".ci" / "registry.sh"), "install"], check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError):
        return None
    return shutil.which("docker-registry") or ("/usr/bin/docker-registry" if os.path.exists("/usr/bin/docker-registry") else None)


@pytest.fixture(scope="session")
def registry(tmp_path_factory) -> Iterator[str]:
    """URL of a real Debian docker-registry on a free loopback port, stopped (by PID) at the end."""
    binary = _registry_bin()
    if binary is None:
        pytest.skip("docker-registry is not installed and could not be installed (needs root + apt: .ci/registry.sh install)")
    d = tmp_path_factory.mktemp("registry")
    port = _free_port()
    (d / "config.yml").write_text(
        f"version: 0.1\nlog: {{level: warn}}\nstorage: {{filesystem: {{rootdirectory: {d / 'data'}}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n"
    )
    log = open(d / "registry.log", "wb")
    proc = subprocess.Popen([binary, "serve", str(d / "config.yml")], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(url + "/v2/", timeout=1)
                break
            except (urllib.error.URLError, OSError):
                if proc.poll() is not None:
                    pytest.fail(f"docker-registry exited: {(d / 'registry.log').read_text()[-2000:]}")
                time.sleep(0.1)
        else:
            pytest.fail("docker-registry did not answer within 30 s")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


