"""A ``vllm serve`` argv as settings to compare: one value per flag, spelled one way.

* flag names: ``_`` and ``-`` are the same (vLLM's FlexibleArgumentParser takes both);
* ``--x=v`` is ``--x v``; the last occurrence wins, as in argparse;
* a bare flag is ``true``; a bare ``--no-x`` is ``x = false``;
* short forms ``-tp``, ``-pp``, ``-dp``, ``-cc`` (``--compilation-config``); ``-O<n>`` is its own key ``O``;
* dotted JSON arguments merge into their parent (``--attention_config.use_fp4_indexer_cache True`` is
  ``attention-config = {"use_fp4_indexer_cache": true}``; ``key+ v`` appends to a list);
* JSON values compare parsed; ``True``/``true``/``False``/``false`` are booleans, numbers are numbers;
* the model is the positional after ``serve``, or ``--model``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

SHORT = {"tp": "tensor-parallel-size", "pp": "pipeline-parallel-size", "dp": "data-parallel-size",
         "cc": "compilation-config", "ep": "enable-expert-parallel"}
#: Flags whose value is the model (compared against the catalog's model, never as a path).
MODEL_FLAGS = ("model",)


class Setting(BaseModel):
    """One normalised flag: its value and the argv indices of the tokens that set it."""

    key: str
    value: Any
    spelling: str  # the flag as last written (for display)
    tokens: list[int] = Field(default_factory=list)


class NormalisedArgv(BaseModel):
    model: str | None = None
    model_token: int | None = None
    settings: dict[str, Setting] = Field(default_factory=dict)
    positionals: list[str] = Field(default_factory=list)

    def get(self, key: str) -> Any:
        s = self.settings.get(key)
        return None if s is None else s.value


def canonical(name: str) -> str:
    return name.lstrip("-").replace("_", "-")


def scalar(text: Any) -> Any:
    """A token as a comparable value: JSON when it parses (objects, numbers), booleans either case."""
    if not isinstance(text, str):
        return text
    t = text.strip()
    if t in ("True", "true"):
        return True
    if t in ("False", "false"):
        return False
    if t[:1] in "{[-0123456789" and t:
        try:
            return json.loads(t)
        except ValueError:
            return text
    return text


def _set_path(root: dict[str, Any], keys: list[str], value: Any) -> None:
    node = root
    for k in keys[:-1]:
        nxt = node.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            node[k] = nxt
        node = nxt
    last = keys[-1]
    if last.endswith("+"):
        last = last[:-1]
        cur = node.get(last)
        node[last] = (cur if isinstance(cur, list) else []) + (value if isinstance(value, list) else [value])
    else:
        node[last] = value


def _merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge(dst[k], v)
        else:
            dst[k] = v


def normalise(argv: list[str]) -> NormalisedArgv:
    """Normalise a server argv (``vllm serve MODEL ...``, or any tail of it)."""
    out = NormalisedArgv()
    i = 0
    n = len(argv)
    if n >= 2 and argv[0] == "vllm" and argv[1] == "serve":
        i = 2
    elif n >= 1 and argv[0] == "serve":
        i = 1
    while i < n:
        tok = argv[i]
        if not tok.startswith("-") or tok == "-":
            if out.model is None and not out.settings:
                out.model, out.model_token = tok, i
            else:
                out.positionals.append(tok)
            i += 1
            continue
        idx = [i]
        name, eq, inline = tok.partition("=")
        if eq:
            raw: Any = inline
        elif i + 1 < n and not argv[i + 1].startswith("-"):
            raw = argv[i + 1]
            idx.append(i + 1)
            i += 1
        else:
            raw = None
        i += 1
        bare = name.lstrip("-")
        if name.startswith("-") and not name.startswith("--") and bare[:1] == "O" and bare[1:].isdigit():
            _put(out, "O", int(bare[1:]), name, idx)
            continue
        head, dot, rest = bare.partition(".")
        key = SHORT.get(head, canonical(head)) if not name.startswith("--") else canonical(head)
        if name.startswith("-") and not name.startswith("--"):
            key = SHORT.get(head, canonical(head))
        if dot:
            value = scalar(raw) if raw is not None else True
            cur = out.get(key)
            tree: dict[str, Any] = dict(cur) if isinstance(cur, dict) else {}
            _set_path(tree, rest.split("."), value)
            _put(out, key, tree, name, idx)
            continue
        if raw is None:
            if key.startswith("no-"):
                key, value = key[3:], False
            else:
                value = True
        else:
            value = scalar(raw)
        if key in MODEL_FLAGS:
            out.model, out.model_token = str(raw), idx[-1]
            continue
        prev = out.get(key)
        dotted_before = key in out.settings and "." in out.settings[key].spelling
        if isinstance(prev, dict) and isinstance(value, dict) and dotted_before:
            merged = dict(prev)
            _merge(merged, value)
            value = merged
        _put(out, key, value, name, idx)
    return out


def _put(out: NormalisedArgv, key: str, value: Any, spelling: str, idx: list[int]) -> None:
    old = out.settings.pop(key, None)
    tokens = (old.tokens if old is not None and isinstance(old.value, dict) and isinstance(value, dict)
              and "." in spelling else []) + idx
    out.settings[key] = Setting(key=key, value=value, spelling=spelling.split(".")[0] if "." in spelling else spelling,
                                tokens=tokens)


def equivalent(a: list[str], b: list[str]) -> bool:
    """Whether two argvs set the same things (model and settings)."""
    na, nb = normalise(a), normalise(b)
    return na.model == nb.model and {k: s.value for k, s in na.settings.items()} == \
        {k: s.value for k, s in nb.settings.items()}
