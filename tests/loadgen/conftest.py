from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """A local tokenizer directory: the tiny model's byte-level BPE tokenizer.json (no weights)."""
    from infx.engines.tiny_model import model_files

    d = tmp_path_factory.mktemp("tokenizer")
    (d / "tokenizer.json").write_bytes(model_files()["tokenizer.json"])
    return d
