"""``infx diff-env A B``: what differs between two points' bundles, grouped.

Groups: ``versions`` (Python, infx, lm-eval, the engine server's own version when it is not just its
distribution's, and every installed distribution), ``script`` (a scripted launch's bench script path and
sha256 and each sourced lib's sha256; nothing for recipe launches), ``argv`` (the launch's port-free argv,
flag by flag),
``env`` (the launch's env, then the engine-relevant process env), ``image`` (reference, digest, runtime),
``hardware`` (the inventory's static facts), ``load`` (the load profile), ``inputs`` (dataset, trace,
tokenizer and chat-template digests), ``point`` (the catalog row) and ``workspace`` (git commit, dirty).
Derived digests (the recipe's text, the config hash, the package-set hash) are not listed: what they hash
is listed instead, so one changed engine argument is one difference.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from infx.diagnostics import Diagnostic, InfxError
from infx.repro.payload import BundlePayload
from infx.results.receipt import RECEIPT_FILE, read_receipt

GROUPS = ("versions", "script", "argv", "env", "image", "hardware", "load", "inputs", "point", "workspace")


class Difference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    group: str
    key: str
    a: Any = None  # None: absent on that side
    b: Any = None


def bundle_dir(path: str | Path) -> Path:
    """A point directory (or bundle copy) from ``POINT``, ``BUNDLE`` or ``.../receipt.json``."""
    p = Path(path)
    if p.is_file() and p.name == RECEIPT_FILE:
        return p.parent
    if p.is_dir() and (p / RECEIPT_FILE).exists():
        return p
    if p.is_dir():
        raise InfxError(Diagnostic("not a bundle: no receipt.json (points measured before bundles have none)",
                                   str(p)))
    raise InfxError(Diagnostic("no such bundle, point directory or receipt.json", str(p)))


def load_payload(path: str | Path) -> BundlePayload:
    d = bundle_dir(path)
    receipt = read_receipt(d)
    try:
        return BundlePayload.model_validate(receipt.payload)
    except Exception as exc:  # pydantic ValidationError
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            err = exc.errors(include_url=False)[0]
            raise InfxError(Diagnostic(f"invalid bundle payload: {err['msg']}", str(d / RECEIPT_FILE),
                                       path=("payload", *err["loc"]))) from None
        raise


def _dict_diff(group: str, a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[Difference]:
    return [Difference(group=group, key=f"{prefix}{k}", a=a.get(k), b=b.get(k))
            for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]


def argv_flags(argv: list[str]) -> dict[str, str]:
    """``{"command": ..., "--flag": "value", ...}``: positional words before the first flag make the
    command; each flag takes the words up to the next flag; a repeated flag keeps every value."""
    out: dict[str, str] = {}
    cmd: list[str] = []
    cur: str | None = None
    vals: dict[str, list[list[str]]] = {}
    for a in argv:
        if a.startswith("--") or (a.startswith("-") and len(a) == 2 and not a[1].isdigit()):
            flag, eq, val = a.partition("=")
            cur = flag
            vals.setdefault(flag, []).append([val] if eq else [])
        elif cur is None:
            cmd.append(a)
        else:
            vals[cur][-1].append(a)
    if cmd:
        out["command"] = " ".join(cmd)
    for flag, occurrences in vals.items():
        out[flag] = " | ".join(" ".join(v) if v else "(set)" for v in occurrences)
    return out


def _versions(p: BundlePayload) -> dict[str, Any]:
    v = p.versions
    out: dict[str, Any] = {"python": v.python, "infx": v.infx, "lm-eval": v.lm_eval}
    dist_version = v.engine_distribution.rpartition(" ")[2] if v.engine_distribution else None
    if v.engine is not None and v.engine != dist_version:
        out["engine (server)"] = v.engine
    out.update(v.packages)
    return out


def _hardware(p: BundlePayload) -> dict[str, Any]:
    inv = p.inventory
    out: dict[str, Any] = {"gpu driver": inv.gpu_driver, "cuda": inv.cuda_version,
                           "memory total kib": inv.memory_total_kib, "kernel": inv.kernel, "os": inv.os,
                           "gpu count": len(inv.gpus), "absent tools": ", ".join(inv.absent) or None}
    for g in inv.gpus:
        for k, val in g.model_dump(exclude={"index"}).items():
            out[f"gpu{g.index}.{k}"] = val
    out.update({f"cpu.{k}": val for k, val in inv.cpu.items()})
    for n in inv.nics:
        out[f"nic {n.name}"] = f"{n.link_type} mtu {n.mtu} {n.address}"
    for d in inv.infiniband:
        out[f"ib {d.hca_id}"] = f"fw {d.fw_ver} board {d.board_id} ports {', '.join(d.ports)}"
    return out


_CONTAINER_NAME = re.compile(r"infx-[0-9a-f]{12}")


def _argv(p: BundlePayload) -> list[str]:
    """The port-free argv, with the container name a runtime wrapper derives from the launch's fingerprint
    (``--name infx-<12 hex>``) left out like every other derived digest."""
    argv = list(p.argv_template) if p.argv_template else list(p.launch.argv) if p.launch else []
    return [("infx-{fingerprint}" if i and argv[i - 1] == "--name" and _CONTAINER_NAME.fullmatch(a) else a)
            for i, a in enumerate(argv)]


def _script(p: BundlePayload) -> dict[str, Any]:
    r = p.recipe
    out: dict[str, Any] = {}
    if r.bench_script is not None:
        out["bench script"] = r.bench_script.path
        out["bench script sha256"] = r.bench_script.sha256
    out.update({f"lib {name} sha256": sha for name, sha in r.lib_hashes.items()})
    return out


def _inputs(p: BundlePayload) -> dict[str, Any]:
    i = p.inputs
    return {"dataset": i.dataset, "chat template sha256": i.chat_template_sha256,
            **{k: getattr(i, k).sha256 if getattr(i, k) is not None else None
               for k in ("dataset_file", "trace_file", "tokenizer", "tokenizer_config", "model_config_file")}}


def _load(p: BundlePayload) -> dict[str, Any]:
    if p.load is None:
        return {}
    ld = p.load
    return {**ld.profile, "seed": ld.seed, "warmup requests": ld.warmup_requests, "num prompts": ld.num_prompts,
            "concurrency": ld.concurrency}


def diff_env(a: BundlePayload, b: BundlePayload) -> list[Difference]:
    out: list[Difference] = []
    out += _dict_diff("versions", _versions(a), _versions(b))
    out += _dict_diff("script", _script(a), _script(b))
    out += _dict_diff("argv", argv_flags(_argv(a)), argv_flags(_argv(b)))
    ea = a.launch.env if a.launch else {}
    eb = b.launch.env if b.launch else {}
    out += _dict_diff("env", ea, eb)
    out += _dict_diff("env", a.process_env, b.process_env, prefix="process ")
    out += _dict_diff("image", a.image.model_dump(), b.image.model_dump())
    out += _dict_diff("hardware", _hardware(a), _hardware(b))
    out += _dict_diff("load", _load(a), _load(b))
    out += _dict_diff("inputs", _inputs(a), _inputs(b))
    out += _dict_diff("point", a.point, b.point)
    out += _dict_diff("workspace", a.workspace.model_dump(exclude={"root"}), b.workspace.model_dump(exclude={"root"}))
    return out
