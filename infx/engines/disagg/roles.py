"""Helpers to build role launches from argv templates.

Role commands refer to each other (the router names its workers' URLs) and to per-start resources
(ports, ExampleConnector's shared directory). They are written as templates with ``{name}``
placeholders; the fingerprint hashes the template (so ports and temp dirs never change identity) and
the argv holds the values substituted for one start.
"""

from __future__ import annotations

from collections.abc import Mapping

from infx.engines.launch import Launch, Runtime, fingerprint


def substitute(items: list[str], values: Mapping[str, object]) -> list[str]:
    out = []
    for item in items:
        for key, value in values.items():
            item = item.replace("{" + key + "}", str(value))
        out.append(item)
    return out


def templated_launch(*, engine: str, recipe: str, image: str, template: list[str], values: Mapping[str, object],
                     port: int, served_model_name: str, model_path: str, env: dict[str, str] | None = None,
                     host: str = "127.0.0.1", readiness_path: str = "/health", metrics_path: str = "/metrics",
                     runtime: Runtime = "local", files: dict[str, str] | None = None,
                     consumed: list[str] | None = None) -> Launch:
    env_template = dict(env or {})
    env_values = {k: substitute([v], values)[0] for k, v in env_template.items()}
    return Launch(
        engine=engine, recipe=recipe, image=image, runtime=runtime,
        argv=substitute(template, values), env=env_values, files=dict(files or {}),
        fingerprint=fingerprint(image, template + [f"file:{k}={v}" for k, v in sorted((files or {}).items())],
                                env_template),
        host=substitute([host], values)[0], port=port, served_model_name=served_model_name, model_path=model_path,
        readiness_path=readiness_path, metrics_path=metrics_path, consumed=list(consumed or []),
    )


def with_extra_args(launch: Launch, extra_template: list[str], values: Mapping[str, object]) -> Launch:
    """A rendered single-engine launch plus extra flags (e.g. ``--kv-transfer-config``): the new
    fingerprint covers the old one and the extra template."""
    fp = fingerprint(launch.image, [launch.fingerprint, *extra_template], {})
    return launch.model_copy(update={"argv": [*launch.argv, *substitute(extra_template, values)], "fingerprint": fp})
