"""``infx repro POINT|BUNDLE``: rerun a point exactly, from its bundle alone, and judge the rerun against it.

The bundle (a point directory with its ``receipt.json``, possibly copied anywhere) is verified first. Its
payload carries what the launch needs: the catalog row, the launch as run (image, port-free argv, env with
secrets withheld, extra files), the load profile with its seed and warmup, and the telemetry settings. The
rerun is a new run (``repro-<point-id>-<UTC time>``) whose single launch group replays the recorded launch
(:func:`infx.sweep.rendering.replay_renderer`, also on Slurm nodes through ``plan.json``'s ``replay``), so no
recipe, catalog or workspace of the original is read; the launch's fingerprint (the config hash) must come
out equal to the recorded one before anything starts. ``--trials N`` is the sweep's own ``--trials`` (the
point measured N times on one launch, warmup before the first only); without it the rerun measures as many
trials as the original's load profile did. The verdict comes from :func:`infx.repro.verdict.compare_point`
(the shared noise-aware comparison) and is written to the run's ``repro-verdict.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from infx.repro.payload import BundlePayload
    from infx.repro.verdict import ReproVerdict
    from infx.sweep.driver import Prepared

EXIT_FAILED = 1


def prepare_rerun(bundle: Path, results: Path, run_id: str, backend: str = "local", trials: int | None = None
                  ) -> tuple[Prepared, BundlePayload]:
    """A prepared one-point sweep replaying ``bundle``'s launch into ``results/run_id`` (``trials``: the
    sweep's trials per point, overriding the recorded profile's)."""
    from infx.matrix.point import Point
    from infx.repro.diffenv import load_payload
    from infx.repro.replay import replay_launch
    from infx.results.receipt import verify_point_dir
    from infx.sweep.driver import RunRequest, prepare
    from infx.sweep.layout import RunDir
    from infx.sweep.profile import LoadProfile
    from infx.telemetry.session import TelemetryOptions
    from infx.workspace import current

    check = verify_point_dir(bundle)
    if not check.ok:
        raise InfxError(Diagnostic(f"refusing to rerun: {check.reason()}", str(bundle)))
    payload = load_payload(bundle)
    if payload.load is None:
        raise InfxError(Diagnostic("the bundle records no load profile", str(bundle)))
    point = Point.from_row(payload.point)
    load = LoadProfile.model_validate(payload.load.profile)
    if trials is not None:
        # the sweep's --trials; an adaptive profile keeps its ceiling only where it still lies above N
        load = load.model_copy(update={"trials": trials, "max_trials": load.max_trials
                                       if load.max_trials and load.max_trials > trials else None})
    replayed = replay_launch(payload, 8000)  # before anything is written: a launch that cannot replay stops here
    if replayed.fingerprint != payload.config_hash:
        raise InfxError(Diagnostic(f"the replayed launch's config hash {replayed.fingerprint[:16]} differs from "
                                   f"the recorded {str(payload.config_hash)[:16]} (a withheld secret has another "
                                   "value here?)", str(bundle)))
    rd = RunDir(results, run_id)
    rd.root.mkdir(parents=True, exist_ok=True)
    replay_file = rd.root / "replay" / f"{payload.point_id}.json"
    from infx.atomic import write_text

    write_text(replay_file, payload.model_dump_json(indent=1) + "\n")  # what `infx run-group` replays on a node
    req = RunRequest(config_files=[], runner_config="", config_keys=[payload.point_id], results=str(results),
                     run_id=run_id, workspace=str(current().root), backend=backend,  # type: ignore[arg-type]
                     preflight=False, load=load,
                     telemetry=payload.telemetry or TelemetryOptions(),
                     replay=str(replay_file), description=f"infx repro of {payload.run_id}/{payload.point_id}")
    prep = prepare(req, points=[point], render=lambda p: replay_launch(payload, 8000))
    return prep, payload


def register(app: typer.Typer) -> None:
    @app.command("repro")
    @exit_on_error
    def repro_cmd(
        source: Path = typer.Argument(..., help="A point directory or a copy of one (its bundle), or its "
                                      "receipt.json."),
        backend: str = typer.Option("local", "--backend", help="local | slurm"),
        trials: int | None = typer.Option(None, "--trials", help="Trials of the rerun (the sweep's --trials: "
                                             "one launch, N measured trials); default: as many as the original."),
        results: Path | None = typer.Option(None, "--results", help="Results directory for the rerun "
                                               "(default: the workspace's results/)."),
        margin: float | None = typer.Option(None, "--margin", help="Practical margin of the verdict "
                                               "(default 0.05, i.e. 5%, as `infx compare`)."),
        wait_timeout: float = typer.Option(3600.0, "--wait-timeout", help="slurm: seconds to wait for the job."),
        partition: str | None = typer.Option(None, "--partition", help="slurm partition"),
    ) -> None:
        """Rerun a point exactly (same argv, env, image, load profile, seed) from its bundle into a new run,
        then print the verdict against the original. Exit 1 when the rerun failed or reads better/worse."""
        from infx.analysis.compare import DEFAULT_MARGIN
        from infx.repro.diffenv import bundle_dir
        from infx.repro.verdict import compare_point
        from infx.sweep.cli import _submit_slurm, run_prepared_locally
        from infx.sweep.local import LocalStarter
        from infx.sweep.rendering import replay_renderer
        from infx.workspace import current

        if backend not in ("local", "slurm"):
            raise InfxError(Diagnostic(f"--backend must be local or slurm, not {backend!r}"))
        if margin is not None and not 0 < margin < 1:
            raise InfxError(Diagnostic(f"--margin must be in (0, 1), not {margin}", path=("--margin",)))
        if trials is not None and trials < 1:
            raise InfxError(Diagnostic(f"--trials must be >= 1, not {trials}", path=("--trials",)))
        src = bundle_dir(source)
        root = results or current().results_dir
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        run_id = f"repro-{_pid_of(src)}-{stamp}"
        prep, payload = prepare_rerun(src, root, run_id, backend, trials)
        n = prep.request.load.trials_for(payload.point_id)
        print(f"repro: {payload.run_id}/{payload.point_id} -> {prep.run_dir.root} ({n} trial(s), config hash "
              f"{str(payload.config_hash)[:16]})", file=sys.stderr)
        if backend == "slurm":
            rc = _submit_slurm(prep, True, wait_timeout, partition, None, None)
        else:
            rc = run_prepared_locally(prep, starter=LocalStarter(replay_renderer(prep.request.replay)))
        pdir = prep.run_dir.point_dir(payload.point_id)
        st = prep.run_dir.read_status(payload.point_id)
        if st is None or st.state != "done":
            print(f"repro: the rerun did not measure the point ({st.state if st else 'no status'}"
                  f"{': ' + st.reason if st and st.reason else ''})", file=sys.stderr)
            raise typer.Exit(EXIT_FAILED)
        verdict = compare_point(src, pdir, margin=DEFAULT_MARGIN if margin is None else margin)
        from infx.atomic import write_text

        out = prep.run_dir.root / "repro-verdict.json"
        write_text(out, verdict.model_dump_json(indent=2) + "\n")
        _print_verdict(verdict)
        print(f"verdict: {verdict.verdict}: {verdict.text} ({out})", file=sys.stderr)
        raise typer.Exit(rc or (EXIT_FAILED if verdict.verdict in ("better", "worse") else 0))


def _pid_of(bundle: Path) -> str:
    from infx.repro.diffenv import load_payload

    return load_payload(bundle).point_id


def _print_verdict(v: ReproVerdict) -> None:
    print(f"repro verdict (rerun vs original, {v.trials_rerun} vs {v.trials_original} trial(s), margin "
          f"±{v.margin:.0%}):", file=sys.stderr)
    for m in v.metrics:
        print(f"  {m.label}: {m.original} -> {m.rerun}: {m.text}", file=sys.stderr)
    for n in v.notes:
        print(f"  note: {n}", file=sys.stderr)
