"""``infx status DIR``: queued / running / done / damaged / failed / skipped / pending per point, from the results
directory (status files, group records) and, for Slurm runs, ``squeue``/``sacct``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from infx.diagnostics import Diagnostic, InfxError, warn
from infx.metrics.sections import RoleAcceptance, SpecDecodeLabel
from infx.results.layout import MANIFEST, RESULT_FILE, PointFile, ResultsDir, StartupSummary
from infx.sweep.layout import GroupRecord, RunDir, read_eval_status

if TYPE_CHECKING:
    from infx.analysis.cost import SkuOf
    from infx.analysis.costmodel import CostModel
    from infx.results.store.quarantine import Entry as QuarantineEntry

State = Literal["done", "damaged", "failed", "skipped", "interrupted", "running", "queued", "pending"]


@dataclass
class PointState:
    point_id: str
    state: State
    conc: str = ""
    reason: str = ""
    job: str | None = None
    kv: str = ""  # KV capacity predicted/logged at start-up, e.g. "1048576/98304 (mismatch)"
    eval: str = ""  # run-eval points: "pass 0.812 (>= 0.8)", "accuracy-fail 0.012 (< 0.8)", "failed: ...", "pending"
    # done points: "$0.325/Mtok" in the cost table's tier (read time, infx.analysis.cost), or "not priced: ..."
    cost: str = ""
    trials: str = ""  # done points: "3 trials: 463 tok/s ±7.8%" (output throughput, 95 % CI)
    # done spec-decoding points: "measured: AL 2.81 [2.70, 2.93], 60% accepted" or "synthetic (AL 3.51, via ...)"
    acceptance: str = ""


@dataclass
class RunState:
    run_id: str
    points: list[PointState]
    jobs: dict[str, str]  # job id -> state (squeue, then sacct)

    def counts(self) -> Counter[str]:
        return Counter(p.state for p in self.points)


def run_dirs(path: str | Path) -> list[RunDir]:
    """A run directory itself, or every run under a results root."""
    p = Path(path)
    if (p / MANIFEST).is_file() or (p / "plan.json").is_file():
        return [RunDir(p)]
    if not p.is_dir():
        raise InfxError(Diagnostic(f"no such results directory: {p}"))
    runs = ResultsDir(p).runs()
    extra = sorted(d.name for d in p.iterdir() if d.is_dir() and (d / "plan.json").is_file() and d.name not in runs)
    return [RunDir(p, r) for r in [*runs, *extra]]


def quarantined(path: str | Path, store: str | None = None) -> list[QuarantineEntry]:
    """The rows ingest refused (the store's quarantine) for the runs under ``path`` (a results directory or one
    run directory): [] before any store."""
    from infx.diagnostics import warn
    from infx.results.store import Store
    from infx.results.store.url import resolve

    p = Path(path)
    one_run = (p / MANIFEST).is_file() or (p / "plan.json").is_file()
    root = p.parent if one_run else p
    runs = {p.name} if one_run else {d.name for d in p.iterdir() if d.is_dir()} if p.is_dir() else set()
    where = resolve(store, root)
    if where.path is not None and not where.path.is_file():
        return []
    try:
        with Store(where, readonly=True) as st:
            entries = st.quarantined()
    except InfxError as exc:
        warn(f"quarantine not listed: {exc.diagnostics[0].message}")
        return []
    return [e for e in entries if e.run_id in runs]


def run_state(rd: RunDir, cost: CostCell | None = None) -> RunState:
    from infx.sweep import slurm
    from infx.sweep.prepare import load_plan

    plan = None
    if rd.plan_file.is_file():
        try:
            plan = load_plan(rd)
        except InfxError:
            plan = None
    ids = list(plan.points) if plan is not None else rd.results.points(rd.run_id)
    group_of: dict[str, str] = {}
    if plan is not None:
        for g in plan.groups:
            for pid in g.point_ids:
                group_of[pid] = g.fingerprint
    records = {g.fingerprint: g for g in rd.groups()}
    for grp in records.values():
        for pid in grp.point_ids:
            group_of.setdefault(pid, grp.fingerprint)
    job_ids = [j.job_id for j in plan.slurm_jobs] if plan is not None else []
    queue = slurm.queue_states(job_ids) if job_ids else {}
    jobs: dict[str, str] = {}
    if job_ids:
        jobs.update(slurm.finished_states(job_ids))
        for key, state in queue.items():
            jobs[key] = state
        for jid in job_ids:  # neither squeue nor sacct knows it (finished, accounting off)
            if not any(k == jid or k.startswith(jid + "_") for k in jobs):
                jobs[jid] = "UNKNOWN"
    out: list[PointState] = []
    for pid in ids:
        pf = rd.read_point(pid)
        conc = str(pf.point.get("conc", "")) if pf else (str(plan.points[pid].get("conc", "")) if plan else "")
        wants_eval = bool((pf.point if pf else (plan.points.get(pid, {}) if plan else {})).get("run-eval"))
        ev = eval_text(rd.point_dir(pid), wants_eval)
        st = rd.read_status(pid)
        fp = group_of.get(pid)
        if st is not None and (fp is None or st.launch_fingerprint in (fp, None, "")):
            damage = result_damage(rd, pid) if st.state == "done" else None
            if damage is not None:  # never shown as done, never dropped: the file and field, and a warning
                warn(Diagnostic(f"{damage.message} (point {pid} counts as damaged)", damage.file, damage.line,
                                damage.col, damage.path, "warning"))
                out.append(PointState(pid, "damaged", conc, f"{Path(damage.file or '').name}: {damage.message}",
                                      eval=ev))
                continue
            reason = f"{st.failure_class or ''} {st.reason}".strip() if st.state != "done" else ""
            out.append(PointState(pid, st.state, conc, reason, kv=kv_text(st.startup), eval=ev,
                                  cost=cost(rd, pid, pf) if (cost is not None and st.state == "done" and pf) else "",
                                  trials=trials_text(rd, pid) if st.state == "done" else "",
                                  acceptance=acceptance_text(rd, pid) if st.state == "done" else ""))
            continue
        rec = records.get(fp) if fp else None
        qstate = slurm.group_queue_state(plan, fp, queue) if (plan is not None and fp) else None
        if qstate == "RUNNING" or (rec is not None and rec.state == "running" and qstate is None and not job_ids
                                   and _may_be_alive(rec)):
            out.append(PointState(pid, "running", conc, job=rec.slurm_job if rec else None, eval=ev))
        elif qstate in ("PENDING", "CONFIGURING", "REQUEUED"):
            out.append(PointState(pid, "queued", conc, eval=ev))
        else:
            out.append(PointState(pid, "pending", conc, eval=ev))
    return RunState(rd.run_id, out, jobs)


def result_damage(rd: RunDir, point_id: str) -> Diagnostic | None:
    """Why a done point's result.json cannot be trusted (unreadable, not JSON, invalid), or None."""
    try:
        rd.results.read_result(rd.run_id, point_id)
    except InfxError as exc:
        return exc.diagnostics[0]
    except OSError as exc:
        return Diagnostic(f"cannot read: {exc.strerror or exc}", str(rd.point_dir(point_id) / RESULT_FILE))
    return None


def trials_text(rd: RunDir, point_id: str) -> str:
    """A done point's trials and the 95 % interval of its output throughput, as one cell."""
    try:
        result = rd.results.read_result(rd.run_id, point_id)
    except (InfxError, OSError):
        return ""
    e = result.stats.get("output_tok_per_s")
    n = len(result.trials) or 1
    if e is None or not e.mean:
        return f"{n} trial(s)"
    basis = "" if e.method == "trials" else " within-run"
    return f"{n} trial(s): {e.mean:,.1f} tok/s ±{(e.hi - e.lo) / 2 / abs(e.mean):.1%}{basis}"


def acceptance_text(rd: RunDir, point_id: str) -> str:
    """A done point's speculative-decoding acceptance as one cell (empty without spec decoding)."""
    from infx.results.acceptance_rows import roles_of

    try:
        result = rd.results.read_result(rd.run_id, point_id)
    except (InfxError, OSError):
        return ""
    return acceptance_cell(result.extra.spec_decode, roles_of(result))


def acceptance_cell(spec: SpecDecodeLabel | None, roles: list[RoleAcceptance]) -> str:
    label = spec.text() if spec is not None else ""
    figures = "; ".join((f"{a.role}: " if len(roles) > 1 else "") + a.text() for a in roles)
    return ": ".join(x for x in (label, figures) if x)


def eval_text(point_dir: Path, wants_eval: bool) -> str:
    """The point's accuracy eval as one cell: outcome, headline score and threshold, or why it failed."""
    from infx.evals.parse import read_eval

    st = read_eval_status(point_dir)
    if st is None:
        from infx.evals.protocol import EVAL_STATUS_FILE

        if (point_dir / EVAL_STATUS_FILE).is_file():  # there, but garbage: say so, never show nothing
            return f"unreadable {EVAL_STATUS_FILE}"
        return "pending" if wants_eval else ""
    if st.state == "failed":
        return f"failed: {st.failure_class or ''} {st.reason}".strip()[:80]
    try:
        res = read_eval(point_dir)
    except InfxError:
        res = None
    score = res.primary if res is not None else None
    gate = f" ({'>=' if st.state == 'pass' else '<'} {st.verdict.threshold:g})" if st.verdict else ""
    return f"{st.state} {score:.3f}{gate}" if score is not None else st.state


def kv_text(startup: StartupSummary | None) -> str:
    """The stored KV-capacity comparison (``infx.preflight.calibration``) as ``predicted/logged (status)``."""
    other = startup.other if startup is not None else {}
    if "kv_prediction" not in other:
        return ""
    pred, logged = other.get("kv_tokens_predicted"), other.get("kv_tokens_logged")
    return f"{pred if pred is not None else '?'}/{logged if logged is not None else '?'} ({other['kv_prediction']})"


def _may_be_alive(rec: GroupRecord) -> bool:
    """False only when the recorded runner process is known dead (same host, pid gone)."""
    import os
    import socket

    if rec.pid is None or rec.host != socket.gethostname():
        return True
    try:
        os.kill(rec.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class CostCell:
    """``(run dir, point id, point file) -> "$0.325/Mtok"`` in a cost table's ``tier`` (``infx.analysis.cost``,
    applied at read time)."""

    model: CostModel
    tier: str
    sku_of: SkuOf

    def __call__(self, rd: RunDir, pid: str, pf: PointFile) -> str:
        from infx.analysis.cost import inputs_of_result, point_cost

        result = rd.read_result(pid)
        if result is None:
            return ""
        manifest = rd.read_manifest()
        runner = str(pf.point.get("runner", ""))
        gpn = manifest.gpus_per_node.get(runner) if manifest is not None else None
        pc = point_cost(inputs_of_result(pf.point, result, gpn), self.model, self.tier, sku_of=self.sku_of)
        v = pc.cost()
        return f"${v.value:,.4g}/Mtok" if v.value is not None else f"not priced: {v.reason}"[:60]


def cost_cell(tier: str | None = None) -> CostCell | None:
    """The cost column of the workspace's cost table; None, with a warning, when the table cannot be read
    (status still reports)."""
    from infx.analysis.cost import sku_resolver
    from infx.analysis.costmodel import load_cost_model
    from infx.diagnostics import warn

    try:
        model = load_cost_model()
        sku_of = sku_resolver()
    except InfxError as exc:
        for d in exc.diagnostics:
            warn(Diagnostic(d.message, d.file, d.line, d.col, d.path, "warning"))
        return None
    return CostCell(model, model.tier(tier), sku_of)  # an unknown --tier is the caller's bad input (exit 2)
