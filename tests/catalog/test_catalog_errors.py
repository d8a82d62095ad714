"""Malformed catalogs: every problem is reported as FILE:LINE:COL at the offending node."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from infx.catalog import load_catalog, load_runners
from infx.diagnostics import InfxError

REPO = Path(__file__).resolve().parents[2]

GOOD_SN = """\
good-entry:
  image: img:1
  model: org/model
  model-prefix: m
  runner: mi355x
  precision: fp8
  framework: vllm
  multinode: false
  scenarios:
    fixed-seq-len:
    - isl: 8192
      osl: 1024
      search-space:
      - { tp: 4, conc-start: 4, conc-end: 64 }
"""

AGENTIC_HEAD = """\
ag-entry:
  image: img:1
  model: org/model
  model-prefix: m
  runner: cluster:mi355x-amds
  precision: fp4
  framework: vllm
  multinode: false
  scenarios:
    agentic-coding:
    - dram-utilization: 0.5
      search-space:
"""


def write(tmp_path: Path, text: str, name: str = "master.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def errors_of(path: Path) -> list[str]:
    with pytest.raises(InfxError) as exc:
        load_catalog([path])
    return [str(d) for d in exc.value.diagnostics]


def only_error(path: Path) -> str:
    errs = errors_of(path)
    assert len(errs) == 1, errs
    return errs[0]


def test_good_entry_loads(tmp_path: Path) -> None:
    cat = load_catalog([write(tmp_path, GOOD_SN)])
    assert list(cat.entries) == ["good-entry"]
    ss = cat.entries["good-entry"].scenarios.fixed_seq_len[0].search_space[0]
    assert (ss.tp, ss.pp, ss.conc_start, ss.conc_end) == (4, 1, 4, 64)


def test_type_error_points_at_value(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("{ tp: 4,", "{ tp: four,"))
    err = only_error(p)
    assert err.startswith(f"{p}:14:")
    assert "error:" in err and "'four'" in err
    assert err.endswith("(at good-entry.scenarios.fixed-seq-len[0].search-space[0].tp)")


def test_strict_int_rejects_string_pp(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("{ tp: 4,", "{ tp: 4, pp: '2',"))
    err = only_error(p)
    assert f"{p}:14:" in err and "search-space[0].pp)" in err


def test_unknown_key(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("  framework: vllm\n", "  framework: vllm\n  trace-source: weka\n"))
    err = only_error(p)
    assert err.startswith(f"{p}:8:")
    assert "unknown key 'trace-source'" in err and err.endswith("(at good-entry.trace-source)")


def test_conc_start_greater_than_end(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("conc-start: 4, conc-end: 64", "conc-start: 64, conc-end: 4"))
    err = only_error(p)
    assert err.startswith(f"{p}:14:")
    assert "'conc-start' (64) must be <= 'conc-end' (4)" in err
    assert err.endswith("search-space[0].conc-start)")


def test_conc_both_forms_and_neither(tmp_path: Path) -> None:
    both = write(tmp_path, GOOD_SN.replace("conc-end: 64", "conc-end: 64, conc-list: [1]"), "both.yaml")
    assert "not both" in only_error(both)
    neither = write(tmp_path, GOOD_SN.replace("conc-start: 4, conc-end: 64", "ep: 1"), "neither.yaml")
    assert "Must specify either 'conc-list' list or both 'conc-start' and 'conc-end'." in only_error(neither)


def test_duplicate_key_in_mapping(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("  precision: fp8\n", "  precision: fp8\n  precision: fp4\n"))
    err = only_error(p)
    assert err.startswith(f"{p}:7:3: error: duplicate key 'precision' (first defined at line 6)")


def test_list_where_mapping_belongs(tmp_path: Path) -> None:
    text = GOOD_SN.split("  scenarios:")[0] + "  scenarios:\n    - fixed-seq-len\n"
    p = write(tmp_path, text)
    err = only_error(p)
    assert err.startswith(f"{p}:10:")
    assert "expected a mapping, got a list" in err and err.endswith("(at good-entry.scenarios)")


def test_tp_not_divisible_by_dcp(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("{ tp: 4,", "{ tp: 4, dcp-size: 3,"))
    err = only_error(p)
    assert err.startswith(f"{p}:14:")
    assert "'tp' (4) must be divisible by 'dcp-size' (3)" in err


def test_agentic_row_without_kv_offloading(tmp_path: Path) -> None:
    p = write(tmp_path, AGENTIC_HEAD + "      - { tp: 8, conc-list: [1, 2] }\n"
              "      - { tp: 4, kv-offloading: none, conc-list: [1] }\n")
    err = only_error(p)
    assert err.startswith(f"{p}:13:")
    assert "must set 'kv-offloading'" in err
    assert err.endswith("(at ag-entry.scenarios.agentic-coding[0].search-space[0])")


def test_bad_yaml_syntax(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("{ tp: 4, conc-start: 4, conc-end: 64 }", "{ tp: 4, conc-start: 4"))
    err = only_error(p)
    assert re.match(rf"{re.escape(str(p))}:1[45]:\d+: error: YAML syntax error", err), err


def test_every_error_of_a_file_is_reported(tmp_path: Path) -> None:
    second = GOOD_SN.replace("good-entry:", "second:").replace("{ tp: 4,", "{ tp: 4, dcp-size: 3,")
    text = GOOD_SN.replace("{ tp: 4,", "{ tp: x,").replace("  runner: mi355x\n", "  runner: mi355x\n  color: red\n")
    p = write(tmp_path, text + "\n" + second)
    errs = errors_of(p)
    assert len(errs) == 3, errs
    lines = [int(e.split(":")[1]) for e in errs]
    assert lines == sorted(lines)
    assert any("unknown key 'color'" in e for e in errs)
    assert any("search-space[0].tp)" in e for e in errs)
    assert any("(at second.scenarios.fixed-seq-len[0].search-space[0].dcp-size)" in e for e in errs)


def test_wildcard_key_rejected(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("good-entry:", "good-*:"))
    assert "Wildcard '*' is not allowed" in only_error(p)


def test_key_in_two_files_lists_every_duplicate(tmp_path: Path) -> None:
    a = write(tmp_path, GOOD_SN + "\n" + GOOD_SN.replace("good-entry:", "other:"), "a.yaml")
    b = write(tmp_path, GOOD_SN.replace("good-entry:", "other:") + "\n" + GOOD_SN, "b.yaml")
    with pytest.raises(InfxError) as exc:
        load_catalog([a, b])
    text = str(exc.value)
    assert f"{b}:1:" in text and f"{b}:16:" in text
    assert "2 master config key(s) defined in more than one file: good-entry, other" in text


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InfxError, match="does not exist"):
        load_catalog([tmp_path / "nope.yaml"])


def test_multinode_requires_workers_and_hardware_pairs(tmp_path: Path) -> None:
    text = """\
    mn:
      image: i
      model: m
      model-prefix: p
      runner: mi355x-disagg
      precision: fp8
      framework: sglang-disagg
      multinode: true
      disagg: true
      scenarios:
        fixed-seq-len:
        - isl: 8192
          osl: 1024
          search-space:
          - conc-list: [1]
            prefill: { num-worker: 1, tp: 8, ep: 1, dp-attn: false, hardware: mi355x }
            decode: { num-worker: 1, tp: 8, ep: 1, dp-attn: false }
    """
    errs = errors_of(write(tmp_path, text))
    assert any("'hardware' must be specified for both" in e for e in errs), errs
    fixed = textwrap.dedent(text).replace(", hardware: mi355x", "")
    errs = errors_of(write(tmp_path, fixed, "m2.yaml"))
    assert len(errs) == 1 and "disagg=true requires kv-p2p-transfer" in errs[0]
    ok = fixed.replace("  disagg: true\n", "  disagg: true\n  kv-p2p-transfer: mori\n")
    assert list(load_catalog([write(tmp_path, ok, "m3.yaml")]).entries) == ["mn"]


def test_agentic_needs_cluster_runner(tmp_path: Path) -> None:
    p = write(tmp_path, AGENTIC_HEAD.replace("cluster:mi355x-amds", "mi355x")
              + "      - { tp: 8, kv-offloading: none, conc-list: [1] }\n")
    err = only_error(p)
    assert err.startswith(f"{p}:5:") and "cluster:<name>" in err


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{ tp: 8, kv-offloading: dram, conc-list: [1] }", "kv-offloading 'dram' requires 'kv-offload-backend'"),
        ("{ tp: 8, kv-offloading: none, kv-offload-backend: { name: x }, conc-list: [1] }",
         "not allowed with kv-offloading 'none'"),
        ("{ tp: 8, kv-offloading: none, conc-list: [1], kv-p2p-transfer: mori }", "requires multinode=true"),
        ("{ kv-offloading: none, conc-list: [1] }", "either tp or both prefill and decode"),
    ],
)
def test_agentic_rules(tmp_path: Path, row: str, message: str) -> None:
    assert message in only_error(write(tmp_path, AGENTIC_HEAD + f"      - {row}\n"))


def test_dram_needs_utilization(tmp_path: Path) -> None:
    text = AGENTIC_HEAD.replace("    - dram-utilization: 0.5\n      search-space:", "    - search-space:")
    text += "      - { tp: 8, kv-offloading: dram, kv-offload-backend: { name: hicache }, conc-list: [1] }\n"
    err = only_error(write(tmp_path, text))
    assert "requires dram-utilization" in err and err.endswith("search-space[0].kv-offloading)")


def test_router_declared_twice(tmp_path: Path) -> None:
    text = GOOD_SN.replace("  multinode: false\n", "  multinode: false\n  router: { name: r, version: '1' }\n")
    text = text.replace("{ tp: 4,", "{ tp: 4, router: { name: r, version: '2' },")
    err = only_error(write(tmp_path, text))
    assert "router must be declared either at the top level or in search-space entries" in err


def test_runner_config_errors(tmp_path: Path) -> None:
    p = write(tmp_path, "labels:\n  a: []\n  b: [x]\nhardware:\n  b:\n    gpus-per-node: 0\n", "runners.yaml")
    with pytest.raises(InfxError) as exc:
        load_runners(p)
    errs = [str(d) for d in exc.value.diagnostics]
    assert any(e.startswith(f"{p}:2:") and "(at labels.a)" in e for e in errs), errs
    assert any("missing required field 'available-cpu-dram-mib'" in e for e in errs), errs
    assert any(e.startswith(f"{p}:6:") for e in errs), errs


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "infx", *args], capture_output=True, text=True, cwd=REPO, timeout=120)


def test_cli_validate_exits_2_with_location(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD_SN.replace("conc-start: 4, conc-end: 64", "conc-start: 64, conc-end: 4"))
    proc = run_cli("validate", "--config-files", str(p), "--runner-config", str(REPO / "configs" / "runners.yaml"))
    assert proc.returncode == 2
    assert f"{p}:14:" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_generate_exits_2_on_bad_yaml(tmp_path: Path) -> None:
    p = write(tmp_path, "a: [1,\n")
    proc = subprocess.run(
        [sys.executable, "-m", "infx.matrix.generate", "full-sweep", "--config-files", str(p),
         "--runner-config", str(REPO / "configs" / "runners.yaml")],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"{p}:") and "YAML syntax error" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_validate_compat_catalog_only_runner_warnings(compat: Path) -> None:
    proc = run_cli("validate", "--config-files", str(compat / "amd-master.yaml"), str(compat / "nvidia-master.yaml"),
                   "--runner-config", str(compat / "runners.yaml"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 8
    assert all(": warning: runner '" in ln and "is not a label" in ln for ln in lines)
    assert "208 entries" in proc.stdout


def test_repo_catalog_validates() -> None:
    proc = run_cli("validate", "--config-files", "configs/amd-master.yaml", "configs/cpu-master.yaml",
                   "--runner-config", "configs/runners.yaml")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
