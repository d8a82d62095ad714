"""Evals in the store (migration 3), ``infx compare`` accuracy verdicts and the report's accuracy section."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from infx.evals.protocol import EvalProtocol
from infx.results.store import SCHEMA_VERSION, Store

from .synth import table, write_eval

TP2 = "dsv41flash_tp2_conc128_kvnone_spec-mtp"
TP4 = "dsv41flash_tp4_conc128_kvnone_spec-mtp"


def compare(root, *args):
    return subprocess.run([sys.executable, "-m", "infx", "compare", str(root), "--run", "pr-1234",
                           "--gpus-per-node", "8", *args], capture_output=True, text=True)


def test_store_keeps_evals_and_compare_gives_the_paired_verdict(seed_results):
    a, b = table(5, 1, 9, 5)
    write_eval(seed_results.point_dir("pr-1234", TP2), a)
    write_eval(seed_results.point_dir("pr-1234", TP4), b)
    r = compare(seed_results.root, "-a", "tp=2", "-b", "tp=4", "--json")
    assert r.returncode == 0, r.stderr
    acc = json.loads(r.stdout)["accuracy"]
    assert len(acc) == 1
    assert (acc[0]["n"], acc[0]["only_a_right"], acc[0]["only_b_right"], acc[0]["verdict"]) == (20, 1, 9, "a worse")
    assert abs(acc[0]["p_value"] - 22 / 1024) < 1e-12
    with Store(seed_results.db_path) as st:
        assert st.schema_version() == SCHEMA_VERSION and "evals" in st.table_counts()  # revision 0003
        rows = st.conn.execute("SELECT point_id, state, score_strict, threshold FROM evals "
                               "ORDER BY point_id").fetchall()
        assert rows == [(TP2, "accuracy-fail", 0.3, 0.5), (TP4, "pass", 0.7, 0.5)]
        assert st.conn.execute("SELECT COUNT(*) FROM eval_answers").fetchone()[0] == 40
    text = " ".join(compare(seed_results.root, "-a", "tp=2", "-b", "tp=4").stdout.split())
    assert "a worse" in text and "McNemar exact p = 0.0215" in text


def test_not_comparable_when_protocols_or_questions_differ(seed_results):
    a, b = table(5, 1, 9, 5)
    write_eval(seed_results.point_dir("pr-1234", TP2), a)
    write_eval(seed_results.point_dir("pr-1234", TP4), b, protocol=EvalProtocol(max_tokens=100, limit=20))
    acc = json.loads(compare(seed_results.root, "-a", "tp=2", "-b", "tp=4", "--json").stdout)["accuracy"][0]
    assert acc["verdict"] == "not comparable" and "protocol" in acc["reason"]
    write_eval(seed_results.point_dir("pr-1234", TP4), dict(list(b.items())[:10]))
    acc = json.loads(compare(seed_results.root, "-a", "tp=2", "-b", "tp=4", "--json").stdout)["accuracy"][0]
    assert acc["verdict"] == "not comparable" and "question sets differ" in acc["reason"]


def test_bad_samples_file_is_a_one_line_error_and_the_point_is_not_ingested(seed_results):
    d = seed_results.point_dir("pr-1234", TP2)
    write_eval(d, {0: True, 1: False})
    (d / "eval-samples.jsonl").write_text('{"doc_id": 0}\nnot json\n')
    r = subprocess.run([sys.executable, "-m", "infx", "ingest", str(seed_results.root)], capture_output=True,
                       text=True)
    assert "eval-samples.jsonl:1" in r.stderr and "Traceback" not in r.stderr
    with sqlite3.connect(seed_results.db_path) as c:
        assert c.execute("SELECT COUNT(*) FROM points WHERE point_id=?", (TP2,)).fetchone()[0] == 0


def test_failed_eval_is_stored_with_its_reason(seed_results):
    write_eval(seed_results.point_dir("pr-1234", TP2), {}, failed="ClientResponseError: 500")
    subprocess.run([sys.executable, "-m", "infx", "ingest", str(seed_results.root)], check=True, capture_output=True)
    with Store(seed_results.db_path) as st:
        assert st.conn.execute("SELECT state, reason, score_strict FROM evals").fetchall() == [
            ("failed", "ClientResponseError: 500", None)]


def test_report_shows_accuracy_next_to_throughput(seed_results, tmp_path):
    a, b = table(5, 1, 9, 5)
    write_eval(seed_results.point_dir("pr-1234", TP2), a)
    write_eval(seed_results.point_dir("pr-1234", TP4), b)
    out = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "infx", "report", str(seed_results.root), "--run", "pr-1234",
                        "--gpus-per-node", "8", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert 'id="accuracy-table"' in html and "30.00%" in html and "70.00%" in html
    below = html.split('id="accuracy-below"', 1)[1].split("</div>", 1)[0]
    assert TP2 in below and TP4 not in below
    assert "below accuracy threshold" in html  # the red crosses on the frontier charts
    assert "<b>a worse</b>" in html and "McNemar exact p = 0.0215" in html


def test_dashboard_shows_accuracy_and_serves_the_eval_files(seed_results):
    import urllib.request

    a, b = table(5, 1, 9, 5)
    write_eval(seed_results.point_dir("pr-1234", TP2), a)
    write_eval(seed_results.point_dir("pr-1234", TP4), b)
    proc = subprocess.Popen([sys.executable, "-m", "infx", "serve", str(seed_results.root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = (proc.stdout.readline() if proc.stdout else "").split()[2].rstrip("/")
        with urllib.request.urlopen(f"{url}/runs/pr-1234", timeout=60) as r:
            page = r.read().decode()
        assert 'id="accuracy-table"' in page and "<b>a worse</b>" in page
        link = f"/files/pr-1234/points/{TP2}/eval-samples.jsonl"
        assert link in page
        with urllib.request.urlopen(url + link, timeout=60) as r:
            assert len(r.read().decode().splitlines()) == 20
    finally:
        proc.terminate()
        proc.wait(timeout=30)
