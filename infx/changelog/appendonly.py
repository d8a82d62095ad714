"""``append-only: true`` entries: add concurrency points to curves that already ran.

Both the base catalog (read from the base revision) and the head catalog generate the entry's
rows. A *curve* is a row minus conc/exp-name/fingerprint/point-id/eval flags. The change may only
add concurrencies:

* the base has at least one curve for the entry, and none disappears or changes;
* no base concurrency disappears; the delta (new concurrencies, source order) is non-empty;
* every delta row joins an existing *series* (model, prefix, precision, framework, runner,
  disagg, agentic or not, isl/osl and spec for fixed rows, offload on/off, worker hardware)
  whose base rows all use exactly this row's image;
* scope: catalog keys the entry does not select are unchanged; a selected key keeps its
  scenario types, scenarios outside the entry's ``scenario-type`` are unchanged, and
  config-wide fields change only if the entry selects every scenario of the key.

Only the delta rows are emitted.
"""

from __future__ import annotations

from typing import Any

from infx.changelog.models import ParsedEntry
from infx.diagnostics import Diagnostic
from infx.matrix.buckets import (
    EVAL_FIELDS,
    NON_RECIPE_FIELDS,
    Repoint,
    Row,
    canonical_json,
    concs,
    is_agentic,
)


def curve_key(row: Row) -> str:
    return canonical_json({k: v for k, v in row.items() if k not in NON_RECIPE_FIELDS and k not in EVAL_FIELDS})


def series_key(row: Row) -> str:
    fixed = not is_agentic(row)
    prefill, decode = row.get("prefill") or {}, row.get("decode") or {}
    return canonical_json({
        "model": row.get("model"), "model-prefix": row.get("model-prefix"), "precision": row.get("precision"),
        "framework": row.get("framework"), "runner": row.get("runner"), "disagg": bool(row.get("disagg", False)),
        "kind": "single_turn" if fixed else "agentic",
        "isl": row.get("isl") if fixed else None, "osl": row.get("osl") if fixed else None,
        "offload": row.get("kv-offloading", "none") not in (None, "none"),
        "spec": row.get("spec-decoding") if fixed else None,
        "prefill-hw": prefill.get("hardware"), "decode-hw": decode.get("hardware"),
    })


def _name(row: Row) -> str:
    return str(row.get("exp-name", "?"))


def append_only_delta(entry: ParsedEntry, base_rows: list[Row], head_rows: list[Row], file: str,
                      repoint: Repoint | None = None) -> tuple[list[Row], list[Diagnostic]]:
    """Delta rows (new concurrencies only) and the rule violations."""
    where = f"{entry.label} (append-only)"

    def err(msg: str) -> Diagnostic:
        return Diagnostic(f"{where}: {msg}", file, entry.line, 1)

    if not base_rows:
        return [], [err("the base revision generates no rows for the selected keys; "
                        "append-only needs an existing curve")]
    base_concs: dict[str, list[int]] = {}
    base_names: dict[str, str] = {}
    series_images: dict[str, set[str]] = {}
    for r in base_rows:
        k = curve_key(r)
        base_concs.setdefault(k, []).extend(c for c in concs(r) if c not in base_concs.get(k, []))
        base_names.setdefault(k, _name(r))
        series_images.setdefault(series_key(r), set()).add(str(r.get("image")))
    head_concs: dict[str, list[int]] = {}
    for r in head_rows:
        head_concs.setdefault(curve_key(r), []).extend(concs(r))
    diags: list[Diagnostic] = []
    for k, cs in base_concs.items():
        if k not in head_concs:
            diags.append(err(f"append-only may not remove or modify existing generated recipes "
                             f"(curve of {base_names[k]} at conc {cs} is gone or changed at head)"))
            continue
        lost = [c for c in cs if c not in head_concs[k]]
        if lost:
            diags.append(err(f"append-only may not remove concurrency {lost} from {base_names[k]}"))
    delta: list[Row] = []
    for r in head_rows:
        k = curve_key(r)
        new = [c for c in concs(r) if c not in base_concs.get(k, [])]
        if not new:
            continue
        if isinstance(r["conc"], list):
            row = dict(r)
            row["conc"] = new
            if new != r["conc"] and repoint is not None and "point-id" in r:
                row["point-id"] = repoint(r, row)
        else:
            row = r
        images = series_images.get(series_key(r))
        if images is None:
            diags.append(err(f"new point {_name(r)} conc {new} does not join an existing series of the base matrix"))
        elif images != {str(r.get("image"))}:
            diags.append(err(f"new point {_name(r)} uses image '{r.get('image')}' but its series ran with "
                             f"{sorted(images)}; append-only points must use the series' single image"))
        delta.append(row)
    if not delta and not diags:
        diags.append(err("adds no new concurrency points"))
    return delta, diags


def scope_diagnostics(entry: ParsedEntry, selected: list[str], base_raw: dict[str, Any], head_raw: dict[str, Any],
                      file: str) -> list[Diagnostic]:
    """Catalog changes outside what the append-only entry selects."""
    where = f"{entry.label} (append-only)"
    out: list[Diagnostic] = []
    chosen = set(selected)
    for key in sorted((set(base_raw) | set(head_raw)) - chosen):
        if base_raw.get(key) != head_raw.get(key):
            out.append(Diagnostic(f"{where}: catalog key '{key}' changed but the entry does not select it",
                                  file, entry.line, 1))
    wanted = entry.entry.scenario_type
    for key in selected:
        b, h = base_raw.get(key), head_raw.get(key)
        if not isinstance(b, dict) or not isinstance(h, dict):
            continue
        bs, hs = b.get("scenarios") or {}, h.get("scenarios") or {}
        if set(bs) != set(hs):
            out.append(Diagnostic(f"{where}: catalog key '{key}' changed its scenario types "
                                  f"({sorted(bs)} -> {sorted(hs)})", file, entry.line, 1))
            continue
        every = wanted is None or set(bs) <= set(wanted)
        for scen in bs:
            if wanted is not None and scen not in wanted and bs[scen] != hs[scen]:
                out.append(Diagnostic(f"{where}: scenario '{scen}' of '{key}' changed but the entry's scenario-type "
                                      f"is {wanted}", file, entry.line, 1))
        wide_b = {k: v for k, v in b.items() if k != "scenarios"}
        wide_h = {k: v for k, v in h.items() if k != "scenarios"}
        if wide_b != wide_h and not every:
            fields = sorted(k for k in set(wide_b) | set(wide_h) if wide_b.get(k) != wide_h.get(k))
            out.append(Diagnostic(f"{where}: config-wide fields {fields} of '{key}' changed but the entry does not "
                                  "select every scenario of it", file, entry.line, 1))
    return out
