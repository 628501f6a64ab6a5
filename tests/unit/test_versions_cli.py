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
