"""Issue 7 acceptance on the seed entry, through the REAL pieces: the catalog's select_points, the
engines' render_launch and the repo's seed recipe (recipes/dsv41flash-fp4-mi355x-vllm-agentic.yaml).
The broken variants are fixture recipes derived from the real one in a temp directory (so they
stay in step with it): one without the TP=2 offload argument, one with max-num-seqs: 128 forced."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pfhelpers import CONFIGS, REPO, SEED_DIGEST, SEED_IMAGE, push_image

from infx.preflight.gate import preflight_points
from infx.preflight.units import GB, GIB

SEED_RECIPE = REPO / "recipes" / "dsv41flash-fp4-mi355x-vllm-agentic.yaml"


def _recipe_dir(tmp: Path, edit) -> Path:
    data = yaml.safe_load(SEED_RECIPE.read_text())
    edit(data)
    d = tmp / "recipes"
    d.mkdir()
    (d / SEED_RECIPE.name).write_text(yaml.safe_dump(data, sort_keys=False))
    return d


def _drop_tp2_offload(data: dict) -> None:
    found = False
    for rule in data.get("rules", []):
        if rule.get("when", {}).get("tp") == 2 and "engram-config" in rule.get("args", {}):
            del rule["args"]["engram-config"]
            found = True
    assert found, "the seed recipe no longer sets --engram-config for TP=2 in a 'when: {tp: 2}' rule"


def _force_max_num_seqs(data: dict) -> None:
    data["base"]["args"]["max-num-seqs"] = 128


def _verdicts(seed_points, cards, runners, recipe_dir: Path):
    from infx.engines.recipes import load_recipes

    return preflight_points(seed_points, recipes=load_recipes(recipe_dir), runners=runners, cards=cards)


def test_seed_recipe_all_16_points_pass(seed_points, cards, runners):
    verdicts = _verdicts(seed_points, cards, runners, SEED_RECIPE.parent)
    assert len(verdicts) == 16
    assert [v.status for v in verdicts] == ["ok"] * 16, [v.reason for v in verdicts if v.status != "ok"]
    tp2 = [v for v, p in zip(verdicts, seed_points, strict=True) if p.tp == 2]
    assert len(tp2) == 8
    for v in tp2:
        m = v.memory
        lines = {x.component: x for x in m.gpu}
        assert lines["weights"].bytes / GB == pytest.approx(154, rel=0.01)  # about 154 GB of weights per GPU
        assert lines["indexer-logits buffer"].bytes == 32 * GIB  # plus the 32 GiB buffer
        assert "engram table" not in lines
        assert m.budget_bytes / GB == pytest.approx(259.2, rel=1e-9)  # against a 259.2 GB budget
        host = {x.component: x for x in m.host}
        assert host["engram table"].bytes / GIB == pytest.approx(188.8, rel=1e-9)  # 188.8 GiB of host memory per server
        assert m.servers_per_node == 4  # with 4 servers per node
        assert m.host_per_server_bytes / GIB == pytest.approx(188.8, rel=1e-9)
    for v in verdicts:
        assert v.check("image-pinned").status == "ok"
        assert v.check("concurrency-headroom").status == "ok"
        assert v.check("cuda-graph-ceiling").status == "ok"


def test_without_tp2_offload_argument_tp2_fails_tp4_passes(seed_points, cards, runners, tmp_path):
    verdicts = _verdicts(seed_points, cards, runners, _recipe_dir(tmp_path, _drop_tp2_offload))
    for v, p in zip(verdicts, seed_points, strict=True):
        if p.tp == 4:
            assert v.status == "ok", v.reason
            continue
        assert v.status == "fail" and v.check("memory").status == "fail"
        m = v.memory
        lines = {x.component: x for x in m.gpu}
        weights = lines["weights"].bytes + lines["engram table"].bytes
        assert weights / GB == pytest.approx(255.5, rel=0.01)
        assert lines["indexer-logits buffer"].bytes / GB == pytest.approx(34.4, rel=0.01)
        assert m.needed_bytes / GB == pytest.approx(289.9, rel=0.01)
        assert m.budget_bytes / GB == pytest.approx(259.2, rel=0.01)
        assert "255.5 GB weights/tables + 34.4 GB buffers" in v.reason and "budget is 259.2 GB" in v.reason
    assert sum(v.status == "fail" for v in verdicts) == 8


def test_forced_max_num_seqs_128_warns_at_c128(seed_points, cards, runners, tmp_path):
    verdicts = _verdicts(seed_points, cards, runners, _recipe_dir(tmp_path, _force_max_num_seqs))
    for v, p in zip(verdicts, seed_points, strict=True):
        c = v.check("concurrency-headroom")
        if p.conc == 128:
            assert c.status == "warn" and v.status == "warn", c.message
            assert "128 (--max-num-seqs)" in c.message
        else:
            assert c.status == "ok", (p.exp_name, c.message)
            assert v.status == "ok"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "infx", "preflight",
                           "--config-files", str(CONFIGS / "amd-master.yaml"),
                           "--runner-config", str(CONFIGS / "runners.yaml"), *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_cli_seed_passes_and_broken_recipe_exits_1(tmp_path):
    ok = _cli("--config-keys", "dsv41flash-*", "--json")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert len(data) == 16 and {d["status"] for d in data} == {"ok"}
    broken = _cli("--json", "--recipes", str(_recipe_dir(tmp_path, _drop_tp2_offload)))
    assert broken.returncode == 1, broken.stderr
    data = json.loads(broken.stdout)
    failed = [d for d in data if d["status"] == "fail"]
    assert len(failed) == 8 and all("_tp2_" in d["exp_name"] for d in failed)
    assert all("short by" in d["reason"] for d in failed)
    table = _cli("--recipes", str(tmp_path / "recipes"))
    assert table.returncode == 1
    assert "engram table" in table.stdout and "FAIL" in table.stdout


def test_cli_bad_input_exits_2(tmp_path):
    r = _cli("--config-keys", "no-such-key")
    assert r.returncode == 2 and "no-such-key" in r.stderr and "Traceback" not in r.stderr
    lock = tmp_path / "images.lock"
    lock.write_text("images:\n  x: not-a-digest\n")
    r = _cli("--images-lock", str(lock))
    assert r.returncode == 2 and r.stderr.startswith(f"{lock}:2:") and "Traceback" not in r.stderr


@pytest.mark.slow
def test_cli_verify_images_reports_digest_mismatch(registry, tmp_path):
    """--verify-images against a real registry serving the seed tag at a digest that is not the
    recorded one: every point fails with the mismatch, exit 1."""
    repo, tag = SEED_IMAGE.split(":", 1)
    served = push_image(registry, repo, tag, payload=b"seed tag re-pushed")
    lock = tmp_path / "images.lock"
    lock.write_text(f"images:\n  {SEED_IMAGE}: {SEED_DIGEST}\n")
    r = _cli("--config-keys", "dsv41flash-*", "--json", "--verify-images", "--images-lock", str(lock),
             "--registry-mirror", f"docker.io={registry}")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert len(data) == 16
    for d in data:
        chk = next(c for c in d["checks"] if c["name"] == "image-digest")
        assert chk["status"] == "fail" and f"registry has {served}, recorded {SEED_DIGEST}" in chk["message"]
