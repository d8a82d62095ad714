"""``infx init DIR``: a new workspace that passes ``infx validate``, ``infx preflight`` and
``infx run --dry-run`` at once.

The files come from what infx ships (:data:`infx.workspace.SCAFFOLD_DIR`): the marker, an example
catalog entry for the embedded engine, runners, an empty perf-changelog; plus copies of the built-in
recipe and cards that entry uses, so they can be edited in place (a workspace file overrides the
built-in one of the same name); and the two GitHub workflows that run ``infx review`` on pull requests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from infx.diagnostics import Diagnostic, InfxError
from infx.workspace import BUILTIN_CARDS_DIR, BUILTIN_RECIPES_DIR, SCAFFOLD_DIR

# workspace path -> shipped file
SCAFFOLD_FILES: dict[str, Path] = {
    "infx.toml": SCAFFOLD_DIR / "infx.toml",
    "configs/cpu-master.yaml": SCAFFOLD_DIR / "configs" / "cpu-master.yaml",
    "configs/runners.yaml": SCAFFOLD_DIR / "configs" / "runners.yaml",
    "perf-changelog.yaml": SCAFFOLD_DIR / "perf-changelog.yaml",
    "cost-model.yaml": SCAFFOLD_DIR / "cost-model.yaml",  # the shipped prices + illustrative cpu prices
    ".gitignore": SCAFFOLD_DIR / "gitignore",
    "recipes/tinyllama-cpu-vllm.yaml": BUILTIN_RECIPES_DIR / "tinyllama-cpu-vllm.yaml",
    "cards/models/tinyllama.yaml": BUILTIN_CARDS_DIR / "models" / "tinyllama.yaml",
    "cards/hardware/cpu.yaml": BUILTIN_CARDS_DIR / "hardware" / "cpu.yaml",
    # `infx review` on every pull request (read-only), and the workflow_run job that posts its comment
    ".github/workflows/infx-review.yml": SCAFFOLD_DIR / "workflows" / "infx-review.yaml",
    ".github/workflows/infx-review-comment.yml": SCAFFOLD_DIR / "workflows" / "infx-review-comment.yaml",
}


def init_workspace(target: Path) -> list[Path]:
    """Write the scaffold into ``target`` (created if missing). Refuses, writing nothing, when any of
    the files already exists. Returns the files written."""
    existing = [rel for rel in SCAFFOLD_FILES if (target / rel).exists()]
    if existing:
        raise InfxError(Diagnostic(f"{target}: already has {', '.join(existing)}; nothing written "
                                   "(infx init never overwrites)", str(target / existing[0])))
    if target.exists() and not target.is_dir():
        raise InfxError(Diagnostic(f"{target}: not a directory", str(target)))
    for rel in SCAFFOLD_FILES:  # every directory the scaffold needs, checked before anything is written
        for parent in reversed((target / rel).relative_to(target).parents[:-1]):
            if (target / parent).exists() and not (target / parent).is_dir():
                raise InfxError(Diagnostic(f"{target}: '{parent}' is a file, where infx init needs a directory; "
                                           "nothing written", str(target / parent)))
    written = []
    for rel, src in SCAFFOLD_FILES.items():
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(f".{dst.name}.tmp")
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        written.append(dst)
    return written
