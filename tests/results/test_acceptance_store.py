"""Speculative-decoding acceptance through the store (revision 0010) and ``infx status``: measured figures with
their interval, synthetic labels, "not reported" rows (never 0) and invalid ones with their reason."""

from __future__ import annotations

import json
from pathlib import Path

from infx.metrics.result import BenchResult
from infx.metrics.sections import AcceptanceFigures, RoleAcceptance, SpecDecodeLabel, TelemetrySummary
from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import SEED_ARMS, make_manifest, make_point, make_result
from infx.sweep.status import acceptance_cell


def _result(conc: int, spec: SpecDecodeLabel | None, roles: list[RoleAcceptance] | None) -> tuple[object, BenchResult]:
    point = make_point(2, conc, isl=1024, osl=1024).model_copy(update={"spec_decoding": "mtp"})
    r = make_result(point, SEED_ARMS[0])
    extra = r.extra.model_copy(update={"spec_decode": spec,
                                       "telemetry": None if roles is None else TelemetrySummary(acceptance=roles)})
    return point, r.model_copy(update={"extra": extra})


MEASURED = RoleAcceptance(state="measured", window=AcceptanceFigures(drafts=758, draft_tokens=2190, accepted=1581,
                                                                     acceptance_length=1 + 1581 / 758,
                                                                     acceptance_rate=1581 / 2190,
                                                                     per_position=[0.9, 0.7, 0.5]),
                          acceptance_length_mean=3.08, acceptance_length_lo=2.9, acceptance_length_hi=3.3,
                          acceptance_rate_mean=0.72)


def test_acceptance_rows_in_the_store(tmp_path: Path) -> None:
    cases = {
        1: (SpecDecodeLabel(method="mtp", acceptance="measured"), [MEASURED]),
        2: (SpecDecodeLabel(method="mtp", acceptance="synthetic", synthetic_al=3.51, via="SGLANG_SIMULATE_ACC_LEN"),
            [RoleAcceptance(state="not_reported", reason="the engine's /metrics has no speculative-decoding series")]),
        4: (SpecDecodeLabel(method="mtp", acceptance="measured"), None),  # no telemetry at all
        8: (SpecDecodeLabel(method="mtp", acceptance="measured"),
            [RoleAcceptance(state="invalid", reason="vllm:spec_decode_num_drafts_total went backwards")]),
    }
    with Store(tmp_path / "infx.db") as st:
        st.upsert_run(make_manifest("r"))
        bundles = []
        for conc, (spec, roles) in cases.items():
            point, result = _result(conc, spec, roles)
            bundles.append(make_bundle("r", point, PointStatus(state="done"), result))  # type: ignore[arg-type]
        st.add_points(bundles)
        rows = {r.point_id: r for r in st.acceptance(["r"])}
    by_conc = {conc: rows[b.point.point_id] for conc, b in zip(cases, bundles, strict=True)}
    m = by_conc[1]
    assert (m.state, m.acceptance, m.acceptance_length, m.acceptance_length_lo, m.acceptance_length_hi) == \
        ("measured", "measured", 3.08, 2.9, 3.3)
    assert json.loads(m.per_position_json) == [0.9, 0.7, 0.5] and m.acceptance_rate == 0.72
    s = by_conc[2]
    assert (s.acceptance, s.synthetic_al, s.via, s.state) == ("synthetic", 3.51, "SGLANG_SIMULATE_ACC_LEN",
                                                              "not_reported")
    assert s.acceptance_length is None  # not reported: NULL, never 0
    n = by_conc[4]
    assert n.state == "not_reported" and "telemetry off" in n.reason and n.acceptance_length is None
    bad = by_conc[8]
    assert bad.state == "invalid" and "went backwards" in bad.reason and bad.acceptance_length is None


def test_status_cell() -> None:
    assert acceptance_cell(SpecDecodeLabel(method="ngram", acceptance="measured"), [MEASURED]) == \
        "measured: AL 3.08 [2.90, 3.30], 72% of drafted tokens accepted"
    forced = SpecDecodeLabel(method="mtp", acceptance="synthetic", synthetic_al=3.51, via="SGLANG_SIMULATE_ACC_LEN")
    assert acceptance_cell(forced, [RoleAcceptance(state="not_reported")]) == \
        "synthetic (AL 3.51, via SGLANG_SIMULATE_ACC_LEN): not reported by this engine"
    assert acceptance_cell(None, []) == ""


def test_export_keeps_inferencex_keys_and_adds_an_acceptance_file() -> None:
    from infx.interop.export import acceptance_sidecar, agg

    forced = SpecDecodeLabel(method="mtp", acceptance="synthetic", synthetic_al=3.51, via="SGLANG_SIMULATE_ACC_LEN")
    point, labelled = _result(1, forced, [MEASURED])
    _, plain = _result(1, None, None)
    assert agg(point, labelled) == agg(point, plain)  # type: ignore[arg-type]  # InferenceX's keys, untouched
    side = acceptance_sidecar(point, labelled)  # type: ignore[arg-type]
    assert side is not None and side["acceptance"] == "synthetic (AL 3.51, via SGLANG_SIMULATE_ACC_LEN)"
    assert side["synthetic"] is True and side["roles"][0]["acceptance_length_mean"] == 3.08
    assert acceptance_sidecar(point, plain) is None  # type: ignore[arg-type]
