"""The cost model as versioned data: all-in power and $/GPU-hour price tiers per hardware SKU.

A cost table is a YAML file (``cost-model.yaml``). infx ships one (:data:`BUILTIN_COST_MODEL`, the
InferenceX-app three-tier table of July 2026); a workspace file of the same name wins (its location may be
moved with ``[paths] cost-model`` in ``infx.toml``). With ``extends: builtin`` the workspace file is laid over
the shipped table: its tiers are added, its SKU entries replace the shipped ones of the same name.

Every figure (all-in kW per GPU, a tier's $/GPU-hour or $/node-hour, the optional $/kWh) carries a source and
a date, given on the figure itself or inherited from the SKU or the table's ``defaults``; a figure that is not
known is written ``{unpriced: "reason"}`` and shown as "not priced: reason", never as 0. Every declared tier
must be present in every SKU entry of the file (as a price or as ``unpriced``). Validation is strict: numbers
must be YAML numbers (not strings), positive and finite; a SKU must be a hardware card
(``cards/hardware/*.yaml``); each error is one ``FILE:LINE:COL`` diagnostic (exit 2).

The table is applied when results are read (:mod:`infx.analysis.cost`), never stored with them.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    model_validator,
)

from infx.diagnostics import Diagnostic, InfxError
from infx.workspace import BUILTIN_DIR
from infx.yamlsource import YamlSource, load_yaml

COST_MODEL_FILE = "cost-model.yaml"
BUILTIN_COST_MODEL = BUILTIN_DIR / COST_MODEL_FILE
PriceUnit = Literal["gpu-hour", "node-hour"]
_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Raw(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, populate_by_name=True)


def _date_text(v: Any) -> Any:
    if isinstance(v, dt.date):  # YAML reads an unquoted 2026-07-15 as a date
        return v.isoformat()
    return v


def _check_date(v: str) -> str:
    if not _DATE.match(v):
        raise ValueError(f"a date is YYYY-MM or YYYY-MM-DD, got {v!r}")
    return v


DateText = Annotated[StrictStr, BeforeValidator(_date_text), AfterValidator(_check_date)]


def _positive(v: Any) -> Any:
    """A strictly positive, finite YAML number (bool and numeric strings are refused)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"expected a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"must be a positive number, got {v!r} (a figure that is not known: "
                         "{unpriced: \"reason\"}, never 0)")
    return float(v)


Positive = Annotated[float, BeforeValidator(_positive)]


class RawFigure(_Raw):
    """One figure: ``value`` (with its source and date, or inherited), or ``unpriced: reason``."""

    value: Positive | None = None
    unpriced: StrictStr | None = None
    source: StrictStr | None = None
    date: DateText | None = None
    note: StrictStr | None = None

    @model_validator(mode="after")
    def _one_of(self) -> RawFigure:
        if (self.value is None) == (self.unpriced is None):
            raise ValueError("give exactly one of 'value' and 'unpriced' (a reason)")
        if self.unpriced is not None and not self.unpriced.strip():
            raise ValueError("'unpriced' needs a reason")
        return self


def _figure(v: Any) -> Any:
    return {"value": v} if not isinstance(v, dict) else v  # a bare number: the value, provenance inherited


FigureIn = Annotated[RawFigure, BeforeValidator(_figure)]


class Provenance(_Raw):
    source: StrictStr | None = None
    date: DateText | None = None


class Defaults(_Raw):
    price: Provenance = Provenance()
    power: Provenance = Provenance()


class RawSku(_Raw):
    all_in_kw: FigureIn = Field(description="all-in provisioned kW per GPU (chip, host share, network, cooling)")
    usd_per_gpu_hour: dict[StrictStr, FigureIn] = Field(default_factory=dict)
    usd_per_node_hour: dict[StrictStr, FigureIn] = Field(default_factory=dict)
    usd_per_kwh: FigureIn | None = None
    source: StrictStr | None = None
    date: DateText | None = None
    illustrative: bool = False
    note: StrictStr | None = None


class RawTable(_Raw):
    schema_: Literal[1] = Field(alias="schema")
    version: StrictStr
    name: StrictStr
    source: StrictStr
    date: DateText
    illustrative: bool = False
    extends: Literal["builtin"] | None = None
    default_tier: StrictStr | None = None
    tiers: dict[StrictStr, StrictStr] = Field(default_factory=dict)  # name -> what it means
    defaults: Defaults = Defaults()
    usd_per_kwh: FigureIn | None = None
    skus: dict[StrictStr, RawSku] = Field(default_factory=dict)


# ----------------------------------------------------------------------------------------------- resolved


class Figure(BaseModel):
    """A resolved figure: a value with its source and date, or the reason it is not known."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    source: str
    date: str
    unpriced: str | None = None
    note: str | None = None
    file: str = ""
    line: int = 0


class Price(Figure):
    unit: PriceUnit = "gpu-hour"


class SkuCost(BaseModel):
    model_config = ConfigDict(frozen=True)

    sku: str
    all_in_kw: Figure
    prices: dict[str, Price]  # tier -> price
    usd_per_kwh: Figure | None = None
    illustrative: bool = False
    file: str = ""


class CostModel(BaseModel):
    """A validated cost table (one file, or a workspace file laid over the shipped one)."""

    model_config = ConfigDict(frozen=True)

    version: str
    name: str
    source: str
    date: str
    files: list[str]
    extends: str | None = None  # the label of the table this one is laid over
    default_tier: str
    tiers: dict[str, str]
    skus: dict[str, SkuCost]

    @property
    def illustrative_skus(self) -> list[str]:
        return [name for name, sc in self.skus.items() if sc.illustrative]

    @property
    def illustrative(self) -> bool:
        return bool(self.illustrative_skus)

    @property
    def label(self) -> str:
        """How the report names the table: version, name, source, date, and which prices are illustrative."""
        ill = self.illustrative_skus
        tag = f" [ILLUSTRATIVE prices, not a market survey: {', '.join(ill)}]" if ill else ""
        over = f"; laid over {self.extends}" if self.extends else ""
        return f"cost table {self.version}: {self.name}; source: {self.source} ({self.date}){tag}{over}"

    def tier(self, tier: str | None) -> str:
        t = tier or self.default_tier
        if t not in self.tiers:
            raise InfxError(Diagnostic(f"--tier: unknown tier {t!r} in {self.files[-1]} "
                                       f"(tiers: {', '.join(self.tiers)})"))
        return t


def _resolve_price(raw: RawFigure, src: YamlSource, path: tuple[Any, ...], fallbacks: Iterable[Provenance],
                   diags: list[Diagnostic], what: str, unit: PriceUnit) -> Price:
    """A price: the figure of :func:`_resolve_figure` in its unit (per GPU-hour or per node-hour)."""
    return Price(unit=unit, **_resolve_figure(raw, src, path, fallbacks, diags, what).model_dump())


def _resolve_figure(raw: RawFigure, src: YamlSource, path: tuple[Any, ...], fallbacks: Iterable[Provenance],
                    diags: list[Diagnostic], what: str) -> Figure:
    source, date = raw.source, raw.date
    for fb in fallbacks:
        source = source or fb.source
        date = date or fb.date
    if raw.value is not None:
        for name, v in (("source", source), ("date", date)):
            if not v:
                diags.append(src.diag(path, f"{what}: no {name} (give '{name}' on the figure, its SKU or the "
                                            "table's defaults)"))
    line = src.locate(path)[1][0]
    return Figure(value=raw.value, source=source or "", date=date or "", unpriced=raw.unpriced, note=raw.note,
                  file=src.file, line=line)


def _parse(src: YamlSource) -> RawTable:
    if not isinstance(src.data, dict):
        raise InfxError(Diagnostic("a cost table must be a mapping", src.file, 1, 1))
    try:
        return RawTable.model_validate(src.data)
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None


def _resolve(src: YamlSource, raw: RawTable, known_skus: Iterable[str] | None, base: CostModel | None) -> CostModel:
    diags: list[Diagnostic] = []
    tiers = dict(base.tiers) if base else {}
    tiers.update(raw.tiers)
    if not tiers:
        diags.append(src.diag(("tiers",), "no price tiers declared (e.g. tiers: {hyperscaler: ..., retail: ...})"))
    default_tier = raw.default_tier or (base.default_tier if base else next(iter(tiers), ""))
    if tiers and default_tier not in tiers:
        diags.append(src.diag(("default-tier",), f"default-tier {default_tier!r} is not a declared tier "
                                                 f"({', '.join(tiers)})"))
    known = set(known_skus) if known_skus is not None else None
    skus: dict[str, SkuCost] = {}
    if base is not None:  # inherited SKUs: a tier only the workspace declares is not priced there
        for name, sc in base.skus.items():
            inherited = dict(sc.prices)
            for t in tiers:
                if t not in inherited:
                    inherited[t] = Price(value=None, source="", date="", file=sc.file,
                                      unpriced=f"tier {t!r} is declared in {src.file}, and the built-in table "
                                               f"it extends has no {t!r} price for {name}")
            skus[name] = sc.model_copy(update={"prices": inherited})
    price_fb = raw.defaults.price
    table_fb = Provenance(source=raw.source, date=raw.date)
    for name, sku in raw.skus.items():
        at = ("skus", name)
        if known is not None and name not in known:
            key = src.key_positions.get(at)
            d = src.diag(at, f"unknown SKU {name!r}: no hardware card of that name (known: {', '.join(sorted(known))})")
            if key:
                d = Diagnostic(d.message, d.file, key[0], key[1], d.path)
            diags.append(d)
            continue
        sku_fb = Provenance(source=sku.source, date=sku.date)
        power = _resolve_figure(sku.all_in_kw, src, at + ("all-in-kw",), (sku_fb, raw.defaults.power, table_fb),
                                diags, f"{name} all-in-kw")
        prices: dict[str, Price] = {}
        for t in sku.usd_per_gpu_hour.keys() | sku.usd_per_node_hour.keys():
            if t not in tiers:
                unit_key = "usd-per-gpu-hour" if t in sku.usd_per_gpu_hour else "usd-per-node-hour"
                diags.append(src.diag(at + (unit_key, t), f"unknown tier {t!r} for SKU {name} (declared tiers: "
                                                          f"{', '.join(tiers)}; add it under 'tiers:')"))
        for t in tiers:
            g, n = sku.usd_per_gpu_hour.get(t), sku.usd_per_node_hour.get(t)
            if g is not None and n is not None:
                diags.append(src.diag(at + ("usd-per-node-hour", t), f"tier {t!r} of SKU {name} is priced both per "
                                                                     "GPU-hour and per node-hour; give one"))
                continue
            if g is None and n is None:
                where = at + (("usd-per-gpu-hour",) if sku.usd_per_gpu_hour or not sku.usd_per_node_hour
                              else ("usd-per-node-hour",))
                diags.append(src.diag(where, f"missing tier {t!r} for SKU {name}: give usd-per-gpu-hour.{t} (or "
                                          f"usd-per-node-hour.{t}), or {{unpriced: \"reason\"}}"))
                continue
            unit: PriceUnit = "gpu-hour" if g is not None else "node-hour"
            fig = g if g is not None else n
            assert fig is not None
            prices[t] = _resolve_price(fig, src, at + (f"usd-per-{unit}", t), (sku_fb, price_fb, table_fb), diags,
                                       f"{name} {t} price", unit)
        kwh_raw = sku.usd_per_kwh or raw.usd_per_kwh
        kwh = None
        if kwh_raw is not None:
            kwh_at = at + ("usd-per-kwh",) if sku.usd_per_kwh else ("usd-per-kwh",)
            kwh = _resolve_figure(kwh_raw, src, kwh_at, (sku_fb, price_fb, table_fb), diags, f"{name} usd-per-kwh")
        skus[name] = SkuCost(sku=name, all_in_kw=power, prices=prices, usd_per_kwh=kwh,
                             illustrative=sku.illustrative or raw.illustrative, file=src.file)
    if diags:
        raise InfxError(diags)
    return CostModel(version=raw.version, name=raw.name, source=raw.source, date=raw.date,
                     files=(base.files if base else []) + [src.file], default_tier=default_tier,
                     extends=base.label if base else None,
                     tiers=tiers, skus=dict(sorted(skus.items())))


def known_skus(cards_dirs: Iterable[Path] | None = None) -> list[str]:
    """SKU names a cost table may price: the hardware cards (built-in, then the workspace's)."""
    from infx.preflight.cards import load_cards

    return sorted(load_cards(list(cards_dirs) if cards_dirs is not None else None).hardware)


def load_cost_model(path: str | Path | None = None, *, skus: Iterable[str] | None = None) -> CostModel:
    """The cost table at ``path`` (default: the workspace's ``cost-model.yaml`` when it exists, else the shipped
    one). ``skus``: the known SKU names (default: the hardware cards)."""
    if path is None:
        path = default_cost_model_path()
    src = load_yaml(path)
    raw = _parse(src)
    names = list(skus) if skus is not None else known_skus()
    base = None
    if raw.extends == "builtin":
        if Path(path).resolve() == BUILTIN_COST_MODEL.resolve():
            raise InfxError(src.diag(("extends",), "the built-in table cannot extend itself"))
        base = load_cost_model(BUILTIN_COST_MODEL, skus=names)
    return _resolve(src, raw, names, base)


def default_cost_model_path() -> Path:
    """The workspace's cost table when it has one, else the shipped table."""
    from infx.workspace import current

    ws = current().cost_model_file
    return ws if ws.is_file() else BUILTIN_COST_MODEL
