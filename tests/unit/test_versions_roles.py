"""A per-finding gate's decisions carry per role: each role's slot of a finding by the receipt of the answer that
filled it; legal's decision never fills finance's slot; a changed clause asks every role again; `clausegate
receipts verify`'s check holds each carried slot to its own receipt.  Pure: no Prefect server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clausegate.cli.receipts import check_carried
from clausegate.gates import findings, receipts
from clausegate.gates.model import DecisionInfo, Finding, GateRecord, round_key, text_sha256
from clausegate.pipeline.versions import carried_decision, slot_decisions
from clausegate.review.schemas import Clause, Review
from clausegate.review.versions.carry import as_a_whole, carry_slots, category_carries

KEY = b"k" * 32
T0 = datetime(2026, 1, 1, 9, tzinfo=UTC)
MFN = "Most Favored Nation"
ROLES = ["legal", "finance"]
PLAYBOOK = "p" * 64
PRICE = "Supplier shall offer Customer prices no less favourable than those it offers any other customer."
AUDIT = "Customer may audit Supplier's prices once in each twelve (12) month period on thirty (30) days' notice."


def _record() -> GateRecord:
    found = [Finding(id=f"F{i}", category=MFN, pages=[1], text=t, confidence=0.9, text_sha256=text_sha256(t))
             for i, t in enumerate((PRICE, AUDIT), 1)]
    return GateRecord(key="gate-r1-mfn", flow_run_id="0b9c0000-0000-0000-0000-00000000000a", contract_id="c" * 64,
                      filename="v1.pdf", playbook="roles", categories=[MFN], findings=found, opened_at=T0,
                      sla_hours=8, suspend_timeout_seconds=1000, roles={MFN: ROLES},
                      role_members={"legal": ["U0LEGAL"], "finance": ["U0FIN"]}, playbook_sha256=PLAYBOOK)


def _answer(rec: GateRecord, n: int, user: str, decided: dict[str, str], comment: str):
    """Answer round ``n`` through Slack by ``user``, with the signed receipt resolve_gate writes before it."""
    reviewer = f"{user.lower()} ({user})"
    receipt = receipts.issue(flow_run_id=rec.flow_run_id, gate=round_key(rec.key, n), reviewer=reviewer,
                             decision=receipts.signed_summary(decided, {}), comment=comment, via="slack",
                             verified_user=user, key=KEY, evidence=receipts.evidence_of(rec, list(decided)))
    info = DecisionInfo(decision=findings.strictest(decided.values()), reviewer=reviewer, comment=comment,
                        via="slack", decided_at=T0 + timedelta(minutes=n + 1), reviewer_verified=True,
                        verified_user=user, findings=decided)
    return info, receipt


def test_each_role_carries_its_own_slot_by_its_own_receipt_and_a_changed_clause_asks_every_role() -> None:
    rec = _record()
    legal, r0 = _answer(rec, 0, "U0LEGAL", {"F1": "approve", "F2": "approve"}, "standard MFN")
    finance, r1 = _answer(rec, 1, "U0FIN", {"F1": "changes", "F2": "approve"}, "cap the price match")
    prog = findings.progress(rec, [legal, finance])
    assert prog.complete
    earlier = slot_decisions(rec, prog, {0: r0, 1: r1})
    assert {(d.finding, d.role, d.decision, d.receipt["nonce"]) for d in earlier} == {
        ("F1", "legal", "approve", r0.nonce), ("F2", "legal", "approve", r0.nonce),
        ("F1", "finance", "changes", r1.nonce), ("F2", "finance", "approve", r1.nonce)}

    same = carry_slots(MFN, PRICE, ROLES, earlier, PLAYBOOK, digest=text_sha256(PRICE))
    assert [(o.role, o.outcome, o.earlier.decision, o.earlier.receipt["verified_user"]) for o in same] == [
        ("legal", "carried", "approve", "U0LEGAL"), ("finance", "carried", "changes", "U0FIN")]
    edited = AUDIT.replace("(30)", "(10)")
    changed = carry_slots(MFN, edited, ROLES, earlier, PLAYBOOK, digest=text_sha256(edited))
    assert [(o.role, o.outcome) for o in changed] == [("legal", "asked_again"), ("finance", "asked_again")]
    assert all("~~(30)~~ **(10)**" in o.redline for o in changed)
    assert category_carries(same) and not category_carries(same + changed)
    assert {o.outcome for o in as_a_whole(same + changed)} == {"asked_again"}  # the category stays on the gate

    decisions = [carried_decision(o) for o in same]
    assert [(d.role, d.decision, d.carried.role, d.carried.gate) for d in decisions] == [
        ("legal", "approve", "legal", rec.key), ("finance", "changes", "finance", round_key(rec.key, 1))]
    review = Review(contract_id="a" * 64, filename="v2.pdf", playbook="roles", status="complete",
                    extractor="offline", clauses=[Clause(category=MFN, pages=[1], text=PRICE, confidence=0.9,
                                                         source="offline")], decisions=decisions)
    assert [ok for *_, ok, _ in check_carried(review, key=KEY)] == [True, True]
    swapped = decisions[0].model_copy(update={"carried": decisions[0].carried.model_copy(
        update={"receipt": decisions[1].carried.receipt})})  # legal's approval on finance's receipt
    assert [ok for *_, ok, _ in check_carried(review.model_copy(update={"decisions": [swapped]}), key=KEY)] == [False]
    audit = [carried_decision(o) for o in carry_slots(MFN, AUDIT, ROLES, earlier, PLAYBOOK, digest=text_sha256(AUDIT))]
    assert [d.decision for d in audit] == ["approve", "approve"]  # both roles approved F2: the same signed decision
    audit_clause = review.clauses[0].model_copy(update={"text": AUDIT})
    both = review.model_copy(update={"clauses": [*review.clauses, audit_clause]})
    assert [ok for *_, ok, _ in check_carried(both.model_copy(update={"decisions": audit}), key=KEY)] == [True, True]
    borrowed = audit[0].model_copy(update={"carried": audit[0].carried.model_copy(
        update={"receipt": audit[1].carried.receipt})})  # legal's slot standing on finance's round
    assert [ok for *_, ok, _ in check_carried(both.model_copy(update={"decisions": [borrowed]}), key=KEY)] == [False]


def test_legal_alone_never_carries_finance_s_slot_and_an_unsigned_round_carries_nothing() -> None:
    rec = _record()
    legal, r0 = _answer(rec, 0, "U0LEGAL", {"F1": "approve", "F2": "approve"}, "standard MFN")
    ui = DecisionInfo(decision="approve", reviewer="dana (as stated, unverified)", via="ui", decided_at=T0,
                      findings={"F1": "approve"})  # the Prefect form: fills no role's slot
    prog = findings.progress(rec, [legal, ui])
    earlier = slot_decisions(rec, prog, {0: r0})
    assert {(d.finding, d.role) for d in earlier} == {("F1", "legal"), ("F2", "legal")}
    outcomes = carry_slots(MFN, PRICE, ROLES, earlier, PLAYBOOK, digest=text_sha256(PRICE))
    assert [(o.role, o.outcome) for o in outcomes] == [("legal", "carried"), ("finance", "new")]
    assert not category_carries(outcomes)
    assert slot_decisions(rec, prog, {}) == []  # no receipt that verifies: nothing carries
    forged = r0.model_copy(update={"decision": "F1=escalate;F2=approve"})  # not what the slot was filled with
    assert {d.finding for d in slot_decisions(rec, prog, {0: forged})} == {"F2"}
