"""Runs inside the eval virtual environment (``.venv-eval``, lm-eval[api] pinned): ``python lmeval_main.py
CONFIG.json``. It imports lm-eval only, never infx (the two live in different environments).

It calls lm-eval's Python API (``simple_evaluate``) with a task manager that, for the shipped offline task,
skips lm-eval's 14k built-in task YAMLs (``include_defaults=False``: half the start-up), and saves the
results and samples with lm-eval's own ``EvaluationTracker`` (the same ``results_<ts>.json`` /
``samples_<task>_<ts>.jsonl`` files the lm-eval CLI writes, which InferenceX's scripts read).

Chat replies whose ``content`` is empty are read from ``reasoning_content`` (or ``reasoning``), as
InferenceX's lm-eval patch does for reasoning models.

On failure it writes ``error.json`` (``{"kind", "message"}``) into the output directory and exits 1.
Kinds: ``unknown-task``, ``hub-unreachable``, ``server``, ``internal``.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any


def _patch_parsing() -> None:
    """Reasoning-only chat replies are read from ``reasoning_content``/``reasoning``; a reply without
    ``choices`` (an empty or malformed body) raises, so lm-eval retries it and the run fails instead of
    scoring an empty answer (lm-eval alone turns such a body into "" and a complete, wrong score)."""
    from lm_eval.models import openai_completions as oc

    def checked(outputs: Any) -> list[Any]:
        outs = outputs if isinstance(outputs, list) else [outputs]
        for out in outs:
            if not isinstance(out, dict) or not isinstance(out.get("choices"), list) or not out["choices"]:
                raise ValueError(f"the server returned no completion (body: {str(out)[:120]!r})")
        return outs

    chat_parse = oc.LocalChatCompletion.parse_generations

    def chat_parse_generations(self: Any, outputs: Any, **kwargs: Any) -> Any:
        for out in checked(outputs):
            for choice in out["choices"]:
                msg = choice.get("message") if isinstance(choice, dict) else None
                if isinstance(msg, dict) and not msg.get("content"):
                    alt = msg.get("reasoning_content") or msg.get("reasoning")
                    if alt:
                        msg["content"] = alt
        return chat_parse(self, outputs, **kwargs)

    completions_parse = oc.LocalCompletionsAPI.parse_generations

    def completions_parse_generations(outputs: Any, **kwargs: Any) -> Any:
        checked(outputs)
        return completions_parse(outputs, **kwargs)

    oc.LocalChatCompletion.parse_generations = chat_parse_generations
    oc.LocalCompletionsAPI.parse_generations = staticmethod(completions_parse_generations)


def _error(out: Path, kind: str, message: str) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "error.json").write_text(json.dumps({"kind": kind, "message": message[:2000]}))
    print(f"lm-eval: {kind}: {message.splitlines()[0] if message else ''}", file=sys.stderr)
    return 1


def _is_hub_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        name = type(e).__name__
        text = str(e)
        if (name in ("ConnectionError", "OfflineModeIsEnabled", "LocalEntryNotFoundError", "HfHubHTTPError",
                     "DatasetNotFoundError")
                or "Couldn't reach" in text or "offline mode" in text.lower()):
            return True
        e = e.__cause__ or e.__context__
    return False


def main(config_path: str) -> int:
    cfg = json.loads(Path(config_path).read_text())
    out = Path(cfg["output_path"])
    try:
        import lm_eval
        from lm_eval.loggers import EvaluationTracker
        from lm_eval.tasks import TaskManager
    except ImportError as exc:
        return _error(out, "internal", f"lm-eval is not installed in {sys.prefix}: {exc}")
    _patch_parsing()
    tm = TaskManager(include_path=cfg.get("include_path"), include_defaults=cfg.get("include_defaults", False))
    task = cfg["task"]
    if task not in tm.all_tasks:
        return _error(out, "unknown-task", f"lm-eval has no task {task!r}")
    tracker = EvaluationTracker(output_path=str(out))
    try:
        results = lm_eval.simple_evaluate(
            model=cfg["model_type"], model_args=cfg["model_args"], tasks=[task], num_fewshot=cfg.get("num_fewshot"),
            limit=cfg.get("limit"), log_samples=True, evaluation_tracker=tracker,
            apply_chat_template=cfg.get("apply_chat_template", False),
            fewshot_as_multiturn=cfg.get("fewshot_as_multiturn", False), gen_kwargs=cfg.get("gen_kwargs"),
            task_manager=tm, random_seed=0, numpy_random_seed=1234, torch_random_seed=1234,
            fewshot_random_seed=1234)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if _is_hub_error(exc):
            return _error(out, "hub-unreachable", f"{type(exc).__name__}: {exc}")
        return _error(out, "server", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
    if results is None:
        return _error(out, "internal", "lm-eval returned no results")
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=samples[name])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
