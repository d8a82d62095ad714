"""Offline prompt sets: random prompts with exact token lengths, local ShareGPT JSONL.

Tokenizers are loaded with the ``tokenizers`` library from a local ``tokenizer.json`` (a model
directory or the file itself): no hub, no network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from tokenizers import Tokenizer

from infx.diagnostics import Diagnostic, InfxError


class Prompt(BaseModel):
    """One dataset entry: the text, its length under the tokenizer, the output to ask for."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    text: str
    input_tokens: int  # counted as the server will (special tokens the tokenizer adds included)
    output_tokens: int


def load_tokenizer(path: str | Path) -> Tokenizer:
    p = Path(path)
    f = p / "tokenizer.json" if p.is_dir() else p
    if not f.is_file():
        raise InfxError(Diagnostic(f"no tokenizer.json at {p} (give a local model directory or tokenizer.json file)",
                                   file=str(p)))
    try:
        return Tokenizer.from_file(str(f))
    except Exception as exc:
        raise InfxError(Diagnostic(f"cannot load tokenizer: {exc}", file=str(f))) from None


def _lengths(n: int, length: int, range_ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Uniform integers in [floor(length * range_ratio), length] (range_ratio 1 = fixed)."""
    lo = int(length * range_ratio)
    return rng.integers(lo, length + 1, size=n) if lo < length else np.full(n, length)


def _stable_words(tok: Tokenizer, vocab: np.ndarray) -> np.ndarray:
    """Tokens that decode to a space + letters and re-encode to themselves alone: any sequence
    of them tokenizes back to exactly the same ids (the pre-tokenizer splits at the spaces)."""
    texts = tok.decode_batch([[int(t)] for t in vocab], skip_special_tokens=True)
    cand = [(int(t), s) for t, s in zip(vocab, texts, strict=True)
            if len(s) > 1 and s[0] == " " and s[1:].isalpha() and s[1:].isascii()]
    if not cand:
        return np.empty(0, dtype=np.int64)
    enc = tok.encode_batch([s for _, s in cand], add_special_tokens=False)
    return np.array([t for (t, _), e in zip(cand, enc, strict=True) if e.ids == [t]], dtype=np.int64)


def _exact_text(
    tok: Tokenizer, vocab: np.ndarray, words: np.ndarray, content_len: int, rng: np.random.Generator
) -> tuple[str, int]:
    """A text whose encoding (without special tokens) has ``content_len`` tokens.

    First choice: a random sequence of "stable word" tokens (exact by construction, checked).
    Otherwise random ids decode to text that re-encodes differently (BPE merges across
    boundaries), so: decode, re-encode, trim or top up with fresh random ids, repeat."""
    if words.size >= 32:
        text = tok.decode([int(t) for t in rng.choice(words, size=content_len)], skip_special_tokens=True)
        n = len(tok.encode(text, add_special_tokens=False).ids)
        if n == content_len:
            return text, n
    ids = list(rng.choice(vocab, size=content_len))
    text = ""
    n = 0
    for _ in range(20):
        text = tok.decode(ids, skip_special_tokens=True)
        enc = tok.encode(text, add_special_tokens=False).ids
        n = len(enc)
        if n == content_len:
            return text, n
        ids = enc[:content_len] if n > content_len else enc + list(rng.choice(vocab, size=content_len - n))
    return text, n


def random_prompts(
    tok: Tokenizer, n: int, input_len: int, output_len: int, *, range_ratio: float = 1.0, seed: int = 0
) -> list[Prompt]:
    """``n`` random prompts; input lengths are exact under ``tok`` (special tokens the
    tokenizer adds, such as a BOS, included), drawn uniformly from [floor(L*r), L]."""
    if input_len < 1 or output_len < 1:
        raise ValueError("input and output lengths must be >= 1")
    rng = np.random.default_rng(seed)
    added = tok.get_added_tokens_decoder()
    vocab = np.array(sorted(set(range(tok.get_vocab_size(with_added_tokens=True))) - set(added)), dtype=np.int64)
    n_special = len(tok.encode("", add_special_tokens=True).ids)
    words = _stable_words(tok, vocab)
    in_lens = _lengths(n, input_len, range_ratio, rng)
    out_lens = _lengths(n, output_len, range_ratio, rng)
    prompts = []
    for i in range(n):
        content = max(int(in_lens[i]) - n_special, 1)
        text, got = _exact_text(tok, vocab, words, content, rng)
        prompts.append(Prompt(text=text, input_tokens=got + n_special, output_tokens=int(out_lens[i])))
    return prompts


def sharegpt_prompts(
    path: str | Path,
    tok: Tokenizer,
    n: int,
    *,
    output_len: int | None = None,
    seed: int = 0,
    max_input: int | None = None,
) -> list[Prompt]:
    """Prompts from a local ShareGPT-format file (JSONL, or one JSON array): each item has
    ``conversations: [{from: human|user, value}, {from: gpt|assistant, value}, ...]``. The first
    human turn is the prompt; the output length is the first reply's token count unless
    ``output_len`` is given. Items with < 4 prompt or output tokens are skipped."""
    p = Path(path)
    from infx import jsonio

    raw = jsonio.read_text(p, what="dataset")
    items: list[tuple[int, dict[str, Any]]] = []
    stripped = raw.lstrip()
    if stripped.startswith("["):
        data = jsonio.loads(raw, str(p))
        items = [(1, d) for d in data]
    else:
        for lineno, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            items.append((lineno, jsonio.loads(line, str(p), lineno)))
    pairs: list[tuple[str, str]] = []
    for lineno, item in items:
        conv = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(conv, list):
            raise InfxError(Diagnostic("expected an object with a 'conversations' list", file=str(p), line=lineno,
                                       col=1))
        human = next((c.get("value") for c in conv if isinstance(c, dict) and c.get("from") in ("human", "user")), None)
        reply = next((c.get("value") for c in conv if isinstance(c, dict) and c.get("from") in ("gpt", "assistant")),
                     None)
        if isinstance(human, str) and (isinstance(reply, str) or output_len):
            pairs.append((human, reply if isinstance(reply, str) else ""))
    if not pairs:
        raise InfxError(Diagnostic("no usable conversations in dataset", file=str(p)))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    out: list[Prompt] = []
    for idx in order:
        human, reply = pairs[int(idx)]
        n_in = len(tok.encode(human, add_special_tokens=True).ids)
        n_out = output_len if output_len else len(tok.encode(reply, add_special_tokens=False).ids)
        if n_in < 4 or n_out < 4 or (max_input is not None and n_in > max_input):
            continue
        out.append(Prompt(text=human, input_tokens=n_in, output_tokens=n_out))
        if len(out) == n:
            break
    if not out:
        raise InfxError(Diagnostic("every conversation was too short (< 4 tokens) or too long", file=str(p)))
    base = len(out)
    while len(out) < n:  # fewer usable items than requests: reuse in the same order
        out.append(out[(len(out) - base) % base])
    return out
