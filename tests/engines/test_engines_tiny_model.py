"""The tiny model builder: deterministic bytes, the promised shapes, a working tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

from infx.engines import tiny_model as tm


def _tree(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def test_rebuild_is_byte_identical(tmp_path: Path) -> None:
    a = tm.build_tiny_model(tmp_path / "a")
    b = tm.build_tiny_model(tmp_path / "b")
    ta, tb = _tree(a), _tree(b)
    assert set(ta) == {"config.json", "generation_config.json", "model.safetensors", "special_tokens_map.json",
                       "tokenizer.json", "tokenizer_config.json", tm.STAMP_FILE}
    assert ta == tb
    # a few MB: ~1.7 M bf16 parameters
    assert 3_000_000 < len(ta["model.safetensors"]) < 4_000_000


def test_rebuild_in_place_replaces_and_matches(tmp_path: Path) -> None:
    d = tm.build_tiny_model(tmp_path / "m")
    before = _tree(d)
    (d / "config.json").write_text("{}")  # damage it
    tm.build_tiny_model(d)
    assert _tree(d) == before


def test_config_and_weights_match_the_spec(tiny_model_dir: Path) -> None:
    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
            cfg["head_dim"], cfg["intermediate_size"], cfg["vocab_size"]) == (256, 2, 4, 2, 64, 512, 1024)
    assert cfg["tie_word_embeddings"] is False
    raw = (tiny_model_dir / "model.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    names = [k for k in header if k != "__metadata__"]
    assert names == sorted(names)
    params = 0
    for k in names:
        shape = header[k]["shape"]
        assert header[k]["dtype"] == "BF16"
        size = 1
        for s in shape:
            size *= s
        params += size
    assert 1_600_000 < params < 1_800_000
    assert header["lm_head.weight"]["shape"] == [1024, 256]


def test_tokenizer_specials_and_chat_template(tiny_model_dir: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    assert tok.get_vocab_size() == 1024
    ids = {s: tok.token_to_id(s) for s in tm.SPECIALS}
    assert all(i is not None for i in ids.values())
    text = "write a short function that returns 42"
    enc = tok.encode(text)
    assert tok.decode(enc.ids) == text
    assert len(enc.ids) < len(text)  # BPE merged something
    tcfg = json.loads((tiny_model_dir / "tokenizer_config.json").read_text())
    assert tcfg["eos_token"] == "<|im_end|>" and tcfg["pad_token"] == "<|endoftext|>"
    gen = json.loads((tiny_model_dir / "generation_config.json").read_text())
    assert gen["eos_token_id"] == ids["<|im_end|>"]

    import jinja2

    rendered = jinja2.Environment().from_string(tcfg["chat_template"]).render(
        messages=[{"role": "system", "content": "be brief"},
                  {"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        add_generation_prompt=True,
    )
    assert rendered == "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_ensure_reuses_current_build(tmp_path: Path) -> None:
    d = tm.ensure_tiny_model(tmp_path / "m")
    mtime = (d / "model.safetensors").stat().st_mtime_ns
    assert tm.is_current(d)
    tm.ensure_tiny_model(d)
    assert (d / "model.safetensors").stat().st_mtime_ns == mtime
    stamp = json.loads((d / tm.STAMP_FILE).read_text())
    stamp["builder_version"] = "0"
    (d / tm.STAMP_FILE).write_text(json.dumps(stamp))
    assert not tm.is_current(d)
    tm.ensure_tiny_model(d)
    assert tm.is_current(d)


def test_cli_build_tiny_model(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from infx.cli import _register_all, app

    _register_all()
    res = CliRunner().invoke(app, ["engine", "build-tiny-model", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "cli" / "model.safetensors").is_file()
