"""Read an upstream vLLM recipes checkout: a plain directory, or any commit of a git repository
(read from git objects, the working tree untouched).

Strict where upstream is strict: a file that is not YAML, or that repeats a mapping key (js-yaml
throws on both), is an error at its file:line. Where upstream silently accepts something odd (spec
section 2.3) the reader warns and goes on: an unknown hardware id, an exact GPU id in the recipe-level
``hardware_overrides`` (never read there), a ``docker_image`` that is not an image reference, a
``strategy_overrides.<s>.tp`` for a strategy that ignores it, a ``--tensor-parallel-size`` the
strategy shadows or that overrides the strategy.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from infx.diagnostics import Diagnostic, InfxError, PathElem, Severity
from infx.recipes.model import Recipe, Strategy, Taxonomy
from infx.yamlsource import YamlSource, parse_yaml

M = TypeVar("M", bound=BaseModel)

#: A docker image reference: no spaces, optional registry/namespace, tag and digest.
_IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/:@+-]*$", re.IGNORECASE)
EXACT_GPU_AT_RECIPE_LEVEL = ("exact GPU ids are ignored at recipe level (use variants.<v>.hardware_overrides or "
                             "strategy_overrides.<s>.hardware_overrides)")


class RecipeTree:
    """The files of a recipes checkout: a directory or one git commit."""

    def __init__(self, root: str | Path, commit: str | None = None) -> None:
        self.root = Path(root)
        self.commit: str | None = None
        self._blobs: dict[str, bytes] = {}
        self._names: list[str] = []
        if not self.root.is_dir():
            raise InfxError(Diagnostic(f"recipes checkout '{root}' is not a directory", str(root)))
        if commit is None:
            self._names = sorted(p.relative_to(self.root).as_posix() for sub in ("models", "strategies", "kv_store")
                                 if (self.root / sub).is_dir() for p in (self.root / sub).rglob("*.yaml"))
            if (self.root / "taxonomy.yaml").is_file():
                self._names.insert(0, "taxonomy.yaml")
        else:
            self.commit = self._resolve(commit)
            self._read_git()

    def _git(self, *args: str, stdin: bytes | None = None) -> bytes:
        try:
            r = subprocess.run(["git", "-C", str(self.root), *args], input=stdin, capture_output=True, check=False)
        except FileNotFoundError:
            raise InfxError(Diagnostic("git is not installed; it is needed to read a recipes commit",
                                       str(self.root))) from None
        if r.returncode != 0:
            msg = r.stderr.decode(errors="replace").strip().splitlines()
            raise InfxError(Diagnostic(f"git {args[0]} failed: {msg[-1] if msg else r.returncode}", str(self.root)))
        return r.stdout

    def _resolve(self, commit: str) -> str:
        if commit.startswith("-"):
            raise InfxError(Diagnostic(f"'{commit}' is not a commit", str(self.root)))
        try:
            return self._git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").decode().strip()
        except InfxError:
            raise InfxError(Diagnostic(f"'{commit}' is not a commit of the recipes repository",
                                       str(self.root))) from None

    def _read_git(self) -> None:
        assert self.commit is not None
        out = self._git("ls-tree", "-r", "-z", "--name-only", self.commit, "--",
                        "taxonomy.yaml", "models", "strategies", "kv_store")
        names = [n for n in out.decode().split("\0") if n.endswith(".yaml")]
        req = "".join(f"{self.commit}:{n}\n" for n in names).encode()
        raw = self._git("cat-file", "--batch", stdin=req) if names else b""
        pos = 0
        for n in names:
            nl = raw.index(b"\n", pos)
            size = int(raw[pos:nl].split()[2])
            self._blobs[n] = raw[nl + 1:nl + 1 + size]
            pos = nl + 1 + size + 1
        self._names = sorted(names)

    def names(self, prefix: str = "") -> list[str]:
        return [n for n in self._names if n.startswith(prefix)]

    def exists(self, rel: str) -> bool:
        return rel in self._blobs if self.commit else (self.root / rel).is_file()

    def read(self, rel: str) -> bytes:
        if self.commit:
            if rel not in self._blobs:
                raise InfxError(Diagnostic(f"{rel} does not exist at commit {self.commit[:12]}", str(self.root)))
            return self._blobs[rel]
        try:
            return (self.root / rel).read_bytes()
        except OSError as exc:
            raise InfxError(Diagnostic(f"cannot read {rel}: {exc.strerror}", str(self.root / rel))) from None

    def display(self, rel: str) -> str:
        """How a diagnostic names a file: its path, or ``<commit>:<path>`` for a git commit."""
        return f"{self.commit[:12]}:{rel}" if self.commit else str(self.root / rel)


@dataclass
class LoadedFile:
    """One YAML file of the checkout: its path (relative to the checkout), the source and the model."""

    rel: str
    display: str
    src: YamlSource

    def line(self, path: tuple[PathElem, ...]) -> int:
        return self.src.locate(path)[1][0]

    def key_line(self, path: tuple[PathElem, ...]) -> int:
        """Line of a mapping key (the value's line when the key's is unknown)."""
        if path in self.src.key_positions:
            return self.src.key_positions[path][0]
        return self.line(path)

    def diag(self, path: tuple[PathElem, ...], message: str, severity: Severity = "error") -> Diagnostic:
        _, (line, col) = self.src.locate(path)
        return Diagnostic(message, self.display, line, col, tuple(path), severity)


@dataclass
class LoadedRecipe(LoadedFile):
    recipe: Recipe
    warnings: list[Diagnostic] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return self.recipe.model.model_id

    def served_model(self, variant: str) -> str:
        v = self.recipe.variants[variant]
        return v.model_id or self.recipe.model.model_id


def _parse(tree: RecipeTree, rel: str, model: type[M]) -> tuple[YamlSource, M]:
    display = tree.display(rel)
    src = parse_yaml(tree.read(rel), display)
    if not isinstance(src.data, dict):
        raise InfxError(Diagnostic(f"expected a mapping at the top of {rel}, got {type(src.data).__name__}",
                                   display, 1, 1))
    try:
        return src, model.model_validate(_drop_nulls(src.data))
    except ValidationError as exc:
        # one line per bad file: the first problem (a value in several wrong shapes is one error per shape)
        raise InfxError(src.diags_from_validation(exc)[:1]) from None


def _drop_nulls(v: Any) -> Any:
    """Mapping entries holding null read as absent (upstream tests every key with ``?.``/``||``)."""
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


class RecipeRepo:
    """A recipes checkout: the taxonomy, the strategies and every model recipe, read once."""

    def __init__(self, root: str | Path, commit: str | None = None) -> None:
        self.tree = RecipeTree(root, commit)
        self._recipes: dict[str, LoadedRecipe] = {}

    @property
    def commit(self) -> str | None:
        return self.tree.commit

    @cached_property
    def taxonomy_file(self) -> LoadedFile:
        src, self._taxonomy = _parse(self.tree, "taxonomy.yaml", Taxonomy)
        return LoadedFile("taxonomy.yaml", self.tree.display("taxonomy.yaml"), src)

    @property
    def taxonomy(self) -> Taxonomy:
        self.taxonomy_file  # noqa: B018 - parses on first use
        return self._taxonomy

    @cached_property
    def strategies(self) -> dict[str, tuple[LoadedFile, Strategy]]:
        out: dict[str, tuple[LoadedFile, Strategy]] = {}
        for rel in self.tree.names("strategies/") + self.tree.names("kv_store/"):
            src, s = _parse(self.tree, rel, Strategy)
            name = s.name or PurePosixPath(rel).stem
            out[name] = (LoadedFile(rel, self.tree.display(rel), src), s)
        return out

    def recipe_files(self) -> list[str]:
        return [n for n in self.tree.names("models/") if n.count("/") == 2]

    def recipe(self, rel: str) -> LoadedRecipe:
        """The recipe at ``rel`` (``models/<org>/<repo>.yaml``), read and checked once."""
        if rel not in self._recipes:
            display = self.tree.display(rel)
            src, recipe = _parse(self.tree, rel, Recipe)
            lr = LoadedRecipe(rel, display, src, recipe)
            lr.warnings = recipe_warnings(lr, self.taxonomy)
            self._recipes[rel] = lr
        return self._recipes[rel]

    def recipe_for_model(self, model: str) -> LoadedRecipe | None:
        rel = f"models/{model}.yaml"
        return self.recipe(rel) if self.tree.exists(rel) else None

    def all_recipes(self) -> list[LoadedRecipe]:
        return [self.recipe(r) for r in self.recipe_files()]

    def find_model(self, text: str) -> LoadedRecipe:
        """A recipe named by its Hugging Face id, its path, or its file name (``DeepSeek-V4-Pro``)."""
        rel = text if text.endswith(".yaml") else f"models/{text}.yaml"
        if self.tree.exists(rel):
            return self.recipe(rel)
        hits = [r for r in self.recipe_files() if PurePosixPath(r).stem.lower() == PurePosixPath(text).name.lower()]
        if len(hits) == 1:
            return self.recipe(hits[0])
        raise InfxError(Diagnostic(
            f"no recipe for '{text}' in the recipes checkout" + (f" ({len(hits)} match its name)" if hits else ""),
            self.tree.display("models")))


# ---- the silent cases upstream accepts (warnings) -------------------------------------------------------


def _is_tp_flag(tok: Any) -> bool:
    return isinstance(tok, str) and (tok == "--tensor-parallel-size" or tok.startswith("--tensor-parallel-size=")
                                     or tok in ("-tp", "--tensor_parallel_size"))


def _image_ok(v: Any) -> bool:
    return isinstance(v, str) and bool(_IMAGE_RE.match(v))


def recipe_warnings(lr: LoadedRecipe, taxonomy: Taxonomy) -> list[Diagnostic]:
    r = lr.recipe
    out: list[Diagnostic] = []
    known = taxonomy.hardware_profiles
    gens = {g for p in known.values() for g in p.gens} | {"nvidia", "default"}

    def warn(path: tuple[PathElem, ...], msg: str) -> None:
        d = lr.diag(path, msg, "warning")
        out.append(dataclasses.replace(d, line=lr.key_line(path)))

    expected = lr.rel.removeprefix("models/").removesuffix(".yaml")
    if lr.rel.startswith("models/") and r.model.model_id != expected:
        warn(("model", "model_id"), f"model.model_id '{r.model.model_id}' differs from the file's path '{expected}'")
    for hw in r.meta.hardware:
        if hw not in known:
            warn(("meta", "hardware", hw), f"unknown hardware id '{hw}' (not in taxonomy.yaml)")
    for key in r.model_extra or {}:
        warn((key,), f"unknown key '{key}' (upstream ignores it)")
    for key in r.hardware_overrides:
        if key in known and key not in gens:
            warn(("hardware_overrides", key), f"'{key}': {EXACT_GPU_AT_RECIPE_LEVEL}")
        for i, tok in enumerate(r.hardware_overrides[key].extra_args or []):
            if _is_tp_flag(tok):
                warn(("hardware_overrides", key, "extra_args", i),
                     "--tensor-parallel-size in hardware_overrides wins over the strategy's parallel size")
    for s, so in r.strategy_overrides.items():
        if so.tp is not None and s != "single_node_tp":
            warn(("strategy_overrides", s, "tp"),
                 f"strategy_overrides.{s}.tp is ignored (read for single_node_tp only)")
        for key, ho in so.hardware_overrides.items():
            for i, tok in enumerate(ho.extra_args or []):
                if _is_tp_flag(tok):
                    warn(("strategy_overrides", s, "hardware_overrides", key, "extra_args", i),
                         "--tensor-parallel-size in hardware_overrides wins over the strategy's parallel size")
    if r.model.docker_image is not None:
        out += _image_warnings(lr, ("model", "docker_image"), r.model.docker_image)
    for vk, v in r.variants.items():
        for i, tok in enumerate(v.extra_args or []):
            if _is_tp_flag(tok):
                warn(("variants", vk, "extra_args", i),
                     "--tensor-parallel-size in variant extra_args is shadowed by the strategy's parallel flag")
        if v.docker_image is not None:
            out += _image_warnings(lr, ("variants", vk, "docker_image"), v.docker_image)
        for key, ho in v.hardware_overrides.items():
            if key not in known and key not in gens:
                warn(("variants", vk, "hardware_overrides", key), f"unknown hardware id '{key}' (not in taxonomy.yaml)")
            if ho.docker_image is not None:
                out += _image_warnings(lr, ("variants", vk, "hardware_overrides", key, "docker_image"), ho.docker_image)
            for i, tok in enumerate(ho.extra_args or []):
                if _is_tp_flag(tok):
                    warn(("variants", vk, "hardware_overrides", key, "extra_args", i),
                         "--tensor-parallel-size in hardware_overrides wins over the strategy's parallel size")
    if "default" not in r.variants:
        warn(("variants",), "variants has no 'default' (upstream requires one)")
    return out


def _image_warnings(lr: LoadedRecipe, path: tuple[PathElem, ...], value: Any) -> list[Diagnostic]:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _image_warnings(lr, path + (k,), v)
    elif not _image_ok(value):
        d = lr.diag(path, f"docker_image {value!r} is not an image reference (upstream renders it verbatim)", "warning")
        out.append(d)
    return out
