"""The shipped offline GSM8K task: the project's copy of the real data (MIT, ``data/gsm8k/LICENSE``)
written as an lm-eval task YAML with absolute data paths (lm-eval resolves relative ``data_files``
against the working directory, not the YAML's folder).

The task is InferenceX's ``utils/evals/gsm8k.yaml`` (the upstream gsm8k v3.0 task plus an instruction
line, without "Question:" in the stop list, strict filter taking the last match). It is named ``gsm8k``
so lm-eval's results key, InferenceX's collection script and its thresholds all see ``gsm8k``; it reads
the same 1,319 test / 7,473 train problems as the hub's ``openai/gsm8k`` (config ``main``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from infx.atomic import write_text

LOCAL_TASKS = frozenset({"gsm8k"})


def data_dir() -> Path:
    return Path(str(resources.files("infx.evals") / "data" / "gsm8k"))


def gsm8k_task(data: Path | None = None) -> dict[str, object]:
    d = (data or data_dir()).resolve()
    return {
        "task": "gsm8k",
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"train": str(d / "train.jsonl"), "test": str(d / "test.jsonl")}},
        "output_type": "generate_until",
        "training_split": "train",
        "fewshot_split": "train",
        "test_split": "test",
        "doc_to_text": "Question: {{question}}\nEnd your response with the answer on the last line, formatted as: "
                       "#### [number]\nAnswer:",
        "doc_to_target": "{{answer}}",
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True,
                         "ignore_case": True, "ignore_punctuation": False,
                         "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
        "generation_kwargs": {"until": ["</s>", "<|im_end|>"], "do_sample": False, "temperature": 0.0},
        "repeats": 1,
        "num_fewshot": 5,
        "filter_list": [
            {"name": "strict-match", "filter": [
                {"function": "regex", "group_select": -1, "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                {"function": "take_first"}]},
            {"name": "flexible-extract", "filter": [
                {"function": "regex", "group_select": -1, "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                {"function": "take_first"}]},
        ],
        "metadata": {"version": 3.0},
    }


def write_task_dir(directory: Path, task: str = "gsm8k") -> Path:
    """Write the local task's YAML into ``directory`` (the ``include_path``); returns the YAML file."""
    if task not in LOCAL_TASKS:
        raise KeyError(task)
    out = directory / f"{task}.yaml"
    write_text(out, yaml.safe_dump(gsm8k_task(), sort_keys=False))
    return out


def test_size() -> int:
    with open(data_dir() / "test.jsonl", "rb") as fh:
        return sum(1 for _ in fh)
