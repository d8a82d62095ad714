"""What every rule reads: both sides, the changed set, the pull request's labels and text, and the
preflight verdicts of the changed head points (computed once, shared by the rules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from infx.matrix.point import Point
from infx.review.models import ReviewRequest
from infx.review.side import Side, arm_of, match_key, row_line

ChangeKind = Literal["added", "changed", "removed", "unchanged"]


@dataclass(frozen=True)
class Change:
    kind: ChangeKind
    key: str
    head_pid: str | None
    base_pid: str | None


@dataclass
class PullRequest:
    number: int | None = None
    labels: list[str] = field(default_factory=list)
    body: str = ""
    comments: list[str] = field(default_factory=list)
    signoff: str | None = None
    repository: str | None = None


@dataclass
class ReviewContext:
    request: ReviewRequest
    base: Side
    head: Side
    pr: PullRequest
    changes: list[Change] = field(default_factory=list)
    workspace_root: Path = Path(".")  # the workspace on disk (where [recipes] path is relative to)
    _verdicts: dict[str, Any] | None = None
    _digests: dict[str, Any] | None = None
    _upstream: Any = None  # infx.review.upstream.Upstream, made by infx.review.upstream.state

    # ---- the changed set

    @property
    def changed(self) -> list[Change]:
        return [c for c in self.changes if c.kind in ("added", "changed")]

    @property
    def removed(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "removed"]

    def head_point(self, pid: str) -> Point:
        return self.head.points[pid][1]

    def changed_keys(self) -> list[str]:
        return sorted({c.key for c in self.changed} | {c.key for c in self.removed})

    def changed_arms(self) -> dict[str, list[str]]:
        """arm -> the changed head point ids of it (catalog order)."""
        out: dict[str, list[str]] = {}
        for c in self.changed:
            assert c.head_pid is not None
            out.setdefault(arm_of(c.key, self.head_point(c.head_pid)), []).append(c.head_pid)
        return out

    def arm_points(self, side: Side, arm: str) -> list[str]:
        return [pid for pid, (k, p) in side.points.items() if arm_of(k, p) == arm]

    def base_pid_of(self, head_pid: str) -> str | None:
        for c in self.changes:
            if c.head_pid == head_pid:
                return c.base_pid
        return None

    def row_line(self, pid: str) -> int:
        key, point = self.head.points[pid]
        return row_line(self.head.places[key], point)

    def head_file(self, key: str) -> str:
        return self.head.places[key].file

    def missing_images(self) -> set[str]:
        """Images the registry answered 'not found' for (only with --verify-images)."""
        return {i for i, d in image_digests(self).items() if not isinstance(d, str) and _is_missing(d)}

    # ---- preflight, once

    def verdicts(self) -> dict[str, Any]:
        """point-id -> PointVerdict for every changed head point (memory on the rendered launch)."""
        if self._verdicts is None:
            from infx.preflight.gate import PreflightOptions, preflight_points

            pids = [c.head_pid for c in self.changed if c.head_pid is not None]
            launches = {p: self.head.launch(p) for p in pids}
            good = {p: la for p, la in launches.items() if not isinstance(la, str)}
            cards = self.head.cards()
            points = [self.head_point(p) for p in pids]
            vs = preflight_points(points, launches=good, runners=self.head.runners, cards=cards,
                                  options=PreflightOptions(fanout=self.request.fanout),
                                  config_keys={p: self.head.points[p][0] for p in pids})
            self._verdicts = {v.point_id: v for v in vs}
        return self._verdicts


def compute_changes(base: Side, head: Side) -> list[Change]:
    """Head points that are new or whose launch fingerprint differs from base, the unchanged ones, and
    the removed base points. Points are matched on their identity without the image; a point whose row
    and launch sources are byte-identical on both sides is unchanged without rendering it."""
    by_match = {match_key(k, p): pid for pid, (k, p) in base.points.items()}
    out: list[Change] = []
    seen: set[str] = set()
    todo: list[tuple[str, str, str]] = []
    for pid, (key, point) in head.points.items():
        bpid = by_match.get(match_key(key, point))
        if bpid is None:
            out.append(Change("added", key, pid, None))
            continue
        seen.add(bpid)
        bpoint = base.points[bpid][1]
        if bpoint.to_row() == point.to_row() and base.source_digest(bpoint) == head.source_digest(point):
            out.append(Change("unchanged", key, pid, bpid))
        else:
            todo.append((pid, bpid, key))
    head.prefetch([t[0] for t in todo])
    base.prefetch([t[1] for t in todo])
    for pid, bpid, key in todo:
        hl, bl = head.launch(pid), base.launch(bpid)
        same = (not isinstance(hl, str) and not isinstance(bl, str) and hl.fingerprint == bl.fingerprint)
        out.append(Change("unchanged" if same else "changed", key, pid, bpid))
    for bpid, (key, _) in base.points.items():
        if bpid not in seen:
            out.append(Change("removed", key, None, bpid))
    changed_pids = [c.head_pid for c in out if c.kind == "added" and c.head_pid]
    head.prefetch(changed_pids)
    return out


def _changed_images(ctx: ReviewContext) -> list[str]:
    return sorted({ctx.head_point(c.head_pid).image for c in ctx.changed if c.head_pid})


def image_digests(ctx: ReviewContext) -> dict[str, Any]:
    """image -> registry digest (str) or the RegistryError, for every changed point's image; empty
    unless ``--verify-images`` (the only network the review does)."""
    if ctx._digests is None:
        ctx._digests = {}
        if ctx.request.verify_images:
            from infx.preflight.images import RegistryError, resolve_digest

            for image in _changed_images(ctx):
                try:
                    ctx._digests[image] = resolve_digest(image, mirrors=ctx.request.mirrors(), timeout=10.0)
                except RegistryError as exc:
                    ctx._digests[image] = exc
    return ctx._digests


def _is_missing(exc: Exception) -> bool:
    text = str(exc).lower()
    return "404" in text or "not found" in text or "manifest_unknown" in text
