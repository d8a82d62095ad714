"""A corpus of hostile inputs (issue 26): every one ends in one clear line naming the file, exit 2.

Each case builds a fresh workspace (``infx init``), breaks one input in one way, runs one command
through the real CLI in-process and asserts: exit code 2 (bad input, never a crash), no traceback,
exactly one error line (a command's trailing ``N error(s)`` count aside), the file named in it, and
no temp file left behind. ``timeout(5)`` enforces that none hangs (alias bombs, power towers,
absurd counts); it does not time anything.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infx.cli import _register_all, app

_register_all()
KEY = "tinyllama-bf16-cpu-vllm"
BOMB = "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "x"] * 10) + "]\n" for i in range(9))
CYCLE = "a: &x [*x]\n"  # an alias inside the node it names
TEMP_MARKERS = (".tmp", ".infx-probe.", ".import-", ".old-")
#: A command's own summary lines around the one error (counts, what was done): not further errors.
SUMMARIES = ("error(s)", "error: nothing imported:", "ingested:")


def _summary(line: str) -> bool:
    return line.strip().endswith(SUMMARIES[0]) or line.startswith(SUMMARIES[1:])


@dataclass
class Case:
    id: str
    setup: Callable[[Path], None]  # breaks the workspace
    argv: list[str]  # after `infx -w WS`
    names: str  # what the error line must name (a file or option)


def _edit(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        f = ws / rel
        text = f.read_text()
        assert old in text, (rel, old)
        f.write_text(text.replace(old, new, 1))
    return setup


def _write(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        f = ws / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data if isinstance(data, bytes) else data.encode())
    return setup


def _append(rel: str, text: str) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        with (ws / rel).open("a") as fh:
            fh.write(text)
    return setup


def _both(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        for fn in fns:
            fn(ws)
    return setup


def _gz_truncated() -> bytes:
    data = gzip.compress(b'{"id": "s", "requests": []}\n' * 2000)
    return data[: len(data) // 2]


def _gz_bomb() -> bytes:  # 64 MiB of spaces in 64 KiB; the reader's bound is lowered for the case
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    return co.compress(b" " * (64 * 2**20)) + co.flush()


def _results(ws: Path) -> Path:
    from infx.results.synthetic import write_seed_scenario

    return write_seed_scenario(ws / "results").root


def _result_file(ws: Path) -> Path:
    root = _results(ws)
    return next(root.glob("*/points/*/result.json"))


def _break_result(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        f = _result_file(ws)
        data = json.loads(f.read_text())
        edit(data)
        f.write_text(json.dumps(data))
    return setup


def _deep_result(ws: Path) -> None:
    f = _result_file(ws)
    f.write_text('{"extra": ' + "[" * 5000 + "]" * 5000 + "}")


def _eval_file(ws: Path, score: str) -> None:
    """A point's eval.json with an impossible score (written by hand: json.dumps never writes NaN)."""
    from infx.evals.protocol import EVAL_FILE, EVAL_STATUS_FILE, EvalProtocol, EvalResult, EvalStatus, FilterScore

    d = next((ws / "results").glob("*/points/*/result.json")).parent
    r = EvalResult(task="gsm8k", metric="exact_match", filters=[FilterScore(name="strict-match", score=0.5)], n=10,
                   protocol=EvalProtocol(task="gsm8k"), lm_eval_version="x", base_url="http://h", model="m",
                   started_at=1.0, ended_at=2.0, wall_s=1.0)
    (d / EVAL_FILE).write_text(r.model_dump_json().replace('"score":0.5', f'"score":{score}'))
    status = EvalStatus(state="pass", protocol=r.protocol, started_at=1.0, ended_at=2.0)
    (d / EVAL_STATUS_FILE).write_text(status.model_dump_json())


def _bad_manifest(ws: Path) -> None:
    root = _results(ws)
    m = next(root.glob("*/manifest.json"))
    data = json.loads(m.read_text())
    data["layout_version"] = 99
    m.write_text(json.dumps(data))


def _store(kind: str) -> Callable[[Path], None]:
    def setup(ws: Path) -> None:
        root = _results(ws)
        db = root / "infx.db"
        if kind == "garbage":
            db.write_bytes(b"\xff" * 4096)
        elif kind == "directory":
            db.mkdir()
        else:
            from infx.results.store import Store

            with Store(db) as s:
                s.ingest_dir(root)
            conn = sqlite3.connect(db)
            if kind == "dropped-table":
                conn.execute("DROP TABLE results")
            elif kind == "newer-schema":
                conn.execute("UPDATE schema_version SET version = 999")
            conn.commit()
            conn.close()
    return setup


def _agg(ws: Path) -> None:
    entry = {"hw": "h100", "conc": 4, "image": "img", "model": "m", "infmax_model_prefix": "m", "framework": "vllm",
             "precision": "fp8", "spec_decoding": "none", "disagg": False, "isl": 1024, "osl": 1024,
             "is_multinode": False, "tp": 10**30, "ep": 1, "dp_attention": "false", "tput_per_gpu": 1.0,
             "output_tput_per_gpu": 1.0, "input_tput_per_gpu": 1.0}
    (ws / "agg_x.json").write_text(json.dumps(entry))


def _multinode_kv(ws: Path, kv: str = "carrier-pigeon", decode_tp: int = 1) -> None:
    (ws / "configs" / "mn-master.yaml").write_text(
        "mn-entry:\n  image: img\n  model: m\n  model-prefix: m\n  runner: local\n  precision: bf16\n"
        f"  framework: vllm\n  multinode: true\n  disagg: true\n  kv-p2p-transfer: {kv}\n  scenarios:\n"
        "    fixed-seq-len:\n    - isl: 256\n      osl: 64\n      search-space:\n"
        "      - prefill: {num-worker: 1, tp: 1, ep: 1, dp-attn: false}\n"
        "        decode: {num-worker: 1, tp: " + str(decode_tp) + ", ep: 1, dp-attn: false}\n        conc-list: [1]\n")


RECIPE = "recipes/tinyllama-cpu-vllm.yaml"
CARD = "cards/models/tinyllama.yaml"
CATALOG = "configs/cpu-master.yaml"
BENCH = ["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "1", "--num-prompts", "1"]

CASES = [
    # one bounded YAML reader
    Case("yaml-alias-bomb-catalog", _write(CATALOG, BOMB), ["validate"], "cpu-master.yaml:5:"),
    Case("yaml-alias-bomb-runners", _write("configs/runners.yaml", BOMB), ["validate"], "runners.yaml:5:"),
    Case("yaml-alias-bomb-recipe", _append(RECIPE, "x-bomb:\n" + "".join("  " + ln + "\n" for ln in BOMB.splitlines())),
         ["plan", "--config-keys", KEY], "tinyllama-cpu-vllm.yaml"),
    Case("yaml-alias-bomb-card", _write(CARD, BOMB), ["preflight"], "tinyllama.yaml:5:"),
    Case("yaml-alias-bomb-changelog", _write("perf-changelog.yaml", BOMB), ["changelog", "resolve"],
         "perf-changelog.yaml:5:"),
    Case("yaml-alias-cycle-catalog", _write(CATALOG, CYCLE), ["validate"], "cpu-master.yaml:1:8"),
    Case("yaml-alias-cycle-runners", _write("configs/runners.yaml", CYCLE), ["validate"], "runners.yaml:1:8"),
    Case("yaml-alias-cycle-recipe", _append(RECIPE, "x-cycle: &y {a: *y}\n"), ["plan", "--config-keys", KEY],
         "tinyllama-cpu-vllm.yaml:"),
    Case("yaml-alias-cycle-card", _write(CARD, CYCLE), ["preflight"], "tinyllama.yaml:1:8"),
    Case("yaml-alias-cycle-changelog", _write("perf-changelog.yaml", CYCLE), ["changelog", "resolve"],
         "perf-changelog.yaml:1:8"),
    Case("yaml-alias-cycle-cost-model", _write("cost-model.yaml", CYCLE), ["cost", "export", "results"],
         "cost-model.yaml:1:8"),
    Case("toml-5000-digit-int", _append("infx.toml", "\n[x]\nn = " + "9" * 5000 + "\n"), ["validate"], "infx.toml:15"),
    Case("toml-int-past-64-bits", _append("infx.toml", "\n[x]\nn = " + "9" * 30 + "\n"), ["validate"], "infx.toml:15"),
    Case("yaml-too-deep", _write(CATALOG, "a: " + "[" * 200 + "]" * 200 + "\n"), ["validate"], "cpu-master.yaml:1:"),
    Case("yaml-tag-on-list", _edit(CATALOG, "conc-list: [1", "conc-list: !big [1"), ["validate"],
         "cpu-master.yaml:17:"),
    Case("toml-not-utf8", _write("infx.toml", b"\xff\xfe[paths]\n"), ["validate"], "infx.toml:1"),
    Case("toml-too-deep", _write("infx.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n"), ["validate"], "infx.toml"),
    # the expression sandbox
    Case("expr-power-tower",
         _edit(RECIPE, "enforce-eager: true", "enforce-eager: true\n    max-num-seqs: '= ((9**64)**64)**64'"),
         ["plan", "--config-keys", KEY], "tinyllama-cpu-vllm.yaml:18:"),
    Case("expr-inf", _edit(RECIPE, "enforce-eager: true", "enforce-eager: true\n    max-num-seqs: '= 1e308 * 10'"),
         ["plan", "--config-keys", KEY], "tinyllama-cpu-vllm.yaml:18:"),
    Case("expr-complex", _edit(RECIPE, "enforce-eager: true", "enforce-eager: true\n    max-num-seqs: '= (-8) ** 0.5'"),
         ["plan", "--config-keys", KEY], "tinyllama-cpu-vllm.yaml:18:"),
    Case("expr-huge-text",
         _edit(RECIPE, "enforce-eager: true", "enforce-eager: true\n    max-num-seqs: '= " + "1+" * 5000 + "1'"),
         ["plan", "--config-keys", KEY], "tinyllama-cpu-vllm.yaml:18:"),
    Case("card-expr-division-by-zero", _append(CARD, "buffers:\n  - name: x\n    expr: 1 / (tp - tp)\n"), ["preflight"],
         "tinyllama.yaml:"),
    # numbers checked where read
    Case("catalog-400-digit-int", _edit(CATALOG, "osl: 256", "osl: " + "9" * 400), ["validate"], "cpu-master.yaml:15:"),
    Case("card-inf", _edit(CARD, "parameters: 1705216", "parameters: .inf"), ["preflight"], "tinyllama.yaml:12:"),
    Case("card-bytes-1e999", _edit(CARD, "parameters: 1705216\n  bytes-per-param:\n    bf16: 2", "bytes: 1e999 GB"),
         ["preflight"], "tinyllama.yaml:"),
    Case("card-bytes-per-param-1e308", _edit(CARD, "bf16: 2", "bf16: 1e308"), ["preflight"], "tinyllama.yaml:14:"),
    Case("multinode-unknown-kv-transfer", _multinode_kv, ["validate"], "mn-master.yaml:10:"),
    Case("multinode-decode-tp-0", lambda ws: _multinode_kv(ws, "nixl", 0), ["validate"], "mn-master.yaml:17:"),
    # one bounded JSON/JSONL reader, gzip
    Case("trace-deep-json", _write("t.jsonl", "[" * 100000 + "]" * 100000 + "\n"), ["traces", "stats", "t.jsonl"],
         "t.jsonl:1"),
    Case("trace-not-utf8", _write("t.jsonl", b'{"id": "\xff"}\n'), ["traces", "stats", "t.jsonl"], "t.jsonl:1"),
    Case("trace-5000-digit-int", _write("t.jsonl", '{"id": "a", "x": ' + "9" * 5000 + "}\n"),
         ["traces", "stats", "t.jsonl"], "t.jsonl:1"),
    Case("trace-gzip-truncated", _write("t.jsonl.gz", _gz_truncated()), ["traces", "stats", "t.jsonl.gz"],
         "t.jsonl.gz"),
    Case("trace-gzip-bomb", _write("t.jsonl.gz", _gz_bomb()), ["traces", "stats", "t.jsonl.gz"],
         "t.jsonl.gz: error: gzip trace file inflates"),
    Case("result-deep-json", _deep_result, ["ingest", "--strict", "results"], "result.json"),
    # versions and impossible figures
    Case("result-unknown-schema", _break_result(lambda d: d.update(schema_version=99)),
         ["ingest", "--strict", "results"], "result.json"),
    Case("result-negative-count", _break_result(lambda d: d["metrics"]["ttft_ms"].update(count=-3)),
         ["ingest", "--strict", "results"], "result.json"),
    Case("result-int-sqlite-cannot-store", _break_result(lambda d: d["metrics"].update(issued=10**30)),
         ["ingest", "--strict", "results"], "/points/"),
    Case("result-telemetry-wrong-shape", _break_result(lambda d: d["extra"].update(telemetry={"power": [1, 2]})),
         ["ingest", "--strict", "results"], "/points/"),
    Case("eval-score-nan", _both(_results, lambda ws: _eval_file(ws, "NaN")), ["ingest", "--strict", "results"],
         "eval.json"),
    Case("eval-score-negative", _both(_results, lambda ws: _eval_file(ws, "-0.5")), ["ingest", "--strict", "results"],
         "eval.json"),
    Case("manifest-unknown-layout", _bad_manifest, ["ingest", "--strict", "results"], "manifest.json"),
    Case("agg-tp-1e30", _agg, ["ingest", "--format", "inferencex", "--results", "results", "agg_x.json"], "agg_x.json"),
    # stores
    Case("store-not-a-database", _store("garbage"), ["ingest", "results"], "infx.db"),
    Case("store-is-a-directory", _store("directory"), ["ingest", "results"], "infx.db"),
    Case("store-dropped-table", _store("dropped-table"), ["ingest", "results"], "infx.db"),
    Case("store-newer-schema", _store("newer-schema"), ["ingest", "results"], "infx.db"),
    Case("store-server-unreachable", _results, ["ingest", "results", "--store", "postgresql://u:pw@127.0.0.1:1/db"],
         "postgresql://u:***@127.0.0.1:1/db"),
    Case("store-url-unknown-scheme", _results, ["ingest", "results", "--store", "mysql://u@h/db"], "--store"),
    # output paths checked before work
    Case("bench-out-is-a-file", _write("f", "x"), [*BENCH, "--out", "f"], "f"),
    Case("replay-out-is-a-file", _both(_write("f", "x"), _write("t.jsonl", "")),
         ["traces", "replay", "t.jsonl", "--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", ".",
          "--out", "f"], "f"),
    Case("synth-out-is-a-directory", _write("d/x", ""), ["traces", "synth", "-o", "d"], "d"),
    Case("report-out-is-a-directory", _both(_results, _write("r.html/x", "")), ["report", "results", "-o", "r.html"],
         "r.html"),
    Case("eval-out-is-a-file", _write("f", "x"),
         ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--out", "f"], "f"),
    Case("run-results-is-a-file", _write("rfile", "x"),
         ["run", "--config-keys", KEY, "--results", "rfile", "--dry-run"], "rfile"),
    Case("init-over-a-configs-file", lambda ws: None, ["init", "fresh"], "configs"),
    # the rest: absurd options, URLs, exit codes
    Case("bench-absurd-concurrency", lambda ws: None, [*BENCH[:6], "999999999999", "--num-prompts", "1"],
         "--concurrency"),
    Case("bench-negative-seed", lambda ws: None, [*BENCH, "--seed", "-1"], "--seed"),
    Case("bench-rate-so-small-the-schedule-overflows", lambda ws: None,
         [*BENCH[:5], "--request-rate", "1e-320", "--num-prompts", "3"], "--request-rate"),
    Case("bench-schedule-longer-than-years", lambda ws: None,
         [*BENCH[:5], "--request-rate", "1e-5", "--num-prompts", "100000"], "take longer than"),
    Case("bench-url-bad-port", lambda ws: None, ["bench", "--base-url", "http://127.0.0.1:abc", "--model", "m",
                                                 "--concurrency", "1"], "--base-url"),
    Case("bench-url-control-char", lambda ws: None, ["bench", "--base-url", "http://127.0.0.1:80/\x01", "--model", "m",
                                                     "--concurrency", "1"], "--base-url"),
    Case("eval-url-bad-port", lambda ws: None,
         ["eval", "--base-url", "http://127.0.0.1:ab", "--model", "m", "--out", "e"], "--base-url"),
    Case("synth-absurd-sessions", lambda ws: None, ["traces", "synth", "-o", "s.jsonl", "--sessions", "10000000000"],
         "--sessions"),
    Case("eval-zero-timeout", lambda ws: None,
         ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--out", "e", "--timeout", "0"], "--timeout"),
    Case("eval-negative-retries", lambda ws: None,
         ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--out", "e", "--max-retries", "-1"],
         "--max-retries"),
    Case("eval-empty-task", lambda ws: None, ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--out", "e",
                                              "--task", ""], "--task"),
    Case("compare-at-negative", _results, ["compare", "results", "--at", "-5"], "--at"),
    Case("compare-at-nan", _results, ["compare", "results", "--at", "nan"], "--at"),
    Case("compare-arm-matches-nothing", _results, ["compare", "results", "-a", "tp=99", "-b", "tp=4",
                                                   "--gpus-per-node", "8"], "tp=99"),
]


@pytest.fixture(scope="module")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("hostile") / "ws"
    r = CliRunner().invoke(app, ["init", str(ws)])
    assert r.exit_code == 0, r.output
    return ws


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if any(m in p.name for m in TEMP_MARKERS)]


@pytest.mark.timeout(5)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_is_one_line_exit_2(case: Case, _template: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from infx import jsonio

    ws = tmp_path / "ws"
    shutil.copytree(_template, ws)
    (ws / "fresh").mkdir()
    (ws / "fresh" / "configs").write_text("not a directory\n")  # for init-over-a-configs-file
    case.setup(ws)
    monkeypatch.chdir(ws)
    monkeypatch.setattr(jsonio, "MAX_BYTES", 16 * 2**20)  # the gzip bomb inflates past this without using GiBs
    r = CliRunner().invoke(app, ["-w", str(ws), *case.argv])
    err = r.stderr
    assert "Traceback" not in err and "Traceback" not in r.stdout
    assert r.exit_code == 2, (r.exit_code, r.exception, err[-2000:])
    assert isinstance(r.exception, SystemExit)
    lines = [ln for ln in err.splitlines() if ln.strip() and not _summary(ln)]
    errors = [ln for ln in lines if "error:" in ln]
    assert len(errors) == 1 and len(lines) == 1, err
    assert case.names in errors[0], errors[0]
    assert _temp_files(ws) == []
    if case.id == "init-over-a-configs-file":  # refused whole: nothing half-made
        assert sorted(p.name for p in (ws / "fresh").iterdir()) == ["configs"]
    if case.id == "agg-tp-1e30":  # refused whole: no imported run half-written
        assert not (ws / "results" / "inferencex").exists()


@pytest.mark.timeout(5)
def test_a_locked_store_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer holds infx.db: ingest waits its bound (here 0.3 s instead of 30 s, so the case
    stays inside the corpus' 5 s), then says so in one line naming the store, exit 2."""
    from infx.results import store as store_mod
    from infx.results.store import backend

    root = _results(tmp_path)
    with store_mod.Store(root / "infx.db") as s:
        s.ingest_dir(root)
    holder = sqlite3.connect(root / "infx.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the other writer, mid-transaction
    try:
        monkeypatch.setattr(backend, "LOCK_WAIT_S", 0.3)
        r = CliRunner().invoke(app, ["ingest", str(root)])
    finally:
        holder.rollback()
        holder.close()
    assert r.exit_code == 2 and "Traceback" not in r.stderr + r.stdout, (r.exit_code, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not _summary(ln)]
    assert len(lines) == 1 and "infx.db" in lines[0] and "another infx process holds it" in lines[0], lines
    assert _temp_files(tmp_path) == []


@pytest.mark.timeout(5)
def test_serve_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    import socket

    (tmp_path / "results").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = CliRunner().invoke(app, ["serve", str(tmp_path / "results"), "--port", str(port)])
    assert r.exit_code == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_a_malformed_request_is_logged_as_one_line_without_traceback() -> None:
    import logging
    import sys

    from aiohttp.http_exceptions import LineTooLong

    from infx.report.server import _BadRequestLine

    try:
        raise LineTooLong(b"/" + b"a" * 9000, 8190)
    except LineTooLong:
        record = logging.LogRecord("aiohttp.server", logging.ERROR, __file__, 1, "Error handling request", (),
                                   sys.exc_info())
    assert _BadRequestLine().filter(record)
    text = logging.Formatter().format(record)
    assert "Traceback" not in text and "\n" not in text and text.startswith("bad request from a client: 400")
