"""The ``validate`` command: load every file, print every diagnostic, exit 2 on any error."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser(prog: str = "infx validate") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Validate master config files and a runner config.")
    p.add_argument("--config-files", nargs="+", default=None, metavar="FILE",
                   help="master config YAML files (default: the workspace's configs/*-master.yaml)")
    p.add_argument("--runner-config", default=None, metavar="FILE", help="runners.yaml (default: the workspace's)")
    return p


def run(argv: Sequence[str] | None = None, prog: str = "infx validate") -> int:
    from infx.catalog.loader import load_catalog_and_runners, runner_warnings
    from infx.diagnostics import InfxError
    from infx.workspace import current

    args = build_parser(prog).parse_args(argv)
    try:
        ws = current()
        catalog, runners = load_catalog_and_runners(args.config_files or ws.require_config_files(),
                                                    args.runner_config or ws.runner_config)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        n = sum(d.severity == "error" for d in exc.diagnostics)
        print(f"{n} error(s)", file=sys.stderr)
        return 2
    warns = runner_warnings(catalog, runners)
    for d in warns:
        print(str(d), file=sys.stderr)
    print(f"ok: {len(catalog.entries)} entries in {len(catalog.files)} file(s), {len(runners.labels)} runner labels"
          + (f", {len(warns)} warning(s)" if warns else ""))
    return 0
