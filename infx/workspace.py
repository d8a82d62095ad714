"""The workspace: the one directory every command reads its catalog, recipes, cards, image pins,
perf-changelog and results from.

Resolution, first match wins:

1. ``--workspace DIR`` on the ``infx`` command line (:func:`set_override`);
2. the ``INFX_WORKSPACE`` environment variable;
3. the nearest directory, from the working directory upwards, holding an ``infx.toml`` marker;
4. the nearest directory, from the working directory upwards, holding both ``configs/`` and ``recipes/``;
5. the working directory itself (nothing found: commands that need a catalog say which file is missing).

``infx.toml`` may be empty; its optional ``[paths]`` table moves any of the standard locations
(relative to the workspace root). What infx itself ships (the embedded engine's recipe, default
model and hardware cards, the ``infx init`` scaffold) lives in :data:`BUILTIN_DIR` inside the package;
a workspace file of the same name overrides a built-in one.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from infx.bounds import MAX_INT_DIGITS, int_in_range, line_of_long_digits
from infx.diagnostics import Diagnostic, InfxError

MARKER = "infx.toml"
ENV_VAR = "INFX_WORKSPACE"
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
BUILTIN_RECIPES_DIR = BUILTIN_DIR / "recipes"
BUILTIN_CARDS_DIR = BUILTIN_DIR / "cards"
SCAFFOLD_DIR = BUILTIN_DIR / "scaffold"

FoundBy = Literal["--workspace", "INFX_WORKSPACE", "infx.toml", "configs/ + recipes/", "working directory"]

_override: Path | None = None


class WorkspacePaths(BaseModel):
    """``[paths]`` of ``infx.toml``: each location relative to the workspace root."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    configs: str = "configs"
    runners: str = "configs/runners.yaml"
    recipes: str = "recipes"
    cards: str = "cards"
    images_lock: str = Field("configs/images.lock", alias="images-lock")
    changelog: str = "perf-changelog.yaml"
    results: str = "results"
    cache: str = ".infx"
    cost_model: str = Field("cost-model.yaml", alias="cost-model")
    benchmarks: str = "benchmarks"  # InferenceX bench scripts (benchmarks/single_node/...)


class WorkspaceStore(BaseModel):
    """``[store]`` of ``infx.toml``: the results store every command of the workspace uses
    (``url = "postgresql://USER@HOST:PORT/DB"`` for a team store; default: ``RESULTS/infx.db``).
    Credentials come from the environment or ``~/.pgpass``, never from this file."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None


class WorkspaceUpstreamRecipes(BaseModel):
    """``[recipes]`` of ``infx.toml``: an upstream vLLM recipes checkout (vllm-project/recipes) that
    ``infx recipes`` reads (``path``, relative to the workspace root) and, optionally, the commit to read."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    commit: str | None = None


class WorkspaceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: WorkspacePaths = WorkspacePaths()
    store: WorkspaceStore = WorkspaceStore()
    recipes: WorkspaceUpstreamRecipes = WorkspaceUpstreamRecipes()


class Workspace(BaseModel):
    """A resolved workspace: its root, how it was found, and every location derived from it."""

    model_config = ConfigDict(frozen=True)

    root: Path
    found_by: FoundBy
    paths: WorkspacePaths = WorkspacePaths()
    store: WorkspaceStore = WorkspaceStore()
    upstream: WorkspaceUpstreamRecipes = WorkspaceUpstreamRecipes()

    def _at(self, rel: str) -> Path:
        return self.root / rel

    @property
    def marker(self) -> Path | None:
        m = self.root / MARKER
        return m if m.is_file() else None

    @property
    def configs_dir(self) -> Path:
        return self._at(self.paths.configs)

    @property
    def runner_config(self) -> Path:
        return self._at(self.paths.runners)

    @property
    def recipes_dir(self) -> Path:
        return self._at(self.paths.recipes)

    @property
    def cards_dir(self) -> Path:
        return self._at(self.paths.cards)

    @property
    def images_lock(self) -> Path:
        return self._at(self.paths.images_lock)

    @property
    def changelog(self) -> Path:
        return self._at(self.paths.changelog)

    @property
    def upstream_recipes(self) -> Path | None:
        """``[recipes] path``: the upstream vLLM recipes checkout, or None when the workspace names none."""
        return self._at(self.upstream.path) if self.upstream.path else None

    @property
    def results_dir(self) -> Path:
        return self._at(self.paths.results)

    @property
    def cost_model_file(self) -> Path:
        """The workspace's cost table (replaces the built-in ``infx/builtin/cost-model.yaml`` when present)."""
        return self._at(self.paths.cost_model)

    @property
    def benchmarks_dir(self) -> Path:
        return self._at(self.paths.benchmarks)

    @property
    def store_url(self) -> str | None:
        """``[store] url`` of ``infx.toml`` (None: the results directory's ``infx.db``)."""
        return self.store.url

    @property
    def cache_dir(self) -> Path:
        """Local state: built models (``cache/``), the engine started by ``infx engine up`` (``engine/``)."""
        return self._at(self.paths.cache)

    def config_files(self) -> list[Path]:
        """The catalog: ``*-master.yaml`` in the configs directory, sorted."""
        return sorted(self.configs_dir.glob("*-master.yaml")) if self.configs_dir.is_dir() else []

    def require_config_files(self) -> list[Path]:
        files = self.config_files()
        if not files:
            raise InfxError(Diagnostic(
                f"no catalog: no *-master.yaml in {self.configs_dir} (workspace {self.root}, found by "
                f"{self.found_by}); give --config-files, --workspace DIR, or create one with `infx init DIR`"))
        return files

    def recipe_dirs(self) -> list[Path]:
        """Built-in recipes first, then the workspace's (a workspace recipe of the same name wins)."""
        return [BUILTIN_RECIPES_DIR] + ([self.recipes_dir] if self.recipes_dir.is_dir() else [])

    def card_dirs(self) -> list[Path]:
        """Built-in cards first, then the workspace's (a workspace card of the same name wins)."""
        return [BUILTIN_CARDS_DIR] + ([self.cards_dir] if self.cards_dir.is_dir() else [])


def set_override(path: Path | None) -> None:
    """``infx --workspace DIR``: takes precedence over ``INFX_WORKSPACE`` and the search."""
    global _override
    _override = path


def _is_layout(d: Path) -> bool:
    return (d / "configs").is_dir() and (d / "recipes").is_dir()


def _search(start: Path) -> tuple[Path, FoundBy] | None:
    chain = [start, *start.parents]
    for d in chain:
        if (d / MARKER).is_file():
            return d, "infx.toml"
    for d in chain:
        if _is_layout(d):
            return d, "configs/ + recipes/"
    return None


_MAX_TOML = 2**20


def load_workspace_file(path: Path) -> WorkspaceFile:
    """Parse ``infx.toml``; errors name the file and line. Bounded: at most 1 MiB of UTF-8 text,
    nesting too deep for the parser is one line too."""
    try:
        if not path.is_file():
            raise InfxError(Diagnostic(f"{path.name} is not a file", str(path)))
        with path.open("rb") as fh:
            raw = fh.read(_MAX_TOML + 1)
    except OSError as exc:
        raise InfxError(Diagnostic(f"cannot read {path.name}: {exc.strerror or exc}", str(path))) from None
    if len(raw) > _MAX_TOML:
        raise InfxError(Diagnostic(f"{path.name} is larger than {_MAX_TOML // 2**20} MiB", str(path)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InfxError(Diagnostic(f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded",
                                   str(path), line)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or 1
        raise InfxError(Diagnostic(f"not valid TOML: {exc.args[0] if exc.args else exc}", str(path), line, 1)) from None
    except RecursionError:
        raise InfxError(Diagnostic("not valid TOML: nested too deeply", str(path))) from None
    except ValueError:  # Python's own digit limit on an integer's conversion
        raise InfxError(Diagnostic(f"an integer is written with more than {MAX_INT_DIGITS} digits",
                                   str(path), line_of_long_digits(text) or 1, 1)) from None
    bad = _out_of_range(data)
    if bad is not None:
        raise InfxError(Diagnostic(f"integer {str(bad[1])[:20]}... is out of range (beyond 64 bits)", str(path),
                                   _line_of(text, bad[0]), 1, path=(bad[0],)))
    try:
        return WorkspaceFile.model_validate(data)
    except ValidationError as exc:
        diags = []
        for e in exc.errors(include_url=False):
            loc = tuple(str(p) for p in e["loc"])
            diags.append(Diagnostic(e["msg"], str(path), _line_of(text, loc[-1] if loc else ""), 1, path=loc))
        raise InfxError(diags) from None


def _out_of_range(data: object, key: str = "") -> tuple[str, int] | None:
    """The first (key, integer) past 64 bits anywhere in parsed TOML, or None (no recursion: the
    parser accepts nesting deeper than Python's stack)."""
    stack: list[tuple[str, object]] = [(key, data)]
    while stack:
        k, node = stack.pop()
        if isinstance(node, int) and not isinstance(node, bool) and not int_in_range(node):
            return k, node
        if isinstance(node, dict):
            stack.extend((str(kk), v) for kk, v in node.items())
        elif isinstance(node, list):
            stack.extend((k, v) for v in node)
    return None


def _line_of(text: str, key: str) -> int:
    """Line of the first ``key =`` or ``[key]`` in a TOML text (1 when not found)."""
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith(f"[{key}]") or s.split("=", 1)[0].strip() == key:
            return i
    return 1


def resolve(cwd: Path | None = None) -> Workspace:
    """The workspace for a command run in ``cwd`` (default: the working directory)."""
    cwd = (cwd or Path.cwd()).resolve()
    found: tuple[Path, FoundBy] | None
    if _override is not None:
        found = (_explicit(_override, "--workspace"), "--workspace")
    elif os.environ.get(ENV_VAR):
        found = (_explicit(Path(os.environ[ENV_VAR]), ENV_VAR), "INFX_WORKSPACE")
    else:
        found = _search(cwd)
    root, how = found or (cwd, "working directory")
    return at(root, how)


def at(root: str | Path, found_by: FoundBy = "--workspace") -> Workspace:
    """The workspace rooted at ``root`` (its ``infx.toml`` read when present)."""
    root = Path(root).resolve()
    marker = root / MARKER
    wf = load_workspace_file(marker) if marker.is_file() else WorkspaceFile()
    return Workspace(root=root, found_by=found_by, paths=wf.paths, store=wf.store, upstream=wf.recipes)


def _explicit(path: Path, source: str) -> Path:
    p = path.expanduser().resolve()
    if not p.is_dir():
        raise InfxError(Diagnostic(f"{source}: workspace directory '{path}' does not exist"))
    return p


def current() -> Workspace:
    """The workspace of this process (override, environment, or search from the working directory)."""
    return resolve()
