"""Block prompts: exact token counts under the real tokenizer; same id -> same block."""

from __future__ import annotations

from infx.agentic.prompts import BlockTokenizer


def test_word_tokens_concatenate_to_exact_lengths(blocks: BlockTokenizer):
    assert len(blocks.words) >= 100
    for n, ids in [(1, [0]), (64, [0]), (100, [0, 1]), (1000, list(range(16))), (300, [3])]:
        text = blocks.content(n, ids, salt="s", scope="t", filler_key="f")
        assert blocks.count(text) == n


def test_shared_ids_share_prefix_distinct_ids_do_not(blocks: BlockTokenizer):
    a = blocks.content(192, [1, 2, 3], salt="s", scope="t", filler_key="a")
    b = blocks.content(192, [1, 2, 4], salt="s", scope="t", filler_key="b")
    ta = blocks.tokenizer.encode(a, add_special_tokens=False).ids
    tb = blocks.tokenizer.encode(b, add_special_tokens=False).ids
    assert ta[:128] == tb[:128] and ta[128:] != tb[128:]
    # another salt or scope (another session of a local-scope trace) gives other blocks
    c = blocks.content(64, [1], salt="other", scope="t", filler_key="a")
    d = blocks.content(64, [1], salt="s", scope="t2", filler_key="a")
    assert len({a[: len(c)], c, d}) == 3


def test_filler_when_ids_do_not_cover_input(blocks: BlockTokenizer):
    a = blocks.content(130, [7], salt="s", scope="t", filler_key="r1")
    b = blocks.content(130, [7], salt="s", scope="t", filler_key="r2")
    assert blocks.count(a) == blocks.count(b) == 130
    assert a != b and a[:100] == b[:100]


def test_chat_template_boundaries(blocks: BlockTokenizer, tokenizer_dir):
    """In the tiny model's ChatML frame the content still costs exactly its word count."""
    tok = blocks.tokenizer
    frame = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
    overhead = len(tok.encode(frame.format(""), add_special_tokens=False).ids)
    for n in (1, 63, 64, 65, 500):
        text = blocks.content(n, [1, 2, 3, 4, 5, 6, 7, 8], salt="x", scope="y", filler_key="z")
        assert len(tok.encode(frame.format(text), add_special_tokens=False).ids) == overhead + n


def test_unusable_tokenizer_is_a_diagnostic(tmp_path):
    import pytest

    from infx.diagnostics import InfxError

    with pytest.raises(InfxError) as exc:
        BlockTokenizer(tmp_path / "missing")
    [d] = exc.value.diagnostics
    assert d.file == str(tmp_path / "missing") and "cannot load tokenizer" in d.message


def test_other_block_sizes_share_words(blocks: BlockTokenizer):
    b16 = blocks.with_block_size(16)
    assert b16.words is blocks.words and b16.block_size == 16 and blocks.block_size == 64
    text = b16.content(40, [1, 2, 3], salt="s", scope="t", filler_key="f")
    assert blocks.count(text) == 40
    assert b16.content(16, [1], salt="s", scope="t", filler_key="f") == text[: len(b16.block_text("s", "t", 1))]
