"""``infx eval``: grade any OpenAI-compatible endpoint with lm-eval (GSM8K offline by default)."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import Diagnostic, InfxError, exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel

EVAL_OPTIONS = {"timeout_s": "--timeout"}


def _protocol() -> type[BaseModel]:
    from infx.evals.protocol import EvalProtocol

    return EvalProtocol


def _request() -> type[BaseModel]:
    from infx.evals.protocol import EvalRequest

    return EvalRequest


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


@exit_on_error
def eval_cmd(
    *,
    base_url: Annotated[str, typer.Option("--base-url", help="Server root, e.g. http://127.0.0.1:8000")],
    model: Annotated[str, typer.Option("--model", help="Served model name.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for eval.json, eval-samples.jsonl, lm-eval/.")],
    task: Annotated[str, typer.Option("--task", default_factory=ModelDefault(_request, "task"),
                                      help="lm-eval task; gsm8k is shipped and runs offline, others need the "
                                           "Hugging Face hub.")],
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N test questions.")] = None,
    num_concurrent: Annotated[int, typer.Option("--num-concurrent", default_factory=ModelDefault(
        _protocol, "num_concurrent"), help="Requests in flight.")],
    chat: Annotated[bool, typer.Option("--chat/--completions", help="Chat completions with the chat template "
                                       "and multi-turn few-shot (default), or plain completions.")] = True,
    isl: Annotated[int, typer.Option("--isl", default_factory=ModelDefault(_request, "isl"),
                                     help="Context rule: the benchmark's input length.")],
    osl: Annotated[int, typer.Option("--osl", default_factory=ModelDefault(_request, "osl"),
                                     help="Context rule: the benchmark's output length.")],
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
    timeout: Annotated[float, typer.Option("--timeout", default_factory=ModelDefault(_protocol, "timeout_s"),
                                           help="Seconds per request.")],
    max_retries: Annotated[int, typer.Option("--max-retries", default_factory=ModelDefault(
        _protocol, "max_retries"))],
) -> None:
    """Grade an endpoint: eval.json + per-question samples; exit 1 below the threshold or on failure."""
    from infx.evals.protocol import EvalRequest
    from infx.evals.runner import EvalFailed, check_server, run_eval
    from infx.evals.tasks import LOCAL_TASKS, test_size
    from infx.evals.thresholds import judge, threshold_for
    from infx.outpaths import check_output_dir

    req = build_request(EvalRequest, {
        "base_url": base_url, "model": model, "out": str(out), "task": task, "limit": limit,
        "num_concurrent": num_concurrent, "chat": chat, "isl": isl, "osl": osl, "model_max_len": model_max_len,
        "max_length": max_length, "max_tokens": max_tokens, "num_fewshot": num_fewshot,
        "model_prefix": model_prefix, "threshold": threshold, "timeout_s": timeout, "max_retries": max_retries,
    }, EVAL_OPTIONS)
    local = req.task in LOCAL_TASKS
    if req.limit is not None and local and req.limit > test_size():
        raise InfxError(Diagnostic(f"--limit {req.limit} is more than the {test_size()} {req.task} test questions"))
    check_output_dir(out, "--out")
    check_server(req.base_url)
    protocol = req.protocol(req.model_max_len or server_max_model_len(req.base_url, req.model), local)
    print(f"eval: {req.task} on {req.base_url} ({req.model}): ctx {protocol.max_length}, max_tokens "
          f"{protocol.max_tokens}, {protocol.endpoint}, {protocol.num_concurrent} in flight"
          + (f", first {req.limit} questions" if req.limit else ""), file=sys.stderr)
    meta = {"model": req.model, "infmax_model_prefix": req.model_prefix or "unknown",
            "conc": protocol.num_concurrent, "is_multinode": False, "framework": "unknown", "precision": "unknown",
            "hw": "unknown", "tp": 1, "ep": 1, "dp_attention": False, "isl": str(req.isl), "osl": str(req.osl)}
    try:
        result = run_eval(protocol, req.base_url, req.model, out, meta=meta, check=False)
    except EvalFailed as exc:
        print(f"eval failed ({exc.kind}): {exc.message}; log: {out / 'lm-eval.log'}", file=sys.stderr)
        raise typer.Exit(1) from None
    mark, source = ((req.threshold, "--threshold") if req.threshold is not None
                    else threshold_for(req.task, req.model_prefix))
    verdict = judge(result, mark, source)
    scores = ", ".join(f"{f.name} {f.score:.4f}" + (f" ±{f.stderr:.4f}" if f.stderr is not None else "")
                       for f in result.filters)
    state = "pass" if verdict.passed else "accuracy-fail"
    print(f"{req.task}: {scores} (n={result.n}, lm-eval {result.lm_eval_version}, {result.wall_s:.1f}s); "
          f"threshold {mark:g} ({source}): {state}", file=sys.stderr)
    print(f"wrote {out / 'eval.json'}", file=sys.stderr)
    raise typer.Exit(0 if verdict.passed else 1)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
