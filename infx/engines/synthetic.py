"""Is a speculative-decoding launch's acceptance measured or forced? Forced ("synthetic") acceptance is read off
what the engine is given, for each engine that has such a knob:

* vLLM: ``synthetic_acceptance_length`` (with ``rejection_sample_method: synthetic``) in ``--speculative-config``;
* SGLang: the ``SGLANG_SIMULATE_ACC_LEN`` environment variable (the acceptance length itself);
* TRT-LLM: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (accepted draft tokens per step, so AL = value + 1),
  in the environment or in a file the launch writes (its extra-options YAML);
* ATOM: ``--spec-decode-acceptance-length`` (AL), or ``--spec-decode-acceptance-rate`` r with
  ``--num-speculative-tokens`` n (AL = 1 + r * n);
* a multi-node row given to srt-slurm: ``SYNTHETIC_ACCEPTANCE=true`` in a worker pool's additional-settings, which
  InferenceX's injector (``runners/inject_synthetic_acceptance.py``) writes into the recipe before launch, with
  ``SYNTHETIC_ACCEPTANCE_LENGTH`` or else the length from its reference table.

A point without speculative decoding gets no label; one with it is ``measured`` unless one of these is found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from infx.matrix.point import Point
from infx.metrics.sections import SpecDecodeLabel

VLLM = "vLLM synthetic_acceptance_length"
SGLANG = "SGLANG_SIMULATE_ACC_LEN"
TRT = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
ATOM = "ATOM --spec-decode-acceptance-length"
ATOM_RATE = "ATOM --spec-decode-acceptance-rate"
INJECTOR = "srt-slurm injector SYNTHETIC_ACCEPTANCE"
_AL_IN_TEXT = re.compile(r"synthetic_acceptance_length\"?\s*[:=]\s*\"?([0-9]+(?:\.[0-9]+)?)")
_TRT_IN_TEXT = re.compile(r"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS\"?\s*[:=]\s*\"?([0-9]+(?:\.[0-9]+)?)")
_SGL_IN_TEXT = re.compile(r"SGLANG_SIMULATE_ACC_LEN\"?\s*[:=]\s*\"?([0-9]+(?:\.[0-9]+)?)")


def _num(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _from_spec_config(argv: Sequence[str]) -> float | None | bool:
    """The forced length in a vLLM ``--speculative-config`` (True: forced, length unreadable; False: none)."""
    for i, a in enumerate(argv):
        value = None
        if a == "--speculative-config" and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith("--speculative-config="):
            value = a.split("=", 1)[1]
        if value is None:
            continue
        try:
            cfg = json.loads(value)
        except ValueError:
            m = _AL_IN_TEXT.search(value)
            if m:
                return float(m.group(1))
            continue
        if isinstance(cfg, dict) and ("synthetic_acceptance_length" in cfg
                                      or cfg.get("rejection_sample_method") == "synthetic"):
            al = cfg.get("synthetic_acceptance_length")
            return float(al) if isinstance(al, int | float) else True
    return False


def _flag(argv: Sequence[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def detect(argv: Sequence[str], env: Mapping[str, str], files: Iterable[str] = ()) -> tuple[float | None, str] | None:
    """(forced acceptance length or None when unreadable, the knob) found in one launch, or None."""
    spec = _from_spec_config(argv)
    if spec is True:
        return None, VLLM
    if spec is not False and spec is not None:
        return float(spec), VLLM
    al = _flag(argv, "--spec-decode-acceptance-length")
    if al is not None:
        return _num(al), ATOM
    rate = _flag(argv, "--spec-decode-acceptance-rate")
    if rate is not None:
        r, n = _num(rate), _num(_flag(argv, "--num-speculative-tokens"))
        return (1 + r * n if r is not None and n is not None else None), ATOM_RATE
    for a in argv:  # a script may hand the JSON over inside another argument
        m = _AL_IN_TEXT.search(a)
        if m:
            return float(m.group(1)), VLLM
    if SGLANG in env:
        return _num(env[SGLANG]), SGLANG
    if TRT in env:
        n = _num(env[TRT])
        return (None if n is None else n + 1), TRT
    for text in files:
        for rx, via, shift in ((_AL_IN_TEXT, VLLM, 0.0), (_SGL_IN_TEXT, SGLANG, 0.0), (_TRT_IN_TEXT, TRT, 1.0)):
            m = rx.search(text)
            if m:
                return float(m.group(1)) + shift, via
    return None


def _settings(point: Point) -> dict[str, str]:
    out: dict[str, str] = {}
    for w in (point.prefill, point.decode):
        for item in (w.additional_settings if w is not None else []):
            k, _, v = item.partition("=")
            out.setdefault(k.strip(), v.strip())
    return out


def label(point: Point, launches: Iterable[tuple[Sequence[str], Mapping[str, str], Iterable[str]]]) -> \
        SpecDecodeLabel | None:
    """The point's acceptance label from its rendered launch(es) (argv, env, file texts) and, for a multi-node
    row, the srt-slurm injector settings; None without speculative decoding."""
    if point.spec_decoding == "none":
        return None
    settings = _settings(point)
    if settings.get("SYNTHETIC_ACCEPTANCE", "").lower() == "true":
        return SpecDecodeLabel(method=point.spec_decoding, acceptance="synthetic",
                               synthetic_al=_num(settings.get("SYNTHETIC_ACCEPTANCE_LENGTH")), via=INJECTOR)
    for argv, env, files in launches:
        found = detect(argv, env, files)
        if found is not None:
            return SpecDecodeLabel(method=point.spec_decoding, acceptance="synthetic", synthetic_al=found[0],
                                   via=found[1])
    return SpecDecodeLabel(method=point.spec_decoding, acceptance="measured")


def label_of_launch(point: Point, launch: object) -> SpecDecodeLabel | None:
    """:func:`label` for a rendered :class:`~infx.engines.launch.Launch` or deployment (its roles' launches)."""
    roles = getattr(launch, "roles", None)
    launches = [r.launch for r in roles] if roles is not None else ([launch] if launch is not None else [])
    return label(point, [(getattr(lch, "argv", []), getattr(lch, "env", {}), getattr(lch, "files", {}).values())
                         for lch in launches])
