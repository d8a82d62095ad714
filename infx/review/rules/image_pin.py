"""``image-pin``: each changed entry's image, tag to digest over the OCI distribution API (only with
``--verify-images``), against the images lock and any digest the new changelog entries write down.
Offline, a lock entry is a warning ("not verified against the registry"), never a pass."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from infx.diagnostics import InfxError
from infx.review.models import Finding, Location, finding
from infx.review.rules import Outcome, RuleInfo, status_of

if TYPE_CHECKING:
    from infx.review.context import ReviewContext

RULE = RuleInfo("image-pin", "Each changed image tag resolves to the recorded digest",
                "HEAD /v2/<name>/manifests/<tag> (Docker-Content-Digest) against configs/images.lock and any digest "
                "written in the new changelog entries; a missing tag or a different digest is an error.", "error")

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _lock(ctx: ReviewContext) -> dict[str, str]:
    from infx.preflight.images import load_images_lock

    if ctx.request.images_lock is not None:
        return load_images_lock(ctx.request.images_lock).images
    if ctx.head.ws is None or not ctx.head.ws.images_lock.is_file():
        return {}
    try:
        return load_images_lock(ctx.head.ws.images_lock).images
    except InfxError as exc:
        raise InfxError([d for d in exc.diagnostics]) from None


def _changelog_digests(ctx: ReviewContext) -> list[str]:
    from infx.review.rules.launch_claims import new_entry_text

    return sorted(set(_DIGEST.findall(new_entry_text(ctx)[0])))


def check(ctx: ReviewContext) -> Outcome:
    from infx.review.context import image_digests

    keys = sorted({c.key for c in ctx.changed})
    images: dict[str, list[str]] = {}
    for key in keys:
        place = ctx.head.places.get(key)
        if place is None:
            continue
        head_img = {ctx.head_point(c.head_pid).image for c in ctx.changed if c.key == key and c.head_pid}
        base_img = {p.image for k, p in ctx.base.points.values() if k == key}
        for img in sorted(head_img - base_img):
            images.setdefault(img, []).append(key)
    if not images:
        return Outcome("n/a", "no image changed")
    lock = _lock(ctx)
    written = _changelog_digests(ctx)
    resolved = image_digests(ctx)
    findings: list[Finding] = []
    for img, ikeys in sorted(images.items()):
        key = ikeys[0]
        loc = [Location(path=ctx.head_file(key), line=ctx.head.places[key].image_line)]
        recorded = lock.get(img)
        ev: dict[str, object] = {"image": img, "lock": recorded, "changelog_digests": written, "keys": ikeys}
        subject = f"{key}/{img}"
        if ctx.request.verify_images:
            got = resolved.get(img)
            if not isinstance(got, str):
                missing = got is not None and ("404" in str(got) or "not found" in str(got).lower())
                title = f"tag not found: {img}" if missing else f"cannot verify {img}: {got}"
                findings.append(finding("image-pin", "error", subject, title, f"{title} ({got})", locations=loc,
                                        evidence=dict(ev, registry=str(got)),
                                        template="tag not found" if missing else "unreachable"))
                continue
            ev["registry_digest"] = got
            if recorded is not None and got != recorded:
                title = f"digest mismatch for {img}: registry {got}, images.lock {recorded}"
                findings.append(finding("image-pin", "error", subject, title, title, locations=loc, evidence=ev,
                                        template="digest mismatch"))
                continue
            if written and got not in written:
                title = f"digest for {img} differs from the changelog's: registry {got}, changelog {written[0]}"
                findings.append(finding("image-pin", "error", subject, title, title, locations=loc, evidence=ev,
                                        template="changelog digest"))
                continue
            how = "lock matches" if recorded else "no lock entry"
            findings.append(finding("image-pin", "note", subject, f"{img} → {got} ({how})",
                                    f"the registry serves {got} for {img} ({how})", locations=loc, evidence=ev,
                                    template="verified"))
            continue
        if recorded is not None:
            if written and recorded not in written:
                title = f"images.lock digest {recorded} for {img} differs from the changelog's {written[0]}"
                findings.append(finding("image-pin", "error", subject, title, title, locations=loc, evidence=ev,
                                        template="changelog digest"))
                continue
            title = f"{img}: lock entry {recorded[:19]}… not verified against the registry (offline)"
            findings.append(finding("image-pin", "warning", subject, title,
                                    f"{title}; run with --verify-images to resolve the tag", locations=loc,
                                    evidence=ev, template="not verified"))
        else:
            title = f"{img}: no images.lock entry and not verified against the registry"
            findings.append(finding("image-pin", "warning", subject, title,
                                    f"{title}; record the digest in configs/images.lock and run with "
                                    "--verify-images", locations=loc, evidence=ev, template="no lock"))
    out = status_of(findings, "")
    if out.status == "pass":
        note = next(f for f in findings if f.severity == "note")
        out.reason = note.title
    return out
