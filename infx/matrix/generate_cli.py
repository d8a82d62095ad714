"""The matrix generator's command line: ``python -m infx.matrix.generate full-sweep|test-config`` and
``infx matrix``, the same arguments as the reference generator. The JSON array goes to stdout in the
reference's byte format; diagnostics go to stderr (exit 2 on bad input).

It uses argparse, not typer, so the fast path never imports typer or rich; the rows come from
:mod:`infx.matrix.generate`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from infx.diagnostics import InfxError, set_verbose
from infx.matrix.generate import SCENARIO_TYPES, full_sweep_rows, test_config_rows


def build_parser(prog: str = "python -m infx.matrix.generate") -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config-files", nargs="+", required=True, metavar="FILE", help="master config YAML files")
    common.add_argument("--runner-config", default="configs/runners.yaml", metavar="FILE",
                        help="runners.yaml (default: configs/runners.yaml, relative to the cwd)")
    ev = common.add_mutually_exclusive_group()
    ev.add_argument("--no-evals", action="store_true", help="no eval marking")
    ev.add_argument("--evals-only", action="store_true", help="only eval rows (eval-only: true)")
    common.add_argument("--all-evals", action="store_true", help="every eligible row is an eval (eval-only rows)")
    common.add_argument("--runner-node-filter", metavar="SUBSTR", help="expand runners into matching node names")
    common.add_argument("--scenario-type", nargs="+", choices=SCENARIO_TYPES, help="only these scenario types")
    common.add_argument("--verbose", "-v", action="store_true", help="long warnings list every item, one per line")
    common.add_argument("--github-matrix", action="store_true",
                        help="emit the buckets a GitHub Actions workflow fans out over instead of a flat array")

    p = argparse.ArgumentParser(prog=prog,
                                description="Expand master configs into benchmark matrix rows (JSON on stdout).")
    sub = p.add_subparsers(dest="command", required=True)
    fs = sub.add_parser("full-sweep", parents=[common], help="every entry, with filters")
    fs.add_argument("--model-prefix", nargs="+", help="config-key prefixes")
    fs.add_argument("--precision", nargs="+")
    fs.add_argument("--framework", nargs="+")
    fs.add_argument("--runner-type", nargs="+", help="master runner labels (must be runners.yaml labels)")
    fs.add_argument("--seq-lens", nargs="+", choices=("1k1k", "8k1k"))
    fs.add_argument("--step-size", type=int, default=2)
    fs.add_argument("--min-conc", type=int)
    fs.add_argument("--max-conc", type=int)
    fs.add_argument("--max-tp", type=int)
    fs.add_argument("--max-ep", type=int)
    fs.add_argument("--single-node", action="store_true")
    fs.add_argument("--multi-node", action="store_true")
    tc = sub.add_parser("test-config", parents=[common], help="named config keys (fnmatch globs allowed)")
    tc.add_argument("--config-keys", nargs="+", required=True, metavar="KEY")
    tc.add_argument("--conc", nargs="+", type=int, help="keep only these concurrencies")
    tc.add_argument("--seq-lens", nargs="+", choices=("1k1k", "8k1k"))
    return p


def eval_mode(args: argparse.Namespace) -> str:
    if args.no_evals:
        return "none"
    if args.all_evals:
        return "all"
    if args.evals_only:
        return "evals-only"
    return "default"


def run(argv: Sequence[str] | None = None, prog: str = "python -m infx.matrix.generate") -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.all_evals and args.no_evals:
        parser.error("--all-evals cannot be combined with --no-evals")
    if args.verbose:
        set_verbose(True)
    try:
        rows = _rows_from_args(args)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return 2
    if args.github_matrix:
        from infx.matrix.github import emit  # lazy: keeps the plain path free of pydantic-model imports

        sys.stdout.write(emit(rows) + "\n")
    else:
        sys.stdout.write(json.dumps(rows) + "\n")
    sys.stdout.flush()
    return 0


def _rows_from_args(args: argparse.Namespace) -> list[dict[str, Any]]:
    from infx.catalog.loader import load_catalog_and_runners, runner_warnings

    catalog, runners = load_catalog_and_runners(args.config_files, args.runner_config)
    for d in runner_warnings(catalog, runners):
        print(str(d), file=sys.stderr)
    mode = eval_mode(args)
    if args.command == "test-config":
        return test_config_rows(
            catalog, runners, args.config_keys, evals=mode, conc=args.conc, seq_lens=args.seq_lens,
            scenario_types=args.scenario_type, runner_node_filter=args.runner_node_filter,
        )
    return full_sweep_rows(
        catalog, runners, evals=mode, model_prefix=args.model_prefix, precision=args.precision,
        framework=args.framework, runner_type=args.runner_type, seq_lens=args.seq_lens,
        step_size=args.step_size, min_conc=args.min_conc, max_conc=args.max_conc, max_tp=args.max_tp,
        max_ep=args.max_ep, single_node=args.single_node, multi_node=args.multi_node,
        scenario_types=args.scenario_type, runner_node_filter=args.runner_node_filter,
    )


def main(argv: Sequence[str] | None = None) -> None:
    raise SystemExit(run(argv))
