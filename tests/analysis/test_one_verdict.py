"""One verdict in every machine-readable comparison: an A/A pair (the same synthetic server measured twice, two
trials per point) read through ``infx compare --json`` names no ``winner`` anywhere and carries no point-estimate
"gives 1.0x" sentence; the step-frontier ranges that remain are labelled ``point_estimates_only``. A comparison
of a synthetic-acceptance arm with a measured one carries the caveat in its text and its JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.loadgen.config import BenchConfig
from infx.loadgen.runner import execute
from infx.loadgen.testserver import SyntheticServer
from infx.metrics.sections import SpecDecodeLabel
from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import make_manifest, make_point


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infx.engines.tiny_model import model_files

    d = tmp_path_factory.mktemp("tok")
    (d / "tokenizer.json").write_bytes(model_files()["tokenizer.json"])
    return d


def _measure(st: Store, run_id: str, base_url: str, tokenizer: Path, spec: SpecDecodeLabel | None = None,
             tp: int = 1) -> None:
    st.upsert_run(make_manifest(run_id))
    bundles = []
    for conc in (1, 4):
        point = make_point(tp, conc, isl=16, osl=12, runner="local")
        if spec is not None:
            point = point.model_copy(update={"spec_decoding": spec.method,
                                             "point_id": f"{point.point_id}-{spec.method}"})
        cfg = BenchConfig(base_url=base_url, model="m", tokenizer=str(tokenizer), concurrency=conc,
                          num_prompts=2 * conc, input_len=16, output_len=12, ignore_eos=True, warmup_requests=conc,
                          trials=2, gpus=1, point=point.to_row(), progress=False)
        result = execute(cfg).result
        if spec is not None:
            result = result.model_copy(update={"extra": result.extra.model_copy(update={"spec_decode": spec})})
        bundles.append(make_bundle(run_id, point, PointStatus(state="done", launch_fingerprint="ts"), result))
    st.add_points(bundles)


def _app():  # type: ignore[no-untyped-def]  # the show stage's commands, as infx.cli registers them
    import typer

    from infx.report.cli import register

    app = typer.Typer()
    register(app)
    return app


def _compare_json(root: Path, *args: str) -> str:
    res = CliRunner().invoke(_app(), ["compare", str(root), *args, "--json"])
    assert res.exit_code == 0, res.output
    return res.output


def test_aa_json_names_no_winner_anywhere(tokenizer: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.002, paced=True) as srv, Store(root / "infx.db") as st:
        _measure(st, "aa-1", srv.base_url, tokenizer)
        _measure(st, "aa-2", srv.base_url, tokenizer)
    text = _compare_json(root, "--run", "aa-2", "--baseline", "aa-1", "--per", "server")
    doc = json.loads(text)
    assert doc["comparisons"], doc
    assert '"winner"' not in text and "winner" not in text.lower()
    assert not re.search(r"gives \d", text)
    for c in doc["comparisons"]:
        assert all(r["point_estimates_only"] is True for r in c["ranges"])
        assert all(x["point_estimates_only"] is True for x in c["crossovers"])
        assert c["by_conc"] and all(v["ratio_lo"] is not None for v in c["by_conc"])  # the intervals' verdicts


def test_synthetic_vs_measured_acceptance_carries_the_caveat(tokenizer: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.002, paced=True) as fast, \
            SyntheticServer(ttft_s=0.001, token_interval_s=0.02, paced=True) as slow, Store(root / "infx.db") as st:
        st.upsert_run(make_manifest("ab"))
        _measure(st, "ab", fast.base_url, tokenizer, SpecDecodeLabel(method="mtp", acceptance="synthetic",
                                                                     synthetic_al=3.51, via="SGLANG_SIMULATE_ACC_LEN"))
        _measure(st, "ab", slow.base_url, tokenizer, SpecDecodeLabel(method="mtp", acceptance="measured"), tp=2)
    doc = json.loads(_compare_json(root, "--run", "ab", "--per", "server"))
    [c] = doc["comparisons"]
    assert c["caveats"] and "synthetic (AL 3.51) acceptance" in c["caveats"][0]
    assert c["verdict"][0].startswith("caveat: ")
    decided = [v for v in (*c["targets"], *c["by_conc"]) if v["decision"] in ("a", "b")]
    assert all("[caveat: " in v["text"] for v in decided)
    human = CliRunner().invoke(_app(), ["compare", str(root), "--run", "ab", "--per", "server"])
    assert human.exit_code == 0 and "caveat" in human.output and "synthetic (AL 3.51)" in human.output


def test_no_machine_readable_comparison_model_has_a_winner_field() -> None:
    """Every model a comparison output is serialised from (compare JSON, report data, PR table, repro verdict)
    states the intervals' verdict: none has a ``winner`` field, at any depth."""
    from pydantic import BaseModel

    from infx.analysis.compare import ComparisonSet
    from infx.interop.prtable import PRComparison
    from infx.repro.verdict import ReproVerdict

    def fields(model: type[BaseModel], seen: set[type]) -> set[str]:
        if model in seen:
            return set()
        seen.add(model)
        out = set(model.model_fields)
        for f in model.model_fields.values():
            for t in (f.annotation, *getattr(f.annotation, "__args__", ())):
                for inner in (t, *getattr(t, "__args__", ())):
                    if isinstance(inner, type) and issubclass(inner, BaseModel):
                        out |= fields(inner, seen)
        return out

    for model in (ComparisonSet, PRComparison, ReproVerdict):
        names = fields(model, set())
        assert "winner" not in names, model
    assert "point_estimates_only" in fields(ComparisonSet, set())


def test_arms_differing_only_in_drafting_are_compared_per_concurrency(tokenizer: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    root.mkdir()
    with SyntheticServer(ttft_s=0.001, token_interval_s=0.002, paced=True) as fast, \
            SyntheticServer(ttft_s=0.001, token_interval_s=0.02, paced=True) as slow, Store(root / "infx.db") as st:
        _measure(st, "spec", slow.base_url, tokenizer)
        _measure(st, "spec", fast.base_url, tokenizer, SpecDecodeLabel(method="ngram", acceptance="measured"))
    doc = json.loads(_compare_json(root, "--run", "spec", "--per", "server"))
    [c] = doc["comparisons"]
    assert "spec=ngram" in c["b_label"] and "caveats" not in c  # both measured: no caveat
    assert [v["x"] for v in c["by_conc"]] == [1.0, 4.0]  # the same offered load, with and without drafting
    assert all(v["ratio_lo"] is not None and v["ratio_hi"] is not None for v in c["by_conc"])
