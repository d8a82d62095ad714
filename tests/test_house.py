"""House rules the checkers do not cover on their own (issue 20).

- Every ``# type: ignore`` in ``infx/`` names its error code(s) and says why in a comment beside it
  (``# type: ignore[arg-type]  # typer passes ...``); mypy's ``ignore-without-code`` only wants the code.
- Every ``# noqa`` in the linted trees names its rule(s) (ruff's PGH004 says the same; this also covers a
  file ruff is told to skip).
- Every ``infx/...`` path and ``infx.<module>`` name in ``docs/architecture.md`` exists.

Comments are read with :mod:`tokenize`, so a string that merely contains ``# noqa`` does not count.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE = REPO / "docs" / "architecture.md"
LINTED = ("infx", "tests", "benchmarks", ".ci")

_IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<codes>\[[^\]]*\])?(?P<rest>.*)")
_NOQA = re.compile(r"#\s*noqa\b(?P<codes>:\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?")
# a path under the package, and a dotted module name (files such as infx.toml and infx.db are not modules)
_DOC_PATH = re.compile(r"\binfx/[\w./-]*")
_DOC_MODULE = re.compile(r"\binfx(?:\.\w+)+")
_FILE_SUFFIXES = {"toml", "db", "json", "yaml", "yml", "lock", "txt", "html", "md"}


def _comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment token of a Python source."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string))
    return out


def ignore_problems(source: str) -> list[tuple[int, str]]:
    """``# type: ignore`` comments without an error code, or without a reason comment after it."""
    out = []
    for line, text in _comments(source):
        m = _IGNORE.search(text)
        if m is None:
            continue
        if not m.group("codes") or m.group("codes") == "[]":
            out.append((line, f"names no error code: {text.strip()}"))
        elif not re.match(r"\s*#\s*\S", m.group("rest")):
            out.append((line, f"says not why (a comment after the ignore): {text.strip()}"))
    return out


def noqa_problems(source: str) -> list[tuple[int, str]]:
    """``# noqa`` comments that name no rule."""
    return [(line, f"names no rule: {text.strip()}") for line, text in _comments(source)
            if (m := _NOQA.search(text)) is not None and not m.group("codes")]


def _top_level_names(module: Path) -> set[str]:
    """Names a module binds at its top level (definitions, assignments, imports, also under ``if``)
    and the names a lazy package exports through an ``_EXPORTS`` mapping."""
    names: set[str] = set()
    tree = ast.parse(module.read_text(encoding="utf-8"))
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {t.id for t in targets if isinstance(t, ast.Name)}
            names |= bound
            if "_EXPORTS" in bound and isinstance(node.value, ast.Dict):
                names.update(k.value for k in node.value.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body)
            todo.extend(node.orelse)
    return names


def _module_file(root: Path, parts: list[str]) -> Path | None:
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def doc_problems(text: str, root: Path) -> list[str]:
    """``infx/...`` paths that do not exist under ``root``, and ``infx.a.b`` names whose module does not
    exist or does not define the name that follows it."""
    out = []
    for m in _DOC_PATH.finditer(text):
        path = m.group().rstrip(".,:;")
        if not (root / path).exists():
            out.append(f"path {path} does not exist")
    for m in _DOC_MODULE.finditer(text):
        parts = m.group().split(".")
        if parts[-1] in _FILE_SUFFIXES:
            continue
        n = len(parts)
        while n > 1 and _module_file(root, parts[:n]) is None:
            n -= 1
        if n == 1:
            out.append(f"module {m.group()} does not exist")
            continue
        if n < len(parts):  # module.attribute: the module must bind the attribute
            module = _module_file(root, parts[:n])
            assert module is not None
            if parts[n] not in _top_level_names(module):
                out.append(f"{m.group()}: {'.'.join(parts[:n])} defines no {parts[n]} (and has no such submodule)")
    return out


def _sources(*trees: str) -> list[Path]:
    return sorted(p for t in trees for p in (REPO / t).rglob("*.py") if "__pycache__" not in p.parts)


# --------------------------------------------------------------------------- the checkers themselves


def test_ignore_checker_wants_a_code_and_a_reason() -> None:
    src = ("a = f(x)  # type: ignore\n"
           "b = f(x)  # type: ignore[arg-type]\n"
           "c = f(x)  # type: ignore[arg-type]  # typer passes a str here\n"
           "d = '# type: ignore'\n"
           "e = f(x)  # type: ignore[]  # empty brackets name nothing\n")
    assert [line for line, _ in ignore_problems(src)] == [1, 2, 5]


def test_noqa_checker_wants_a_rule() -> None:
    src = ("import os  # noqa\n"
           "import sys  # noqa: F401  (re-exported)\n"
           "x = lambda: 1  # noqa: E731, F841\n"
           "y = '# noqa'\n"
           "z = 1  # see noqa docs\n")
    assert [line for line, _ in noqa_problems(src)] == [1]


def test_doc_checker_finds_missing_paths_modules_and_names(tmp_path: Path) -> None:
    (tmp_path / "infx" / "stage").mkdir(parents=True)
    (tmp_path / "infx" / "__init__.py").write_text("")
    (tmp_path / "infx" / "stage" / "__init__.py").write_text("_EXPORTS = {'Lazy': 'infx.stage.mod'}\n")
    (tmp_path / "infx" / "stage" / "mod.py").write_text("class Thing:\n    pass\n\ndef helper():\n    pass\n")
    text = ("`infx/stage/mod.py`, `infx/stage/`, `infx/gone.py`. `infx.stage.mod.Thing`, `infx.stage.mod.helper`, "
            "`infx.stage.Lazy`, `infx.stage.old_mod`, `infx.other`, `infx.toml`, `infx.db`.")
    assert doc_problems(text, tmp_path) == [
        "path infx/gone.py does not exist",
        "infx.stage.old_mod: infx.stage defines no old_mod (and has no such submodule)",
        "module infx.other does not exist",
    ]


# --------------------------------------------------------------------------- the tree


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    found = [f"{p.relative_to(REPO)}:{line}: {why}" for p in _sources("infx")
             for line, why in ignore_problems(p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_every_noqa_names_its_rule() -> None:
    found = [f"{p.relative_to(REPO)}:{line}: {why}" for p in _sources(*LINTED)
             for line, why in noqa_problems(p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


def test_architecture_doc_names_only_paths_and_modules_that_exist() -> None:
    problems = doc_problems(ARCHITECTURE.read_text(encoding="utf-8"), REPO)
    assert not problems, "docs/architecture.md: " + "; ".join(problems)
