"""``infx eval``: grade any OpenAI-compatible endpoint with lm-eval (GSM8K offline by default)."""

from __future__ import annotations

import json
import math
import sys
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from infx.diagnostics import Diagnostic, InfxError, exit_on_error


def server_max_model_len(base_url: str, model: str) -> int | None:
    """vLLM lists ``max_model_len`` per model in ``/v1/models``: the context the server runs with."""
    from infx.evals.runner import api_root

    try:
        with urllib.request.urlopen(api_root(base_url) + "/models", timeout=10) as r:
            data = json.loads(r.read())
        for m in data.get("data") or []:
            if m.get("id") == model and isinstance(m.get("max_model_len"), int):
                return int(m["max_model_len"])
    except Exception:
        return None
    return None


def register(app: typer.Typer) -> None:
    @app.command("eval")
    @exit_on_error
    def eval_cmd(
        base_url: Annotated[str, typer.Option("--base-url", help="Server root, e.g. http://127.0.0.1:8000")],
        model: Annotated[str, typer.Option("--model", help="Served model name.")],
        out: Annotated[Path, typer.Option("--out", help="Directory for eval.json, eval-samples.jsonl, lm-eval/.")],
        task: Annotated[str, typer.Option("--task", help="lm-eval task; gsm8k is shipped and runs offline, "
                                          "others need the Hugging Face hub.")] = "gsm8k",
        limit: Annotated[int | None, typer.Option("--limit", help="Only the first N test questions.")] = None,
        num_concurrent: Annotated[int, typer.Option("--num-concurrent", help="Requests in flight.")] = 64,
        chat: Annotated[bool, typer.Option("--chat/--completions", help="Chat completions with the chat template "
                                           "and multi-turn few-shot (default), or plain completions.")] = True,
        isl: Annotated[int, typer.Option("--isl", help="Context rule: the benchmark's input length.")] = 8192,
        osl: Annotated[int, typer.Option("--osl", help="Context rule: the benchmark's output length.")] = 1024,
        model_max_len: Annotated[int | None, typer.Option("--model-max-len", help="The model's/server's max "
                                 "context (default: the server's max_model_len from /v1/models).")] = None,
        max_length: Annotated[int | None, typer.Option("--max-length", help="Eval context (default: "
                              "min(ISL+OSL+256, model max)).")] = None,
        max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Output budget per question "
                              "(default: ctx-4096 above 4096, else ctx//2; at most 16384).")] = None,
        num_fewshot: Annotated[int | None, typer.Option("--num-fewshot", help="Few-shot examples (default: "
                               "the task's, 5 for gsm8k).")] = None,
        model_prefix: Annotated[str | None, typer.Option("--model-prefix", help="Model card whose "
                                "eval-thresholds apply.")] = None,
        threshold: Annotated[float | None, typer.Option("--threshold", help="Pass mark for every filter "
                             "(default: model card, then the task default).")] = None,
        timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request.")] = 1800.0,
        max_retries: Annotated[int, typer.Option("--max-retries")] = 5,
    ) -> None:
        """Grade an endpoint: eval.json + per-question samples; exit 1 below the threshold or on failure."""
        from infx.evals.protocol import EvalProtocol, eval_context_length, output_budget
        from infx.evals.runner import EvalFailed, check_server, run_eval
        from infx.evals.tasks import LOCAL_TASKS, test_size
        from infx.evals.thresholds import judge, threshold_for

        for name, value, low in (("--limit", limit, 1), ("--num-concurrent", num_concurrent, 1),
                                 ("--max-length", max_length, 16), ("--max-tokens", max_tokens, 1),
                                 ("--num-fewshot", num_fewshot, 0), ("--model-max-len", model_max_len, 16)):
            if value is not None and value < low:
                raise InfxError(Diagnostic(f"{name} must be >= {low}, not {value}"))
        if limit is not None and task in LOCAL_TASKS and limit > test_size():
            raise InfxError(Diagnostic(f"--limit {limit} is more than the {test_size()} {task} test questions"))
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise InfxError(Diagnostic(f"--threshold must be within [0, 1], not {threshold}"))
        if not math.isfinite(timeout) or timeout <= 0:
            raise InfxError(Diagnostic(f"--timeout must be a positive number of seconds, not {timeout}"))
        if max_retries < 0:
            raise InfxError(Diagnostic(f"--max-retries must be >= 0, not {max_retries}"))
        if not task.strip():
            raise InfxError(Diagnostic("--task must name an lm-eval task, not be empty"))
        for name, value in (("--isl", isl), ("--osl", osl)):
            if value < 1:
                raise InfxError(Diagnostic(f"{name} must be >= 1, not {value}"))
        from infx.outpaths import check_output_dir

        check_output_dir(out, "--out")
        check_server(base_url)
        native = model_max_len or server_max_model_len(base_url, model)
        ctx = max_length or eval_context_length(isl, osl, native)
        protocol = EvalProtocol(task=task, endpoint="chat" if chat else "completions", apply_chat_template=chat,
                                fewshot_as_multiturn=chat, num_fewshot=num_fewshot, max_length=ctx,
                                max_tokens=max_tokens or output_budget(ctx), num_concurrent=num_concurrent,
                                timeout_s=timeout, max_retries=max_retries, limit=limit,
                                local_task=task in LOCAL_TASKS)
        print(f"eval: {task} on {base_url} ({model}): ctx {ctx}, max_tokens {protocol.max_tokens}, "
              f"{'chat' if chat else 'completions'}, {num_concurrent} in flight"
              + (f", first {limit} questions" if limit else ""), file=sys.stderr)
        meta = {"model": model, "infmax_model_prefix": model_prefix or "unknown", "conc": num_concurrent,
                "is_multinode": False, "framework": "unknown", "precision": "unknown", "hw": "unknown",
                "tp": 1, "ep": 1, "dp_attention": False, "isl": str(isl), "osl": str(osl)}
        try:
            result = run_eval(protocol, base_url, model, out, meta=meta, check=False)
        except EvalFailed as exc:
            print(f"eval failed ({exc.kind}): {exc.message}; log: {out / 'lm-eval.log'}", file=sys.stderr)
            raise typer.Exit(1) from None
        mark, source = (threshold, "--threshold") if threshold is not None else threshold_for(task, model_prefix)
        verdict = judge(result, mark, source)
        scores = ", ".join(f"{f.name} {f.score:.4f}" + (f" ±{f.stderr:.4f}" if f.stderr is not None else "")
                           for f in result.filters)
        state = "pass" if verdict.passed else "accuracy-fail"
        print(f"{task}: {scores} (n={result.n}, lm-eval {result.lm_eval_version}, {result.wall_s:.1f}s); "
              f"threshold {mark:g} ({source}): {state}", file=sys.stderr)
        print(f"wrote {out / 'eval.json'}", file=sys.stderr)
        raise typer.Exit(0 if verdict.passed else 1)
