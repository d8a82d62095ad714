"""Run launch groups: launch once, await readiness, measure each point, stop; isolate failures; resume.

Rules:
* a failed launch marks only its group's points failed (classified reason + log tail);
* a failed point (error-rate gate, measurement error) does not stop its group;
* an engine that dies mid-group fails the point in flight and the group's remaining points;
* an engine that stops answering mid-stream without dying (a request got no byte for the stall timeout: the
  load generator ends the point there) fails the point in flight as ``engine-stalled``; the engine is stopped
  and the group's remaining points are left unmeasured (the same command measures them on a new launch);
* other groups go on; ``fail_fast`` stops *scheduling* new groups after a failure (a ``STOP`` file in the
  run directory, so Slurm jobs that have not started yet see it too) and never kills running work;
* resume: a point with ``status.json`` ``done``, the same launch fingerprint, the same load profile and a valid,
  complete ``result.json`` of the same point id is skipped; failed points are skipped unless ``rerun_failed``;
  anything else runs;
* a point's old ``status.json`` is removed before it is measured again and the new one is written after its
  ``result.json``: a result is only ever trusted under the status written for it;
* a result that is incomplete (the load stopped early) or issued no request fails the point;
* evals: a ``run-eval`` point is graded right after its throughput measurement on the same
  launch; an ``eval-only`` point skips the throughput run (its ``status.json`` then says whether the eval
  graded). The eval's outcome is ``eval-status.json`` (pass / accuracy-fail / failed with the reason): a
  dying eval fails only its eval, other points go on; resume skips graded evals (and failed ones unless
  ``rerun_failed``); an accuracy-fail makes the sweep end non-zero after everything ran;
* interruption (Ctrl-C, or SIGTERM: :mod:`infx.preemption`): the point in flight is written ``interrupted``
  with what it measured (``result.json`` says ``complete: false``, its records are kept), the engine is
  stopped, finished points stay, every file is written atomically; resume measures interrupted points again.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from infx import preemption
from infx.atomic import WriteFault, write_text
from infx.matrix.point import Point
from infx.metrics.result import BenchResult
from infx.metrics.run_config import BenchSettings
from infx.pointfiles import EVAL_FILE
from infx.results.receipt import discard_receipt, has_receipt
from infx.sweep import events as ev
from infx.sweep.bundle import finalise_point
from infx.sweep.grouping import LaunchGroup
from infx.sweep.interfaces import (
    EngineStarter,
    LaunchFailed,
    LiveStats,
    PointEvaluator,
    PointInterrupted,
    PointMeasurer,
    RunningEngine,
    SearchingMeasurer,
)
from infx.sweep.layout import (
    GroupRecord,
    PointStatus,
    RunDir,
    StartupSummary,
    read_eval_status,
    write_eval_status,
    write_model,
)
from infx.sweep.summary import SweepSummary

Decision = Literal["run", "done", "failed"]
STALLED = "stalled"  # the kind of a launch whose engine stopped answering without dying
STALLED_CLASS = "engine-stalled"  # its point's failure class


@dataclass
class SweepOptions:
    fail_fast: bool = False
    rerun_failed: bool = False
    ready_timeout: float = 900.0
    max_error_rate: float = 0.0  # failed/issued above this fails the point (its result is kept)
    relaunch_per_point: bool = False  # benchmark arm: no launch reuse
    log_tail_lines: int = 40
    load_key: str | None = None  # LoadProfile.key(): stored in each status; None: load not compared on resume
    search: bool = False  # capacity search per launch group instead of the listed points
    stop_at_saturation: bool = False  # skip an arm's higher concurrencies once one saturated


def decide(run_dir: RunDir, point_id: str, fingerprint: str, rerun_failed: bool = False,
           load_key: str | None = None, eval_only: bool = False) -> Decision:
    """What to do with one point given what is on disk. ``load_key``: the load profile this sweep
    measures with (None: not compared). ``eval_only``: the point has no throughput result to check."""
    status = run_dir.read_status(point_id)
    if status is None or status.launch_fingerprint != fingerprint or load_changed(status, load_key):
        return "run"
    if status.state == "done" and eval_only:
        return "done"
    if status.state == "done":
        if not has_receipt(run_dir.point_dir(point_id)):
            return "run"  # killed between its status and its receipt: the point was never final
        result = run_dir.read_result(point_id)
        ok = (result is not None and result.complete and result.metrics.issued > 0
              and (result.point is None or result.point.get("point-id") == point_id))
        return "done" if ok else "run"
    if status.state == "failed":
        return "run" if rerun_failed else "failed"
    return "run"  # "skipped" by a gate last time: the gate decides again


def load_changed(status: PointStatus, load_key: str | None) -> bool:
    """The point was measured (or failed) under another load profile, or one not recorded."""
    return load_key is not None and status.state != "skipped" and status.load_profile != load_key


def eval_done(point_dir: Path, fingerprint: str, limit: int | None, rerun_failed: bool) -> bool:
    """The point's eval needs no work: graded (pass or accuracy-fail) on this launch with the same limit,
    or failed before and failures are not retried."""
    st = read_eval_status(point_dir)
    if st is None or st.launch_fingerprint != fingerprint or st.protocol.limit != limit:
        return False
    if st.state == "failed":
        return not rerun_failed
    return (point_dir / EVAL_FILE).is_file()


Emit = Callable[[ev.Event], None]


def _noop(_: ev.Event) -> None:
    pass


PointFinal = Callable[[str], None]  # called with a point id once its files are final (receipt included)


def plan_resume(run_dir: RunDir, groups: Sequence[LaunchGroup], options: SweepOptions,
                evaluator: PointEvaluator | None = None, emit: Emit = _noop) -> tuple[list[LaunchGroup], SweepSummary]:
    """Drop points that need no work; returns the groups left to run (possibly with fewer points) and the
    summary of what was reused or failed before."""
    summary = SweepSummary()
    todo: list[LaunchGroup] = []
    reload: list[str] = []
    for group in groups:
        keep: list[Point] = []
        for point in group.points:
            st = run_dir.read_status(point.point_id)
            if (st is not None and st.launch_fingerprint == group.fingerprint
                    and load_changed(st, options.load_key)):
                reload.append(point.point_id)
            d = decide(run_dir, point.point_id, group.fingerprint, options.rerun_failed, options.load_key,
                       eval_only=point.eval_only and evaluator is not None)
            if d == "done" and eval_pending(run_dir, point, group.fingerprint, evaluator, options.rerun_failed):
                d = "run"  # measured, but its eval has not been graded on this launch yet
            if d == "done":
                summary.reused.append(point.point_id)
            elif d == "failed":
                summary.previously_failed.append(point.point_id)
            else:
                keep.append(point)
        if keep:
            todo.append(replace(group, points=keep))
    if reload:
        emit(ev.Note(f"{len(reload)} point(s) were measured with another load profile (requests per "
                     f"point, lengths; or one not recorded): measuring again: {', '.join(reload)}"))
    return todo, summary


def eval_pending(run_dir: RunDir, point: Point, fingerprint: str, evaluator: PointEvaluator | None,
                 rerun_failed: bool) -> bool:
    """The point asks for an eval that has not been graded on this launch yet."""
    if evaluator is None or not (point.run_eval or point.eval_only):
        return False
    return not eval_done(run_dir.point_dir(point.point_id), fingerprint, evaluator.limit, rerun_failed)


def mark_skipped(run_dir: RunDir, rejects: dict[str, tuple[Point, str, str]], emit: Emit = _noop,
                 on_final: PointFinal | None = None) -> list[str]:
    """Gate rejects (``point_id -> (point, fingerprint, reason)``): ``skipped``, never launched.
    A point that already holds a valid measurement keeps it (the gate never destroys data)."""
    now = time.time()
    out = []
    for pid, (point, fp, reason) in rejects.items():
        st = run_dir.read_status(pid)
        if st is not None and st.state == "done" and run_dir.read_result(pid) is not None:
            emit(ev.Note(f"point {pid}: rejected now ({reason}); its earlier result is kept"))
            continue
        run_dir.write_point(point, fp or None)
        cls, _, detail = reason.partition(": ")
        run_dir.write_status(
            pid, PointStatus(state="skipped", reason=detail or reason, failure_class=cls,
                             launch_fingerprint=fp or None, started_at=now, ended_at=now))
        emit(ev.PointFinished(pid, "skipped", reason))
        if on_final is not None:
            on_final(pid)
        out.append(pid)
    return out


class Orchestrator:
    def __init__(
        self,
        run_dir: RunDir,
        starter: EngineStarter,
        measurer: PointMeasurer,
        options: SweepOptions | None = None,
        emit: Emit | None = None,
        evaluator: PointEvaluator | None = None,
        on_final: PointFinal | None = None,
    ):
        self.run_dir = run_dir
        self.starter = starter
        self.measurer = measurer
        self.evaluator = evaluator
        self.options = options or SweepOptions()
        self.emit = emit or _noop
        self.on_final = on_final  # e.g. the store's ingest, once the point's receipt is written
        self.host = socket.gethostname()

    def plan(self, groups: Sequence[LaunchGroup]) -> tuple[list[LaunchGroup], SweepSummary]:
        """:func:`plan_resume` with this sweep's options."""
        return plan_resume(self.run_dir, groups, self.options, self.evaluator, self.emit)

    def mark_skipped(self, rejects: dict[str, tuple[Point, str, str]]) -> list[str]:
        """:func:`mark_skipped` into this sweep's events and final-point hook."""
        return mark_skipped(self.run_dir, rejects, self.emit, self.on_final)

    def _final(self, point: Point) -> None:
        if self.on_final is not None:
            self.on_final(point.point_id)

    # ----------------------------------------------------------------- running
    def run(self, groups: Sequence[LaunchGroup], skipped: Sequence[str] = ()) -> SweepSummary:
        """Run every group that still has work, in order (one engine at a time on this host)."""
        todo, summary = self.plan(groups)
        summary.skipped.extend(skipped)
        total_points = sum(len(g.points) for g in groups) + len(skipped)
        self.emit(ev.RunStarted(len(todo), total_points, sum(len(g.points) for g in todo),
                                len(summary.reused), len(summary.previously_failed), len(skipped)))
        try:
            for i, group in enumerate(todo):
                if self.run_dir.stop_file.exists():
                    rest = [pid for g in todo[i:] for pid in g.point_ids]
                    summary.not_run.extend(rest)
                    self.emit(ev.Note(f"fail-fast: {len(rest)} point(s) in {len(todo) - i} group(s) not started"))
                    break
                summary.merge(self.run_group(group))
        except KeyboardInterrupt:
            summary.interrupted = True
            self.emit(ev.Note("interrupted: finished points are kept; re-run the same command to resume"))
            raise
        finally:
            self.emit(ev.RunFinished(summary))
        return summary

    def run_group(self, group: LaunchGroup) -> SweepSummary:
        """One launch group (also the body of ``infx run-group`` on a Slurm node)."""
        if self.options.relaunch_per_point and len(group.points) > 1:
            out = SweepSummary()
            for point in group.points:
                single = replace(group, points=[point])
                out.merge(self._run_one_launch(single))
            return out
        return self._run_one_launch(group)

    def _run_one_launch(self, group: LaunchGroup) -> SweepSummary:
        summary = SweepSummary()
        record = GroupRecord(fingerprint=group.fingerprint, point_ids=group.point_ids, engine=group.engine,
                             image=group.image, argv=group.argv, started_at=time.time(), host=self.host,
                             pid=os.getpid())
        for point in group.points:
            self.run_dir.write_point(point, group.fingerprint)
        self.emit(ev.GroupStarted(group.fingerprint, group.point_ids, group.engine))
        log_path = self.run_dir.group_log(group.fingerprint)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        record.slurm_job = _slurm_job_id()
        write_model(self.run_dir.group_file(group.fingerprint), record)  # "running", for `infx status`
        engine: RunningEngine | None = None
        try:
            t0 = time.monotonic()
            try:
                summary.launches += 1
                try:
                    engine = self.starter.start(group, log_path)
                    facts = engine.wait_ready(self.options.ready_timeout)
                except (KeyboardInterrupt, LaunchFailed, WriteFault):
                    raise
                except Exception as exc:
                    raise LaunchFailed("launch-error", f"{type(exc).__name__}: {exc}",
                                       traceback.format_exc(limit=4)) from exc
            except LaunchFailed as exc:
                tail = exc.log_tail or (engine.log_tail(self.options.log_tail_lines) if engine else "")
                reason = f"launch-failed:{exc.kind}"
                self.emit(ev.GroupFailed(group.fingerprint, reason, exc.message))
                # launches that lost their port before this failure stay on record (never hidden)
                lost = StartupSummary(port_retries=exc.port_retries) if exc.port_retries else None
                record.startup = lost
                for point in group.points:
                    self._fail(point, group, reason, exc.message, tail, summary, facts=lost)
                    self._final(point)
                record.state, record.reason = "failed", reason
                self._trip_fail_fast()
                return summary
            if facts.startup_s is None:
                facts.startup_s = time.monotonic() - t0
            summary.startup_seconds += facts.startup_s
            record.startup = facts
            self.emit(ev.GroupReady(group.fingerprint, facts.startup_s, facts.engine_version))
            for r in facts.port_retries:
                self.emit(ev.Note(f"{r.role} lost port {r.port} ({r.message}); relaunched on port {r.new_port}"))
            dead: LaunchFailed | None = None
            if self.options.search:
                self._search(group, engine)
                record.state = "done"
                return summary
            saturated_at: int | None = None
            prev: tuple[float, float | None] | None = None
            for point in (sorted(group.points, key=lambda p: min(p.concs)) if self.options.stop_at_saturation
                          else group.points):
                if saturated_at is not None:
                    self._skip_saturated(point, group, saturated_at, summary)
                    self._final(point)
                    continue
                if dead is not None and dead.kind == STALLED:
                    summary.not_run.append(point.point_id)  # no status: the next run measures it
                    continue
                if dead is not None:
                    self._fail(point, group, f"engine-died:{dead.kind}", "engine died earlier in this group",
                               dead.log_tail, summary)
                    self._final(point)
                    continue
                dead = self._measure_point(point, group, engine, facts, summary)
                finalise_point(self.run_dir, point, group, engine, self.measurer, self.evaluator, self.emit)
                self._final(point)  # after the receipt: the hook's reader verifies it
                if self.options.stop_at_saturation and dead is None and point.point_id in summary.done:
                    sat, prev = self._saturated(point, prev)
                    if sat:
                        saturated_at = min(point.concs)
            self._settle_group(group, record, dead, summary)
            return summary
        except KeyboardInterrupt:
            record.state, record.reason = "interrupted", "interrupted"
            summary.interrupted = True
            raise
        finally:
            if engine is not None:
                try:
                    engine.stop()
                except Exception as exc:
                    self.emit(ev.Note(f"engine stop failed: {exc}"))
            record.ended_at = time.time()
            write_model(self.run_dir.group_file(group.fingerprint), record)
            self.emit(ev.GroupFinished(group.fingerprint, record.state, record.reason))

    def _settle_group(self, group: LaunchGroup, record: GroupRecord, dead: LaunchFailed | None,
                      summary: SweepSummary) -> None:
        """The group's final state once its points ran (``dead``: how its engine ended early, if it did)."""
        if dead is not None and dead.kind == STALLED:
            record.state, record.reason = "failed", STALLED_CLASS
            left = [p.point_id for p in group.points if p.point_id in summary.not_run]
            if left:
                self.emit(ev.Note(f"the engine stopped answering: stopped; {len(left)} point(s) of its launch "
                                  f"not measured ({', '.join(left)}): the same command measures them"))
        elif dead is not None:
            record.state, record.reason = "failed", f"engine-died:{dead.kind}"
        elif summary.failed:
            record.state = "partial"
        else:
            record.state = "done"
        if summary.failed:
            self._trip_fail_fast()

    def _eval_pending(self, point: Point, fingerprint: str) -> bool:
        return eval_pending(self.run_dir, point, fingerprint, self.evaluator, self.options.rerun_failed)

    def _measure_point(self, point: Point, group: LaunchGroup, engine: RunningEngine, facts: StartupSummary,
                       summary: SweepSummary) -> LaunchFailed | None:
        """Measure one point; returns the engine's failure when it died during the point."""
        if self.evaluator is not None and point.eval_only:
            return self._eval_only_point(point, group, engine, facts, summary)
        if (self.evaluator is not None and point.run_eval
                and decide(self.run_dir, point.point_id, group.fingerprint, False, self.options.load_key) == "done"):
            summary.reused.append(point.point_id)  # throughput kept; only the eval runs
            return self._eval_point(point, group, engine, summary)
        dead = self._measure_throughput(point, group, engine, facts, summary)
        if (dead is None and self.evaluator is not None and point.run_eval
                and point.point_id in summary.done):
            return self._eval_point(point, group, engine, summary)
        return dead

    def _eval_point(self, point: Point, group: LaunchGroup, engine: RunningEngine,
                    summary: SweepSummary) -> LaunchFailed | None:
        """Grade one point on the running engine; ``eval-status.json`` records the outcome."""
        from infx.evals.protocol import EVAL_STATUS_FILE

        assert self.evaluator is not None
        pid = point.point_id
        pdir = self.run_dir.point_dir(pid)
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / EVAL_STATUS_FILE).unlink(missing_ok=True)
        discard_receipt(pdir)  # the point's files change: its receipt is written again after the eval
        self.emit(ev.Note(f"point {pid}: accuracy eval"))
        try:
            st = self.evaluator.evaluate(point, engine, pdir, group.fingerprint)
        except (KeyboardInterrupt, WriteFault):  # a full or read-only volume stops the sweep: no point can be kept
            raise
        except Exception as exc:  # an evaluator bug must not take the sweep down
            from infx.evals.protocol import EvalProtocol, EvalStatus

            st = EvalStatus(state="failed", reason=f"{type(exc).__name__}: {exc}", failure_class="eval-error",
                            protocol=EvalProtocol(), launch_fingerprint=group.fingerprint,
                            log_tail=traceback.format_exc(limit=6)[-4000:], started_at=time.time(),
                            ended_at=time.time())
        dead = engine.failure()
        if dead is not None:
            tail = dead.log_tail or engine.log_tail(self.options.log_tail_lines)
            dead = LaunchFailed(dead.kind, dead.message, tail)
            st = st.model_copy(update={"state": "failed", "failure_class": f"eval-engine-died:{dead.kind}",
                                       "reason": dead.message or "the engine died during the eval",
                                       "log_tail": tail[-8000:], "verdict": None})
        write_eval_status(pdir, st)
        if st.state == "failed":
            summary.eval_failed.append(pid)
        elif st.state == "accuracy-fail":
            summary.accuracy_failed.append(pid)
        self.emit(ev.EvalFinished(pid, st.state, st.reason))
        return dead

    def _eval_only_point(self, point: Point, group: LaunchGroup, engine: RunningEngine, facts: StartupSummary,
                         summary: SweepSummary) -> LaunchFailed | None:
        """An eval-only point: no throughput run; its status says whether the eval graded."""
        pid = point.point_id
        self.run_dir.clear_status(pid)
        self.emit(ev.PointStarted(pid, point.eval_conc or min(point.concs)))
        started = time.time()
        dead = self._eval_point(point, group, engine, summary)
        st = read_eval_status(self.run_dir.point_dir(pid))
        if dead is not None:
            self._fail(point, group, f"engine-died:{dead.kind}", dead.message, dead.log_tail, summary,
                       started=started, facts=facts)
            return dead
        if st is None or st.state == "failed":
            self._fail(point, group, (st.failure_class if st else None) or "eval-error",
                       st.reason if st else "no eval status", st.log_tail if st else "", summary,
                       started=started, facts=facts)
            return None
        self.run_dir.write_status(pid, PointStatus(state="done", reason=st.reason,
                                                   launch_fingerprint=group.fingerprint,
                                                   load_profile=self.options.load_key, startup=facts,
                                                   started_at=started, ended_at=time.time()))
        summary.done.append(pid)
        self.emit(ev.PointFinished(pid, "done", None))
        return None

    def _measure_throughput(self, point: Point, group: LaunchGroup, engine: RunningEngine,
                            facts: StartupSummary, summary: SweepSummary) -> LaunchFailed | None:
        pid = point.point_id
        pdir = self.run_dir.point_dir(pid)
        pdir.mkdir(parents=True, exist_ok=True)
        # a result written from here on must never be trusted under the point's earlier status
        self.run_dir.clear_status(pid)
        self.emit(ev.PointStarted(pid, min(point.concs)))
        started = time.time()
        log_from = engine.log_size()

        def progress(stats: LiveStats) -> None:
            self.emit(ev.PointProgress(pid, stats))

        result: BenchResult | None = None
        error: str | None = None
        tb = ""
        try:
            assert self.measurer is not None, "a planning-only orchestrator measures nothing"
            result = self.measurer.measure(point, engine, pdir, progress)
        except KeyboardInterrupt as exc:
            self._interrupted(point, group, engine, log_from, started, facts,
                              exc.result if isinstance(exc, PointInterrupted) else None)
            raise
        except WriteFault:
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            tb = traceback.format_exc(limit=6)
        if preemption.requested():  # SIGTERM came while the point ran (a load that stops on its own, an engine
            # the signal reached too): whatever it measured is not a measurement, nor is it the point's failure
            self._interrupted(point, group, engine, log_from, started, facts, result)
            raise preemption.Preempted("SIGTERM")
        excerpt = engine.log_excerpt(log_from)
        self.run_dir.write_engine_log(pid, excerpt)
        dead = engine.failure()
        if dead is not None:
            tail = dead.log_tail or engine.log_tail(self.options.log_tail_lines)
            dead = LaunchFailed(dead.kind, dead.message, tail)
            self._fail(point, group, f"engine-died:{dead.kind}", dead.message or (error or ""), tail, summary,
                       started=started, facts=facts)
            return dead
        if result is None:
            self._fail(point, group, "measure-error", error or "", tb[-4000:], summary, started=started, facts=facts)
            return None
        self.run_dir.write_result(pid, result)
        m = result.metrics
        stalled = m.error_classes.get("timeout_stall", 0)
        if stalled:  # alive but not answering: the load generator stopped at the first stalled request
            cfg = result.config
            after = f" for {cfg.stall_timeout_s:g} s" if isinstance(cfg, BenchSettings) else ""
            detail = (f"the engine stopped answering mid-stream: {stalled} request(s) got no data{after} "
                      f"({m.completed}/{m.issued} completed); the engine was stopped")
            self._fail(point, group, STALLED_CLASS, detail, excerpt[-4000:], summary, started=started, facts=facts)
            return LaunchFailed(STALLED, detail, excerpt[-4000:])
        err_rate = (m.failed / m.issued) if m.issued else 1.0
        warn = "; ".join(f"{c.name}: {c.detail}" for c in result.checks if c.status != "ok")
        if not result.complete:
            agentic = result.extra.agentic
            why = (agentic.abort_reason if agentic is not None else None) or warn
            detail = (f"incomplete result: the load stopped early after {m.issued} request(s)"
                      + (f" ({why})" if why else ""))
            self._fail(point, group, "incomplete", detail, excerpt[-4000:], summary, started=started, facts=facts)
            return None
        if m.issued == 0:
            self._fail(point, group, "no-requests", "no request was issued: nothing was measured",
                       excerpt[-4000:], summary, started=started, facts=facts)
            return None
        if err_rate > self.options.max_error_rate:
            detail = f"{m.failed}/{m.issued} requests failed ({err_rate:.1%} > {self.options.max_error_rate:.1%})"
            if m.error_classes:
                detail += " " + ", ".join(f"{k}={v}" for k, v in sorted(m.error_classes.items()))
            self._fail(point, group, "error-rate", detail, excerpt[-4000:], summary, started=started, facts=facts)
            return None
        self.run_dir.write_status(pid, PointStatus(state="done", reason=warn, launch_fingerprint=group.fingerprint,
                                                   load_profile=self.options.load_key, startup=facts,
                                                   started_at=started, ended_at=time.time()))
        summary.done.append(pid)
        t = m.throughput
        self.emit(ev.PointFinished(pid, "done", None, t.request_per_s, t.output_tok_per_s))
        return None

    # ----------------------------------------------------------------- search, saturation
    def _search(self, group: LaunchGroup, engine: RunningEngine) -> None:
        """The capacity search on this launch: the group's lowest-concurrency point is the template;
        the result (every probe) goes to ``RUN/search/<fingerprint>.json``."""
        from infx import atomic

        if not isinstance(self.measurer, SearchingMeasurer):
            self.emit(ev.Note("this measurer cannot run a capacity search"))
            return
        template = min(group.points, key=lambda p: min(p.concs))
        res = self.measurer.search(template, engine)
        if res is None:
            self.emit(ev.Note(f"{template.point_id}: its scenario declares no such SLO tier; no search"))
            return
        out = self.run_dir.root / "search" / f"{group.fingerprint}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(out, {"template_point": template.point_id, **res.model_dump(mode="json")})
        self.emit(ev.Note(f"{template.point_id} (launch {group.fingerprint[:12]}): {res.text}"))

    def _saturated(self, point: Point, prev: tuple[float, float | None] | None
                   ) -> tuple[bool, tuple[float, float | None] | None]:
        """Whether the point just measured saturated its arm: the online detector on its records, or
        (against the previous concurrency) more load bought no throughput while TTFT grew."""
        from infx.metrics.slo import ladder_saturated, saturation
        from infx.records import RECORDS_FILE, read_records

        try:
            result = self.run_dir.results.read_result(self.run_dir.run_id, point.point_id)
        except Exception:
            return False, prev
        cur = (result.metrics.throughput.output_tok_per_s, result.metrics.ttft_ms.median)
        online = False
        path = self.run_dir.point_dir(point.point_id) / RECORDS_FILE
        if path.is_file():
            online = saturation(read_records(path)).saturated
        return online or (prev is not None and ladder_saturated(prev, cur)), cur

    def _skip_saturated(self, point: Point, group: LaunchGroup, at: int, summary: SweepSummary) -> None:
        reason = f"skipped: the arm saturated at concurrency {at} (--stop-at-saturation)"
        self.run_dir.write_status(point.point_id, PointStatus(state="skipped", failure_class="skipped-saturated",
                                                              reason=reason, launch_fingerprint=group.fingerprint,
                                                              load_profile=self.options.load_key))
        summary.skipped.append(point.point_id)
        self.emit(ev.PointFinished(point.point_id, "skipped", reason, None, None))

    # ----------------------------------------------------------------- helpers
    def _interrupted(self, point: Point, group: LaunchGroup, engine: RunningEngine, log_from: int, started: float,
                     facts: StartupSummary, result: BenchResult | None) -> None:
        """The point in flight when the sweep was interrupted: what it measured stays (``result.json`` with
        ``complete: false``, the records), its status says ``interrupted``; never final, never ingested."""
        pid = point.point_id
        how = "SIGTERM (preempted)" if preemption.requested() else "interrupted (Ctrl-C)"
        if result is not None:
            result = result.model_copy(update={"complete": False})
            self.run_dir.write_result(pid, result)
        self.run_dir.write_engine_log(pid, engine.log_excerpt(log_from))
        issued = f" after {result.metrics.issued} request(s)" if result is not None else ""
        self.run_dir.write_status(pid, PointStatus(
            state="interrupted", reason=f"{how} mid-point{issued}; re-run the same command to measure it again",
            failure_class="preempted" if preemption.requested() else "interrupted",
            launch_fingerprint=group.fingerprint, load_profile=self.options.load_key, startup=facts,
            started_at=started, ended_at=time.time()))
        self.emit(ev.PointFinished(pid, "interrupted", how))

    def _fail(self, point: Point, group: LaunchGroup, reason: str, detail: str, tail: str, summary: SweepSummary,
              started: float | None = None, facts: StartupSummary | None = None) -> None:
        """``reason`` is the classified failure (``failure_class``); ``detail`` the human-readable reason."""
        self.run_dir.write_status(point.point_id, PointStatus(
            state="failed", reason=detail or reason, failure_class=reason, log_tail=tail[-8000:],
            launch_fingerprint=group.fingerprint, load_profile=self.options.load_key, startup=facts,
            started_at=started or time.time(),
            ended_at=time.time()))
        summary.failed.append(point.point_id)
        self.emit(ev.PointFinished(point.point_id, "failed", reason))

    def _trip_fail_fast(self) -> None:
        if self.options.fail_fast:
            write_text(self.run_dir.stop_file, "fail-fast: a group failed; no new group starts\n")



def _slurm_job_id() -> str | None:
    job, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if job and task:
        return f"{job}_{task}"
    return os.environ.get("SLURM_JOB_ID")
