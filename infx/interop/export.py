"""``infx export --format inferencex``: measured points as InferenceX result files.

For every measured point two files: ``<name>.json``, the raw bench-client JSON in the keys its
client writes (§4), and ``agg_<name>.json``, exactly what InferenceX's ``process_result.py`` makes
of that file with the environment its workflow sets for the point (§3: seconds, interactivity,
per-GPU rules single node and multi-node, power keys). :func:`process_env` is that environment,
so InferenceX's own processing can be run on the raw file as an independent check.
Imported runs export their stored agg files unchanged (the round trip is exact).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from infx import atomic
from infx.diagnostics import Diagnostic, InfxError
from infx.interop.formats import (
    LATENCY_METRICS,
    STAT_ATTR,
    STATS,
    AggResult,
    RawClientResult,
    raw_latency_keys,
)
from infx.interop.power import power_keys
from infx.matrix.point import Point
from infx.metrics.result import BenchResult, Stat
from infx.results.layout import POINT_FILE, RECORDS_FILE, ResultsDir
from infx.results.store import point_conc

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def result_filename(point: Point, conc: int) -> str:
    """``RESULT_FILENAME`` of a point: exp-name, concurrency and point-id (exp-names collide)."""
    return _UNSAFE.sub("-", f"{point.exp_name}_conc{conc}_{point.point_id}")


def refusal(point: Point, result: BenchResult) -> str | None:
    """Why a measured point has no InferenceX form (None: it has one)."""
    if point.is_agentic or point.isl is None or point.osl is None:
        return "agentic points have no InferenceX aggregated form (fixed ISL/OSL only)"
    bad = [f"{stat} TPOT" for stat in STATS if not _stat(result.metrics.tpot_ms, stat)]
    if bad:
        return (f"{', '.join(bad)} is 0 or missing: InferenceX's interactivity (1000 / TPOT) is undefined "
                "(fewer than 2 output tokens per request, or a single request)")
    return None


def _stat(stat: Stat, name: str) -> float:
    value = getattr(stat, STAT_ATTR[name])
    return 0.0 if value is None else float(value)  # the client treats an empty list as [0]


def _lens(records_path: Path) -> tuple[list[int], list[int]]:
    """Per-request prompt and output lengths of the measured requests (failed ones 0), as the client lists them."""
    ins: list[int] = []
    outs: list[int] = []
    if not records_path.is_file():
        return ins, outs
    from infx import jsonio

    for lineno, rec in jsonio.iter_jsonl(records_path, what="records file"):
        if not isinstance(rec, dict):
            raise InfxError(Diagnostic("a record must be a JSON object", str(records_path), lineno))
        if rec.get("warmup"):
            continue
        ok = rec.get("error_class") is None
        ins.append(int(rec.get("prompt_tokens") or rec.get("expected_input_tokens") or 0) if ok else 0)
        out = rec.get("completion_tokens")
        outs.append(int(out if out is not None else rec.get("client_tokens") or 0) if ok else 0)
    return ins, outs


def raw_client(point: Point, result: BenchResult, *, lens: tuple[list[int], list[int]] = ([], [])) -> dict[str, Any]:
    """The point's result in the bench client's keys and units (milliseconds, ``request_goodput:``)."""
    m, t = result.metrics, result.metrics.throughput
    window = result.window()
    rate, endpoint = result.config.request_rate, result.config.endpoint
    data: dict[str, Any] = {
        "date": time.strftime("%Y%m%d-%H%M%S", time.gmtime(result.started_at)),
        "backend": "vllm" if endpoint == "completions" else "openai-chat",
        "model_id": point.model, "tokenizer_id": point.model, "best_of": 1, "num_prompts": m.issued,
        "request_rate": "inf" if rate is None else float(rate), "burstiness": 1.0,
        "max_concurrency": point_conc(point, result), "duration": t.duration_s,
        "benchmark_start_time_unix": window.start, "benchmark_end_time_unix": window.end,
        "completed": m.completed, "total_input_tokens": m.total_input_tokens,
        "total_output_tokens": m.total_output_tokens, "request_throughput": t.request_per_s,
        "request_goodput:": t.goodput_req_per_s, "output_throughput": t.output_tok_per_s,
        "total_token_throughput": t.total_tok_per_s, "input_lens": lens[0], "output_lens": lens[1],
    }
    stats = {"ttft": m.ttft_ms, "tpot": m.tpot_ms, "itl": m.itl_ms, "e2el": m.e2el_ms}
    for metric in LATENCY_METRICS:
        for stat in STATS:
            data[f"{stat}_{metric}_ms"] = _stat(stats[metric], stat)
    return RawClientResult.model_validate(data).model_dump(by_alias=True)


def _flag(value: bool) -> str:
    return "true" if value else "false"


def role_gpus(point: Point) -> tuple[int, int]:
    """(prefill GPUs, decode GPUs) of a multi-node point (workers x TP x PP x PCP per role)."""
    assert point.prefill is not None and point.decode is not None
    return point.prefill.gpus, point.decode.gpus


def process_env(point: Point, name: str) -> dict[str, str]:
    """The environment InferenceX's workflow gives ``process_result.py`` for this point."""
    env = {
        "RUNNER_TYPE": point.runner, "FRAMEWORK": point.framework, "PRECISION": point.precision,
        "SPEC_DECODING": point.spec_decoding, "RESULT_FILENAME": name, "ISL": str(point.isl), "OSL": str(point.osl),
        "DISAGG": _flag(point.disagg), "MODEL_PREFIX": point.model_prefix, "IMAGE": point.image,
        "RECIPE_FINGERPRINT": point.recipe_fingerprint or "",
    }
    if point.router is not None and point.router.version:
        env["ROUTER_METADATA"] = json.dumps({"name": point.router.name, "version": point.router.version})
    if point.kv_p2p_transfer:
        env["KV_P2P_TRANSFER"] = point.kv_p2p_transfer
    if point.multinode:
        assert point.prefill is not None and point.decode is not None
        p, d = role_gpus(point)
        env |= {"IS_MULTINODE": "true", "PREFILL_GPUS": str(p), "DECODE_GPUS": str(d)}
        for tag, w in (("PREFILL", point.prefill), ("DECODE", point.decode)):
            env |= {f"{tag}_NUM_WORKERS": str(w.num_worker), f"{tag}_TP": str(w.tp), f"{tag}_EP": str(w.ep),
                    f"{tag}_DP_ATTN": _flag(w.dp_attn), f"{tag}_PP_SIZE": str(w.pp),
                    f"{tag}_DCP_SIZE": str(w.dcp_size), f"{tag}_PCP_SIZE": str(w.pcp_size)}
        if point.prefill.hardware and point.decode.hardware:
            env |= {"PREFILL_HARDWARE": point.prefill.hardware, "DECODE_HARDWARE": point.decode.hardware}
    else:
        env |= {"IS_MULTINODE": "false", "TP": str(point.tp or 1), "EP_SIZE": str(point.ep),
                "DP_ATTENTION": _flag(point.dp_attn), "PP_SIZE": str(point.pp), "DCP_SIZE": str(point.dcp_size),
                "PCP_SIZE": str(point.pcp_size)}
    return env


def agg(point: Point, result: BenchResult, raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """The point's aggregated result, field for field what ``process_result.py`` writes."""
    why = refusal(point, result)
    if why:
        raise ValueError(why)
    raw = raw if raw is not None else raw_client(point, result)
    data: dict[str, Any] = {
        "hw": point.runner, "conc": int(raw["max_concurrency"]), "image": point.image, "model": raw["model_id"],
        "infmax_model_prefix": point.model_prefix, "framework": point.framework, "precision": point.precision,
        "spec_decoding": point.spec_decoding, "disagg": point.disagg,
        "recipe_fingerprint": point.recipe_fingerprint or "", "isl": int(point.isl or 0), "osl": int(point.osl or 0),
    }
    if point.router is not None and point.router.version:
        data["router"] = {"name": point.router.name, "version": point.router.version}
    if point.kv_p2p_transfer:
        data["kv_p2p_transfer"] = point.kv_p2p_transfer
    total, output = float(raw["total_token_throughput"]), float(raw["output_throughput"])
    prefill_gpus = decode_gpus = None
    if point.multinode:
        assert point.prefill is not None and point.decode is not None
        pw, dw = point.prefill, point.decode
        prefill_gpus, decode_gpus = role_gpus(point)
        if prefill_gpus <= 0:
            raise ValueError(f"the prefill pool has {prefill_gpus} GPUs (num-worker x tp x pp x pcp-size must be >= 1)")
        has_decode = decode_gpus > 0
        data |= {
            "is_multinode": True, "prefill_tp": pw.tp, "prefill_pp": pw.pp, "prefill_dcp_size": pw.dcp_size,
            "prefill_pcp_size": pw.pcp_size, "prefill_ep": pw.ep, "prefill_dp_attention": _flag(pw.dp_attn),
            "prefill_num_workers": pw.num_worker,
            "decode_tp": dw.tp if has_decode else 0, "decode_pp": dw.pp if has_decode else 1,
            "decode_dcp_size": dw.dcp_size if has_decode else 1, "decode_pcp_size": dw.pcp_size if has_decode else 1,
            "decode_ep": dw.ep if has_decode else 0, "decode_dp_attention": _flag(dw.dp_attn),
            "decode_num_workers": dw.num_worker, "num_prefill_gpu": prefill_gpus, "num_decode_gpu": decode_gpus,
            "tput_per_gpu": total / (prefill_gpus + decode_gpus),
            "output_tput_per_gpu": output / (decode_gpus if has_decode else prefill_gpus + decode_gpus),
            "input_tput_per_gpu": (total - output) / prefill_gpus,
        }
        if pw.hardware and dw.hardware:
            data |= {"prefill_hw": pw.hardware, "decode_hw": dw.hardware}
    else:
        n = (point.tp or 1) * point.pp * point.pcp_size  # EP, DCP and DP-attention add no GPUs
        if n <= 0:
            raise ValueError(f"tp x pp x pcp-size is {n} GPUs (each must be >= 1)")
        data |= {
            "is_multinode": False, "tp": point.tp or 1, "pp": point.pp, "dcp_size": point.dcp_size,
            "pcp_size": point.pcp_size, "ep": point.ep, "dp_attention": _flag(point.dp_attn),
            "tput_per_gpu": total / n, "output_tput_per_gpu": output / n, "input_tput_per_gpu": (total - output) / n,
        }
    for key in raw_latency_keys():
        value = float(raw[key])
        data[key[: -len("_ms")]] = value / 1000.0  # seconds
        if "tpot" in key:
            data[key[: -len("_ms")].replace("tpot", "intvty")] = 1000.0 / value  # tok/s per user
    data |= power_keys(result.extra.power, start_unix=raw["benchmark_start_time_unix"],
                       end_unix=raw["benchmark_end_time_unix"], completed=raw["completed"],
                       input_tokens=raw["total_input_tokens"], output_tokens=raw["total_output_tokens"],
                       prefill_gpus=prefill_gpus, decode_gpus=decode_gpus)
    AggResult.model_validate(data)  # what we write is what we read back
    return data


# --------------------------------------------------------------------------- whole results dirs


@dataclass
class ExportReport:
    written: list[Path] = field(default_factory=list)
    skipped: list[Diagnostic] = field(default_factory=list)

    def summary(self) -> str:
        aggs = sum(1 for p in self.written if p.name.startswith("agg_"))
        return f"{aggs} point(s) exported ({len(self.written)} file(s)), {len(self.skipped)} skipped"


def export_run(results: ResultsDir, run_id: str, out_dir: Path, report: ExportReport) -> None:
    """Export every measured point of one measured run into ``out_dir``."""
    for point_id in results.points(run_id):
        d = results.point_dir(run_id, point_id)
        try:
            status = results.read_status(run_id, point_id)
            if status.state != "done":
                continue
            point = results.read_point(run_id, point_id).typed()
            result = results.read_result(run_id, point_id)
        except InfxError as exc:
            report.skipped.extend(exc.diagnostics)
            continue
        if not result.complete:
            report.skipped.append(Diagnostic("partial result (complete: false): not exported", str(d)))
            continue
        why = refusal(point, result)
        if why:
            report.skipped.append(Diagnostic(f"not exported: {why}", str(d), severity="warning"))
            continue
        try:
            name = result_filename(point, point_conc(point, result))
            raw = raw_client(point, result, lens=_lens(d / RECORDS_FILE))
            data = agg(point, result, raw)
        except (ValueError, ArithmeticError) as exc:  # figures the point's own fields make impossible
            report.skipped.append(Diagnostic(f"not exported: {exc}", str(d / POINT_FILE)))
            continue
        files: list[tuple[Path, Any]] = [(out_dir / f"{name}.json", raw), (out_dir / f"agg_{name}.json", data)]
        side = acceptance_sidecar(point, result)
        if side is not None:  # infx's own file: the InferenceX files keep exactly their own keys
            files.append((out_dir / f"acceptance_{name}.json", side))
        for path, obj in files:
            atomic.write_json(path, obj)
            report.written.append(path)


def acceptance_sidecar(point: Point, result: BenchResult) -> dict[str, Any] | None:
    """A speculative-decoding point's acceptance beside its exported files: ``acceptance`` is ``measured`` or
    ``synthetic (AL 3.51, via ...)`` (the launch forced it), with the measured figures per role. None for points
    without speculative decoding (and results written before infx labelled it)."""
    spec = result.extra.spec_decode
    if spec is None:
        return None
    tel = result.extra.telemetry
    return {"point_id": point.point_id, "spec_decoding": spec.method, "acceptance": spec.text(),
            "synthetic": spec.acceptance == "synthetic", "synthetic_al": spec.synthetic_al, "via": spec.via,
            "roles": [a.model_dump(mode="json", exclude={"trials"}) for a in (tel.acceptance if tel else [])]}


def export_imported(files: list[tuple[str, dict[str, Any]]], out_dir: Path, report: ExportReport) -> None:
    """An imported run's agg files, as stored (``(file name, agg dict)``)."""
    for name, data in files:
        path = out_dir / name
        atomic.write_json(path, data)
        report.written.append(path)


class ExportRequest(BaseModel):
    """What ``infx export`` is asked: the results directory (or one run directory in it), the runs (empty:
    every run), where to write them, and the store whose imported runs give back their published files."""

    model_config = ConfigDict(extra="forbid")

    results: Path | None = None  # None: the workspace's results/
    format: Literal["inferencex"] = "inferencex"
    output: Path = Path("inferencex-export")
    runs: list[str] = []
    store: str | None = None


def export_results(req: ExportRequest) -> ExportReport:
    """Export the runs ``req`` names into ``req.output/<run>/``: measured runs from their point files, imported
    runs from the store's published agg files. A run that is neither is refused before anything is written."""
    from infx.interop.ingest import imported_aggs
    from infx.results.layout import results_root
    from infx.results.store import Store, locate_results
    from infx.results.store.url import resolve

    root, runs = locate_results(results_root(req.results))
    rd = ResultsDir(root)
    measured = runs if runs is not None else rd.runs()
    imported: list[str] = []
    report = ExportReport()
    where = resolve(req.store, root)
    if where.path is None or where.path.is_file():
        with Store(where) as st:  # migrates an older store (origin column)
            imported = [r for r in st.run_ids() if st.origin(r) == "imported"]
            wanted = req.runs or (measured + imported if runs is None else measured)
            unknown = [r for r in wanted if r not in measured and r not in imported]
            if unknown:
                raise InfxError(Diagnostic(f"run(s) not found: {', '.join(unknown)}"))
            for r in wanted:
                if r in imported:
                    export_imported([(n, d) for _, n, d in imported_aggs(st, r)], req.output / r, report)
    else:
        wanted = req.runs or measured
    for r in wanted:
        if r not in imported:
            if r not in measured:
                raise InfxError(Diagnostic(f"run {r!r} not found in {root}"))
            export_run(rd, r, req.output / r, report)
    return report
