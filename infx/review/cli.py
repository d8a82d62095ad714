"""``infx review --base REF --head REF``: a catalog change reviewed from git objects, every finding at
file:line. Exit 0 when nothing blocks, 1 when a finding does (``--strict``: any warning), 2 on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from infx.cli_options import ModelDefault, build_request
from infx.diagnostics import exit_on_error

if TYPE_CHECKING:
    from pydantic import BaseModel


def _request() -> type[BaseModel]:
    from infx.review.models import ReviewRequest

    return ReviewRequest


@exit_on_error
def review_cmd(
    *,
    base: Annotated[str, typer.Option("--base", help="The base ref (a commit, branch or tag).")],
    head: Annotated[str, typer.Option("--head", help="The head ref.")],
    event: Annotated[Path | None, typer.Option("--event", help="A GitHub pull_request event JSON.")] = None,
    labels: Annotated[str | None, typer.Option("--labels", help="Comma-separated PR labels (override the "
                                                                 "event's).")] = None,
    signoff: Annotated[Path | None, typer.Option("--signoff", help="The CODEOWNER sign-off text.")] = None,
    body: Annotated[Path | None, typer.Option("--body", help="The PR body text.")] = None,
    recipes_repo: Annotated[Path | None, typer.Option("--recipes-repo", help="A local git mirror of "
                                                                             "vllm-project/recipes.")] = None,
    link_state: Annotated[Path | None, typer.Option("--link-state", help="Recorded merge state of linked "
                                                                         "PRs (JSON list).")] = None,
    link_policy: Annotated[str, typer.Option("--link-policy", default_factory=ModelDefault(_request, "link_policy"),
                                             help="infx | inferencex")],
    eval_rule: Annotated[str, typer.Option("--eval-rule", default_factory=ModelDefault(_request, "eval_rule"),
                                           help="infx | inferencex (also emulate InferenceX's eval grouping)")],
    fanout: Annotated[float, typer.Option("--fanout", default_factory=ModelDefault(_request, "fanout"),
                                          help="Agentic requests in flight per user.")],
    verify_images: Annotated[bool, typer.Option("--verify-images",
                                                default_factory=ModelDefault(_request, "verify_images"),
                                                help="Resolve image tags over the OCI distribution API.")],
    registry_mirror: Annotated[list[str] | None, typer.Option("--registry-mirror", help="REGISTRY=URL "
                                                                                        "(repeatable).")] = None,
    images_lock: Annotated[Path | None, typer.Option("--images-lock", help="Recorded digests (default: the "
                                                                           "head's configs/images.lock).")] = None,
    fmt: Annotated[str, typer.Option("--format", default_factory=ModelDefault(_request, "format"),
                                     help="text | json | markdown | sarif | github")],
    output: Annotated[Path | None, typer.Option("--output", help="Write here instead of stdout.")] = None,
    strict: Annotated[bool, typer.Option("--strict", default_factory=ModelDefault(_request, "strict"),
                                         help="Warnings block too.")],
    repository: Annotated[str | None, typer.Option("--repository", help="owner/name, for links in the "
                                                                        "comment.")] = None,
) -> None:
    """Review a catalog change (base..head) before any GPU is touched: memory fit, eval coverage, failure
    isolation, image pins, the changelog's bytes and claims, launch derivation, recipe links."""
    from infx import workspace
    from infx.review.engine import run_review
    from infx.review.models import ReviewRequest
    from infx.review.output import render

    req = build_request(ReviewRequest, {
        "base": base, "head": head, "event": event,
        "labels": [x.strip() for x in labels.split(",") if x.strip()] if labels is not None else None,
        "signoff": signoff, "body": body, "recipes_repo": recipes_repo, "link_state": link_state,
        "link_policy": link_policy, "eval_rule": eval_rule, "fanout": fanout, "verify_images": verify_images,
        "registry_mirror": registry_mirror or [], "images_lock": images_lock, "format": fmt, "output": output,
        "strict": strict, "repository": repository,
    }, {"format": "--format"})
    report = run_review(req, workspace.current().root)
    out = render(report, req.format)
    if req.output is not None:
        from infx.atomic import write_text

        write_text(req.output, out)
    else:
        typer.echo(out, nl=False)
    raise typer.Exit(1 if report.blocking(req.strict) else 0)


def register(app: typer.Typer) -> None:
    app.command("review")(review_cmd)
