"""Image pins: the tag check, the images.lock file, and digest verification against a REAL local
registry (Debian docker-registry on 127.0.0.1; images pushed over the distribution API)."""

from __future__ import annotations

import pytest
from pfhelpers import SEED_DIGEST, SEED_IMAGE, hand_launch, push_image

from infx.diagnostics import InfxError
from infx.preflight.gate import PreflightOptions, preflight_points
from infx.preflight.images import ImagesLock, load_images_lock, parse_image_ref, pin_check, resolve_digest, verify_image


@pytest.mark.parametrize("image,status", [
    (SEED_IMAGE, "ok"),
    ("vllm/vllm-openai:latest", "fail"),
    ("vllm/vllm-openai", "fail"),  # no tag = latest
    ("vllm/vllm-openai:nightly", "fail"),
    ("vllm/vllm-openai-rocm:nightly-rocm", "fail"),
    ("vllm/vllm-openai:v0.11.0", "ok"),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1", "ok"),
    ("rocm/atom-dev:nightly_202607231538", "ok"),
    ("lmsysorg/sglang@sha256:" + "0" * 64, "ok"),
    ("lmsysorg/sglang@sha256:abc", "fail"),
    ("vllm/vllm-openai:kimi-k3", "warn"),
    ("local", "ok"),
])
def test_pin_check(image, status):
    assert pin_check(image).status == status, pin_check(image).message


def test_parse_image_ref_defaults():
    assert parse_image_ref("ubuntu").repository == "library/ubuntu"
    r = parse_image_ref("127.0.0.1:5000/bench/x:v1")
    assert (r.registry, r.repository, r.tag) == ("127.0.0.1:5000", "bench/x", "v1")
    r = parse_image_ref("localhost/x@sha256:" + "a" * 64)
    assert r.registry == "localhost" and r.reference.startswith("sha256:")


def test_seed_image_pin_passes_and_latest_fails_on_points(seed_points, cards, runners):
    p = seed_points[0]
    ok = preflight_points([p], cards=cards, runners=runners, launches={p.point_id: hand_launch(p)})[0]
    assert ok.check("image-pinned").status == "ok"
    latest = p.model_copy(update={"image": "vllm/vllm-openai:latest"})
    launch = hand_launch(latest)
    v = preflight_points([latest], cards=cards, runners=runners, launches={p.point_id: launch})[0]
    assert v.check("image-pinned").status == "fail" and v.status == "fail"
    assert "latest" in v.reason


def test_images_lock_validation(tmp_path):
    good = tmp_path / "images.lock"
    good.write_text(f"images:\n  {SEED_IMAGE}: {SEED_DIGEST}\n")
    assert load_images_lock(good).images[SEED_IMAGE] == SEED_DIGEST
    bad = tmp_path / "bad.lock"
    bad.write_text("images:\n  a:b: sha256:123\n")
    with pytest.raises(InfxError) as exc:
        load_images_lock(bad)
    assert str(exc.value).startswith(f"{bad}:2:") and "sha256:<64 hex>" in str(exc.value)


def test_unreachable_registry_is_reported():
    chk = verify_image("127.0.0.1:1/x:v1.0", None, timeout=2)
    assert chk.status == "fail" and "cannot reach" in chk.message


@pytest.mark.slow
def test_registry_digest_match_and_mismatch(registry, seed_points, cards, runners):
    host = registry.removeprefix("http://")
    pushed = push_image(registry, "bench/vllm-fake", "v0.1")
    image = f"{host}/bench/vllm-fake:v0.1"
    assert resolve_digest(image) == pushed
    assert verify_image(image, ImagesLock(images={image: pushed})).status == "ok"
    assert verify_image(image, ImagesLock(images={})).status == "warn"  # nothing recorded
    missing = verify_image(f"{host}/bench/vllm-fake:nope", None)
    assert missing.status == "fail" and "404" in missing.message

    # The seed's pinned tag, served by the local registry through a mirror of docker.io: the tag now
    # points at a different manifest than the digest recorded when the pin was reviewed.
    repo = "vllm/vllm-openai-rocm"
    tag = SEED_IMAGE.split(":", 1)[1]
    now = push_image(registry, repo, tag, payload=b"a rebuilt nightly")
    assert now != SEED_DIGEST
    lock = ImagesLock(images={SEED_IMAGE: SEED_DIGEST})
    opts = PreflightOptions(verify_images=True, images_lock=lock, registry_mirrors={"docker.io": registry})
    verdicts = preflight_points(seed_points, cards=cards, runners=runners, options=opts,
                                launches={p.point_id: hand_launch(p, offload=p.tp == 2) for p in seed_points})
    for v in verdicts:
        c = v.check("image-digest")
        assert c.status == "fail" and "digest mismatch" in c.message, c.message
        assert c.details == {"resolved": now, "recorded": SEED_DIGEST}
        assert v.status == "fail"
    # Re-recording the digest the registry serves makes the check pass.
    opts.images_lock = ImagesLock(images={SEED_IMAGE: now})
    v = preflight_points(seed_points[:1], cards=cards, runners=runners, options=opts,
                         launches={seed_points[0].point_id: hand_launch(seed_points[0])})[0]
    assert v.check("image-digest").status == "ok"
