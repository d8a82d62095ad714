"""Eval selection per topology arm, and how it differs from the reference on purpose."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from infx.catalog import load_catalog, load_runners
from infx.matrix.evals import NON_ARM_FIELDS
from infx.matrix.generate import full_sweep_rows, test_config_rows

REPO = Path(__file__).resolve().parents[2]
SEED = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"


@pytest.fixture(scope="module")
def compat_rows(compat: Path) -> dict[str, Any]:
    cat = load_catalog([compat / "amd-master.yaml", compat / "nvidia-master.yaml"])
    runners = load_runners(compat / "runners.yaml")
    warnings: list[str] = []
    out = {mode: full_sweep_rows(cat, runners, evals=mode, on_warning=warnings.append)
           for mode in ("default", "evals-only")}
    out["warnings"] = warnings
    return out


def arm(row: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in row.items() if k not in NON_ARM_FIELDS}, sort_keys=True)


def eligible(row: dict[str, Any]) -> bool:
    concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    if row.get("scenario-type") == "agentic-coding":
        return "prefill" not in row or max(concs) >= 16  # multinode agentic: conc >= 16, as fixed multinode
    return (row["isl"], row["osl"]) == (8192, 1024) and max(concs) >= 16


def test_seed_evals_only_keeps_both_tp_arms() -> None:
    cat = load_catalog([REPO / "configs" / "amd-master.yaml"])
    runners = load_runners(REPO / "configs" / "runners.yaml")
    rows = test_config_rows(cat, runners, [SEED], evals="evals-only")
    assert [(r["tp"], r["conc"], r["eval-only"]) for r in rows] == [(4, 128, True), (2, 128, True)]
    assert [r["exp-name"] for r in rows] == ["dsv41flash_tp4_conc128_kvnone_spec-mtp",
                                             "dsv41flash_tp2_conc128_kvnone_spec-mtp"]


def test_every_eligible_arm_has_an_eval(compat: Path, compat_rows: dict[str, Any]) -> None:
    no_evals = json.loads((compat / "reference" / "full-sweep-no-evals.json").read_text())
    arms_with_eligible = {arm(r) for r in no_evals if eligible(r)}
    ours = {arm(r) for r in compat_rows["evals-only"]}
    assert arms_with_eligible <= ours
    theirs = {arm(r) for r in json.loads((compat / "reference" / "full-sweep-evals-only.json").read_text())}
    lost_by_reference = arms_with_eligible - theirs
    # The reference's "grouping omits tp" bug: whole arms vanish under --evals-only.
    assert len(lost_by_reference) > 50
    assert len(compat_rows["evals-only"]) > 645


def test_arms_without_eligible_point_are_named_in_one_warning(compat_rows: dict[str, Any]) -> None:
    warns = compat_rows["warnings"]
    assert len(warns) == 2  # one per generation call (default and evals-only)
    assert "dsr1-fp4-mi355x-atom[tp8, 8192/1024 @ mi355x]" in warns[0]  # tp8 only has conc 4


def test_multinode_agentic_arms_below_conc_16_get_no_eval(compat: Path, compat_rows: dict[str, Any]) -> None:
    """The conc >= 16 bound holds for multinode agentic arms too: an arm whose concurrencies are all
    below 16 (kimik3's dynamo dspark arm runs only conc 1) gets no eval, as in InferenceX, and says so."""
    key = "kimik3-fp4-b200-dynamo-vllm-agentic-dspark"
    cat = load_catalog([compat / "amd-master.yaml", compat / "nvidia-master.yaml"])
    runners = load_runners(compat / "runners.yaml")
    warnings: list[str] = []
    no_evals = test_config_rows(cat, runners, [key], evals="none")
    low = [r for r in no_evals if max(r["conc"]) < 16]
    assert low and len(low) < len(no_evals)  # conc 1..8 arms (one config file each) and conc >= 16 ones
    evals = test_config_rows(cat, runners, [key], evals="evals-only", on_warning=warnings.append)
    assert evals and all(r["eval-conc"] >= 16 and r["eval-conc"] == max(r["conc"]) for r in evals)
    assert len(evals) == len(no_evals) - len(low)
    assert len(warnings) == 1 and f"{len(low)} topology arm(s) have no eval-eligible point" in warnings[0]
    assert f"{key}[p1x8 d0x8, spec mtp, kv dram, conc 1 @ cluster:b200-nscale]" in warnings[0]
    mn_agentic = [r for r in compat_rows["evals-only"] if r.get("scenario-type") == "agentic-coding" and "prefill" in r]
    assert mn_agentic and all(r["eval-conc"] >= 16 and r["eval-conc"] in r["conc"] for r in mn_agentic)
    ref = json.loads((compat / "reference" / "full-sweep-evals-only.json").read_text())
    assert not any(r.get("exp-name", "").startswith("kimik3") and "prefill" in r and max(r["conc"]) < 16
                   for r in ref if r.get("scenario-type") == "agentic-coding")


def test_default_mode_differs_from_reference_only_in_eval_marks(compat: Path, compat_rows: dict[str, Any]) -> None:
    """Documents the intended difference to reference/full-sweep-default.json."""
    theirs = json.loads((compat / "reference" / "full-sweep-default.json").read_text())
    ours = compat_rows["default"]
    assert len(ours) == len(theirs)
    changed = []
    for o, r in zip(ours, theirs, strict=True):
        o = {k: v for k, v in o.items() if k != "point-id"}
        if o != r:
            assert {k for k in set(o) | set(r) if o.get(k) != r.get(k)} == {"run-eval"}
            changed.append((o, r))
    assert changed, "per-arm grouping must change some fixed single-node marks"
    assert all("tp" in o and "prefill" not in o for o, _ in changed)  # multinode marks are unchanged
    # Every fixed single-node arm with an eligible point has an eval in ours; in the reference some have none.
    ours_by_arm: dict[str, list[bool]] = defaultdict(list)
    theirs_by_arm: dict[str, list[bool]] = defaultdict(list)
    for o, r in zip(ours, theirs, strict=True):
        if "tp" in o and o.get("scenario-type") is None and o["isl"] == 8192 and o["conc"] >= 16:
            ours_by_arm[arm(o)].append(o["run-eval"])
            theirs_by_arm[arm(r)].append(r["run-eval"])
    assert all(any(v) for v in ours_by_arm.values())
    assert sum(not any(v) for v in theirs_by_arm.values()) > 0
    # Each arm's own max conc is always marked (the reference can miss it when another tp goes higher).
    fixed_sn = [(arm(o), o) for o in ours if "tp" in o and o.get("scenario-type") is None]
    top: dict[str, int] = {}
    for a, o in fixed_sn:
        top[a] = max(top.get(a, 0), o["conc"])
    for a, o in fixed_sn:
        if o["isl"] == 8192 and o["conc"] == top[a] >= 16:
            assert o["run-eval"]
    # Agentic rows are not evals in default mode (as in the reference).
    assert not any(r["run-eval"] for r in ours if r.get("scenario-type") == "agentic-coding")


def test_toy_fixed_grouping_per_arm(tmp_path: Path) -> None:
    # Spec 4.1 toy: tp4 4..48 plus tp8 [8, 64]. Reference marks tp4@48 and tp8@64 (shared group);
    # per arm, tp4 gets its max 48 and upper median 32, tp8 gets 64.
    (tmp_path / "m.yaml").write_text(
        "toy:\n  image: i\n  model: m\n  model-prefix: t\n  runner: mi355x\n  precision: fp8\n  framework: vllm\n"
        "  multinode: false\n  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n      search-space:\n"
        "      - { tp: 4, conc-start: 4, conc-end: 48 }\n      - { tp: 8, conc-list: [8, 64] }\n"
    )
    cat = load_catalog([tmp_path / "m.yaml"])
    runners = load_runners(REPO / "configs" / "runners.yaml")
    rows = test_config_rows(cat, runners, ["toy"], evals="evals-only")
    assert [(r["tp"], r["conc"]) for r in rows] == [(4, 32), (4, 48), (8, 64)]
