from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory):
    """The tiny embedded model's real tokenizer (built offline in well under a second)."""
    from infx.engines.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("agentic-tiny"))


@pytest.fixture(scope="session")
def blocks(tokenizer_dir):
    from infx.agentic.prompts import BlockTokenizer

    return BlockTokenizer(tokenizer_dir)
