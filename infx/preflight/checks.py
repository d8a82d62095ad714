"""The non-memory checks: concurrency headroom, CUDA-graph ceiling, placeholders, eval coverage,
runner facts. Each returns a :class:`~infx.preflight.verdict.Check` (or one per point)."""

from __future__ import annotations

import fnmatch
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infx.matrix.evals import NON_ARM_FIELDS
from infx.matrix.point import Point
from infx.preflight.launchargs import EngineSettings
from infx.preflight.verdict import Check, Status
from infx.yamlsource import KeyPath, YamlSource, load_yaml

PLACEHOLDER = re.compile(r"\b(TBD|TODO|FIXME)\b")
DEFAULT_FANOUT = 2.0


def fanout_from_traces(path: str | Path) -> float:
    """Worst-case fan-out measured from agentic traces: the widest run of parallel subagents (the
    main session waits on them, so that is the session's requests in flight); at least 1."""
    from infx.agentic.stats import trace_stats
    from infx.agentic.trace import load_traces

    widest = trace_stats(load_traces(path)).fanout_width.max
    return max(1.0, float(widest or 0))


def worst_in_flight(point: Point, conc: int, fanout: float) -> int:
    """Worst-case requests in flight: conc for single-turn points, conc x fan-out for agentic
    ones (one agentic user can have several subagent requests in flight)."""
    if point.is_agentic:
        if not math.isfinite(fanout) or fanout < 0:
            raise ValueError(f"fan-out {fanout} is not a finite, non-negative number")
        return int(-(-conc * fanout // 1))  # ceil
    return conc


def concurrency_headroom(point: Point, settings: EngineSettings, fanout: float) -> Check:
    conc = max(point.concs)
    worst = worst_in_flight(point, conc, fanout)
    cap = settings.max_num_seqs.value
    how = f"conc {conc} x fan-out {fanout:g}" if point.is_agentic else f"conc {conc}"
    details: dict[str, Any] = {"cap": cap, "cap_source": settings.max_num_seqs.describe() if cap else None,
                               "worst_in_flight": worst}
    if cap is None:
        return Check(name="concurrency-headroom", status="ok", details=details,
                     message=f"no fixed sequence cap (engine derives it at start-up); "
                             f"worst case {worst} in flight ({how})")
    if int(cap) < worst:
        return Check(name="concurrency-headroom", status="warn", details=details,
                     message=f"sequence cap {settings.max_num_seqs.describe()} < worst-case {worst} in flight ({how}): "
                             f"requests above the cap queue and the wait shows up as TTFT")
    return Check(name="concurrency-headroom", status="ok", details=details,
                 message=f"sequence cap {settings.max_num_seqs.describe()} >= worst-case {worst} in flight ({how})")


def graph_ceiling(point: Point, settings: EngineSettings, fanout: float) -> Check:
    ceiling = settings.graph_ceiling.value
    if ceiling is None:
        why = settings.graph_ceiling.name or "unknown"
        return Check(name="cuda-graph-ceiling", status="skip", message=f"no CUDA-graph capture to check ({why})")
    conc = max(point.concs)
    in_flight = worst_in_flight(point, conc, fanout)
    cap = settings.max_num_seqs.value
    seqs = min(in_flight, int(cap)) if cap else in_flight
    spec = int(settings.spec_tokens.value or 0)
    largest = seqs * (1 + spec)
    details = {"ceiling_tokens": ceiling, "largest_batch_tokens": largest,
               "ceiling_source": settings.graph_ceiling.describe()}
    if int(ceiling) < largest:
        return Check(name="cuda-graph-ceiling", status="warn", details=details,
                     message=f"capture ceiling {settings.graph_ceiling.describe()} tokens < largest decode batch "
                             f"{largest} = {seqs} seqs x (1 + {spec} spec tokens): bigger batches run without graphs")
    return Check(name="cuda-graph-ceiling", status="ok", details=details,
                 message=f"capture ceiling {settings.graph_ceiling.describe()} tokens covers the largest decode batch "
                         f"{largest}")


#: Row fields that never tell two arms apart: the matrix stage's, and the changelog's recipe fingerprint.
ARM_FREE_FIELDS = NON_ARM_FIELDS | {"recipe-fingerprint"}
#: A topology arm: the row's other fields, sorted, each with its value's repr.
ArmKey = tuple[tuple[str, str], ...]


def arm_key(point: Point) -> ArmKey:
    """Everything that distinguishes two topology arms: the row without concurrency, names, ids
    and eval flags."""
    row = point.to_row()
    for k in ARM_FREE_FIELDS:
        row.pop(k, None)
    return tuple(sorted((k, repr(v)) for k, v in row.items()))


def eval_coverage(points: Sequence[Point], evals: str) -> dict[str, Check]:
    """Every arm must carry an eval point when evals are requested (``default``, ``evals-only``, ``all``)."""
    out: dict[str, Check] = {}
    if evals == "none":
        return out
    arms: dict[ArmKey, list[Point]] = defaultdict(list)
    for p in points:
        arms[arm_key(p)].append(p)
    for members in arms.values():
        has = [p for p in members if p.run_eval or p.eval_only]
        desc = _arm_desc(members[0])
        for p in members:
            if has:
                out[p.point_id] = Check(name="eval-coverage", status="ok",
                                        message=f"arm {desc} has an eval point ({has[0].exp_name})")
            else:
                out[p.point_id] = Check(name="eval-coverage", status="warn",
                                        message=f"arm {desc} has no eval point although evals were requested ({evals})")
    return out


def _arm_desc(p: Point) -> str:
    if p.multinode:
        return p.exp_name
    bits = [f"tp={p.tp}", f"ep={p.ep}"]
    if p.dp_attn:
        bits.append("dp-attn")
    if p.spec_decoding != "none":
        bits.append(f"spec={p.spec_decoding}")
    if p.kv_offloading:
        bits.append(f"kv={p.kv_offloading}")
    return "(" + ", ".join(bits) + ")"


@dataclass(frozen=True)
class Hit:
    file: str
    line: int
    col: int
    text: str
    in_comment: bool

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.text!r}" + (" (comment)" if self.in_comment else "")


def _data_hits(src: YamlSource, root: KeyPath = ()) -> list[Hit]:
    hits: list[Hit] = []

    def walk(node: Any, path: KeyPath) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and PLACEHOLDER.search(k):
                    line, col = src.positions.get(path + (k,), (1, 1))
                    hits.append(Hit(src.file, line, col, k, False))
                walk(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + (i,))
        elif isinstance(node, str) and PLACEHOLDER.search(node):
            line, col = src.positions.get(path, (1, 1))
            hits.append(Hit(src.file, line, col, node if len(node) < 80 else node[:77] + "...", False))

    node: Any = src.data
    for k in root:
        node = node[k]
    walk(node, root)
    return hits


def _comment_hits(file: str, text: str, lines: range | None = None) -> list[Hit]:
    hits = []
    for i, line in enumerate(text.splitlines(), start=1):
        if lines is not None and i not in lines:
            continue
        pos = _comment_start(line)
        if pos is None:
            continue
        m = PLACEHOLDER.search(line, pos)
        if m:
            hits.append(Hit(file, i, m.start() + 1, line.strip()[:80], True))
    return hits


def _comment_start(line: str) -> int | None:
    """Index of a YAML comment's '#' (outside quotes), or None."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return i
    return None


@dataclass
class PlaceholderScan:
    """Placeholders found in the catalog entries, recipe files and changelog entries of a run.

    Hits in YAML values fail (they reach a launch or a published page); hits in comments warn.
    """

    by_key: dict[str, list[Hit]] = field(default_factory=dict)  # catalog entry key -> hits
    by_recipe_file: dict[str, list[Hit]] = field(default_factory=dict)
    changelog: list[tuple[list[str], Hit]] = field(default_factory=list)  # (config-key globs, hit)

    @classmethod
    def build(cls, config_files: Iterable[str | Path] = (), recipe_files: Iterable[str | Path] = (),
              changelog: str | Path | None = None) -> PlaceholderScan:
        scan = cls()
        for f in config_files:
            src = load_yaml(f)
            text = Path(f).read_text(encoding="utf-8", errors="replace")
            if not isinstance(src.data, dict):
                continue
            keys = list(src.data)
            lines = text.splitlines()
            starts: list[int] = []
            for k in keys:
                line = src.positions.get((k,), (1, 1))[0]  # where the entry's value starts
                floor = starts[-1] + 1 if starts else 1
                while line > floor and not lines[line - 1].lstrip("'\"").startswith(str(k)):
                    line -= 1  # back to the key's own line
                # the comment block directly above an entry documents that entry
                while line > 1 and lines[line - 2].lstrip().startswith("#"):
                    line -= 1
                starts.append(line)
            for idx, key in enumerate(keys):
                end = starts[idx + 1] - 1 if idx + 1 < len(keys) else len(lines)
                hits = _data_hits(src, (key,)) + _comment_hits(str(f), text, range(starts[idx], end + 1))
                if hits:
                    scan.by_key.setdefault(str(key), []).extend(hits)
        for f in recipe_files:
            try:
                src = load_yaml(f)
            except Exception:
                continue
            text = Path(f).read_text(encoding="utf-8", errors="replace")
            hits = _data_hits(src) + _comment_hits(str(f), text)
            if hits:
                scan.by_recipe_file[str(Path(f).resolve())] = hits
        if changelog is not None and Path(changelog).is_file():
            src = load_yaml(changelog)
            if isinstance(src.data, list):
                for i, entry in enumerate(src.data):
                    if not isinstance(entry, dict):
                        continue
                    globs = [str(k) for k in entry.get("config-keys", []) or []]
                    for h in _data_hits(src, (i,)):
                        scan.changelog.append((globs, h))
        return scan

    def check(self, config_key: str | None, recipe_file: str | None, launch_values: Sequence[str] = ()) -> Check:
        hits: list[Hit] = []
        if config_key:
            hits += self.by_key.get(config_key, [])
            hits += [h for globs, h in self.changelog if any(fnmatch.fnmatchcase(config_key, g) for g in globs)]
        if recipe_file:
            hits += self.by_recipe_file.get(str(Path(recipe_file).resolve()), [])
        launch_hits = [v for v in launch_values if PLACEHOLDER.search(v)]
        if not hits and not launch_hits:
            return Check(name="placeholders", status="ok",
                         message="no TBD/TODO/FIXME in catalog entry, recipe, changelog or launch")
        status: Status = "fail" if launch_hits or any(not h.in_comment for h in hits) else "warn"
        parts = [f"launch argument {v!r}" for v in launch_hits[:3]] + [str(h) for h in hits[:5]]
        more = len(hits) + len(launch_hits) - len(parts)
        return Check(name="placeholders", status=status, details={"hits": [str(h) for h in hits] + launch_hits},
                     message="placeholder left: " + "; ".join(parts) + (f" (+{more} more)" if more > 0 else ""))
