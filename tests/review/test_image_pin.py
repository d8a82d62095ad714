"""``image-pin`` against the real local OCI registry the suite starts (Debian docker-registry): a matching
digest passes, a different digest and a missing tag are errors at the ``image:`` line, offline with a
lock entry is a warning, never a pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from pfhelpers import push_image

from .helpers import cli, findings, review, rule
from .seedrepo import DIGEST, HEAD_IMAGE, git

pytestmark = pytest.mark.slow
NAME, TAG = HEAD_IMAGE.split(":")
Seed = tuple[Path, dict[str, str]]


@pytest.fixture(scope="module")
def pushed(registry: str) -> str:
    return push_image(registry, NAME, TAG, payload=b"infx review image-pin layer")


def test_matching_digest_passes(seed: Seed, registry: str, pushed: str, tmp_path: Path) -> None:
    lock = tmp_path / "images.lock"
    lock.write_text(f"images:\n  {HEAD_IMAGE}: {pushed}\n")
    rep = review(seed[0], "base", "head-fixed", verify_images=True, registry_mirror=[f"docker.io={registry}"],
                 images_lock=lock)
    r = rule(rep, "image-pin")
    assert r.status == "pass" and pushed[:19] in r.reason
    (f,) = findings(rep, "image-pin")
    assert f.severity == "note" and f.evidence["registry_digest"] == pushed and f.evidence["lock"] == pushed


def test_different_digest_is_an_error_naming_both(seed: Seed, registry: str, pushed: str) -> None:
    rep = review(seed[0], "base", "head-fixed", verify_images=True, registry_mirror=[f"docker.io={registry}"])
    (f,) = findings(rep, "image-pin")
    assert f.severity == "error" and (f.primary.path, f.primary.line) == ("configs/amd-master.yaml", 7)
    assert pushed in f.title and DIGEST in f.title


def test_missing_tag_is_an_error_and_a_predicted_failure(seed: Seed, registry: str, pushed: str) -> None:
    root, shas = seed
    git(root, "checkout", "-q", "-B", "v-missing-tag", shas["head-fixed"])
    master = root / "configs/amd-master.yaml"
    master.write_text(master.read_text().replace(HEAD_IMAGE, f"{NAME}:never-pushed"))
    git(root, "commit", "-q", "-am", "a tag the registry does not have")
    git(root, "checkout", "-q", "head-fixed")
    proc = cli(root, "--base", "base", "--head", "v-missing-tag", "--verify-images", "--registry-mirror",
               f"docker.io={registry}", "--labels", "full-sweep-fail-fast", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    import json

    data = json.loads(proc.stdout)
    (f,) = [x for x in data["findings"] if x["rule"] == "image-pin"]
    assert f["severity"] == "error" and f["locations"][0] == {"path": "configs/amd-master.yaml", "line": 7,
                                                               "end_line": 7, "role": "primary"}
    assert f["title"].startswith("tag not found")
    fi = [x for x in data["findings"] if x["rule"] == "failure-isolation"]
    assert fi and fi[0]["severity"] == "error"  # every point's image is missing: a predicted failure


def test_offline_with_a_lock_entry_is_a_warning(seed: Seed) -> None:
    rep = review(seed[0], "base", "head-fixed")
    (f,) = findings(rep, "image-pin")
    assert f.severity == "warning" and "not verified against the registry" in f.title
    assert rule(rep, "image-pin").status == "warn"
