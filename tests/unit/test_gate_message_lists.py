"""The gate message says why each finding needs a person, and lists what was not asked: possible findings of gated
categories (``possible_findings: note``) and findings a model took off the gate, with its reason."""

from __future__ import annotations

from datetime import UTC, datetime

from clausegate.demo.slack_server import _block_kit_problems
from clausegate.gates.model import GateRecord, cleared_findings, findings_of
from clausegate.gates.slack_view import gate_message
from clausegate.gates.step import describe_for_ui
from clausegate.review.gate_reasons import gate_reasons
from clausegate.review.schemas import Clause, Clearance, Review

UL = "Supplier's liability for breach of its confidentiality obligations shall be unlimited."
LD = "Customer shall pay a one-time fee of $5,000 for each candidate hired."
MC = "Customer shall purchase at least 10,000 units in each contract year."
REASON = "A placement fee per hire, not damages agreed for a breach."


def review() -> Review:
    ul = Clause(category="Uncapped Liability", text=UL, pages=[4], confidence=0.91, source="offline")
    mc = Clause(category="Minimum Commitment", text=MC, pages=[2], confidence=0.22, source="offline", possible=True)
    ld = Clause(category="Liquidated Damages", text=LD, pages=[6], confidence=0.18, source="offline", possible=True,
                cleared=Clearance(model="claude", model_found="nothing", reason=REASON))
    return Review(contract_id="c" * 64, filename="msa.pdf", playbook="default", status="complete", extractor="x",
                  clauses=[ul, mc], gated_categories=["Uncapped Liability"], notes=["Minimum Commitment"],
                  cleared_by_model=[ld], gate_reasons=gate_reasons(["Uncapped Liability"], [ul, mc], [], set(), []))


def record(r: Review, *, strict: bool = False) -> GateRecord:
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id="c" * 64,
                      filename=r.filename, playbook=r.playbook, categories=r.gated_categories,
                      findings=findings_of(r, r.gated_categories, strict=strict),
                      cleared=cleared_findings(r, strict=strict), noted=findings_of(r, r.notes, strict=strict),
                      opened_at=datetime(2026, 12, 7, tzinfo=UTC), sla_hours=24, suspend_timeout_seconds=86400)


def test_each_finding_says_why_and_the_message_lists_what_was_not_asked():
    gate = record(review())
    (finding,) = gate.findings
    assert finding.why == "found by the offline reader at confidence 0.91"
    text, blocks = gate_message(gate, "http://127.0.0.1:4200/runs/x")
    assert not _block_kit_problems(blocks)
    shown = "\n".join(b["text"]["text"] for b in blocks if b.get("type") == "section")
    assert "found by the offline reader at confidence 0.91" in shown
    assert "*Listed, not asked*" in shown and "10,000 units" in shown
    assert "*Cleared by the model*" in shown and REASON in shown and "one-time fee" in shown
    form = describe_for_ui(gate)
    assert "Why: found by the offline reader" in form and "**Listed, not asked**" in form and REASON in form


def test_strict_text_keeps_the_model_s_reason_out_of_the_gate():
    gate = record(review(), strict=True)
    (cleared,) = gate.cleared
    assert REASON not in (cleared.why or "") and "one-time fee" not in cleared.text
    _, blocks = gate_message(gate, "http://127.0.0.1:4200/runs/x")
    assert REASON not in str(blocks) and LD not in str(blocks)
