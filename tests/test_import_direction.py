"""The pipeline's direction, enforced on the import graph: each stage imports only stages below it
(docs/architecture.md, "Stages and their direction"), and no module import cycle exists.

Every ``import infx.X`` in the package counts, the lazy ones inside functions too: a lazy import is still
a dependency. A new top-level module or package must be given a layer here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "infx"

# Lower layers first. A module may import its own package and any package of a lower layer.
LAYERS: list[set[str]] = [
    {"diagnostics", "failures", "bounds", "builtin", "pointfiles", "preemption"},  # shared foundations
    {"atomic"},        # atomic writes; a refused write is an InfxError (WriteFault)
    {"yamlsource", "workspace", "jsonio", "outpaths", "cli_options"},
    {"catalog"},
    {"matrix"},
    {"records"},       # the raw request record: the contract between the load generator and the metrics
    {"metrics"},
    {"engine_metrics"},  # the engine's /metrics page parsed (telemetry, the agentic replay and live progress read it)
    {"loadgen"},
    {"agentic"},
    {"telemetry"},     # power/energy and engine-state samplers around a measurement (uses the result's clock)
    {"engines"},
    {"recipes"},       # upstream vLLM recipes: reader, renderer, the check of launches against them
    {"preflight"},
    {"evals"},         # accuracy evals (lm-eval in its own venv): reads model cards, written by the sweep
    {"changelog"},
    {"review"},        # infx review: the gate over base..head (reads matrix, engines, preflight, changelog)
    {"results"},
    {"interop"},       # InferenceX result files in and out (reads the store; the analysis and report build on it)
    {"analysis"},
    {"report"},
    {"repro"},         # repro bundles: receipt payloads, inventory, diff-env, the rerun verdict (the sweep writes them)
    {"sweep"},
    {"workflows"},
    {"scaffold"},
    {"demo", "workspace_cli"},
    {"cli", "__init__"},
    {"__main__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _unit(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0].removesuffix(".py")


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _main_guard_lines(tree: ast.Module) -> set[int]:
    """Lines of the module's ``if __name__ == "__main__":`` blocks (run only when it is the program)."""
    lines: set[int] = set()
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.left, ast.Name)
                and node.test.left.id == "__name__"):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _imports(path: Path, main_guard: bool = True) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``infx`` import in ``path``; ``main_guard=False`` leaves out the imports of
    its ``__main__`` block (``python -m pkg.mod`` handing over to its command line: never a cycle, since
    that block does not run when the module is imported)."""
    out = []
    tree = ast.parse(path.read_text(), str(path))
    skip = set() if main_guard else _main_guard_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.startswith("infx."))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("infx."):
            out.append((node.lineno, node.module))
            # ``from infx.pkg import module`` depends on that module
            out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
    return out


def _files() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_stage_has_a_layer() -> None:
    units = {_unit(p) for p in _files()} | {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert units - set(RANK) == set(), "give these modules a layer in LAYERS (and in docs/architecture.md)"


def test_stages_import_only_stages_below_them() -> None:
    violations = []
    for f in _files():
        src = _unit(f)
        for line, mod in _imports(f):
            dst = mod.split(".")[1]
            if dst != src and dst in RANK and RANK[dst] >= RANK.get(src, -1):
                violations.append(f"{f.relative_to(PKG.parent)}:{line}: {src} imports {mod} (layer {RANK[dst]} "
                                  f">= {RANK.get(src)})")
    assert violations == [], "\n".join(violations)


def test_no_module_import_cycles() -> None:
    modules = {_module(f): f for f in _files()}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, f in modules.items():
        for _, mod in _imports(f, main_guard=False):
            # a submodule importing its own package (``from infx.catalog import cache``) is no cycle: the
            # package is always initialised first
            if mod in modules and mod != name and not name.startswith(mod + "."):
                graph[name].add(mod)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(modules):
        if n not in state:
            visit(n)
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_a_main_block_counts_for_the_direction_not_for_cycles(tmp_path: Path) -> None:
    f = tmp_path / "gen.py"
    f.write_text("import infx.atomic\n\nif __name__ == \"__main__\":\n    from infx.matrix.cli_x import main\n")
    assert _imports(f) == [(1, "infx.atomic"), (4, "infx.matrix.cli_x"), (4, "infx.matrix.cli_x.main")]
    assert _imports(f, main_guard=False) == [(1, "infx.atomic")]


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    """The rule can fail: an upward import in a module is reported."""
    f = tmp_path / "bad.py"
    f.write_text("def f():\n    from infx.report.build import write_report\n")
    assert _imports(f) == [(2, "infx.report.build"), (2, "infx.report.build.write_report")]
    assert RANK["report"] > RANK["metrics"]
