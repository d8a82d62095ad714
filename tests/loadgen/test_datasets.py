"""Offline datasets: exact token lengths under the tokenizer; local ShareGPT files."""

from __future__ import annotations

import json

import pytest

from infx.diagnostics import InfxError
from infx.loadgen.datasets import load_tokenizer, random_prompts, sharegpt_prompts


def test_random_prompts_have_exact_lengths(tokenizer_dir):
    tok = load_tokenizer(tokenizer_dir)
    prompts = random_prompts(tok, 50, 200, 32, range_ratio=0.8, seed=5)
    assert len(prompts) == 50
    for p in prompts:
        assert len(tok.encode(p.text, add_special_tokens=True).ids) == p.input_tokens
        assert 160 <= p.input_tokens <= 200
        assert 25 <= p.output_tokens <= 32
    assert len({p.input_tokens for p in prompts}) > 5  # lengths actually vary
    again = random_prompts(tok, 50, 200, 32, range_ratio=0.8, seed=5)
    assert [p.text for p in again] == [p.text for p in prompts]
    other = random_prompts(tok, 5, 200, 32, seed=6)
    assert other[0].text != prompts[0].text
    fixed = random_prompts(tok, 10, 64, 8)
    assert {p.input_tokens for p in fixed} == {64} and {p.output_tokens for p in fixed} == {8}


def test_missing_tokenizer_is_a_diagnostic(tmp_path):
    with pytest.raises(InfxError, match="no tokenizer.json"):
        load_tokenizer(tmp_path)


def _conv(human: str, gpt: str) -> dict:
    return {"conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": gpt}]}


def test_sharegpt_jsonl_and_array(tokenizer_dir, tmp_path):
    tok = load_tokenizer(tokenizer_dir)
    items = [_conv(f"question number {i} about apples and pears", f"answer {i} " * 10) for i in range(6)]
    items.append(_conv("hi", "short"))  # too short: skipped
    jl = tmp_path / "d.jsonl"
    jl.write_text("\n".join(json.dumps(x) for x in items) + "\n")
    arr = tmp_path / "d.json"
    arr.write_text(json.dumps(items))
    a = sharegpt_prompts(jl, tok, 4, seed=1)
    b = sharegpt_prompts(arr, tok, 4, seed=1)
    assert [p.text for p in a] == [p.text for p in b]
    assert all("question number" in p.text for p in a)
    for p in a:
        assert p.input_tokens == len(tok.encode(p.text).ids)
        assert p.output_tokens >= 4
    fixed = sharegpt_prompts(jl, tok, 10, output_len=7)
    assert len(fixed) == 10 and {p.output_tokens for p in fixed} == {7}  # reused to fill


def test_sharegpt_bad_line_points_at_it(tokenizer_dir, tmp_path):
    tok = load_tokenizer(tokenizer_dir)
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps(_conv("a b c d e f", "g h i j k")) + "\n{oops\n")
    with pytest.raises(InfxError) as exc:
        sharegpt_prompts(f, tok, 1)
    d = exc.value.diagnostics[0]
    assert d.file == str(f) and d.line == 2 and "invalid JSON" in d.message
    g = tmp_path / "wrong.jsonl"
    g.write_text('{"messages": []}\n')
    with pytest.raises(InfxError, match="conversations"):
        sharegpt_prompts(g, tok, 1)
