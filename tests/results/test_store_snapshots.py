"""Snapshots per curve scope (issue 23): a frontier is drawn from one run's snapshot; a partial re-sweep never
tops itself up with an older run's points ("frankenlines"), unless it is declared append-only under the same
image; "latest" skips runs still in progress; ``--as-of`` gives the curve as it stood then. Both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from infx.analysis.dataset import frontier_membership
from infx.analysis.view import curves, load_view
from infx.diagnostics import InfxError
from infx.results.store import Store
from infx.results.store.snapshots import parse_date
from tests.results.storecases import DAY, DIGEST_B, IMAGE_B, T0, write_run

FULL = (1, 2, 4, 8, 16)
PARTIAL = (4, 8, 16)  # a re-sweep of 3 of the 5 concurrencies


def _view(store_url: str, root: Path, as_of: str | None = None):  # type: ignore[no-untyped-def]
    with Store(store_url) as st:
        st.ingest_dir(root)
        return load_view(st, as_of, gpus_per_node=lambda run, runner: 8)


def _sources(view) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """conc -> the run that measured the view's point there."""
    return {m.conc: m.measured_in for m in view.measured}


def test_a_partial_resweep_is_its_own_curve_never_a_frankenline(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "full", FULL, started=T0)
    write_run(root, "resweep", PARTIAL, started=T0 + DAY, scale=1.3, seed=1)
    view = _view(store_url, root)
    assert [s.runs for s in view.snapshots] == [("resweep",)]
    assert _sources(view) == {4: "resweep", 8: "resweep", 16: "resweep"}
    # every frontier point of every curve comes from one run
    on = frontier_membership(view.measured, norm="gpu")
    assert {m.measured_in for m, hit in zip(view.measured, on, strict=True) if hit} == {"resweep"}
    assert all(len({p.run_id for p in c.points}) == 1 for c in curves(view))


def test_as_of_gives_the_curve_as_it_stood_then(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "full", FULL, started=T0)
    write_run(root, "resweep", PARTIAL, started=T0 + DAY, scale=1.3, seed=1)
    with Store(store_url) as st:
        st.ingest_dir(root)
        by_run = load_view(st, "full", gpus_per_node=lambda run, runner: 8)
        between = st.as_of(_date(T0 + DAY / 2))
        by_date = load_view(st, between.label, gpus_per_node=lambda run, runner: 8)
        before = _date(T0 - DAY)
        with pytest.raises(InfxError, match="no complete snapshot"):
            load_view(st, before)
    for view in (by_run, by_date):
        assert [s.runs for s in view.snapshots] == [("full",)]
        assert _sources(view) == dict.fromkeys(FULL, "full")
    assert by_run.view_id == "as-of:full"


def test_append_only_chains_to_the_full_snapshot_under_the_same_image(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "full", FULL, started=T0)
    write_run(root, "more", (16, 32, 64), started=T0 + DAY, append_only=True, seed=1)
    write_run(root, "more2", (64, 128), started=T0 + 2 * DAY, append_only=True, seed=2)
    view = _view(store_url, root)
    assert [s.runs for s in view.snapshots] == [("more2", "more", "full")]
    assert _sources(view) == {1: "full", 2: "full", 4: "full", 8: "full", 16: "more", 32: "more", 64: "more2",
                              128: "more2"}  # the newest run's point wins where two measured a concurrency
    assert len({(m.run_id, m.workload, m.arm) for m in view.measured}) == 1  # one curve


def test_append_only_under_another_image_is_not_chained(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "full", FULL, started=T0)
    write_run(root, "more", (16, 32), started=T0 + DAY, append_only=True, image=IMAGE_B, digest=DIGEST_B, seed=1)
    view = _view(store_url, root)
    (snap,) = view.snapshots
    assert snap.runs == ("more",) and "exactly one image" in (snap.note or "")
    assert _sources(view) == {16: "more", 32: "more"}
    assert any("exactly one image" in n for n in view.notes)


def test_a_new_image_supersedes_the_curve_and_an_unfinished_run_is_not_latest(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "old", FULL, started=T0)
    write_run(root, "newimage", PARTIAL, started=T0 + DAY, image=IMAGE_B, digest=DIGEST_B, seed=1)
    write_run(root, "running", FULL, started=T0 + 2 * DAY, ended=None, seed=2)  # still sweeping
    view = _view(store_url, root)
    assert [s.runs for s in view.snapshots] == [("newimage",)]  # same curve scope: the image is not part of it
    assert set(_sources(view).values()) == {"newimage"}


def test_as_of_a_run_that_never_finished_or_a_bad_date_is_refused(store_url: str, tmp_path: Path) -> None:
    root = tmp_path / "results"
    write_run(root, "running", FULL, started=T0, ended=None)
    with Store(store_url) as st:
        st.ingest_dir(root)
        with pytest.raises(InfxError, match="has not finished"):
            st.as_of("running")
        with pytest.raises(InfxError, match="neither a date"):
            st.as_of("2026-13-45")


def test_dates_read_as_utc() -> None:
    assert parse_date("2026-11-30") == parse_date("2026-11-30T23:59:59.999999Z")
    assert parse_date("2026-11-30T12:00") == parse_date("2026-11-30T14:00+02:00")
    assert parse_date("resweep") is None


def _date(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
