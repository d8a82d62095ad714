"""Deployment renders of real InferenceX catalog rows, one golden file per framework, plus the per-framework
error for the frameworks no adapter covers, over every multinode row of the real catalog.

Update the golden files after an intended change: ``INFX_UPDATE_GOLDEN=1 pytest tests/deployments``.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from infx.diagnostics import InfxError
from infx.engines.disagg.render import render_deployment
from infx.matrix.point import Point
from infx.matrix.select import select_points

GOLDEN = Path(__file__).parent / "golden"
REPO = Path(__file__).resolve().parents[2]
# the same corpus as the ``compat`` fixture (tests/conftest.py); these tests skip when it is absent
COMPAT = Path(os.environ.get("INFX_SHARED", REPO / ".." / "shared")).resolve() / "compat" / "inferencex"

#: one real catalog key per multinode framework adapter
CASES = {
    "sglang-disagg": ("amd-master.yaml", "qwen3.5-fp8-mi355x-sglang-disagg"),
    "dynamo-trt": ("nvidia-master.yaml", "dsr1-fp4-b200-dynamo-trt"),
    "dynamo-sglang": ("nvidia-master.yaml", "dsr1-fp8-h100-dynamo-sglang"),
    "dynamo-vllm": ("nvidia-master.yaml", "kimik2.6-fp4-b200-dynamo-vllm"),
    "dynamo-vllm-agg": ("nvidia-master.yaml", "minimaxm3-fp4-gb200-dynamo-vllm-agentic-agg-mtp"),
    "llmd-vllm": ("nvidia-master.yaml", "dsv4-fp4-gb200-llmd-vllm"),
}

needs_compat = pytest.mark.skipif(not (COMPAT / "nvidia-master.yaml").is_file(), reason="compat catalog not present")


def _points(file: str, key: str) -> list[Point]:
    return select_points([str(COMPAT / file)], str(COMPAT / "runners.yaml"), [key], evals="none", conc=None)


def _view(dep) -> dict:  # type: ignore[no-untyped-def]
    def clean(s: str) -> str:
        return s.replace(sys.executable, "<python>").replace(str(REPO), "<repo>")

    # fingerprints hash the raw argv: where it holds this checkout's paths or interpreter they differ per clone
    local = any(str(REPO) in a or sys.executable in a for r in dep.roles for a in r.launch.argv)

    def fp(value: str) -> str:
        return "<depends on the checkout path>" if local else value

    return {
        "framework": dep.framework, "entry": dep.entry, "disagg": dep.disagg, "fingerprint": fp(dep.fingerprint),
        "kv_transfer": dep.kv_transfer.model_dump() if dep.kv_transfer else None, "notes": dep.notes,
        "gpus": {"total": dep.gpus(), "prefill": dep.gpus("prefill"), "decode": dep.gpus("decode")},
        "roles": [{"name": r.name, "kind": r.kind, "count": r.count, "gpus_per_instance": r.gpus_per_instance,
                   "tp": r.tp, "ep": r.ep, "dp_attn": r.dp_attn, "engine": r.launch.engine, "image": r.launch.image,
                   "argv": [clean(a) for a in r.launch.argv], "env": r.launch.env, "files": r.launch.files,
                   "launch_fingerprint": fp(r.launch.fingerprint)} for r in dep.roles],
    }


def _check_golden(name: str, view: dict) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("INFX_UPDATE_GOLDEN"):
        path.write_text(json.dumps(view, indent=2) + "\n")
    assert path.exists(), f"golden file {path} missing; create it with INFX_UPDATE_GOLDEN=1"
    assert view == json.loads(path.read_text())


@needs_compat
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_real_rows(case: str) -> None:
    file, key = CASES[case]
    points = _points(file, key)
    dep = render_deployment(points[0])
    view = _view(dep)
    _check_golden(case, view)
    w = points[0]
    assert w.prefill is not None and w.decode is not None
    for kind, pool in (("prefill", w.prefill), ("decode", w.decode)):
        stated = _stated_pool_gpus(pool, kind)
        if stated is not None:  # the row's own PREFILL_NODES / DECODE_NODES x GPUS_PER_NODE
            assert dep.gpus(kind) == stated, kind
        elif not (w.framework in VLLM_FRAMEWORKS and pool.dp_attn):
            assert dep.gpus(kind) == pool.gpus, kind  # InferenceX's count: num-worker x tp x pp x pcp
    assert dep.gpus() == dep.gpus("prefill") + dep.gpus("decode")


def _stated_pool_gpus(pool, kind: str) -> int | None:  # type: ignore[no-untyped-def]
    """``{PREFILL,DECODE}_NODES`` x ``GPUS_PER_NODE`` from the pool's additional-settings (llmd-vllm rows
    spell their allocation so), or None."""
    env = dict(s.split("=", 1) for s in pool.additional_settings if "=" in s)
    nodes, per = env.get(f"{kind.upper()}_NODES"), env.get("GPUS_PER_NODE")
    return int(nodes) * int(per) if nodes and per else None


def test_golden_cpu_deployment() -> None:
    points = select_points(["configs/cpu-master.yaml"], "configs/runners.yaml", ["disagg-tinyllama-bf16-cpu-vllm"],
                           evals="none", conc=None)
    dep = render_deployment(points[0], port=18600)
    _check_golden("cpu-vllm-example-connector", _view(dep))
    assert [r.kind for r in dep.roles] == ["prefill", "decode", "router"]
    router = dep.role("router").launch.argv
    assert router[router.index("--prefill") + 1] == dep.role("prefill").launch.base_url
    assert router[router.index("--decode") + 1] == dep.role("decode").launch.base_url
    assert "--prometheus-port" in router  # its default port is fixed: a second router would panic
    kv = json.loads(dep.role("decode").launch.argv[-1])
    assert kv["kv_connector"] == "ExampleConnector" and kv["kv_role"] == "kv_consumer"


def test_fingerprint_ignores_ports_and_kv_dir_but_not_topology() -> None:
    points = select_points(["configs/cpu-master.yaml"], "configs/runners.yaml", ["disagg-tinyllama-bf16-cpu-vllm"],
                           evals="none", conc=None)
    p = points[0]
    a = render_deployment(p, port=18600)
    b = render_deployment(p, port=20000, ports={"router": 20000, "router_metrics": 20001, "prefill_0": 20002,
                                                "decode_0": 20003}, kv_dir="/tmp/elsewhere")
    assert a.fingerprint == b.fingerprint
    assert "/tmp/elsewhere" in b.role("prefill").launch.argv[-1]
    assert b.role("router").launch.port == 20000
    other = p.model_copy(update={"max_model_len": 1024})
    assert render_deployment(other).fingerprint != a.fingerprint


VLLM_FRAMEWORKS = ("vllm", "dynamo-vllm", "llmd-vllm")
_POOL = r"(dep|tep|tp|dcp)(\d+)(?:pp(\d+))?"


def _recipe_pool_gpus(p: Point) -> dict[str, int]:
    """GPUs of one prefill / decode server as the row's recipe file name spells them
    (``disagg-b200-1p2d-dep8-dep8-mtp.yaml``: 8 and 8; ``agg-gb200-tp8pp2-...``: 16;
    ``agg-h200-tp16dp2ep32-...``: 32); {} when the name does not say."""
    import re

    assert p.prefill is not None
    cfg = next((s.split("=", 1)[1] for s in p.prefill.additional_settings if s.startswith("CONFIG_FILE=")), "")
    name = cfg.rsplit("/", 1)[-1].split(":")[0]
    m = re.search(r"tp(\d+)dp(\d+)ep(\d+)", name)
    if m:
        return {"prefill": int(m.group(1)) * int(m.group(2))}
    m = re.search(r"-\d+p\d+d-" + _POOL + "-" + _POOL + r"(?:-|\.)", name)
    if m:
        return {"prefill": int(m.group(2)) * int(m.group(3) or 1), "decode": int(m.group(5)) * int(m.group(6) or 1)}
    m = re.search(r"^agg-(?:[a-z0-9]+-)?" + _POOL + r"(?:-|\.)", name)
    if m:
        return {"prefill": int(m.group(2)) * int(m.group(3) or 1)}
    return {}


@needs_compat
def test_every_real_multinode_row_renders_or_names_its_framework() -> None:
    from infx.catalog.loader import load_catalog_and_runners as _load_both

    catalog, _ = _load_both([str(COMPAT / "amd-master.yaml"), str(COMPAT / "nvidia-master.yaml")],
                            str(COMPAT / "runners.yaml"))
    keys = [k for k, e in catalog.entries.items() if getattr(e, "multinode", False)]
    points = select_points([str(COMPAT / "amd-master.yaml"), str(COMPAT / "nvidia-master.yaml")],
                           str(COMPAT / "runners.yaml"), keys, evals="none", conc=None)
    ok: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    checked: Counter[str] = Counter()
    for p in points:
        try:
            dep = render_deployment(p)
        except InfxError as exc:
            msg = str(exc.diagnostics[0])
            assert p.framework in ("atom-disagg", "tilert"), msg
            assert "no infx adapter" in msg and "covered:" in msg
            errors[p.framework] += 1
            continue
        assert dep.gpus() > 0
        for kind, w in (("prefill", p.prefill), ("decode", p.decode)):
            if w is None or not w.num_worker:
                continue
            stated = _stated_pool_gpus(w, kind)
            if stated is not None and p.framework in VLLM_FRAMEWORKS:
                assert dep.gpus(kind) == stated, (p.config_key, kind)
                checked["stated"] += 1
                continue
            if p.framework in VLLM_FRAMEWORKS and w.dp_attn:
                continue
            # every other pool takes what InferenceX's own count says: num-worker x tp x pp x pcp
            assert dep.gpus(kind) == w.gpus, (p.config_key, kind)
        if p.framework in VLLM_FRAMEWORKS:  # vLLM's TP x DP: the recipe names say how many GPUs
            for kind, gpus in _recipe_pool_gpus(p).items():
                roles = [r for r in dep.roles if r.kind == kind]
                if roles:
                    assert roles[0].gpus_per_instance == gpus, (p.config_key, kind, roles[0].launch.argv)
                    checked[kind] += 1
        ok[p.framework] += 1
    assert checked["prefill"] > 20 and checked["decode"] > 10, checked
    assert set(errors) == {"atom-disagg", "tilert"}
    assert {"sglang-disagg", "dynamo-vllm", "dynamo-sglang", "dynamo-trt", "llmd-vllm"} <= set(ok)
    print("rendered", dict(ok), "uncovered", dict(errors))
