"""Options -> a typed request: a ValidationError is one line per problem naming the option, and option
defaults are the model's."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field, field_validator

from infx.cli_options import ModelDefault, build_request, default_of, option_name
from infx.diagnostics import InfxError


class Inner(BaseModel):
    trials: int | None = Field(None, ge=1)
    slo_tier: str | None = None
    ci_target: float = Field(0.05, gt=0, lt=1)


class Request(BaseModel):
    backend: Literal["local", "slurm"] = "local"
    base_url: str = "http://x"
    ready_timeout: float = 900.0
    load: Inner = Field(default_factory=Inner)
    conc: list[int] | None = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith("http"):
            raise ValueError(f"bad --base-url {v!r}: give http://HOST[:PORT]")
        return v


def errors(fields: dict, options: dict | None = None) -> list[str]:
    with pytest.raises(InfxError) as info:
        build_request(Request, fields, options)
    return [str(d) for d in info.value.diagnostics]


def test_each_problem_is_one_line_naming_its_option() -> None:
    assert errors({"backend": "k8s", "load": {"trials": 0, "ci_target": 2}}) == [
        "error: --backend must be local or slurm, not 'k8s' (at --backend)",
        "error: --trials must be >= 1, not 0 (at --trials)",
        "error: --ci-target must be < 1, not 2 (at --ci-target)",
    ]


def test_a_validators_sentence_is_kept_and_options_can_be_renamed() -> None:
    assert errors({"base_url": "ftp://x"}) == [
        "error: bad --base-url 'ftp://x': give http://HOST[:PORT] (at --base-url)"]
    assert errors({"load": {"slo_tier": 5}}, {"load.slo_tier": "--slo"}) == [
        "error: --slo: Input should be a valid string, not 5 (at --slo)"]
    assert errors({"conc": [1, "x"]})[0].startswith("error: --conc: Input should be a valid integer")


def test_a_valid_request_is_built_with_the_models_defaults() -> None:
    req = build_request(Request, {"load": {"trials": 3}})
    assert req.load.trials == 3 and req.backend == "local" and req.load.ci_target == 0.05
    assert default_of(Request, "ready_timeout") == 900.0 and default_of(Inner, "ci_target") == 0.05
    assert default_of(Request, "load") == Inner()


def test_option_names() -> None:
    assert option_name(("load", "max_trials")) == "--max-trials"
    assert option_name(("conc", 2)) == "--conc"
    assert option_name(()) is None
    assert option_name(("telemetry", "gpu"), {"telemetry.gpu": "--gpu-telemetry"}) == "--gpu-telemetry"


def test_an_option_default_is_the_models_read_when_needed() -> None:
    import typer
    from typer.testing import CliRunner

    asked: list[str] = []

    def request() -> type[Request]:
        asked.append("model")
        return Request

    app = typer.Typer()

    @app.command()
    def cmd(ready_timeout: float = typer.Option(default_factory=ModelDefault(request, "ready_timeout"))) -> None:
        typer.echo(f"timeout {ready_timeout}")

    assert asked == []  # declaring the option did not touch the model
    assert CliRunner().invoke(app, []).output == "timeout 900.0\n"
    assert CliRunner().invoke(app, ["--ready-timeout", "5"]).output == "timeout 5.0\n"
    assert "[default: 900.0]" in CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
