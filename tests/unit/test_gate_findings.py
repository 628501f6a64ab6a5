"""Per-finding gates: slots per role, who may fill them, the status, the Slack view's limits,
the per-finding form, and the decision receipt's evidence. Pure: no Prefect server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from clausegate.demo.slack_server import _block_kit_problems
from clausegate.gates import findings, receipts
from clausegate.gates.model import DECISIONS, DecisionInfo, Finding, GateRecord, base_key, round_key, text_sha256
from clausegate.gates.slack_findings import findings_message
from clausegate.gates.store import GateExtras

T0 = datetime(2026, 1, 1, 9, tzinfo=UTC)
ROLES = {"Uncapped Liability": ["legal"], "Minimum Commitment": ["finance"],
         "Most Favored Nation": ["legal", "finance"]}
MEMBERS = {"legal": ["U0LEGAL", "U0LEE", "lee@example.com"], "finance": ["U0FIN"]}


def record(n_findings: int = 3, text: str = "The Supplier's liability shall be unlimited.") -> GateRecord:
    cats = ["Uncapped Liability", "Minimum Commitment", "Most Favored Nation", "Liquidated Damages"]
    found = [Finding(id=f"F{i}", category=cats[(i - 1) % len(cats)], pages=[i], text=f"{i}. {text}", confidence=0.8,
                     text_sha256=text_sha256(f"{i}. {text}")) for i in range(1, n_findings + 1)]
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id="c" * 64,
                      filename="msa.pdf", playbook="roles", categories=sorted({f.category for f in found}),
                      findings=found, opened_at=T0, sla_hours=8, suspend_timeout_seconds=1000, roles=ROLES,
                      role_members=MEMBERS, playbook_sha256="p" * 64, model_version="offline (v1)")


def answer(via: str, user: str | None, decided: dict[str, str], minute: int = 1) -> DecisionInfo:
    return DecisionInfo(decision=findings.strictest(decided.values()), reviewer=user or "dana", via=via,
                        decided_at=T0 + timedelta(minutes=minute), reviewer_verified=user is not None,
                        verified_user=user, findings=decided)


def test_the_run_is_complete_only_when_every_role_has_answered_in_either_order():
    rec = record(3)  # F1 legal, F2 finance, F3 legal + finance
    legal = answer("slack", "U0LEGAL", {"F1": "approve", "F3": "approve"})
    finance = answer("slack", "U0FIN", {"F2": "approve", "F3": "approve"}, 2)
    for order in ([legal, finance], [finance, legal]):
        assert not findings.progress(rec, order[:1]).complete
        done = findings.progress(rec, order)
        assert done.complete and done.status == "complete"
        assert set(done.get("F3").answers) == {"legal", "finance"}


def test_a_changes_next_to_an_approve_gives_changes_requested_and_escalate_wins():
    rec = record(2)
    prog = findings.progress(rec, [answer("slack", "U0LEGAL", {"F1": "approve"}),
                                   answer("slack", "U0FIN", {"F2": "changes"})])
    assert prog.complete and prog.status == "changes_requested"
    assert prog.get("F1").outcome == "approve" and prog.get("F2").outcome == "changes"
    prog = findings.progress(rec, [answer("slack", "U0LEGAL", {"F1": "escalate"}),
                                   answer("slack", "U0FIN", {"F2": "changes"})])
    assert prog.status == "needs_legal"


def test_a_path_that_cannot_prove_who_answers_never_fills_a_role():
    rec = record(4)  # F4 Liquidated Damages: no role, anyone
    ui = DecisionInfo(decision="approve", reviewer="dana (as stated …)", via="ui", decided_at=T0,
                      findings={"F1": "approve", "F4": "approve"})
    cli = answer("cli", "operator", {"F2": "approve"})
    prog = findings.progress(rec, [ui, cli])
    assert not prog.get("F1").answers and not prog.get("F2").answers
    assert prog.get("F4").done  # a finding without a role: any path
    reasons = {fid: why for _, fid, why in prog.refused}
    assert set(reasons) == {"F1", "F2"} and "Answer in Slack" in reasons["F1"] and "via ui" in reasons["F1"]
    wrong = findings.progress(rec, [answer("slack", "U0FIN", {"F1": "approve"})])  # finance cannot do legal's
    assert not wrong.get("F1").answers and "not in role legal" in wrong.refused[0][2]
    sla = findings.progress(rec, [answer("sla", "clausegate-sla-sweeper", {f"F{i}": "escalate" for i in range(1, 5)})])
    assert sla.complete and sla.status == "needs_legal"


def test_a_reassigned_slot_is_only_the_assignee_s():
    rec = record(1)
    moved = {("F1", "legal"): "U0LEE"}
    assert not findings.progress(rec, [answer("slack", "U0LEGAL", {"F1": "approve"})], moved).get("F1").answers
    assert findings.progress(rec, [answer("slack", "U0LEE", {"F1": "approve"})], moved).complete


def test_fillable_names_what_an_answerer_would_decide():
    rec = record(4)
    prog = findings.progress(rec, [])
    assert findings.fillable(rec, prog, via="slack", user="U0LEGAL", finding=None)[0] == ["F1", "F3", "F4"]
    ids, problems = findings.fillable(rec, prog, via="cli", user="op", finding="F1")
    assert ids == [] and "Answer in Slack" in problems[0]
    assert findings.fillable(rec, prog, via="cli", user="op", finding=None)[0] == ["F4"]


def test_round_keys_and_the_per_finding_form():
    assert round_key("gate-r1-abc", 0) == "gate-r1-abc" and round_key("gate-r1-abc", 3) == "gate-r1-abc-a3"
    assert base_key("gate-r1-abc-a3") == base_key("gate-r1-abc") == "gate-r1-abc"
    form = findings.findings_form(record(4))
    schema = form.model_json_schema()
    assert {"reviewer", "F1", "F2", "F3", "F4"} <= set(schema["properties"]) and schema["required"] == ["reviewer"]
    assert "must decide this in Slack" in schema["properties"]["F1"]["description"]
    assert form(reviewer="dana", F2="changes").F2 == "changes"
    # one drop-down per finding in the Prefect UI: an enum, not a `str | None` union, and no null default (the UI
    # would send it, and the schema refuses null); an unanswered finding is left out and reads as None
    assert schema["properties"]["F1"]["enum"] == list(DECISIONS) and "anyOf" not in schema["properties"]["F1"]
    assert "default" not in schema["properties"]["F1"] and form(reviewer="dana").F1 is None


def test_twelve_findings_fit_slack_block_limits():
    """Slack allows 50 blocks, 3000 characters per section, 150 per header; slack-sdk's models and the fake check."""
    rec = record(12, text="Notwithstanding anything to the contrary " * 40)
    extras = GateExtras(acks=[{"reviewer": f"person-{i} (U0{i})", "at": T0.isoformat()} for i in range(12)])
    half = findings.progress(rec, [answer("slack", "U0LEGAL", {f"F{i}": "approve" for i in range(1, 13)})])
    for prog in (findings.progress(rec, []), half):
        text, blocks = findings_message(rec, prog, extras, "http://127.0.0.1:4200/runs/flow-run/x")
        assert len(blocks) <= 50 and not _block_kit_problems(blocks), _block_kit_problems(blocks)
        assert sum(1 for b in blocks if b["type"] == "actions") >= 2
        values = [json.loads(e["value"]) for b in blocks if b["type"] == "actions" for e in b["elements"]]
        assert all(len(json.dumps(v)) < 2000 for v in values)


def test_the_receipt_records_what_exactly_was_decided():
    rec = record(2)
    evidence = receipts.evidence_of(rec, ["F2"])
    assert evidence == {"clause_sha256": {"F2": rec.findings[1].text_sha256}, "contract_sha256": "c" * 64,
                        "playbook_sha256": "p" * 64, "model_version": "offline (v1)"}
    key = b"k" * 32
    receipt = receipts.issue(flow_run_id=rec.flow_run_id, gate=rec.key, decision="F2=approve", reviewer="fin (U0FIN)",
                             comment="", via="slack", verified_user="U0FIN", key=key, evidence=evidence)
    stored = {"reviewer": "fin (U0FIN)", "comment": "", "F2": "approve"}
    ok, problem = receipts.verify(receipt.model_dump(mode="json"), flow_run_id=rec.flow_run_id, gate=rec.key,
                                  nonce=receipt.nonce, answer=stored, stored_at=datetime.now(UTC), key=key)
    assert problem is None and ok.clause_sha256 == {"F2": rec.findings[1].text_sha256}
    forged = {**receipt.model_dump(mode="json"), "clause_sha256": {"F2": "0" * 64}}
    assert receipts.verify(forged, flow_run_id=rec.flow_run_id, gate=rec.key, nonce=receipt.nonce, answer=stored,
                           stored_at=datetime.now(UTC), key=key)[1] == "receipt signature does not verify"
    assert text_sha256("a  b\n c") == text_sha256("a b c")


def test_every_gate_key_is_a_valid_flow_run_input_key():
    """Prefect allows lowercase letters, digits and dashes only (a Slack user id is uppercase: U0LEGAL)."""
    import re

    from clausegate.gates.model import ack_key, assign_key, extend_key, remind_key

    keys = [ack_key("gate-r1-abc", "U0LEGAL"), ack_key("gate-r1-abc", "Dana Smith"),
            assign_key("gate-r1-abc", "F12", "legal", 3), extend_key("gate-r1-abc"), remind_key("gate-r1-abc", 80),
            round_key("gate-r1-abc", 2)]
    assert all(re.fullmatch(r"[a-z0-9-]+", k) for k in keys), keys


def test_resolve_command_forms_per_finding_ack_reassign_extend():
    from clausegate.gateway.slack import parse_command

    base = {"command": "/resolve", "user_id": "U0LOU", "user_name": "lou", "channel_id": "C0GATES"}
    run = "0b9c0000-0000-0000-0000-000000000001"
    answer, _ = parse_command({**base, "text": f"{run} f2 changes cap it at 12 months"})
    assert (answer.finding, answer.decision, answer.comment, answer.action) == ("F2", "changes", "cap it at 12 months",
                                                                               "decide")
    answer, _ = parse_command({**base, "text": f"{run} approve"})  # a one-decision gate, unchanged
    assert (answer.finding, answer.decision, answer.action) == (None, "approve", "decide")
    assert parse_command({**base, "text": f"{run} ack"})[0].action == "ack"
    answer, _ = parse_command({**base, "text": f"{run} F1 reassign <@U0LEE|lee>"})
    assert (answer.action, answer.finding, answer.target) == ("reassign", "F1", "<@U0LEE|lee>")
    assert parse_command({**base, "text": f"{run} extend 4"})[0].target == "4"
    assert parse_command({**base, "text": f"{run} reassign U0LEE"})[0] is None  # which finding?
    assert parse_command({**base, "text": f"{run} F1"})[0] is None
