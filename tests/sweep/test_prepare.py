"""Driver pieces without an engine: run ids, gate rejects, manifest, status, progress lines, CLI errors."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from infx.sweep.execute import Wiring, run_sweep
from infx.sweep.grouping import group_points
from infx.sweep.layout import GroupRecord, RunDir, write_model
from infx.sweep.orchestrator import Orchestrator
from infx.sweep.prepare import (
    LoadProfile,
    RunRequest,
    default_run_id,
    prepare,
)
from infx.sweep.progress import Progress
from infx.sweep.status import run_state

from .fakes import FakeMeasurer, FakeStarter, make_point

REPO = Path(__file__).resolve().parents[2]


def test_default_run_id_is_deterministic_and_safe():
    assert default_run_id(["tinyllama-bf16-cpu-vllm"]) == "tinyllama-bf16-cpu-vllm"
    a = default_run_id(["dsr1*", "b/../x"])
    assert a == default_run_id(["b/../x", "dsr1*"]) and "/" not in a and "*" not in a and ".." not in a
    assert default_run_id(["k"], "all") != default_run_id(["k"])


def test_load_profile_prompts():
    lp = LoadProfile(prompts_per_conc=4, min_prompts=8)
    assert [lp.num_prompts(c) for c in (1, 2, 4)] == [8, 8, 16]


def _req(tmp_path: Path, **kw) -> RunRequest:
    return RunRequest(config_files=[], runner_config="", config_keys=["k"], results=str(tmp_path), run_id="r",
                      preflight=False, **kw)


def _render(p):
    class L:
        fingerprint = f"fp-{p.model_prefix}"
        engine, image, argv = "vllm", "img", ["serve"]

    if p.model_prefix == "nope":
        from infx.diagnostics import InfxError

        raise InfxError("no recipe matches point")
    return L()


def test_render_failure_is_a_gate_reject_with_zero_launches(tmp_path):
    pts = [make_point("a", 1, 1), make_point("a", 1, 2), make_point("nope", 1, 1)]
    prep = prepare(_req(tmp_path), points=pts, render=_render)
    assert [g.point_ids for g in prep.groups] == [["a-tp1-c1", "a-tp1-c2"]]
    starter = FakeStarter()
    s = run_sweep(prep, Wiring(starter, FakeMeasurer()))
    assert s.skipped == ["nope-tp1-c1"] and len(starter.started) == 1 and len(s.done) == 2
    st = prep.run_dir.read_status("nope-tp1-c1")
    assert st.state == "skipped" and st.failure_class == "render" and "no recipe" in st.reason
    m = prep.run_dir.read_manifest()
    assert m.engine_version == "fake-1.0" and m.ended_at is not None and m.started_at <= m.ended_at


def test_gate_reject_never_destroys_an_earlier_result(tmp_path):
    pts = [make_point("a", 1, 1)]
    prep = prepare(_req(tmp_path), points=pts, render=_render)
    run_sweep(prep, Wiring(FakeStarter(), FakeMeasurer()))
    first_start = prep.run_dir.read_manifest().started_at
    # the recipe no longer renders the point: it is rejected, but its measurement stays
    orch = Orchestrator(prep.run_dir, FakeStarter(), FakeMeasurer())
    assert orch.mark_skipped({"a-tp1-c1": (pts[0], "", "render: gone")}) == []
    assert prep.run_dir.read_status("a-tp1-c1").state == "done"
    run_sweep(prep, Wiring(FakeStarter(), FakeMeasurer()))
    assert prep.run_dir.read_manifest().started_at == first_start  # resuming keeps the first start


def test_pull_request_run_is_marked_unofficial_with_its_baseline(tmp_path):
    """`infx run --pr-number N --baseline-run R` reaches the manifest that drives the report banner."""
    from infx.results.layout import PullRequest

    pts = [make_point("a", 1, 1)]
    prep = prepare(_req(tmp_path / "pr", pr=PullRequest(number=3326), baseline_run="official",
                        description="TP=2 arm"), points=pts, render=_render)
    run_sweep(prep, Wiring(FakeStarter(), FakeMeasurer()))
    m = prep.run_dir.read_manifest()
    assert not m.official and m.pr is not None and m.pr.number == 3326
    assert m.baseline_run == "official" and m.description == "TP=2 arm"
    plain = prepare(_req(tmp_path / "official"), points=pts, render=_render)
    run_sweep(plain, Wiring(FakeStarter(), FakeMeasurer()))
    assert plain.run_dir.read_manifest().official and plain.run_dir.read_manifest().pr is None


def test_status_reports_each_state(tmp_path):
    pts = [make_point("a", 1, c) for c in (1, 2)] + [make_point("b", 1, 1), make_point("c", 1, 1)]
    groups = group_points(pts)
    rd = RunDir(tmp_path, "r")
    rd.root.mkdir(parents=True)
    from infx.sweep.manifest import new_manifest

    rd.results.write_manifest(new_manifest("r", config_files=[], recipes=None, config_keys=["k"], images=[]))
    Orchestrator(rd, FakeStarter({"b": "exit"}), FakeMeasurer()).run(groups[:2])
    # group c is being launched by another process right now
    for p in groups[2].points:
        rd.write_point(p, groups[2].fingerprint)
    rec = GroupRecord(fingerprint=groups[2].fingerprint, point_ids=groups[2].point_ids, state="running",
                      host=socket.gethostname(), pid=os.getpid())
    write_model(rd.group_file(groups[2].fingerprint), rec)
    st = {p.point_id: p.state for p in run_state(rd).points}
    assert st == {"a-tp1-c1": "done", "a-tp1-c2": "done", "b-tp1-c1": "failed", "c-tp1-c1": "running"}
    # the process that was running it died (kill -9): the point is pending again, not "running" forever
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    write_model(rd.group_file(groups[2].fingerprint), rec.model_copy(update={"pid": int(dead.stdout)}))
    assert {p.point_id: p.state for p in run_state(rd).points}["c-tp1-c1"] == "pending"


def test_plain_progress_lines_when_not_a_tty(tmp_path):
    buf = io.StringIO()
    pts = [make_point("a", 1, c) for c in (1, 2)]
    with Progress(stream=buf, live=False) as progress:
        Orchestrator(RunDir(tmp_path, "r"), FakeStarter(), FakeMeasurer(), emit=progress).run(group_points(pts))
    out = buf.getvalue()
    assert "\x1b[" not in out  # no terminal control codes
    lines = out.splitlines()
    assert any("2 to run in 1 launch group(s)" in ln for ln in lines)
    assert any("ready in" in ln and "fake-1.0" in ln for ln in lines)
    assert sum(": done" in ln and "tok/s" in ln for ln in lines) == 2
    assert "sweep finished" in lines[-1] and "2 done" in lines[-1]
    assert progress.eta_seconds() == 0.0


def _infx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_run_point_bad_row_is_one_line_diagnostic(tmp_path):
    r = _infx("run-point", "--row", '{"image": ', "--results", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "error: --row is not JSON" in r.stderr
    r = _infx("run-point", "--row", json.dumps({"image": "x", "point-id": "p"}), "--results", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "error:" in r.stderr


def test_run_rejects_unknown_backend(tmp_path):
    r = _infx("run", "--config-files", "configs/cpu-master.yaml", "--runner-config", "configs/runners.yaml",
              "--config-keys", "tinyllama-bf16-cpu-vllm", "--backend", "k8s", "--results", str(tmp_path))
    assert r.returncode == 2 and "--backend must be local or slurm" in r.stderr and "Traceback" not in r.stderr


def test_status_of_missing_dir_is_a_diagnostic(tmp_path):
    r = _infx("status", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such results directory" in r.stderr


def test_status_shows_each_points_eval(tmp_path):
    from tests.evals.synth import write_eval

    pts = [make_point("a", 1, c).model_copy(update={"run_eval": True}) for c in (1, 2, 4)] + [make_point("b", 1, 8)]
    rd = RunDir(tmp_path, "r")
    rd.root.mkdir(parents=True)
    from infx.sweep.manifest import new_manifest

    rd.results.write_manifest(new_manifest("r", config_files=[], recipes=None, config_keys=["k"], images=[]))
    for p in pts:
        rd.write_point(p, "f" * 64)
    write_eval(rd.point_dir("a-tp1-c1"), {0: True, 1: True, 2: False, 3: True}, threshold=0.5)
    write_eval(rd.point_dir("a-tp1-c2"), {0: True, 1: False, 2: False, 3: False}, threshold=0.5)
    ev = {p.point_id: p.eval for p in run_state(rd).points}
    assert ev == {"a-tp1-c1": "pass 0.750 (>= 0.5)", "a-tp1-c2": "accuracy-fail 0.250 (< 0.5)",
                  "a-tp1-c4": "pending", "b-tp1-c8": ""}
    write_eval(rd.point_dir("a-tp1-c4"), {}, failed="server returned 500 x3")
    assert run_state(rd).points[2].eval == "failed: eval-server server returned 500 x3"
    r = _infx("status", str(rd.root))
    assert r.returncode == 0 and "accuracy-fail 0.250" in r.stdout and "eval" in r.stdout


def test_run_rejects_bad_trials(tmp_path):
    base = ("run", "--config-files", "configs/cpu-master.yaml", "--runner-config", "configs/runners.yaml",
            "--config-keys", "tinyllama-bf16-cpu-vllm", "--results", str(tmp_path), "--dry-run")
    r = _infx(*base, "--trials", "0")
    assert r.returncode == 2 and "--trials must be >= 1" in r.stderr and "Traceback" not in r.stderr
    r = _infx(*base, "--trials", "3", "--max-trials", "2")
    assert r.returncode == 2 and "--max-trials must be" in r.stderr
    r = _infx(*base, "--ci-target", "-0.1")
    assert r.returncode == 2 and "--ci-target" in r.stderr


def test_trials_reach_the_load_generator_from_flag_or_catalog(tmp_path):
    from infx.sweep.point_load import bench_config
    from infx.sweep.profile import LoadProfile

    class Launch:
        model_path = "m"

    class Engine:
        base_url, served_model_name, launch = "http://127.0.0.1:1", "m", Launch()

    p = make_point("a", 1, 4)
    assert bench_config(p, Engine(), LoadProfile()).trials == 1
    by_catalog = LoadProfile(trials_by_point={p.point_id: 3})
    assert bench_config(p, Engine(), by_catalog).trials == 3
    flag = by_catalog.model_copy(update={"trials": 5, "max_trials": 9})
    cfg = bench_config(p, Engine(), flag)
    assert (cfg.trials, cfg.max_trials) == (5, 9)
    # the catalog's trials: on a fixed-seq-len scenario, by point id
    from infx.matrix.select import scenario_trials

    text = (REPO / "configs/cpu-master.yaml").read_text().replace(
        "    - isl: 256\n      osl: 256\n", "    - isl: 256\n      osl: 256\n      trials: 3\n", 1)
    cat = tmp_path / "cpu-master.yaml"
    cat.write_text(text)
    got = scenario_trials([cat], REPO / "configs/runners.yaml", ["tinyllama-bf16-cpu-vllm"])
    assert len(got) == 8 and set(got.values()) == {3}


def test_status_shows_trials_of_done_points(tmp_path):
    pts = [make_point("a", 1, 1)]
    rd = RunDir(tmp_path, "r")
    Orchestrator(rd, FakeStarter(), FakeMeasurer()).run(group_points(pts))
    (p,) = run_state(rd).points
    assert p.state == "done" and p.trials.startswith("1 trial(s)")


def test_stop_at_saturation_skips_higher_concurrencies(tmp_path):
    """An arm whose throughput stops growing while TTFT doubles is saturated: its higher
    concurrencies are recorded skipped-saturated (never failed); another arm is unaffected."""
    from infx.metrics.result import Stat
    from infx.sweep.orchestrator import SweepOptions

    from .fakes import make_result

    # conc 1 -> 100 tok/s (TTFT 10 ms), 2 -> 190, 4 -> 195 with TTFT 40 ms: saturated at 4
    curve = {1: (100.0, 10.0), 2: (190.0, 12.0), 4: (195.0, 40.0), 8: (196.0, 90.0), 16: (197.0, 200.0)}

    class Saturating(FakeMeasurer):
        def measure(self, point, engine, point_dir, progress=None):  # type: ignore[no-untyped-def]
            super().measure(point, engine, point_dir, progress)
            tput, ttft = curve[min(point.concs)] if point.model_prefix == "a" else (100.0 * min(point.concs), 10.0)
            r = make_result(out_tok_s=tput)
            st = Stat(mean=ttft, median=ttft, std=0.0, p90=ttft, p99=ttft, p999=ttft, count=8)
            return r.model_copy(update={"metrics": r.metrics.model_copy(update={"ttft_ms": st})})

    pts = [make_point("a", 1, c) for c in (16, 1, 4, 2, 8)] + [make_point("b", 1, c) for c in (1, 2, 4)]
    rd = RunDir(tmp_path, "r")
    m = Saturating()
    summary = Orchestrator(rd, FakeStarter(), m, SweepOptions(stop_at_saturation=True)).run(group_points(pts))
    states = {p.point_id: p for p in run_state(rd).points}
    assert [states[f"a-tp1-c{c}"].state for c in (1, 2, 4, 8, 16)] == ["done", "done", "done", "skipped", "skipped"]
    st = rd.read_status("a-tp1-c8")
    assert st is not None and st.failure_class == "skipped-saturated" and "saturated at concurrency 4" in st.reason
    assert all(states[f"b-tp1-c{c}"].state == "done" for c in (1, 2, 4))
    assert "a-tp1-c8" not in m.measured and not summary.failed


def test_search_mode_runs_the_capacity_search_per_launch(tmp_path):
    from infx.loadgen.search import Probe, search_max_concurrency
    from infx.sweep.orchestrator import SweepOptions

    class Searching(FakeMeasurer):
        def search(self, point, engine):  # type: ignore[no-untyped-def]
            return search_max_concurrency(lambda c: Probe(conc=c, met=c <= 5), tier="interactive",
                                          slo={"ttft_p95_ms": 500.0}, start=min(point.concs), limit=64)

    pts = [make_point("a", 1, c) for c in (1, 2, 4)]
    rd = RunDir(tmp_path, "r")
    m = Searching()
    Orchestrator(rd, FakeStarter(), m, SweepOptions(search=True)).run(group_points(pts))
    (out,) = list((rd.root / "search").glob("*.json"))
    data = json.loads(out.read_text())
    assert data["max_conc"] == 5 and data["first_miss"] == 6 and data["template_point"] == "a-tp1-c1"
    assert m.measured == []  # the listed points are not measured in search mode


def test_run_search_needs_a_declared_tier(tmp_path):
    base = ("run", "--config-files", "configs/cpu-master.yaml", "--runner-config", "configs/runners.yaml",
            "--config-keys", "tinyllama-bf16-cpu-vllm", "--results", str(tmp_path), "--dry-run",
            "--search", "max-concurrency")
    r = _infx(*base, "--slo", "interactive")
    assert r.returncode == 2 and "SLO tier 'interactive' is not declared" in r.stderr and "Traceback" not in r.stderr
    assert "configs/cpu-master.yaml" in r.stderr
    r = _infx(*base)
    assert r.returncode == 2 and "needs --slo TIER" in r.stderr


def test_each_point_is_final_after_its_receipt_and_ingest_refuses_a_broken_one(tmp_path):
    """The point-final hook (what a local run ingests from) runs once per point, after the receipt is written;
    the store's ingest verifies that receipt and refuses a point whose files no longer match it."""
    from infx.results.receipt import RECEIPT_FILE
    from infx.results.store import ingest_point

    pts = [make_point("a", 1, 1), make_point("a", 1, 2), make_point("nope", 1, 1)]
    prep = prepare(_req(tmp_path), points=pts, render=_render)
    seen: list[tuple[str, str | None, bool]] = []

    def final(pid: str) -> None:
        st = prep.run_dir.read_status(pid)
        seen.append((pid, st.state if st else None, (prep.run_dir.point_dir(pid) / RECEIPT_FILE).is_file()))

    run_sweep(prep, Wiring(FakeStarter(), FakeMeasurer()), on_final=final)
    assert sorted(seen) == [("a-tp1-c1", "done", True), ("a-tp1-c2", "done", True), ("nope-tp1-c1", "skipped", False)]
    pdir = prep.run_dir.point_dir("a-tp1-c1")
    (pdir / "result.json").write_text((pdir / "result.json").read_text().replace("}", " }", 1))
    rep = ingest_point(tmp_path, "r", "a-tp1-c1")
    assert rep.ingested == 0 and any("receipt" in str(d) for d in rep.problems)
    assert ingest_point(tmp_path, "r", "a-tp1-c2").ingested == 1


def test_prepare_reads_the_catalog_and_the_runners_once(tmp_path, monkeypatch):
    import infx.catalog
    import infx.catalog.loader as loader
    import infx.catalog.runners as runners

    calls: list[str] = []
    real_catalog, real_runners = loader.load_catalog, runners.load_runners
    for mod in (infx.catalog, loader):  # every name the functions are reached by
        monkeypatch.setattr(mod, "load_catalog", lambda *a, **k: calls.append("catalog") or real_catalog(*a, **k))
    for mod in (infx.catalog, runners):
        monkeypatch.setattr(mod, "load_runners", lambda *a, **k: calls.append("runners") or real_runners(*a, **k))
    req = RunRequest(config_files=[str(REPO / "configs/cpu-master.yaml")],
                     runner_config=str(REPO / "configs/runners.yaml"),
                     config_keys=["tinyllama-bf16-cpu-vllm"], results=str(tmp_path))
    prep = prepare(req)
    assert prep.points and prep.runners is not None and prep.gpus_per_node["local"] == 1
    assert sorted(calls) == ["catalog", "runners"]
