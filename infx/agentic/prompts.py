"""Prompts built from hash-id blocks, exact to the token under the served model's tokenizer.

The replay must make prefix caching see what it would see in production: two requests that share
a leading run of ``hash_ids`` must share exactly that many leading prompt tokens, and a request
recorded with ``in`` input tokens must arrive at the server as ``in`` prompt tokens.

Approach (decode/re-encode of arbitrary token ids does not round-trip under BPE, and the chat
endpoint takes text, so we never decode arbitrary ids):

1. From the tokenizer's vocabulary pick the *word tokens*: tokens whose text is a space followed by
   letters (``" the"``) and that encode back to exactly themselves. A byte-level / metaspace
   pre-tokenizer splits text at every space, so a string made of such words tokenizes to exactly
   one token per word, whatever the neighbours are.
2. A block is ``block_size`` words chosen by SHAKE-128 of ``(salt, scope, hash_id)``, so the same
   id always yields the same block text, and a different id (or salt) a different one.
3. A request's user message is its blocks' words concatenated and cut to ``in - overhead`` words,
   where ``overhead`` is the chat template's fixed token cost, measured against the server (a
   probe request's ``usage.prompt_tokens``) by the replay. Every replayed request's
   ``usage.prompt_tokens`` is compared with the recorded ``in``; mismatches are counted.

The whole conversation is sent as one user message (the chat template's prefix is constant, so the
token prefix shared by two requests is exactly the shared block prefix plus that constant).
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError

_WORD = re.compile(r"[A-Za-z]+")
MIN_WORD_TOKENS = 16


class BlockTokenizer:
    """Word tokens of one tokenizer and the deterministic blocks made from them."""

    def __init__(self, tokenizer_file: str | Path, block_size: int = 64):
        from tokenizers import Tokenizer

        path = Path(tokenizer_file)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            self.tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise InfxError(Diagnostic(f"cannot load tokenizer: {exc}", str(path))) from None
        self.path = path
        self.block_size = block_size
        self.words = self._word_tokens()
        if len(self.words) < MIN_WORD_TOKENS:
            raise InfxError(Diagnostic(
                f"tokenizer has only {len(self.words)} single-token words; "
                f"need {MIN_WORD_TOKENS} to build exact-length prompts", str(path)))
        self._blocks: dict[tuple[str, str, int], str] = {}
        self._unpack = struct.Struct(f"<{block_size}H").unpack
        self._check_block()

    def _word_tokens(self) -> list[str]:
        tok = self.tokenizer
        words: dict[str, None] = {}
        for i in range(tok.get_vocab_size()):
            text = tok.decode([i]).strip()
            if not _WORD.fullmatch(text):
                continue
            cand = " " + text
            if tok.encode(cand, add_special_tokens=False).ids == [i]:
                words.setdefault(cand)
        return sorted(words)

    def _check_block(self) -> None:
        idx = self.block_indices("check", "check", 0)
        text = "".join(self.words[i] for i in idx) + "".join(self.words[i] for i in idx[::-1])
        n = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        if n != 2 * len(idx):
            raise InfxError(Diagnostic(
                f"word tokens do not concatenate cleanly ({n} tokens for {2 * len(idx)} words)", str(self.path)))

    def block_indices(self, salt: str, scope: str, hash_id: int) -> list[int]:
        """``block_size`` word indices: SHAKE-128 of the key read as little-endian uint16s, modulo the
        number of words (bias below 1e-2 for a few hundred words; identical on every platform)."""
        raw = hashlib.shake_128(f"{salt}\x00{scope}\x00{hash_id}".encode()).digest(2 * self.block_size)
        n = len(self.words)
        return [v % n for v in self._unpack(raw)]

    def block_text(self, salt: str, scope: str, hash_id: int) -> str:
        """The full block's text (cached: long prompts are mostly whole blocks)."""
        key = (salt, scope, hash_id)
        got = self._blocks.get(key)
        if got is None:
            if len(self._blocks) > 100_000:
                self._blocks.clear()
            got = self._blocks[key] = "".join([self.words[i] for i in self.block_indices(salt, scope, hash_id)])
        return got

    def _part(self, salt: str, scope: str, hash_id: int, n: int) -> str:
        if n >= self.block_size:
            return self.block_text(salt, scope, hash_id)
        return "".join([self.words[i] for i in self.block_indices(salt, scope, hash_id)[:n]])

    def content(self, n_tokens: int, hash_ids: list[int], *, salt: str, scope: str, filler_key: str) -> str:
        """Text of exactly ``n_tokens`` word tokens: the blocks of ``hash_ids`` in order, then
        filler blocks unique to ``filler_key`` if the ids do not cover ``n_tokens``."""
        bs = self.block_size
        need = max(0, n_tokens)
        parts: list[str] = []
        covered = 0
        for hid in hash_ids:
            if covered >= need:
                break
            take = min(bs, need - covered)
            parts.append(self._part(salt, scope, hid, take))
            covered += take
        k = 0
        while covered < need:
            take = min(bs, need - covered)
            parts.append(self._part(salt, f"fill:{filler_key}", k, take))
            covered += take
            k += 1
        return "".join(parts)

    def with_block_size(self, block_size: int) -> BlockTokenizer:
        """The same word tokens cut into blocks of another size (traces may differ)."""
        if block_size == self.block_size:
            return self
        other = object.__new__(BlockTokenizer)
        other.__dict__.update(self.__dict__)
        other.block_size = block_size
        other._blocks = {}
        other._unpack = struct.Struct(f"<{block_size}H").unpack
        return other

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)
