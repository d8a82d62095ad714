"""No function in ``infx/`` is longer than 100 lines (``def`` to its last line, decorators left out). The few
exceptions are listed with their reason; an exception that got short again must leave the list."""

from __future__ import annotations

import ast
from pathlib import Path

INFX = Path(__file__).resolve().parents[1] / "infx"
LIMIT = 100

# (path under infx/, function) -> why it is still longer
EXCEPTIONS = {
    ("sweep/cli.py", "run_cmd"): "a typer command: about 90 of its lines declare the options of `infx run`",
    ("loadgen/cli.py", "bench_cmd"): "a typer command: most of its lines declare the options of `infx bench`",
}


def function_lengths() -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for f in sorted(INFX.rglob("*.py")):
        tree = ast.parse(f.read_text(), str(f))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                key = (f.relative_to(INFX).as_posix(), node.name)
                out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)
    return out


def test_no_function_is_longer_than_the_limit() -> None:
    lengths = function_lengths()
    long = {k: n for k, n in lengths.items() if n > LIMIT and k not in EXCEPTIONS}
    assert long == {}, "\n".join(f"infx/{p}: {name} is {n} lines" for (p, name), n in sorted(long.items()))


def test_every_exception_is_still_needed() -> None:
    lengths = function_lengths()
    stale = [k for k in EXCEPTIONS if lengths.get(k, 0) <= LIMIT]
    assert stale == [], f"no longer over {LIMIT} lines (take them off EXCEPTIONS): {stale}"


if __name__ == "__main__":  # prints the longest functions
    for (path, name), n in sorted(function_lengths().items(), key=lambda kv: -kv[1])[:15]:
        print(f"{n:4d}  infx/{path}: {name}{'  (exception)' if (path, name) in EXCEPTIONS else ''}")
