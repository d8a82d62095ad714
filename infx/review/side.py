"""One side of the review (base or head): its workspace files unpacked from git, the catalog with source
positions, the matrix from the same generator as every other command, and launches rendered on demand
(typed recipes and bench scripts alike; scripts only ever run inside the sandbox)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.diagnostics import Diagnostic, InfxError
from infx.matrix.point import Point
from infx.workspace import Workspace

#: Row fields that never distinguish an arm (the spec's arm = the row minus these).
NON_ARM = frozenset({"conc", "exp-name", "recipe-fingerprint", "run-eval", "eval-only", "eval-conc",
                     "eval-all-concs", "point-id"})


@dataclass
class EntryPlace:
    """Where a catalog entry's parts sit: file (workspace-relative) and lines."""

    file: str
    key_line: int
    image_line: int
    runner_line: int
    rows: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (scenario, line, search-space row)


@dataclass
class Side:
    label: str  # "base" | "head"
    ref: str
    sha: str
    root: Path
    top: Path = Path(".")  # the git repository
    prefix: str = ""  # the workspace's directory inside it ('' or 'sub/dir/')
    ws: Workspace | None = None
    problem: str | None = None  # why this side could not be read (base only; a bad head is bad input)
    points: dict[str, tuple[str, Point]] = field(default_factory=dict)  # point-id -> (config key, point)
    places: dict[str, EntryPlace] = field(default_factory=dict)
    recipes: Any = None
    runners: Any = None
    recipe_files: dict[str, str] = field(default_factory=dict)  # recipe name -> workspace-relative file
    _launches: dict[str, Any] = field(default_factory=dict)
    _cards: Any = None
    _recipes_digest: str | None = None

    # ---- paths

    def rel(self, path: str | Path | None) -> str | None:
        if path is None:
            return None
        p = Path(path)
        try:
            return p.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return p.as_posix()

    def file_bytes(self, rel: str) -> bytes | None:
        p = self.root / rel
        return p.read_bytes() if p.is_file() else None

    def changelog_rel(self) -> str:
        rel = self.rel(self.ws.changelog) if self.ws else None
        return rel or "perf-changelog.yaml"

    def cards(self) -> Any:
        """The model and hardware cards of this side (built-in, then the workspace's), loaded once."""
        if self._cards is None:
            from infx.preflight.cards import load_cards

            self._cards = load_cards(self.ws.card_dirs() if self.ws else None)
        return self._cards

    # ---- launches

    def source_digest(self, point: Point) -> str:
        """What the point's launch is rendered from: the typed recipes' bytes, or its bench script's and
        the shared library's. Equal rows with equal sources render equal launches."""
        from infx.engines.hardware import UnknownHardware, hardware_for_runner

        try:
            sku = hardware_for_runner(point.runner).sku
        except UnknownHardware:
            return "unknown-hardware"
        if point.multinode or self.recipes.candidates(point, sku) or self.recipes.scripts is None:
            return "recipes:" + self._all_recipes_digest()
        lookup = self.recipes.scripts.lookup(point)
        if lookup is None or lookup.path is None:
            return "no-script"
        return f"script:{self.recipes.scripts.file_sha(lookup.path)}:{self.recipes.scripts.lib_sha()}"

    def _all_recipes_digest(self) -> str:
        if self._recipes_digest is None:
            h = hashlib.sha256()
            for name, f in sorted(self.recipe_files.items()):
                h.update(name.encode() + b"\0" + Path(f).read_bytes() + b"\0")
            self._recipes_digest = h.hexdigest()
        return self._recipes_digest

    def prefetch(self, pids: list[str]) -> None:
        from infx.engines.render import prefetch_scripts

        todo = [self.points[p][1] for p in pids if p not in self._launches]
        if todo and self.recipes is not None:
            prefetch_scripts(todo, self.recipes)

    def launch(self, pid: str) -> Any:
        """The rendered launch of a point (a Launch or a deployment), or the one-line reason it does not render."""
        if pid not in self._launches:
            point = self.points[pid][1]
            try:
                if point.multinode:
                    from infx.engines.disagg.render import render_deployment

                    self._launches[pid] = render_deployment(point, self.recipes)
                else:
                    from infx.engines.render import render_launch

                    self._launches[pid] = render_launch(point, self.recipes, base_dir=self.root)
            except InfxError as exc:
                self._launches[pid] = "; ".join(d.message for d in exc.diagnostics)
        return self._launches[pid]

    def recipe_file_of(self, launch: Any) -> str | None:
        """The workspace-relative file that produced a launch (a recipe, or a bench script)."""
        script = getattr(launch, "script", None)
        if script:
            return str(script)
        f = getattr(launch, "recipe_file", None) or self.recipe_files.get(getattr(launch, "recipe", "") or "")
        return self.rel(f) if f else None


def arm_of(key: str, point: Point) -> str:
    from infx.matrix.buckets import canonical_json

    row = {k: v for k, v in point.to_row().items() if k not in NON_ARM}
    return key + "|" + canonical_json(row)


def match_key(key: str, point: Point) -> str:
    """A point's identity with the image left out: a re-pinned image changes a point, it does not
    replace it."""
    from infx.matrix.buckets import canonical_json

    row = {k: v for k, v in point.to_row().items() if k not in NON_ARM and k != "image"}
    return key + "|" + canonical_json(row) + f"|{point.conc}"


def load_side(label: str, ref: str, sha: str, root: Path, *, required: bool) -> Side:
    """Read one side from its unpacked tree. A head that cannot be read is bad input (InfxError with
    paths relative to the workspace); a base that cannot be read is recorded in ``problem``."""
    side = Side(label=label, ref=ref, sha=sha, root=root)
    try:
        _load(side)
    except InfxError as exc:
        diags = [_relative(d, side) for d in exc.diagnostics]
        if required:
            raise InfxError(diags) from None
        side.problem = "; ".join(str(d) for d in diags[:3])
        side.points = {}
    return side


def _relative(d: Diagnostic, side: Side) -> Diagnostic:
    root = str(side.root.resolve()) + "/"
    f = d.file.replace(root, "").replace(str(side.root) + "/", "") if d.file else d.file
    msg = d.message.replace(root, "").replace(str(side.root) + "/", "")
    return Diagnostic(f"{msg} ({side.label} {side.sha[:12]})", f, d.line, d.col, d.path, d.severity)


def _load(side: Side) -> None:
    from infx import workspace
    from infx.catalog import load_runners
    from infx.engines.recipes import recipe_files, workspace_recipes
    from infx.matrix.select import keyed_points

    ws = workspace.at(side.root, "--workspace")
    side.ws = ws
    config_files = ws.require_config_files()
    keyed = keyed_points(config_files, ws.runner_config, None, "none")
    side.points = {p.point_id: (k, p) for k, p in keyed}
    side.runners = load_runners(ws.runner_config)
    side.recipes = workspace_recipes(None, ws)
    side.recipe_files = {Path(f).stem: str(f) for f in recipe_files(None, ws)}
    for f in config_files:
        _places(side, f)


def _places(side: Side, path: Path) -> None:
    from infx.yamlsource import parse_yaml

    src = parse_yaml(path.read_bytes(), str(path))
    rel = side.rel(path) or path.name
    if not isinstance(src.data, dict):
        return
    for key, entry in src.data.items():
        if not isinstance(entry, dict):
            continue
        key_line = src.key_positions.get((key,), (1, 1))[0]
        place = EntryPlace(
            file=rel, key_line=key_line,
            image_line=src.key_positions.get((key, "image"), (key_line, 1))[0],
            runner_line=src.key_positions.get((key, "runner"), (key_line, 1))[0],
        )
        for scen, items in (entry.get("scenarios") or {}).items():
            for i, item in enumerate(items or []):
                if not isinstance(item, dict):
                    continue
                for j, row in enumerate(item.get("search-space") or []):
                    if isinstance(row, dict):
                        line = src.positions.get((key, "scenarios", scen, i, "search-space", j), (key_line, 1))[0]
                        merged = {k: v for k, v in item.items() if k != "search-space"}
                        merged.update(row)
                        place.rows.append((scen, line, merged))
        side.places[key] = place


def row_line(place: EntryPlace, point: Point) -> int:
    """The search-space row a point comes from: the first row whose own fields all agree with the
    point's and whose concurrencies hold the point's (the entry's key line when none does)."""
    data = point.to_row()
    conc = point.conc if isinstance(point.conc, int) else max(point.conc)
    scen = "agentic-coding" if point.is_agentic else "fixed-seq-len"
    for s, line, row in place.rows:
        if s != scen:
            continue
        if not _conc_in(row, conc):
            continue
        if all(_same(data.get(k), v) for k, v in row.items() if k in data and not isinstance(v, (dict, list))):
            return line
    return place.key_line


def _conc_in(row: dict[str, Any], conc: int) -> bool:
    if "conc-list" in row:
        return conc in (row["conc-list"] or [])
    lo, hi = row.get("conc-start"), row.get("conc-end")
    if isinstance(lo, int) and isinstance(hi, int):
        return lo <= conc <= hi
    return True


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a) == bool(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)
