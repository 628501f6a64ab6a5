"""The counterparty's tracked changes as gate decisions: which changes a gate asks about (a real .docx parsed in the
sandbox), the form's fields, who may decide them, the signed receipt, the CLI's --change and the report."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.errors import ClauseGateError
from clausegate.gates import changes, findings, receipts
from clausegate.gates.model import DecisionInfo, GateRecord, findings_of
from clausegate.review import assemble
from clausegate.review.categories import CATEGORIES
from clausegate.review.document import formats
from clausegate.review.document.sandbox import fingerprint
from clausegate.review.redact import SEALED_TEXT
from clausegate.review.report import render_markdown
from clausegate.review.schemas import Review
from clausegate.review.tracked_changes import ChangeAnswer
from tests.support import docx_factory as d
from tests.support.contracts import SUPPLY_PAGES

CAP_LEAD = ("3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
            "related to this Agreement exceed ")
CAP_OLD = "the total fees paid by Customer in the twelve months preceding the claim"
CAP_NEW = "one hundred dollars (US $100)"
OUTSIDE = " within thirty days"
T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)


def redlined_review(tmp_path: Path) -> Review:
    """SUPPLY_PAGES as a .docx: the other side rewrote the cap clause (a deletion and an insertion, inside the gated
    finding) and inserted words into the first line of the contract (outside every finding)."""
    lines = [line for page in SUPPLY_PAGES[:2] for line in page.split("\n")]
    body = [d.para(d.run(lines[0]), d.ins(OUTSIDE, author="Other Side", rid=5))]
    body += [d.para(d.run(line)) for line in lines[1:]]
    body += [d.para(d.run(CAP_LEAD), d.dele(CAP_OLD), d.ins(CAP_NEW), d.run("."))]
    path = d.make_docx(tmp_path / "supply-v2.docx", body)
    doc = formats.parse_document(fingerprint(path))
    cats = list(CATEGORIES)
    filtered = assemble.prefilter_step(doc, cats)
    extraction = assemble.extract_step(filtered, cats)
    return assemble.assemble_review(doc, filtered, extraction, playbook="default", gated=["Cap on Liability"],
                                    protected=["Cap on Liability"])


def gate_record(review: Review | None = None, roles: dict | None = None) -> GateRecord:
    if review is None:  # a record as the gate step writes it, without parsing a file
        from clausegate.gates.model import Finding
        from clausegate.review.tracked_changes import TrackedChange

        found = [Finding(id="F1", category="Cap on Liability", pages=[], text="cap", confidence=0.9,
                         text_sha256="a" * 64),
                 Finding(id="F2", category="Uncapped Liability", pages=[], text="uncapped", confidence=0.9,
                         text_sha256="b" * 64)]
        tracked = [TrackedChange(id="C1", finding="F1", category="Cap on Liability", kind="deletion",
                                 author="Counterparty Counsel", text=CAP_OLD, paragraph=5, start=900),
                   TrackedChange(id="C2", finding="F2", category="Uncapped Liability", kind="insertion",
                                 author="Counterparty Counsel", text="without limit", paragraph=7, start=1200)]
    else:
        found = findings_of(review, ["Cap on Liability"])
        tracked = changes.of_review(review, found)
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id="c" * 64,
                      filename="supply-v2.docx", playbook="default", categories=sorted({f.category for f in found}),
                      findings=found, opened_at=T0, sla_hours=8, suspend_timeout_seconds=1000, roles=roles or {},
                      role_members={"legal": ["U0LEGAL"]}, playbook_sha256="p" * 64, changes=tracked)


def info(via: str, *, found: dict | None = None, changed: dict | None = None, user: str | None = None,
         minute: int = 1) -> DecisionInfo:
    changed = {k: ChangeAnswer(**v) for k, v in (changed or {}).items()}
    return DecisionInfo(decision=changes.as_decision(changed) if not found else findings.strictest(found.values()),
                        reviewer=user or "dana", via=via, decided_at=T0 + timedelta(minutes=minute),
                        reviewer_verified=user is not None, verified_user=user, findings=found or {},
                        changes=changed)


# ------------------------------------------------------------------------------------------------ extraction
def test_only_the_changes_inside_a_gated_finding_become_decision_items(tmp_path):
    review = redlined_review(tmp_path)
    assert len(review.revisions) == 3  # the parser saw all three, one outside every finding
    record = gate_record(review)
    (cap,) = record.findings
    assert [(c.id, c.finding, c.kind, c.text, c.author) for c in record.changes] == [
        ("C1", cap.id, "deletion", CAP_OLD, "Counterparty Counsel"),
        ("C2", cap.id, "insertion", CAP_NEW, "Counterparty Counsel")]
    assert all(c.date == d.DATE and c.paragraph == record.changes[0].paragraph for c in record.changes)
    assert OUTSIDE.strip() not in json.dumps([c.model_dump() for c in record.changes])
    assert record.per_finding  # no roles, but the changes ask a decision each: the per-finding rounds
    sealed = changes.of_review(review, record.findings, strict=True)
    assert [c.text for c in sealed] == [SEALED_TEXT] * 2  # strict text mode: the contract's words not in the gate


def test_a_review_without_tracked_changes_in_its_findings_asks_none(tmp_path):
    review = redlined_review(tmp_path)
    outside_only = review.model_copy(update={"revisions": [r for r in review.revisions if not r.flagged]})
    found = findings_of(outside_only, ["Cap on Liability"])
    assert found and changes.of_review(outside_only, found) == []


# ------------------------------------------------------------------------------------------------ the form
def test_the_form_has_a_choice_and_a_counter_text_per_change():
    record = gate_record(roles={"Uncapped Liability": ["legal"]})
    form = findings.findings_form(record)
    props = form.model_json_schema()["properties"]
    assert props["C1"]["enum"] == ["accept", "reject", "counter"] and "default" not in props["C1"]
    assert props["C1_counter"]["type"] == "string" and props["C1_counter"]["maxLength"] == 3000
    assert "deleted “the total fees" in props["C1"]["title"] and "Counterparty Counsel" in props["C1"]["title"]
    assert "must decide this in Slack" in props["C2"]["description"]  # its finding has a role
    answer = form(reviewer="dana", C1="counter", C1_counter="12 months' fees")
    assert (answer.C1, answer.C1_counter, answer.C2) == ("counter", "12 months' fees", None)
    with pytest.raises(ValueError):
        form(reviewer="dana", C1="maybe")


def test_a_stored_answer_with_a_counter_but_no_text_decides_nothing():
    stored = {"reviewer": "dana", "C1": "counter", "C1_counter": "  ", "C2": "accept", "C2_counter": "ignored"}
    assert changes.answer_changes(stored) == {"C2": ChangeAnswer(decision="accept")}
    with pytest.raises(ValueError, match="CG-GATE-CHANGE-ANSWER"):
        ChangeAnswer(decision="counter", counter="")


# ------------------------------------------------------------------------------------------------ progress
def test_a_gate_with_an_undecided_change_does_not_complete():
    record = gate_record()
    both_findings = info("cli", found={"F1": "approve", "F2": "approve"})
    prog = findings.progress(record, [both_findings])
    assert all(fp.done for fp in prog.findings) and not prog.complete
    prog = findings.progress(record, [both_findings, info("cli", changed={"C1": {"decision": "accept"}}, minute=2)])
    assert not prog.complete and prog.get_change("C1").answer.decision == "accept"
    prog = findings.progress(record, [both_findings, info("cli", changed={"C1": {"decision": "accept"}}, minute=2),
                                      info("cli", changed={"C2": {"decision": "accept"}}, minute=3)])
    assert prog.complete and prog.status == "complete"


def test_a_countered_change_sends_the_draft_back_and_the_first_answer_wins():
    record = gate_record()
    rounds = [info("cli", found={"F1": "approve", "F2": "approve"},
                   changed={"C1": {"decision": "counter", "counter": "12 months' fees"}, "C2": {"decision": "accept"}}),
              info("cli", changed={"C1": {"decision": "accept"}}, minute=2)]
    prog = findings.progress(record, rounds)
    assert prog.complete and prog.status == "changes_requested"
    c1 = prog.get_change("C1").answer
    assert (c1.decision, c1.counter, c1.round) == ("counter", "12 months' fees", 0)
    decisions = changes.gate_decisions(record.key, prog.changes)
    assert [(x.gate, x.finding, x.decision, x.change.decision, x.change.counter) for x in decisions] == [
        ("gate-r1-abc/C1", "F1", "changes", "counter", "12 months' fees"),
        ("gate-r1-abc/C2", "F2", "approve", "accept", "")]


def test_a_change_in_a_role_s_finding_is_decided_only_by_that_role():
    record = gate_record(roles={"Uncapped Liability": ["legal"]})
    ids, problems = findings.fillable_changes(record, findings.progress(record, []), via="cli", user="ops",
                                              wanted=["C1", "C2", "C9"])
    assert ids == ["C1"]
    assert problems[0].startswith("C2, a tracked change in F2 (Uncapped Liability) must be decided by role legal")
    assert problems[1].startswith("C9: this gate has no such tracked change")
    prog = findings.progress(record, [info("cli", changed={"C2": {"decision": "accept"}})])
    assert prog.get_change("C2").answer is None and prog.refused[0][1] == "C2"
    prog = findings.progress(record, [info("slack", changed={"C2": {"decision": "reject"}}, user="U0LEGAL")])
    assert prog.get_change("C2").answer.decision == "reject"


def test_the_sla_sweeper_closes_the_gate_without_deciding_a_change():
    record = gate_record()
    prog = findings.progress(record, [info("sla", found={"F1": "escalate", "F2": "escalate"}, user="sweeper")])
    assert prog.complete and prog.status == "needs_legal"
    assert all(c.answer is None for c in prog.changes)  # a timeout accepts nothing
    decided = [info("cli", found={"F1": "approve", "F2": "approve"})]
    prog = findings.progress(record, [*decided, info("sla", found={"F1": "escalate", "F2": "escalate"}, user="sw")])
    assert prog.complete and prog.status == "needs_legal"  # only changes were open: still never complete
    assert [fp.outcome for fp in prog.findings] == ["approve", "approve"]  # the decisions given stand


# ------------------------------------------------------------------------------------------------ the receipt
def test_the_receipt_signs_each_change_answer_and_the_counter_text():
    record = gate_record()
    key = b"k" * 32
    answer = {"C1": ChangeAnswer(decision="counter", counter="12 months' fees"), "C2": ChangeAnswer(decision="accept")}
    signed = receipts.signed_summary({"F1": "approve"}, answer)
    assert signed.startswith("F1=approve;C1=counter#") and signed.endswith(";C2=accept")
    receipt = receipts.issue(flow_run_id=record.flow_run_id, gate=record.key, decision=signed, reviewer="ops",
                             comment="", via="cli", verified_user="ops", key=key,
                             evidence=receipts.evidence_of(record, ["F1"]))
    stored = {"reviewer": "ops", "comment": "", "F1": "approve", **changes.run_input(answer)}
    ok, problem = receipts.verify(receipt.model_dump(mode="json"), flow_run_id=record.flow_run_id, gate=record.key,
                                  nonce=receipt.nonce, answer=stored, stored_at=datetime.now(UTC), key=key)
    assert problem is None and ok is not None
    edited = {**stored, "C1_counter": "24 months' fees"}  # the counter text changed after the receipt was signed
    assert receipts.verify(receipt.model_dump(mode="json"), flow_run_id=record.flow_run_id, gate=record.key,
                           nonce=receipt.nonce, answer=edited, stored_at=datetime.now(UTC),
                           key=key)[1] == "receipt does not match the stored answer"


def test_an_answer_on_changes_only_is_attributed_like_any_answer():
    record = gate_record()
    stored = {"reviewer": "dana", "comment": "", "C1": "reject"}
    got = receipts.attribute(stored, flow_run_id=record.flow_run_id, gate=record.key, stored_at=T0,
                             lookup=lambda nonce: None)
    assert got.via == "ui" and got.decision == "changes" and got.changes == {"C1": ChangeAnswer(decision="reject")}
    assert got.findings == {} and "unverified" in got.reviewer


# ------------------------------------------------------------------------------------------------ the CLI
@pytest.mark.parametrize(("spec", "expected"), [
    ("C1=accept", ("C1", "accept", "")), ("c2=Reject", ("C2", "reject", "")),
    ('C3=counter:"twelve months\' fees"', ("C3", "counter", "twelve months' fees")),
    ("C4=counter: fees paid: 12 months ", ("C4", "counter", "fees paid: 12 months")),
])
def test_the_cli_reads_each_change_answer(spec, expected):
    cid, answer = changes.parse_change(spec)
    assert (cid, answer.decision, answer.counter) == expected


@pytest.mark.parametrize(("spec", "why"), [
    ("C1=counter", "needs the counter-proposal's text"), ('C1=counter:""', "needs the counter-proposal's text"),
    ("C1=maybe", "is not accept, reject or counter"), ("F1=accept", "does not name a tracked change"),
    ("C1", "does not name a tracked change"), ("C1=accept:fine", "only a counter carries a text"),
])
def test_a_bad_change_answer_is_a_coded_error(spec, why):
    with pytest.raises(ClauseGateError) as caught:
        changes.parse_change(spec)
    assert caught.value.code == "CG-GATE-CHANGE-ANSWER" and why in caught.value.message


def test_clausegate_resolve_refuses_a_counter_without_text_before_touching_the_server():
    result = CliRunner().invoke(app, ["resolve", "0b9c0000-0000-0000-0000-000000000001", "--change", "C1=counter"])
    assert result.exit_code == 2 and "CG-GATE-CHANGE-ANSWER" in result.output
    twice = CliRunner().invoke(app, ["resolve", "x", "--change", "C1=accept", "--change", "c1=reject"])
    assert twice.exit_code == 2 and "C1 is answered twice" in twice.output


# ------------------------------------------------------------------------------------------------ the report
def test_the_report_lists_each_change_and_its_decision(tmp_path):
    review = redlined_review(tmp_path)
    record = gate_record(review)
    prog = findings.progress(record, [info("cli", found={"F1": "approve"}, user="ops", changed={
        "C1": {"decision": "reject"}, "C2": {"decision": "counter", "counter": "twelve months' fees, at least $1m"}})])
    decided = review.model_copy(update={"decisions": changes.gate_decisions(record.key, prog.changes)})
    markdown = render_markdown(decided)
    assert "## The other side's tracked changes (2 decided at the gate)" in markdown
    assert "**rejected**" in markdown and "**countered** | twelve months' fees, at least $1m | ops | cli |" in markdown
    assert "| changes (tracked change C2: counter) |" in markdown
    data = json.loads(decided.model_dump_json())
    assert [(x["change"]["change"]["id"], x["change"]["decision"], x["change"]["counter"], x["via"])
            for x in data["decisions"]] == [("C1", "reject", "", "cli"),
                                            ("C2", "counter", "twelve months' fees, at least $1m", "cli")]
    assert Review.model_validate(data).decisions[1].change.change.text == CAP_NEW


# ------------------------------------------------------------------------------------------------ Slack
def test_the_gate_message_has_accept_reject_counter_per_open_change_within_slack_s_limits():
    from clausegate.demo.slack_server import _block_kit_problems
    from clausegate.gates.slack_findings import findings_message
    from clausegate.gates.store import GateExtras

    record = gate_record()
    prog = findings.progress(record, [info("cli", changed={"C1": {"decision": "reject"}})])
    _, blocks = findings_message(record, prog, GateExtras(), "http://prefect/runs/1")
    assert _block_kit_problems(blocks) == []
    ids = [b.get("block_id") for b in blocks]
    assert "cgchange_C1" in ids and "cgchange_gate_C1" not in ids  # decided: no buttons left
    (c2,) = [b for b in blocks if b.get("block_id") == "cgchange_gate_C2"]
    assert [(e["action_id"], json.loads(e["value"])["change"]) for e in c2["elements"]] == [
        ("cgchange_accept", "C2"), ("cgchange_reject", "C2"), ("cgchange_counter", "C2")]
    assert "Rejected" in json.dumps(blocks)


def test_the_gateway_reads_a_change_click_and_the_counter_modal_submission():
    from urllib.parse import urlencode

    from fastapi import HTTPException

    from clausegate.demo.slack_views import open_view
    from clausegate.gates.slack_changes import change_value, counter_view
    from clausegate.gateway.slack_changes import parse

    record = gate_record()
    click = {"type": "block_actions", "user": {"id": "U0DANA", "username": "dana"}, "trigger_id": "1.2.x",
             "channel": {"id": "C0GATES", "name": "contract-review"}, "response_url": "https://hooks.slack.com/a/1",
             "message": {"blocks": [{"block_id": "cgchange_C2", "type": "section",
                                     "text": {"type": "mrkdwn", "text": "*Tracked change* C2 …"}}]},
             "actions": [{"action_id": "cgchange_counter", "value": change_value(record, "C2", "counter")}]}
    got = parse(urlencode({"payload": json.dumps(click)}).encode())
    assert (got.run_id, got.change, got.decision, got.reviewer, got.channel_id, got.shown, got.submitted) == (
        record.flow_run_id, "C2", "counter", "dana (U0DANA)", "C0GATES", "*Tracked change* C2 …", False)
    forged = {**click, "actions": [{"action_id": "cgchange_accept", "value": change_value(record, "C2", "reject")}]}
    with pytest.raises(HTTPException):
        parse(urlencode({"payload": json.dumps(forged)}).encode())
    finding_click = {**click, "actions": [{"action_id": "clausegate_approve", "value": "{}"}]}
    assert parse(urlencode({"payload": json.dumps(finding_click)}).encode()) is None  # the findings' path

    view = counter_view(record.flow_run_id, record.key, "C2", got.shown, "C0GATES", "contract-review")
    answer, opened = open_view({"trigger_id": "1.2.x", "view": json.dumps(view)}, 7)
    assert answer["ok"] and opened["view"]["id"] == "V00000007"
    submitted = {"type": "view_submission", "user": {"id": "U0DANA", "username": "dana"},
                 "view": {"callback_id": view["callback_id"], "private_metadata": view["private_metadata"],
                          "state": {"values": {"counter": {"text": {"value": "twelve months' fees"}}}}}}
    got = parse(urlencode({"payload": json.dumps(submitted)}).encode())
    assert (got.change, got.decision, got.counter, got.channel_id, got.gate, got.submitted) == (
        "C2", "counter", "twelve months' fees", "C0GATES", record.key, True)
