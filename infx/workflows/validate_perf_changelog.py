"""CI gate for ``perf-changelog.yaml``:
``python -m infx.workflows.validate_perf_changelog --base-ref origin/main --head-ref HEAD``.

Same check as ``infx changelog validate`` (see :mod:`infx.changelog.gate`): the head file ends
with a newline and keeps history append-only, the new entries' keys resolve at the head
revision, and their matrix generates. Blank lines around the appended entries (two before an
entry, a trailing one) are ``FILE:LINE:COL: warning: ...`` lines with the fix on stderr, never a
rejection; an entry inserted before history or a changed historical byte is an error. Exit 0
and a ``Validated ...`` line on success; exit 2 with one ``FILE:LINE:COL: error: ...`` line per
problem (naming the entry) on rejection.
The pull request number comes from ``--pr-number`` or the GitHub ``pull_request`` event.
argparse keeps the import path light for CI.
"""

from __future__ import annotations

import argparse
import sys

from infx.diagnostics import EXIT_BAD_INPUT, InfxError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m infx.workflows.validate_perf_changelog",
                                description=__doc__.split("\n")[0])
    p.add_argument("--base-ref", required=True)
    p.add_argument("--head-ref", required=True)
    p.add_argument("--changelog-file", default="perf-changelog.yaml")
    p.add_argument("--config-files", nargs="+", default=None,
                   help="master YAML paths read at the revisions (default configs/*-master.yaml)")
    p.add_argument("--runner-config", default="configs/runners.yaml")
    evals = p.add_mutually_exclusive_group()
    evals.add_argument("--all-evals", action="store_true")
    evals.add_argument("--evals-only", action="store_true")
    p.add_argument("--pr-number", type=int, default=None)
    p.add_argument("--link-repo", default=None, help="owner/name whose /pull/<n> links are canonical")
    p.add_argument("--repo", default=".")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from infx.changelog.gate import run_gate
    from infx.changelog.options import gate_options

    try:
        opts = gate_options(repo=args.repo, base_ref=args.base_ref, head_ref=args.head_ref,
                            changelog_file=args.changelog_file, config_files=args.config_files,
                            runner_config=args.runner_config, all_evals=args.all_evals, evals_only=args.evals_only,
                            pr_number=args.pr_number, link_repo=args.link_repo)
        report = run_gate(opts)
    except InfxError as exc:
        for d in exc.diagnostics:
            print(str(d), file=sys.stderr)
        return EXIT_BAD_INPUT
    for w in report.warnings:
        print(w, file=sys.stderr)
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
