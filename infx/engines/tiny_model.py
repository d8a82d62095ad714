"""Build a tiny Llama-architecture model offline, byte-identical on every rebuild.

No model hub is reachable, so the embedded engine serves a model built here:

* a byte-level BPE tokenizer (vocab 1024) trained by ``tokenizers`` on a corpus generated from
  a fixed word list and a fixed seed, with specials ``<|endoftext|>`` (pad), ``<|im_start|>`` and
  ``<|im_end|>`` (EOS) and a ChatML chat template in ``tokenizer_config.json``;
* a Llama config (hidden 256, 2 layers, 4 heads, 2 KV heads, head dim 64, FFN 512, untied head,
  about 1.7 M parameters);
* weights drawn from numpy's legacy ``RandomState(seed)`` (stable across numpy versions), written
  as safetensors with sorted keys.

Only numpy, tokenizers and safetensors are used (no torch, no transformers ``save_pretrained``), so
the files are the same bytes on every rebuild. :func:`ensure_tiny_model` reuses a directory whose
stamp matches :data:`BUILDER_VERSION`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infx import atomic

if TYPE_CHECKING:  # numpy is imported where the weights are built, not at import time
    from numpy.typing import ArrayLike

BUILDER_VERSION = "2"
STAMP_FILE = "infx-tiny-model.json"
SEED = 20261130
SERVED_NAME = "tinyllama"

VOCAB_SIZE = 1024
HIDDEN = 256
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
FFN = 512
MAX_POSITIONS = 8192
INIT_STD = 0.02

PAD, BOS_EOS_START, EOS = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIALS = [PAD, BOS_EOS_START, EOS]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] is iterable %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# A fixed word list: everyday English plus the vocabulary of coding sessions, so that both
# chat-like and agentic prompts tokenize into reasonably short sequences.
_WORDS = [
    "the", "of", "and", "to", "in", "is", "that", "it", "for", "on", "with", "as", "was", "at", "by", "be", "this",
    "are", "from", "or", "have", "an", "not", "but", "they", "which", "you", "one", "all", "were", "we", "when",
    "there", "can", "more", "if", "out", "so", "what", "up", "about", "into", "has", "them", "some", "would", "other",
    "than", "then", "its", "only", "time", "could", "new", "these", "two", "may", "first", "any", "like", "now", "my",
    "such", "make", "over", "our", "even", "most", "after", "also", "did", "many", "before", "must", "through",
    "back", "years", "where", "much", "your", "way", "well", "down", "should", "because", "each", "just", "those",
    "people", "how", "too", "little", "state", "good", "very", "world", "still", "own", "see", "men", "work", "long",
    "get", "here", "between", "both", "life", "being", "under", "never", "day", "same", "another", "know", "while",
    "last", "might", "great", "old", "year", "off", "come", "since", "against", "go", "came", "right", "used", "take",
    "three", "small", "large", "next", "early", "young", "important", "few", "public", "bad", "same", "able", "find",
    "give", "tell", "ask", "user", "system", "assistant", "model", "token", "request", "response", "server", "engine",
    "latency", "throughput", "batch", "function", "return", "value", "class", "import", "from", "def", "self", "none",
    "true", "false", "string", "list", "dict", "int", "float", "file", "path", "line", "error", "warning", "test",
    "build", "run", "start", "stop", "wait", "ready", "health", "metrics", "cache", "memory", "read", "write", "open",
    "close", "print", "format", "parse", "load", "save", "config", "option", "argument", "flag", "port", "host",
    "data", "table", "query", "index", "key", "map", "node", "graph", "edge", "tree", "sort", "search", "merge",
    "split", "join", "filter", "loop", "step", "range", "count", "sum", "min", "max", "mean", "total", "rate", "time",
    "second", "minute", "hour", "bench", "result", "code", "change", "patch", "diff", "commit", "branch", "review",
    "issue", "fix", "bug", "feature", "update", "version", "release", "please", "could", "you", "help", "me",
    "explain", "why", "this", "fails", "and", "how", "to", "fix", "it", "quickly", "thanks", "write", "a", "short",
    "function", "that", "returns", "the", "sum", "of", "numbers", "in", "a", "list", "agent", "tool", "call", "plan",
    "task", "goal", "context", "window", "prompt", "output", "input", "stream", "chunk", "event", "apple", "river",
    "mountain", "cloud", "stone", "light", "shadow", "garden", "window", "music", "story", "paper", "letter",
]

_PUNCT = [".", ",", "?", "!", ":", ";"]


def _corpus(n_lines: int = 6000) -> list[str]:
    """A deterministic corpus: sentences of words from the list, some numbers and code-ish lines."""
    import numpy as np

    rs = np.random.RandomState(SEED)
    words = sorted(set(_WORDS))
    lines: list[str] = []
    for _ in range(n_lines):
        n = int(rs.randint(4, 16))
        picks = [words[int(i)] for i in rs.randint(0, len(words), size=n)]
        kind = int(rs.randint(0, 10))
        if kind == 0:
            picks.insert(int(rs.randint(0, n)), str(int(rs.randint(0, 10000))))
        if kind == 1:
            line = f"def {picks[0]}_{picks[1]}({', '.join(picks[2:5])}):\n    return {picks[-1]}"
        elif kind == 2:
            line = f'{{"{picks[0]}": "{picks[1]}", "{picks[2]}": {int(rs.randint(0, 100))}}}'
        else:
            line = " ".join(picks)
            line = line[0].upper() + line[1:] + _PUNCT[int(rs.randint(0, len(_PUNCT)))]
        lines.append(line)
    return lines


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    if tok.get_vocab_size() != VOCAB_SIZE:  # pragma: no cover - guarded by a test
        raise RuntimeError(f"tokenizer vocab is {tok.get_vocab_size()}, expected {VOCAB_SIZE}")
    # Round-trip through json to get a stable, sorted-key, indented serialisation.
    return json.dumps(json.loads(tok.to_str()), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def _special_ids(tokenizer_json: str) -> dict[str, int]:
    data = json.loads(tokenizer_json)
    return {t["content"]: t["id"] for t in data["added_tokens"]}


def _tokenizer_config(ids: dict[str, int]) -> dict[str, Any]:
    return {
        "added_tokens_decoder": {
            str(ids[s]): {
                "content": s,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for s in SPECIALS
        },
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": EOS,
        "model_max_length": MAX_POSITIONS,
        "pad_token": PAD,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def _model_config(ids: dict[str, int]) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": ids[BOS_EOS_START],
        "eos_token_id": ids[EOS],
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": INIT_STD,
        "intermediate_size": FFN,
        "max_position_embeddings": MAX_POSITIONS,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pad_token_id": ids[PAD],
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_cache": True,
        "vocab_size": VOCAB_SIZE,
    }


def _weight_shapes() -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (VOCAB_SIZE, HIDDEN),
        "model.norm.weight": (HIDDEN,),
        "lm_head.weight": (VOCAB_SIZE, HIDDEN),
    }
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (HIDDEN,)
        shapes[p + "post_attention_layernorm.weight"] = (HIDDEN,)
        shapes[p + "self_attn.q_proj.weight"] = (HEADS * HEAD_DIM, HIDDEN)
        shapes[p + "self_attn.k_proj.weight"] = (KV_HEADS * HEAD_DIM, HIDDEN)
        shapes[p + "self_attn.v_proj.weight"] = (KV_HEADS * HEAD_DIM, HIDDEN)
        shapes[p + "self_attn.o_proj.weight"] = (HIDDEN, HEADS * HEAD_DIM)
        shapes[p + "mlp.gate_proj.weight"] = (FFN, HIDDEN)
        shapes[p + "mlp.up_proj.weight"] = (FFN, HIDDEN)
        shapes[p + "mlp.down_proj.weight"] = (HIDDEN, FFN)
    return shapes


def _to_bf16_bytes(arr: ArrayLike) -> bytes:
    """float32 -> bfloat16 (round to nearest even) as little-endian bytes; numpy has no bf16."""
    import numpy as np

    u = np.ascontiguousarray(arr, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def _weights_bytes() -> bytes:
    """Safetensors file (BF16, keys sorted), written by hand for byte-stable output.

    Layout: 8-byte little-endian header length, JSON header (sorted keys, space-padded to a
    multiple of 8), then the tensor data in header order.
    """
    import numpy as np

    rs = np.random.RandomState(SEED)
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, shape in sorted(_weight_shapes().items()):
        arr: np.ndarray[Any, np.dtype[np.floating[Any]]]
        if name.endswith("norm.weight"):
            arr = np.ones(shape, dtype=np.float32)
        else:
            arr = rs.standard_normal(size=shape) * INIT_STD
        blob = _to_bf16_bytes(arr)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    return len(head).to_bytes(8, "little") + head + b"".join(blobs)


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def model_files() -> dict[str, bytes]:
    """Every file of the model directory, name -> bytes (deterministic)."""
    tok_json = _tokenizer_json()
    ids = _special_ids(tok_json)
    gen = {"bos_token_id": ids[BOS_EOS_START], "eos_token_id": ids[EOS], "pad_token_id": ids[PAD]}
    special_map = {"eos_token": EOS, "pad_token": PAD}
    return {
        "config.json": _dumps(_model_config(ids)).encode(),
        "generation_config.json": _dumps(gen).encode(),
        "model.safetensors": _weights_bytes(),
        "special_tokens_map.json": _dumps(special_map).encode(),
        "tokenizer.json": tok_json.encode(),
        "tokenizer_config.json": _dumps(_tokenizer_config(ids)).encode(),
    }


def build_tiny_model(dir: str | Path) -> Path:
    """Build the tiny model into ``dir`` (created or replaced); return the directory path.

    The files are written to a sibling temporary directory and moved into place, so an
    interrupted build never leaves a half-written model behind.
    """
    out = Path(dir).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    files = model_files()
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    stamp = {"builder_version": BUILDER_VERSION, "seed": SEED, "files_sha256": digest.hexdigest()}
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, data in files.items():
            atomic.write_bytes(tmp / name, data)
        atomic.write_text(tmp / STAMP_FILE, _dumps(stamp))
        for f in tmp.iterdir():
            f.chmod(0o644)
        tmp.chmod(0o755)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def is_current(dir: str | Path) -> bool:
    """True when ``dir`` holds a complete model built by this builder version."""
    stamp = Path(dir) / STAMP_FILE
    try:
        data = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    if data.get("builder_version") != BUILDER_VERSION or data.get("seed") != SEED:
        return False
    return all((Path(dir) / name).is_file() for name in ("config.json", "model.safetensors", "tokenizer.json"))


def ensure_tiny_model(dir: str | Path) -> Path:
    """Reuse ``dir`` if it holds the current build, else build it.

    Several processes (test sessions, sweeps) may ask at once: an exclusive lock on a sibling
    ``.lock`` file makes one of them build while the others wait and then reuse its result.
    """
    import fcntl

    if is_current(dir):
        return Path(dir).resolve()
    out = Path(dir).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_current(out):
            return out
        return build_tiny_model(out)


def default_model_dir() -> Path:
    """``<workspace>/.infx/cache/tinyllama``: each workspace builds (byte-identical) files of its own."""
    from infx.workspace import current

    return current().cache_dir / "cache" / "tinyllama"
