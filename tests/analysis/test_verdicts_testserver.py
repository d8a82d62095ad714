"""Issue 21 acceptance on the real client: A/A runs are never given a winner, and a known 25 %
decode-speed difference is found with an interval that covers it.

The servers are ``infx.loadgen.testserver`` (a synthetic SSE server, not an engine: it sleeps
``token_interval_s`` between tokens, so its decode speed is known exactly); the load generator,
the trials, the store and the comparison are the real ones.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections.abc import Iterator
from pathlib import Path

import pytest

from infx.analysis.compare import compare_runs
from infx.analysis.dataset import load_measured
from infx.loadgen.config import BenchConfig
from infx.loadgen.runner import execute
from infx.loadgen.testserver import SyntheticServer
from infx.results.layout import PointStatus
from infx.results.store import Store, make_bundle
from infx.results.synthetic import make_manifest, make_point

CONCS = (1, 4)
OSL = 12
TRIALS = 3
MAX_TRIALS = 8


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infx.engines.tiny_model import model_files

    d = tmp_path_factory.mktemp("tok")
    (d / "tokenizer.json").write_bytes(model_files()["tokenizer.json"])
    return d


def _serve(interval: float, port_q, stop_ev) -> None:  # type: ignore[no-untyped-def]
    with SyntheticServer(ttft_s=0.001, token_interval_s=interval, paced=True) as srv:
        port_q.put(srv.port)
        stop_ev.wait(600)


@contextlib.contextmanager
def server_process(interval: float) -> Iterator[str]:
    """The test server in its own process: on a busy machine it then never competes with the
    client for one interpreter lock, so its decode speed stays what it was told."""
    ctx = mp.get_context("fork")
    q, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(interval, q, stop), daemon=True)
    proc.start()
    try:
        yield f"http://127.0.0.1:{q.get(timeout=30)}"
    finally:
        stop.set()
        proc.join(10)
        if proc.is_alive():
            proc.kill()


def _measure(st: Store, run_id: str, base_url: str, tokenizer: Path) -> None:
    st.upsert_run(make_manifest(run_id))
    bundles = []
    for conc in CONCS:
        point = make_point(1, conc, isl=16, osl=OSL, runner="local")
        cfg = BenchConfig(base_url=base_url, model="m", tokenizer=str(tokenizer), concurrency=conc,
                          num_prompts=2 * conc, input_len=16, output_len=OSL, ignore_eos=True, warmup_requests=conc,
                          trials=TRIALS, max_trials=MAX_TRIALS, ci_target=0.02, gpus=1, point=point.to_row(),
                          progress=False)
        result = execute(cfg).result  # adaptive: a trial disturbed by a busy machine gets more trials
        assert TRIALS <= len(result.trials) <= MAX_TRIALS and result.stop_reason
        assert [t.warmup for t in result.trials] == [True] + [False] * (len(result.trials) - 1)
        bundles.append(make_bundle(run_id, point, PointStatus(state="done", launch_fingerprint="ts"), result))
    st.add_points(bundles)


def _decisions(cs) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(v.decision, v.text) for c in cs.comparisons for v in (*c.targets, *c.by_conc)]


def test_aa_equivalent_or_inconclusive_and_known_difference_found(tokenizer: Path, tmp_path: Path) -> None:
    with Store(tmp_path / "infx.db") as st:
        with server_process(0.020) as same:
            _measure(st, "aa-1", same, tokenizer)
            _measure(st, "aa-2", same, tokenizer)
        with server_process(0.025) as slow:  # decode 25 % slower
            _measure(st, "slow", slow, tokenizer)
        measured = load_measured(st, gpus_per_node=lambda run, runner: 1)

    # every point carries trials and intervals through the store
    assert all(TRIALS <= m.trials <= MAX_TRIALS for m in measured)
    est = measured[0].estimate("output_tok_per_s")
    assert est is not None and est.method == "trials" and est.n >= TRIALS and est.lo <= est.mean <= est.hi

    aa = compare_runs(measured, "aa-2", "aa-1", norm="server")
    decisions = _decisions(aa)
    assert decisions, aa
    assert all(d in ("equivalent", "inconclusive") for d, _ in decisions), decisions

    known = compare_runs(measured, "aa-1", "slow", norm="server")
    (c,) = known.comparisons
    # the fast server's interactivity is 1.25x the slow one's: the frontiers do not overlap in x,
    # so the verdict comes from matching by concurrency
    assert [v.x for v in c.by_conc] == list(CONCS)
    true_ratio = (0.001 + (OSL - 1) * 0.025) / (0.001 + (OSL - 1) * 0.020)  # request time slow / fast
    for v in c.by_conc:
        assert v.decision == "a", v.text
        assert "better by" in v.text and c.a_label in v.text
        assert v.ratio_lo is not None and v.ratio_hi is not None
        # the interval covers the true ratio (up to the client's per-token overhead, < 2 %)
        assert v.ratio_lo * 0.98 <= true_ratio <= v.ratio_hi * 1.02, (v.ratio_lo, v.ratio_hi, true_ratio)
