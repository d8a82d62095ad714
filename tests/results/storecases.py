"""Results directories for the store tests (synthetic numbers, not measurements): runs of fixed-length points
over chosen concurrencies, with the manifest facts the snapshot rules read (start, end, image, append-only)."""

from __future__ import annotations

import random
from pathlib import Path

from infx.results.layout import ImageRef, PointStatus, ResultsDir, write_point_outcome
from infx.results.synthetic import DIGEST, IMAGE, SEED_ARMS, Arm, make_manifest, make_point, make_result

DAY = 86_400.0
T0 = 1_790_000_000.0
IMAGE_B = IMAGE.replace("nightly", "nightly-b")
DIGEST_B = "sha256:" + "b" * 64


def write_run(root: Path, run_id: str, concs: tuple[int, ...], *, started: float, ended: float | None = 3600.0,
              append_only: bool = False, image: str = IMAGE, digest: str = DIGEST, tp: int = 4,
              arm: Arm = SEED_ARMS[1], scale: float = 1.0, seed: int = 0) -> ResultsDir:
    """One run measuring TP=``tp`` at ``concs`` (1024/1024) with ``image``; ``ended`` is seconds after the start
    (None: the sweep never finished)."""
    rd = ResultsDir(root)
    m = make_manifest(run_id, started_at=started).model_copy(update={
        "ended_at": None if ended is None else started + ended, "append_only": append_only,
        "images": [ImageRef(image=image, digest=digest)]})
    rd.write_manifest(m)
    rng = random.Random(seed)
    for c in concs:
        p = make_point(tp, c, isl=1024, osl=1024, image=image)
        r = make_result(p, arm, scale=scale, rng=rng, started_at=started + c)
        write_point_outcome(rd, run_id, p, PointStatus(state="done", started_at=r.started_at, ended_at=r.ended_at), r)
    return rd
