"""A decision recorded on version 1 (resolve_gate from the CLI: a signed receipt with the decided clauses' hashes)
is read back from the earlier run and carried only to a clause of the same text under the same playbook; a
one-word or one-digit change is asked again with the earlier decision and the redline.  `clausegate receipts
verify`'s check accepts the carried decision's receipt and refuses a forged one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from prefect.client.orchestration import get_client
from prefect.states import Running

from clausegate.cli.receipts import check_carried
from clausegate.gates import store
from clausegate.gates.model import Finding, GateRecord, gate_key, text_sha256
from clausegate.gates.resolve import resolve_gate
from clausegate.pipeline.versions import earlier_decisions
from clausegate.review.schemas import Clause, GateDecision, Review
from clausegate.review.versions.carry import carry_one
from clausegate.review.versions.model import CarriedFrom
from tests.support.gates import fixture_deployment_id, suspend_at

pytestmark = pytest.mark.usefixtures("prefect_server")
CAP = "Neither party's aggregate liability shall exceed the fees paid in the twelve (12) months before the claim."
UNCAPPED = "Nothing in this Agreement limits either party's liability for fraud or for death or personal injury."
PLAYBOOK = "d" * 64


def _decided_v1(playbook_hash: str = PLAYBOOK, source: str = "") -> GateRecord:
    """Version 1's gate on two clauses, approved from the CLI (a signed receipt, as `clausegate resolve` writes)."""
    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(fixture_deployment_id(client), name="review-v1.docx",
                                                     parameters={"source": source} if source else None)
        client.set_flow_run_state(run.id, Running(), force=True)
        contract_id = uuid.uuid4().hex * 2
        findings = [Finding(category=c, pages=[], text=t, confidence=0.9, text_sha256=text_sha256(t))
                    for c, t in (("Cap on Liability", CAP), ("Uncapped Liability", UNCAPPED))]
        record = GateRecord(key=gate_key(contract_id, [f.category for f in findings], 1), flow_run_id=str(run.id),
                            flow_run_name=run.name, contract_id=contract_id, filename="v1.docx", playbook="t",
                            categories=[f.category for f in findings], findings=findings,
                            opened_at=datetime.now(UTC), sla_hours=8, suspend_timeout_seconds=8 * 3600,
                            playbook_sha256=playbook_hash)
        store.write_once(client, run.id, record.record_key, record)
    suspend_at(record)
    outcome = resolve_gate(record.flow_run_id, "approve", reviewer="dana", via="cli", comment="cap at 12 months: ok")
    assert outcome.kind == "resumed", outcome
    return record


def test_a_decision_carries_only_to_the_same_text_under_the_same_playbook():
    record = _decided_v1()
    with get_client(sync_client=True) as client:
        earlier = earlier_decisions(client, record.flow_run_id)
    assert {(d.category, d.decision, d.comment) for d in earlier} == {
        ("Cap on Liability", "approve", "cap at 12 months: ok"),
        ("Uncapped Liability", "approve", "cap at 12 months: ok")}
    assert all(d.receipt and d.receipt["flow_run_id"] == record.flow_run_id for d in earlier)

    same = carry_one("Cap on Liability", CAP, earlier, PLAYBOOK, digest=text_sha256(CAP))
    assert same.outcome == "carried" and same.earlier.reviewer.startswith("dana")
    for edited in (CAP.replace("(12)", "(13)"), CAP.replace("twelve", "six")):
        again = carry_one("Cap on Liability", edited, earlier, PLAYBOOK, digest=text_sha256(edited))
        assert again.outcome == "asked_again" and again.earlier.comment == "cap at 12 months: ok"
        assert "~~" in again.redline
    assert carry_one("Cap on Liability", CAP, earlier, "e" * 64).outcome == "asked_again"

    # the receipt check of `clausegate receipts verify`
    carried = same.earlier
    decision = GateDecision(gate=record.key, categories=["Cap on Liability"], decision="approve",
                            reviewer=carried.reviewer, via=carried.via, decided_at=carried.decided_at,
                            carried=CarriedFrom(flow_run_id=carried.flow_run_id, gate=record.key,
                                                clause_sha256=carried.clause_sha256,
                                                playbook_sha256=carried.playbook_sha256, receipt=carried.receipt))
    clause = Clause(category="Cap on Liability", pages=[1], text=CAP, confidence=0.9, source="offline")
    review = Review(contract_id="a" * 64, filename="v2.docx", playbook="t", status="complete", extractor="offline",
                    clauses=[clause], decisions=[decision])
    assert [ok for *_, ok, _ in check_carried(review)] == [True]
    forged = decision.model_copy(update={"carried": decision.carried.model_copy(
        update={"receipt": {**carried.receipt, "decision": "approve", "reviewer": "mallory"}})})
    assert [ok for *_, ok, _ in check_carried(review.model_copy(update={"decisions": [forged]}))] == [False]
    edited = clause.model_copy(update={"text": CAP.replace("(12)", "(13)")})
    assert [ok for *_, ok, _ in check_carried(review.model_copy(update={"clauses": [edited]}))] == [False]


def test_the_flow_step_carries_the_untouched_clause_and_gates_again_on_the_changed_one(tmp_path):
    """carry_step, as the flow runs it before the gate: version 2 (a .docx) with the cap clause untouched and one
    word of the uncapped clause changed, revising version 1's run."""
    from clausegate.gates.step import playbook_sha256
    from clausegate.pipeline.versions import carry_step
    from clausegate.review.document.formats import parse_document
    from clausegate.review.document.sandbox import fingerprint
    from clausegate.review.playbook import load_playbook
    from tools.make_revisions import docx_bytes

    book = load_playbook("default")
    intro = "This Master Services Agreement is made between Acme Inc. and Beta LLC on the date signed below."
    edited = UNCAPPED.replace("fraud", "gross negligence")
    v1, v2 = tmp_path / "v1.docx", tmp_path / "v2.docx"
    v1.write_bytes(docx_bytes([intro, CAP, UNCAPPED]))
    v2.write_bytes(docx_bytes([intro, CAP, edited]))
    record = _decided_v1(playbook_sha256(book), source=str(v1))
    clauses = [Clause(category="Cap on Liability", pages=[1], text=CAP, confidence=0.9, source="offline"),
               Clause(category="Uncapped Liability", pages=[1], text=edited, confidence=0.9, source="offline")]
    review = Review(contract_id="b" * 64, filename="v2.docx", playbook="default", status="complete",
                    extractor="offline", clauses=clauses, gated_categories=["Cap on Liability", "Uncapped Liability"],
                    format="docx")
    after, carried = carry_step(review, parse_document(fingerprint(v2)), book, record.flow_run_id)

    assert after.gated_categories == ["Uncapped Liability"]  # the gate asks about the changed clause only
    (decision,) = carried
    assert decision.categories == ["Cap on Liability"] and decision.decision == "approve"
    assert decision.carried.flow_run_id == record.flow_run_id and decision.carried.receipt["signature"]
    assert after.versions.counts["changed"] == 1 and after.versions.changes[0].untracked
    assert "~~fraud~~ **gross negligence**" in after.versions.changes[0].redline
    (reason,) = [r for r in after.gate_reasons if r.why == "changed"]
    assert reason.category == "Uncapped Liability" and "cap at 12 months: ok" in reason.detail
    assert "~~fraud~~" in reason.detail
    outcomes = {f.category: f.outcome for f in after.versions.findings}
    assert outcomes == {"Cap on Liability": "carried", "Uncapped Liability": "asked_again"}
    checked = check_carried(after.model_copy(update={"decisions": carried}))
    assert [ok for *_, ok, _ in checked] == [True]
