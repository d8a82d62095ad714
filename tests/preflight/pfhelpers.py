"""Helpers shared by the preflight tests (imported as a plain module: ``from pfhelpers import ...``)."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from pathlib import Path

from infx.engines.launch import Launch, fingerprint
from infx.matrix.point import Point

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
SEED_KEY = "dsv41flash-fp4-mi355x-vllm-agentic-dspark"
SEED_IMAGE = "vllm/vllm-openai-rocm:nightly-rocm100-3df4ae153eb385e27b52f26c81f8edb9e20b9984"
SEED_DIGEST = "sha256:eccb72b74b8c04ce7406d9212e200b129f58e24be642795a857f755a94fdb3a1"


def hand_launch(point: Point, *, offload: bool | None = True, max_num_seqs: int | None = None,
                extra: list[str] | None = None, engine: str = "vllm", env: dict[str, str] | None = None) -> Launch:
    """A launch with the seed recipe's arguments, built by hand (independent of the recipe files)."""
    spec = 7
    capture = max(2 * max(point.concs), 128) * (1 + spec)
    argv = ["vllm", "serve", point.model, "--tensor-parallel-size", str(point.tp), "--gpu-memory-utilization", "0.9",
            "--max-num-batched-tokens", "16384", "--max-model-len", "1048576",
            "--speculative-config",
            json.dumps({"method": "mtp", "num_speculative_tokens": spec}, separators=(",", ":")),
            "--compilation-config", json.dumps({"max_cudagraph_capture_size": capture})]
    if offload is not None:
        argv += ["--engram-config", json.dumps({"cpu_offload": offload}, separators=(",", ":"))]
    if max_num_seqs is not None:
        argv += ["--max-num-seqs", str(max_num_seqs)]
    argv += extra or []
    env = env or {}
    return Launch(engine=engine, recipe="hand", image=point.image, argv=argv, env=env,
                  fingerprint=fingerprint(point.image, argv, env), port=8000, served_model_name="m",
                  model_path=point.model)


def _req(method: str, url: str, data: bytes | None = None, headers: dict[str, str] | None = None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    return urllib.request.urlopen(req, timeout=10)


def push_blob(registry: str, name: str, blob: bytes) -> str:
    """Monolithic blob upload: POST /v2/<name>/blobs/uploads/ then PUT <Location>?digest=..."""
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    with _req("POST", f"{registry}/v2/{name}/blobs/uploads/", b"") as resp:
        assert resp.status == 202, resp.status
        loc = resp.headers["Location"]
    if loc.startswith("/"):
        loc = registry + loc
    sep = "&" if "?" in loc else "?"
    with _req("PUT", f"{loc}{sep}digest={digest}", blob, {"Content-Type": "application/octet-stream"}) as resp:
        assert resp.status == 201, resp.status
    return digest


def push_image(registry: str, name: str, tag: str, payload: bytes = b"infx preflight test layer") -> str:
    """Push a one-layer OCI image; returns the manifest digest the registry reports."""
    import gzip

    layer = gzip.compress(payload, mtime=0)
    config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [
        "sha256:" + hashlib.sha256(payload).hexdigest()]}}).encode()
    cfg_digest = push_blob(registry, name, config)
    layer_digest = push_blob(registry, name, layer)
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg_digest,
                   "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_digest,
                    "size": len(layer)}],
    }).encode()
    with _req("PUT", f"{registry}/v2/{name}/manifests/{tag}", manifest,
              {"Content-Type": "application/vnd.oci.image.manifest.v1+json"}) as resp:
        assert resp.status == 201, resp.status
        digest = resp.headers["Docker-Content-Digest"]
    assert digest == "sha256:" + hashlib.sha256(manifest).hexdigest()
    return digest
