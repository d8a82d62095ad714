"""``infx cards derive --recipe``: a model card seeded from an upstream recipe, marked with its source; with
a checkpoint directory, the checkpoint's files decide the memory facts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from infx.preflight.cards import load_model_card
from infx.preflight.recipe_card import card_from_recipe
from infx.recipes.source import RecipeRepo
from tests.recipes.helpers import CORPUS, REPO, needs_corpus

pytestmark = needs_corpus


def test_card_seeded_from_a_recipe_names_its_source_and_is_an_estimate(tmp_path: Path) -> None:
    out = tmp_path / "cards" / "models" / "dsv4pro.yaml"
    r = subprocess.run([sys.executable, "-m", "infx", "cards", "derive", "--recipe", "deepseek-ai/DeepSeek-V4-Pro",
                        "--recipes-repo", str(CORPUS), "--prefix", "dsv4pro", "--out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("# Seeded by `infx cards derive --recipe` from an upstream vLLM recipe")
    card = load_model_card(out)
    assert card.model == "deepseek-ai/DeepSeek-V4-Pro" and card.max_context == 1048576
    assert card.weights.estimate and card.weights.parameters == 1_600_000_000_000
    assert card.weights.source == "models/deepseek-ai/DeepSeek-V4-Pro.yaml:29"
    lines = (CORPUS / "models" / "deepseek-ai" / "DeepSeek-V4-Pro.yaml").read_text().splitlines()
    assert lines[28].strip().startswith("parameter_count:")
    assert any("upstream recipe models/deepseek-ai/DeepSeek-V4-Pro.yaml" in s for s in card.sources)
    assert card.weights.total_bytes("fp8") == 1_600_000_000_000 * 1.03


def test_checkpoint_index_decides_memory_and_the_recipe_fills_the_context(tmp_path: Path) -> None:
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80,
           "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256,
           "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 141_107_412_992},
                                                                       "weight_map": {}}))
    card = card_from_recipe(RecipeRepo(CORPUS), "meta-llama/Llama-3.3-70B-Instruct", prefix="llama70",
                            model_dir=tmp_path)
    assert card.weights.estimate is False
    assert card.weights.total_bytes("bf16", "meta-llama/Llama-3.3-70B-Instruct") == 141_107_412_992
    assert card.max_context and any("upstream recipe models/meta-llama/Llama-3.3-70B-Instruct.yaml" in s
                                    for s in card.sources)
