"""`clausegate versions`: a contract's versions grouped by their title and parties, a status per version, and the
earlier review a new one most likely revises."""

from __future__ import annotations

import json
import os

from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.cli.typer_app import console
from clausegate.cli.versions import proposal, version_status


def _report(folder, name: str, contract: str, parties: str, when: int, **extra) -> dict:
    review = {"contract_id": contract * 64, "filename": name, "status": "complete", "flow_run_id": f"run-{name}",
              "clauses": [{"category": "Document Name", "text": "MASTER SERVICES AGREEMENT"},
                          {"category": "Parties", "text": parties}], **extra}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(review))
    os.utime(path, (when, when))
    return review


def test_the_earlier_review_of_the_same_parties_and_title_is_proposed(tmp_path) -> None:
    _report(tmp_path, "acme-v1.pdf", "a", "Acme Inc. and Beta LLC", 1_000)
    _report(tmp_path, "other.pdf", "b", "Gamma Corp and Beta LLC", 2_000)
    new = _report(tmp_path, "acme-v2.docx", "c", "ACME Inc and Beta, LLC", 3_000)
    assert proposal(new, tmp_path)["filename"] == "acme-v1.pdf"
    assert proposal({**new, "clauses": []}, tmp_path) is None  # no title, no parties: nothing proposed


def test_each_version_has_a_status(tmp_path, monkeypatch) -> None:
    approve = [{"decision": "approve"}]
    assert version_status({"status": "complete"}, first=True) == "our draft"
    assert version_status({"status": "pending_decision"}, first=False) == "counterparty's revision"
    assert version_status({"status": "complete", "decisions": approve}, first=False) == "approved"
    assert version_status({"status": "changes_requested", "decisions": [{"decision": "changes"}]},
                          first=False) == "changes requested"
    _report(tmp_path, "acme-v1.pdf", "a", "Acme Inc. and Beta LLC", 1_000, decisions=approve)
    _report(tmp_path, "acme-v2.docx", "c", "Acme Inc. and Beta LLC", 2_000, status="pending_decision",
            versions={"counts": {"unchanged": 40, "changed": 2}})
    monkeypatch.setattr(console, "width", 200)  # one row per version, unwrapped
    result = CliRunner().invoke(app, ["versions", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "approved" in result.output and "counterparty's revision" in result.output and "2 changed" in result.output
    rows = json.loads(CliRunner().invoke(app, ["versions", "--out", str(tmp_path), "--json"]).output)
    assert [(r["file"], r["version"], r["version_status"], r["changed_since"]) for r in rows] == [
        ("acme-v1.pdf", "v1", "approved", "-"), ("acme-v2.docx", "v2", "counterparty's revision", "2 changed")]


def test_a_version_with_an_undecided_gate_is_not_signed(tmp_path, monkeypatch) -> None:
    """Refused with CG-VERSIONS-UNDECIDED (nothing written, nothing sent to the audit log) while a gate waits, is
    escalated, or a gated category has no person's decision; a name that matches no report is CG-VERSIONS-UNKNOWN."""
    monkeypatch.setattr(console, "width", 200)
    cap = {"gate": "g", "categories": ["Cap on Liability"], "decision": "approve"}
    _report(tmp_path, "waiting.pdf", "a", "Acme Inc. and Beta LLC", 1_000, status="pending_decision",
            gated_categories=["Cap on Liability"])
    _report(tmp_path, "escalated.pdf", "b", "Acme Inc. and Beta LLC", 2_000, status="needs_legal",
            gated_categories=["Cap on Liability"], decisions=[{**cap, "decision": "escalate"}])
    _report(tmp_path, "half.pdf", "c", "Acme Inc. and Beta LLC", 3_000, status="complete",
            gated_categories=["Cap on Liability", "Uncapped Liability"], decisions=[cap])
    for name, open_ in (("waiting.pdf", "Cap on Liability"), ("escalated.pdf", "Cap on Liability"),
                        ("half.pdf", "Uncapped Liability")):
        result = CliRunner().invoke(app, ["versions", "sign", f"run-{name}", "--by", "Dana", "--out", str(tmp_path)])
        assert result.exit_code == 1 and "CG-VERSIONS-UNDECIDED" in result.output and open_ in result.output, name
    result = CliRunner().invoke(app, ["versions", "sign", "half.pdf", "--by", "Dana", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "CG-VERSIONS-UNDECIDED" in result.output  # by its file's name too
    result = CliRunner().invoke(app, ["versions", "sign", "run-nothing", "--by", "Dana", "--out", str(tmp_path)])
    assert result.exit_code == 1 and "CG-VERSIONS-UNKNOWN" in result.output
    result = CliRunner().invoke(app, ["versions", "sign", "half.pdf", "--by", "Dana", "--date", "07/12/2026",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.output
    assert not list(tmp_path.glob("*.signatures.json"))
    listing = CliRunner().invoke(app, ["versions", "--out", str(tmp_path)])
    assert "signed" not in listing.output


def test_undecided_names_what_waits() -> None:
    from clausegate.review.versions.signing import undecided

    cap = {"categories": ["Cap on Liability"], "decision": "changes"}
    assert undecided({"status": "changes_requested", "gated_categories": ["Cap on Liability"],
                      "decisions": [cap]}) == []
    assert undecided({"status": "complete", "gated_categories": [], "decisions": []}) == []
    assert undecided({"status": "pending_decision", "gated_categories": []}) == ["the review waits for a decision"]


def test_the_report_lists_the_earlier_versions_with_their_status(tmp_path) -> None:
    """The versions a review revises (its chain of `revises`) and those of the same title and parties, oldest
    first, each with its status (signed included); the report's Versions section shows them above this one."""
    from datetime import UTC, date, datetime

    from clausegate.review.schemas import GateDecision, Review
    from clausegate.review.versions.catalog import earlier_versions
    from clausegate.review.versions.model import Versions
    from clausegate.review.versions.report import version_lines
    from clausegate.review.versions.signing import Signature, add_signature

    approve = [{"gate": "g", "categories": ["Cap on Liability"], "decision": "approve"}]
    _report(tmp_path, "acme-v1.pdf", "a", "Acme Inc. and Beta LLC", 1_000, decisions=approve)
    # no title or parties read: found through the chain of `revises` only
    v2 = {"contract_id": "b" * 64, "filename": "acme-v2.docx", "status": "complete", "flow_run_id": "run-v2",
          "clauses": [], "decisions": approve, "versions": {"revises": "run-acme-v1.pdf"}}
    (tmp_path / "acme-v2.json").write_text(json.dumps(v2))
    os.utime(tmp_path / "acme-v2.json", (2_000, 2_000))
    _report(tmp_path, "other.pdf", "c", "Gamma Corp and Beta LLC", 3_000)
    add_signature(tmp_path / "acme-v2.json", Signature(
        flow_run_id="run-v2", contract_id="b" * 64, filename="acme-v2.docx", signed_by="Dana Lee",
        signed_on=date(2026, 12, 1), recorded_by="ops", recorded_at=datetime(2026, 12, 1, tzinfo=UTC),
        audit_event="e"))
    v3 = {"contract_id": "d" * 64, "flow_run_id": "run-v3", "clauses": []}
    history = earlier_versions(tmp_path, v3, "run-v2")
    assert [(e.filename, e.review_id, e.status) for e in history] == [
        ("acme-v1.pdf", "run-acme-v1.pdf", "approved"), ("acme-v2.docx", "run-v2", "signed (Dana Lee, 2026-12-01)")]
    assert earlier_versions(tmp_path, v3, None) == []  # neither named nor the same title and parties
    assert earlier_versions(tmp_path / "missing", v3, "run-v2") == []

    review = Review(contract_id="d" * 64, filename="acme-v3.docx", playbook="default", status="pending_decision",
                    extractor="offline", flow_run_id="run-v3", versions=Versions(revises="run-v2", history=history),
                    decisions=[GateDecision(gate="g", categories=["Cap on Liability"], decision="changes",
                                            reviewer="dana", decided_at=datetime(2026, 12, 2, tzinfo=UTC))])
    text = "\n".join(version_lines(review))
    assert "| v1 | acme-v1.pdf | `run-acme` | approved |" in text
    assert "| v2 | acme-v2.docx | `run-v2` | signed (Dana Lee, 2026-12-01) |" in text
    assert "| v3 (this one) | acme-v3.docx | `run-v3` | changes requested |" in text
