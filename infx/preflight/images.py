"""Container image pins: is the tag a pin at all, and does it still point at the digest we reviewed?

* ``pin_check``: a digest (``@sha256:...``) or a tag naming a commit, a release or a date stamp is
  pinned; ``latest``, a bare ``nightly`` and other moving names (``main``, ``dev``, ``stable``, no
  tag) fail.
* ``resolve_digest``: asks the registry over the OCI distribution API (``HEAD``, then ``GET``, on
  ``/v2/<name>/manifests/<tag>``) with the Accept types of OCI indexes, Docker manifest lists and
  single manifests (without them registry 2.8 answers 404 for OCI images), and reads
  ``Docker-Content-Digest`` (else the sha256 of the body). Anonymous bearer tokens are fetched
  when the registry asks for them (Docker Hub).
* ``images.lock``: the digests recorded when each pin was reviewed (``load_images_lock``).
"""

from __future__ import annotations

import hashlib
import http.client
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from infx import jsonio
from infx.diagnostics import Diagnostic, InfxError
from infx.preflight.verdict import Check
from infx.yamlsource import load_yaml

MANIFEST_ACCEPT = ", ".join([
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
])
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
DOCKER_HUB = "docker.io"
_MOVING = {"latest", "nightly", "main", "master", "dev", "develop", "edge", "stable", "head", "rc", "release", "test"}
_COMMIT = re.compile(r"(?:^|[-_.])(?:g)?([0-9a-f]{7,40})(?:$|[-_.])")
_RELEASE = re.compile(r"(?:^|[-_.v])\d+\.\d+(?:\.\d+)?")
_DATE = re.compile(r"(?:^|[-_.])20\d{6,12}(?:$|[-_.])")
LOCAL_IMAGES = {"local", "none", ""}  # the embedded engine runs without a container


@dataclass(frozen=True)
class ImageRef:
    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def reference(self) -> str:
        return self.digest or self.tag or "latest"


def parse_image_ref(image: str) -> ImageRef:
    """``[registry/]name[:tag][@digest]`` with Docker's defaults (docker.io, ``library/``)."""
    rest, digest = (image.split("@", 1) + [None])[:2] if "@" in image else (image, None)
    assert rest is not None
    parts = rest.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        registry, path = parts[0], "/".join(parts[1:])
    else:
        registry, path = DOCKER_HUB, rest
    tag = None
    if ":" in path.rsplit("/", 1)[-1]:
        path, tag = path.rsplit(":", 1)
    if registry == DOCKER_HUB and "/" not in path:
        path = "library/" + path
    return ImageRef(registry, path, tag, digest)


def pin_check(image: str) -> Check:
    """Is the image pinned? ok: digest or a tag naming a commit/release/date; fail: moving tags."""
    if image.strip().lower() in LOCAL_IMAGES:
        return Check(name="image-pinned", status="ok", message=f"'{image}': no container image (embedded engine)")
    try:
        ref = parse_image_ref(image)
    except Exception:  # pragma: no cover - parse never raises on strings
        return Check(name="image-pinned", status="fail", message=f"cannot parse image reference '{image}'")
    if ref.digest:
        if not DIGEST_RE.match(ref.digest):
            return Check(name="image-pinned", status="fail", message=f"'{image}': malformed digest '{ref.digest}'")
        return Check(name="image-pinned", status="ok", message=f"pinned by digest {ref.digest[:19]}...")
    tag = ref.tag
    if tag is None:
        return Check(name="image-pinned", status="fail",
                     message=f"'{image}' has no tag (means 'latest'): pin a release, commit or digest")
    low = tag.lower()
    if low in _MOVING:
        return Check(name="image-pinned", status="fail",
                     message=f"'{image}': tag '{tag}' moves; pin a release, commit or digest")
    for m in _COMMIT.finditer(low):
        if re.search(r"[a-f]", m.group(1)) and re.search(r"[0-9]", m.group(1)):
            return Check(name="image-pinned", status="ok", message=f"tag names commit {m.group(1)[:12]}")
    if _DATE.search(low):
        return Check(name="image-pinned", status="ok", message=f"tag '{tag}' names a dated build")
    if _RELEASE.search(low):
        return Check(name="image-pinned", status="ok", message=f"tag '{tag}' names a release")
    if re.search(r"(?:^|[-_.])\d{4}(?:$|[-_.])", low):
        return Check(name="image-pinned", status="warn",
                     message=f"'{image}': tag '{tag}' carries a short date but no year, commit or release; "
                             "pin a digest")
    if low.split("-")[0] in _MOVING or low.split("_")[0] in _MOVING:
        return Check(name="image-pinned", status="fail",
                     message=f"'{image}': tag '{tag}' is a moving channel without a commit, release or date")
    return Check(name="image-pinned", status="warn",
                 message=f"'{image}': tag '{tag}' names no commit, release or date; pin a digest to be sure")


class ImagesLock(BaseModel):
    """``images.lock``: ``images: {<image reference>: sha256:<digest>}``, the digest each pinned tag
    resolved to when the pin was reviewed."""

    model_config = ConfigDict(extra="forbid")

    images: dict[str, str] = Field(default_factory=dict)

    @field_validator("images")
    @classmethod
    def _digests(cls, v: dict[str, str]) -> dict[str, str]:
        for image, digest in v.items():
            if not isinstance(digest, str) or not DIGEST_RE.match(digest):
                raise ValueError(f"digest of '{image}' must look like sha256:<64 hex>, got {digest!r}")
        return v


def load_images_lock(path: str | Path) -> ImagesLock:
    src = load_yaml(path)
    data = src.data if src.data is not None else {}
    if not isinstance(data, dict):
        raise InfxError(Diagnostic("images lock must be a mapping with an 'images' key", str(path), 1, 1))
    try:
        return ImagesLock.model_validate(data)
    except ValidationError as exc:
        raise InfxError(src.diags_from_validation(exc)) from None


class RegistryError(Exception):
    pass


#: Most bytes of a token endpoint's answer read (a token is a few KiB).
MAX_TOKEN_BYTES = 1 << 20


def registry_base(ref: ImageRef, mirrors: dict[str, str] | None = None) -> str:
    """Base URL for a registry: a mirror if configured, Docker Hub's API host, plain HTTP for loopback."""
    if mirrors and ref.registry in mirrors:
        return mirrors[ref.registry].rstrip("/")
    if ref.registry == DOCKER_HUB:
        return "https://registry-1.docker.io"
    try:
        host = urllib.parse.urlsplit(f"//{ref.registry}").hostname
    except ValueError:
        host = None
    scheme = "http" if host in ("127.0.0.1", "localhost", "::1") else "https"
    return f"{scheme}://{ref.registry}"


def resolve_digest(image: str, *, mirrors: dict[str, str] | None = None, timeout: float = 10.0) -> str:
    """The digest the registry serves for ``image``'s tag now. Raises RegistryError with a reason."""
    ref = parse_image_ref(image)
    url = checked_url(f"{registry_base(ref, mirrors)}/v2/{ref.repository}/manifests/{ref.reference}")
    token: str | None = None
    for attempt in range(2):
        for method in ("HEAD", "GET"):
            req = urllib.request.Request(url, method=method, headers={"Accept": MANIFEST_ACCEPT})
            if token:
                req.add_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(req, timeout=timeout) as resp:
                    digest: str | None = resp.headers.get("Docker-Content-Digest")
                    if digest:
                        return digest
                    if method == "GET":
                        return "sha256:" + hashlib.sha256(resp.read()).hexdigest()
            except urllib.error.HTTPError as exc:
                if exc.code == 401 and attempt == 0 and token is None:
                    token = _bearer_token(exc.headers.get("WWW-Authenticate", ""), timeout)
                    if token:
                        break
                if exc.code == 404:
                    raise RegistryError(
                        f"{ref.registry} has no manifest for {ref.repository}:{ref.reference} (404)") from None
                if method == "HEAD" and exc.code in (405, 501):
                    continue
                raise RegistryError(f"{ref.registry} answered {exc.code} {exc.reason} for {url}") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise RegistryError(f"cannot reach {ref.registry} ({url}): {reason}") from None
            # InvalidURL: a non-numeric port, a control character
            except (ValueError, http.client.HTTPException) as exc:
                raise RegistryError(f"bad registry URL {url!r}: {exc}") from None
        else:
            break
    raise RegistryError(f"{ref.registry} returned no digest for {ref.repository}:{ref.reference}")


def checked_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host; a RegistryError saying why otherwise (an unclosed IPv6
    bracket, a port that is not a number, another scheme)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RegistryError(f"bad registry URL {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RegistryError(f"bad registry URL {url!r}: not an http(s) URL with a host")
    del port
    return url


def _bearer_token(challenge: str, timeout: float) -> str | None:
    """Anonymous token for a ``Bearer realm=...,service=...,scope=...`` challenge."""
    if not challenge.lower().startswith("bearer "):
        return None
    fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = fields.pop("realm", None)
    if not realm:
        return None
    url = realm + "?" + urllib.parse.urlencode(fields)
    try:
        with urllib.request.urlopen(checked_url(url), timeout=timeout) as resp:
            body = jsonio.loads(resp.read(MAX_TOKEN_BYTES), url)  # bounded: depth, numbers, size
    except (urllib.error.URLError, OSError, ValueError, RegistryError, InfxError, http.client.HTTPException):
        return None
    if not isinstance(body, dict):  # not a token response
        return None
    token = body.get("token") or body.get("access_token")
    return str(token) if token else None


def verify_image(image: str, lock: ImagesLock | None, *, mirrors: dict[str, str] | None = None,
                 timeout: float = 10.0, cache: dict[str, str | RegistryError] | None = None) -> Check:
    """Resolve ``image`` now and compare with the recorded digest (or the digest in the reference)."""
    if image.strip().lower() in LOCAL_IMAGES:
        return Check(name="image-digest", status="skip", message="no container image")
    ref = parse_image_ref(image)
    recorded = ref.digest or (lock.images.get(image) if lock else None)
    if cache is not None and image in cache:
        got: str | RegistryError = cache[image]
    else:
        try:
            got = resolve_digest(image, mirrors=mirrors, timeout=timeout)
        except RegistryError as exc:
            got = exc
        if cache is not None:
            cache[image] = got
    if isinstance(got, RegistryError):
        return Check(name="image-digest", status="fail", message=f"cannot verify '{image}': {got}")
    details = {"resolved": got, "recorded": recorded}
    if recorded is None:
        return Check(name="image-digest", status="warn", details=details,
                     message=f"'{image}' resolves to {got}; no digest recorded in images.lock to compare with")
    if got != recorded:
        return Check(name="image-digest", status="fail", details=details,
                     message=f"digest mismatch for '{image}': registry has {got}, recorded {recorded}")
    return Check(name="image-digest", status="ok", details=details,
                 message=f"registry digest matches the recorded {got[:19]}...")
