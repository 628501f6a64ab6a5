"""The gate inside the contract-review flow without a deployment, and the gate's pure parts."""

from __future__ import annotations

import asyncio
import json

import pytest

from clausegate.gates import GateInput, gate_key, normalise_decision
from clausegate.gates.model import STATUS_BY_DECISION, response_key, suspend_timeout_seconds
from tests.support.contracts import GATED_PAGES
from tests.support.pdf_factory import make_text_pdf


@pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
def test_run_without_deployment_completes_pending_decision(tmp_path, monkeypatch):
    from flows.contract_review import contract_review

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    pdf = make_text_pdf(tmp_path / "gated.pdf", GATED_PAGES)
    state = asyncio.run(contract_review(str(pdf), playbook="payment-liability", out_dir=str(tmp_path / "out"),
                                        return_state=True))
    assert state.is_completed(), state.message
    review = state.result()
    assert set(review.gated_categories) & {"Uncapped Liability", "Liquidated Damages"}
    assert review.status == "pending_decision" and review.decisions == []
    notice = next(w for w in review.warnings if w.code == "CG-GATE-NO-DEPLOYMENT")
    assert "deployment" in notice.message
    report = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert report["status"] == "pending_decision"


def test_gate_key_is_stable_per_attempt_and_content():
    cats = ["Uncapped Liability", "Liquidated Damages"]
    key = gate_key("a" * 64, cats, 1)
    assert key == gate_key("a" * 64, list(reversed(cats)), 1)  # order of findings does not matter
    assert key != gate_key("a" * 64, cats, 2)  # a retry (run_count 2) asks again
    assert key != gate_key("b" * 64, cats, 1)
    assert key.startswith("gate-r1-") and key.replace("-", "").isalnum() and key == key.lower()
    assert response_key(key) == f"suspended-{key}-response"


def test_run_input_form_schema_and_decisions():
    schema = GateInput.model_json_schema()
    assert set(schema["required"]) == {"decision", "reviewer"}
    assert schema["properties"]["decision"]["enum"] == ["approve", "changes", "escalate"]
    with pytest.raises(ValueError):
        GateInput(decision="reject", reviewer="x")
    with pytest.raises(ValueError):
        GateInput(decision="approve", reviewer="")
    form = GateInput.with_initial_data(description="### findings")
    assert form._description == "### findings"
    assert STATUS_BY_DECISION == {"approve": "complete", "changes": "changes_requested", "escalate": "needs_legal"}
    assert normalise_decision(" Approved ") == "approve" and normalise_decision("request-changes") == "changes"
    assert normalise_decision("maybe") is None


def test_prefect_timeout_is_well_beyond_the_sla():
    for hours in (0.001, 8, 24, 48):
        assert suspend_timeout_seconds(hours) >= hours * 3600 + 7 * 86400


def test_the_resume_form_description_wraps_each_finding_instead_of_a_wide_table():
    """The findings fit the Resume modal's width: a Markdown table does not wrap its cells there and runs past the
    right edge, so each finding is a short heading line and a quote, which wrap."""
    from datetime import UTC, datetime

    from clausegate.gates.model import GateRecord
    from clausegate.gates.step import describe_for_ui
    from tests.support.gates import FINDINGS

    record = GateRecord(key="gate-r1-x", flow_run_id="r", contract_id="0" * 64, filename="supply.pdf",
                        playbook="payment-liability", categories=[f.category for f in FINDINGS], findings=FINDINGS,
                        opened_at=datetime(2026, 1, 1, tzinfo=UTC), sla_hours=8, suspend_timeout_seconds=30000)
    text = describe_for_ui(record)
    assert not [line for line in text.splitlines() if line.startswith("|")], text
    for f in FINDINGS:
        assert f"> {' '.join(f.text.split())}" in text and f"**{f.category}** · p. {f.pages[0]}" in text
