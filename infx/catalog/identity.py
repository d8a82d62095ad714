"""What a catalog entry serves and on which runner: the fields a master entry and every matrix point
expanded from it (:class:`infx.matrix.point.Point`) both begin with. A module of its own so that
readers of points do not import (and build) the whole catalog schema."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EntryIdentity(BaseModel):
    """The leading fields of a master entry and of a matrix point. No configuration of its own: each
    subclass brings its model config, and these fields come first in its field order."""

    image: str
    model: str
    model_prefix: str = Field(alias="model-prefix")
    precision: str
    framework: str
    runner: str
