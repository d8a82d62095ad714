"""Issue 23: the store package is the only code that speaks SQL. Every string literal of every module outside
``infx/results/store/`` is checked for SQL's verbs (docstrings and f-string parts included)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "infx"
STORE = PKG / "results" / "store"
SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|CREATE|DELETE|PRAGMA|ALTER TABLE|DROP TABLE)\b")


def sql_literals(source: str, name: str = "<source>") -> list[tuple[int, str]]:
    """(line, text) of each string literal in ``source`` that holds an SQL verb."""
    out = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            out.append((node.lineno, node.value.strip().splitlines()[0][:80]))
    return out


def test_no_module_outside_the_store_package_holds_sql() -> None:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if STORE in path.parents:
            continue
        found += [f"{path.relative_to(PKG.parent)}:{line}: {text}"
                  for line, text in sql_literals(path.read_text(), str(path))]
    assert found == [], "SQL outside infx/results/store/ (move it into a Store method):\n" + "\n".join(found)


def test_the_check_sees_sql_in_any_literal() -> None:
    src = ('q = "SELECT x FROM t"\n'
           'def f(t):\n    return f"DELETE FROM {t} WHERE a=?"\n'
           '"""CREATE TABLE y (a)"""\n'
           'HF_UPDATE_COUNTS = "insert here"\n')
    assert sorted(line for line, _ in sql_literals(src)) == [1, 3, 4]
