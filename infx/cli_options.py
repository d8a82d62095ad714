"""Command-line options -> a typed request model, in one step.

A command parses its options, builds its request (a pydantic model) once with :func:`build_request`, calls
the library with it and prints. The model is where every constraint and default lives: the command does
not check by hand what the model types, and an option's default is the model field's
(:class:`ModelDefault`), so a default is written once. Command modules import their models lazily (every
command module is imported at start-up, the models and pydantic only when a command runs).

A :class:`pydantic.ValidationError` becomes infx's one-line diagnostics naming the option
(``error: --trials must be >= 1, not 0 (at --trials)``), exit 2 through
:func:`infx.diagnostics.exit_on_error`. A field maps to ``--field-name`` (the last name of its location:
``load.trials`` -> ``--trials``) unless the command names its option otherwise
(``{"load.slo_tier": "--slo"}``). A validator's own message is kept as it is: it is written to be read
(``give --num-prompts or --duration, not both``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from infx.diagnostics import Diagnostic, InfxError

if TYPE_CHECKING:  # pydantic is imported when a command runs, not when its module is (start-up)
    from pydantic import BaseModel, ValidationError
    from pydantic_core import ErrorDetails

M = TypeVar("M", bound="BaseModel")

# pydantic error type -> what the value must be (from the error's context)
_MUST = {
    "greater_than_equal": "must be >= {ge}",
    "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}",
    "less_than": "must be < {lt}",
    "multiple_of": "must be a multiple of {multiple_of}",
    "string_too_short": "must have at least {min_length} character(s)",
    "string_too_long": "must have at most {max_length} characters",
    "too_short": "must have at least {min_length} item(s)",
    "too_long": "must have at most {max_length} items",
}


def build_request(model: type[M], fields: Mapping[str, Any], options: Mapping[str, str] | None = None) -> M:
    """``model`` validated from ``fields`` (nested models as dicts); a ValidationError is raised as an
    :class:`InfxError` with one diagnostic per problem, each naming its option (``options``: field path
    -> option, for options not spelled ``--field-name``)."""
    from pydantic import ValidationError

    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise InfxError(option_diagnostics(exc, options)) from None


def option_diagnostics(exc: ValidationError, options: Mapping[str, str] | None = None) -> list[Diagnostic]:
    """One diagnostic per error of ``exc``, said in terms of the command's options."""
    return [_diagnostic(err, options or {}) for err in exc.errors(include_url=False)]


def option_name(loc: tuple[int | str, ...], options: Mapping[str, str] | None = None) -> str | None:
    """The option a field location stands for: ``options`` by dotted path, else ``--`` + the last field
    name with dashes; None for a model-wide error."""
    names = [x for x in loc if isinstance(x, str)]
    if not names:
        return None
    dotted = ".".join(names)
    if options and dotted in options:
        return options[dotted]
    return "--" + names[-1].replace("_", "-")


def default_of(model: type[BaseModel], field: str) -> Any:
    """The default the model declares for ``field``: what an option's default is read from."""
    return model.model_fields[field].get_default(call_default_factory=True)


class ModelDefault:
    """An option default that is a model field's, read when it is needed: to parse a command line that
    omits the option, or to show ``[default: ...]`` in ``--help``. ``model`` returns the model class
    (a function with a lazy import, so the command module does not import the model at start-up)::

        ready_timeout: float = typer.Option(default_factory=ModelDefault(run_request, "ready_timeout"))
    """

    def __init__(self, model: Callable[[], type[BaseModel]], field: str) -> None:
        self.model = model
        self.field = field

    def __call__(self) -> Any:
        return default_of(self.model(), self.field)

    def __str__(self) -> str:  # what --help shows
        return str(self())


def _diagnostic(err: ErrorDetails, options: Mapping[str, str]) -> Diagnostic:
    opt = option_name(tuple(err["loc"]), options)
    path = (opt,) if opt else ()
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind in ("value_error", "assertion_error"):  # a validator's own sentence
        text = str(ctx["error"]) if "error" in ctx else err["msg"].removeprefix("Value error, ")
        return Diagnostic(text, path=path)
    if opt is None:
        return Diagnostic(err["msg"])
    if kind == "missing":
        return Diagnostic(f"missing option {opt}", path=path)
    must = None
    if kind == "literal_error":
        must = "must be " + str(ctx.get("expected", "")).replace("'", "")
    elif kind in _MUST:
        must = _MUST[kind].format(**{k: f"{v:g}" if isinstance(v, float) else v for k, v in ctx.items()})
    if must is None:
        return Diagnostic(f"{opt}: {err['msg']}, not {_shown(err['input'])}", path=path)
    return Diagnostic(f"{opt} {must}, not {_shown(err['input'])}", path=path)


def _shown(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
