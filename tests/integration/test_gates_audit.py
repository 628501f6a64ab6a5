"""Refused answers are audited, receipts cannot be forged or replayed, escalation notices fail visibly.

Against runs really Suspended at a gate on the session Prefect server (``open_synthetic_gate``: no
worker resumes them, so what is checked here is what ``resolve_gate``, the stored answer and the
SLA sweeper do; the resumed flow's side is in test_gates_attribution.py) and the fake Slack Web API
(real HTTP, with fault injection).
"""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from clausegate import audit
from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import resolve_gate
from clausegate.gates.model import RECEIPT_FIELD, UNVERIFIED_MARK, receipt_key
from tests.support.gates import api_resume, open_synthetic_gate, slack_settings, state_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def fake():
    with FakeSlack(token="xoxb-audit-tests") as server:
        yield server


def _read(prefix: str, flow_run_id: str | None = None, limit: int = 200) -> list:
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await audit.read(client, prefix=prefix, flow_run_id=flow_run_id, limit=limit)

    return asyncio.run(read())


def wait_events(predicate, *, prefix: str = audit.PREFIX + "gate.", timeout: float = 30.0, at_least: int = 1) -> list:
    """Audit events matching ``predicate`` once there are ``at_least`` of them (events reach the database
    asynchronously); ``TimeoutError`` when they do not within ``timeout``."""
    return wait_until(lambda: len(found := [e for e in _read(prefix) if predicate(e)]) >= at_least and found,
                      timeout, what=f"{at_least} audit event(s) under {prefix}", step=0.2)


def decision_of(run_id: str, gate: str):
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    with get_client(sync_client=True) as client:
        return store.read_decision(client, run_id, gate)


# -- every refused attempt is in the audit log ------------------------------------------------------
def test_every_refused_attempt_is_audited_with_reason_path_and_who(fake):
    tag = uuid.uuid4().hex[:6]
    settings = slack_settings(fake)
    guarded = open_synthetic_gate(settings, filename=f"guarded-{tag}.pdf", allowed=["U0LEGAL"])
    decided = open_synthetic_gate(settings, filename=f"decided-{tag}.pdf")
    attempts = {
        "not_allowed_reviewer": resolve_gate(guarded.flow_run_id, "approve", reviewer=f"mallory-{tag} (U0MAL)",
                                             via="slack", slack_user_id="U0MAL", gate=guarded.key,
                                             slack_channel="C0GATES"),
        "wrong_gate": resolve_gate(guarded.flow_run_id, "approve", reviewer=f"lee-{tag} (U0LEGAL)", via="slack",
                                   slack_user_id="U0LEGAL", gate="gate-r0-000000000000", slack_channel="C0GATES"),
        "unknown_run": resolve_gate(str(uuid.uuid4()), "approve", reviewer=f"uno-{tag}", via="cli"),
        "invalid_answer": resolve_gate(decided.flow_run_id, "maybe", reviewer=f"ivan-{tag}", via="cli"),
    }
    first = resolve_gate(decided.flow_run_id, "approve", reviewer=f"dana-{tag}", via="cli")
    assert first.kind == "resumed", first.message
    attempts["already_decided"] = resolve_gate(decided.flow_run_id, "changes", reviewer=f"eve-{tag} (U0EVE)",
                                               via="slack", slack_user_id="U0EVE", slack_channel="C0GATES")
    garbage = resolve_gate("not-a-run-id", "approve", reviewer=f"gus-{tag}", via="cli")
    too_long = resolve_gate(guarded.flow_run_id, "approve", reviewer=f"tim-{tag}", via="cli", comment="x" * 4000)
    assert [o.kind for o in attempts.values()] == ["forbidden", "not_suspended", "unknown_run", "rejected",
                                                   "already_decided"]
    assert (garbage.kind, too_long.kind) == ("unknown_run", "rejected")
    assert state_of(guarded.flow_run_id)[1] == "Suspended"  # nothing refused changed anything

    def mine(event) -> bool:
        return event.event == audit.PREFIX + "gate.refused" and tag in (event.payload.get("who") or "")

    events = wait_events(mine, at_least=7)
    by_who = {e.payload["who"].split("-")[0]: e.payload for e in events}
    assert len(events) == 7, [e.payload for e in events]
    assert by_who["mallory"]["reason"] == "not_allowed_reviewer" and by_who["mallory"]["via"] == "slack"
    assert by_who["mallory"]["slack_user_id"] == "U0MAL" and by_who["mallory"]["flow_run_id"] == guarded.flow_run_id
    assert by_who["lee"]["reason"] == "wrong_gate" and by_who["lee"]["gate"] == "gate-r0-000000000000"
    assert by_who["uno"]["reason"] == "unknown_run" and by_who["uno"]["via"] == "cli"
    assert by_who["uno"]["verified_user"] == getpass.getuser()
    assert by_who["gus"]["reason"] == "unknown_run" and by_who["gus"]["run_id"] == "not-a-run-id"
    assert by_who["gus"]["flow_run_id"] is None  # not a run id: not related to any run
    assert by_who["ivan"]["reason"] == "invalid_answer" and by_who["ivan"]["decision"] == "maybe"
    assert by_who["tim"]["reason"] == "invalid_answer"
    assert by_who["eve"]["reason"] == "already_decided" and "already decided" in by_who["eve"]["message"]
    # resolve_gate itself writes no gate.decided (the resumed flow does, once): none for dana's accepted answer.
    assert not [e for e in _read(audit.PREFIX + "gate.decided", decided.flow_run_id)]
    assert not [e for e in events if tag in e.payload["who"] and e.payload["who"].startswith("dana")]

    # `clausegate inbox audit` lists them.
    from clausegate.cli import app

    listing = CliRunner().invoke(app, ["inbox", "audit", "--limit", "500"], env={"COLUMNS": "400"})
    assert listing.exit_code == 0, listing.output
    rows = [entry for entry in audit_entries(listing.output) if "gate.refused" in entry and tag in entry]
    assert len(rows) >= 7, listing.output
    assert any("reason=not_allowed_reviewer" in row and "mallory" in row for row in rows)


# -- attribution: the stored answer says where it came from only with a valid receipt ---------------
def test_an_api_answer_claiming_slack_is_attributed_to_the_ui():
    gate = open_synthetic_gate(None, filename="claims-slack.pdf")
    answer = api_resume(gate.flow_run_id, {"decision": "approve", "reviewer": "dana (U0DANA)", "via": "slack"})
    assert answer["status"] == "ACCEPT", answer
    info = decision_of(gate.flow_run_id, gate.key)
    assert info.via == "ui" and not info.reviewer_verified
    assert info.reviewer == f"dana (U0DANA) ({UNVERIFIED_MARK})" and info.claimed_via == "slack"
    late = resolve_gate(gate.flow_run_id, "changes", reviewer="eve", via="cli")
    assert late.kind == "already_decided" and "via ui" in late.message


def test_the_form_has_no_via_field():
    from clausegate.gates import GateInput

    assert "via" not in GateInput.model_json_schema()["properties"]
    assert not hasattr(GateInput(decision="approve", reviewer="x", via="slack"), "via")


def test_receipts_from_resolve_gate_are_verified_and_cannot_be_replayed(fake):
    from prefect.client.orchestration import get_client

    first = open_synthetic_gate(slack_settings(fake), filename="receipt-a.pdf")
    other = open_synthetic_gate(None, filename="receipt-b.pdf")
    outcome = resolve_gate(first.flow_run_id, "approve", reviewer="lee (U0LEGAL)", via="slack",
                           slack_user_id="U0LEGAL", slack_channel="C0GATES")
    assert outcome.kind == "resumed"
    info = decision_of(first.flow_run_id, first.key)
    assert (info.via, info.reviewer, info.reviewer_verified, info.verified_user) == (
        "slack", "lee (U0LEGAL)", True, "U0LEGAL")

    # Replay: copy that valid, signed receipt onto another run and answer with its nonce.
    with get_client(sync_client=True) as client:
        stored = [i for i in client.filter_flow_run_input(flow_run_id=uuid.UUID(first.flow_run_id),
                                                          key_prefix=f"clausegate-receipt-{first.key}-",
                                                          limit=5, exclude_keys=set())]
        assert len(stored) == 1
        nonce = stored[0].key.rsplit("-", 1)[1]
        client.create_flow_run_input(flow_run_id=uuid.UUID(other.flow_run_id), key=receipt_key(other.key, nonce),
                                     value=stored[0].value)
    answer = api_resume(other.flow_run_id, {"decision": "approve", "reviewer": "lee (U0LEGAL)", "comment": "",
                                            RECEIPT_FIELD: nonce})
    assert answer["status"] == "ACCEPT", answer
    replayed = decision_of(other.flow_run_id, other.key)
    assert replayed.via == "ui" and not replayed.reviewer_verified
    assert "another run" in replayed.receipt_problem


def test_a_receipt_for_another_answer_does_not_attribute_this_one():
    """A receipt written by resolve_gate, then the run answered differently through the API with its nonce."""
    from prefect.client.orchestration import get_client

    from clausegate.gates import receipts, store

    gate = open_synthetic_gate(None, filename="receipt-c.pdf")
    receipt = receipts.issue(flow_run_id=gate.flow_run_id, gate=gate.key, decision="changes", reviewer="lee (U0LEGAL)",
                             comment="", via="slack", verified_user="U0LEGAL")
    with get_client(sync_client=True) as client:
        store.write_receipt(client, receipt)
    answer = api_resume(gate.flow_run_id, {"decision": "approve", "reviewer": "lee (U0LEGAL)",
                                           RECEIPT_FIELD: receipt.nonce})
    assert answer["status"] == "ACCEPT", answer
    info = decision_of(gate.flow_run_id, gate.key)
    assert info.via == "ui" and info.receipt_problem == "receipt does not match the stored answer"


def test_the_decided_event_is_idempotent():
    run_id, gate = str(uuid.uuid4()), f"gate-r1-{uuid.uuid4().hex[:12]}"
    for comment in ("first", "again"):
        assert audit.record(audit.gate_decided(flow_run_id=run_id, gate=gate, decision="approve", via="ui",
                                               reviewer="x", reviewer_verified=False, comment=comment))
    # A later event (another run's) stored proves the server has handled both posts above: no sleep needed.
    later_run = str(uuid.uuid4())
    assert audit.record(audit.gate_decided(flow_run_id=later_run, gate=gate, decision="approve", via="ui",
                                           reviewer="x", reviewer_verified=False, comment="later"))
    wait_events(lambda e: e.payload.get("flow_run_id") == later_run, prefix=audit.PREFIX + "gate.decided")
    found = [e for e in _read(audit.PREFIX + "gate.decided", run_id)]
    assert [e.payload["comment"] for e in found] == ["first"]


# -- SLA escalation notices -------------------------------------------------------------------------
def test_sweeper_fails_visibly_when_the_escalation_notice_cannot_be_delivered(fake):
    tag = uuid.uuid4().hex[:6]
    name = f"sweeper-undelivered-{tag}"
    settings = slack_settings(fake)
    settings.save(name, overwrite=True)
    overdue = open_synthetic_gate(settings, filename=f"undelivered-{tag}.pdf", sla_hours=0.5,
                                  opened_at=datetime.now(UTC) - timedelta(hours=1))
    fake.fail("chat.postMessage", "500", times=20, match=f"undelivered-{tag}.pdf")  # Slack answers 500 to the notice

    os.environ["CLAUSEGATE_SLACK_BLOCK"] = name
    try:
        from flows.sla_sweeper import sla_sweeper

        state = asyncio.run(sla_sweeper(return_state=True))
    finally:
        os.environ.pop("CLAUSEGATE_SLACK_BLOCK", None)
    assert state.is_failed(), state
    assert state.message.startswith("[CG-GATE-ESCALATION-UNDELIVERED]"), state.message
    assert f"undelivered-{tag}.pdf" in state.message and overdue.flow_run_id in state.message

    tries = [c for c in fake.calls("chat.postMessage") if c.args.get("channel") == "C0LEGAL"
             and f"undelivered-{tag}.pdf" in c.args.get("text", "")]
    assert [c.status for c in tries] == [500, 500, 500, 500]  # a task with retries: 1 try + 3 retries
    # The escalation itself stands: the run was resumed with escalate, attributed to the sweeper.
    assert state_of(overdue.flow_run_id)[0] != "PAUSED"
    info = decision_of(overdue.flow_run_id, overdue.key)
    assert (info.decision, info.via, info.reviewer, info.reviewer_verified) == ("escalate", "sla", "sla", True)
    late = resolve_gate(overdue.flow_run_id, "approve", reviewer="dana", via="cli")
    assert late.kind == "already_decided" and "escalated by sla via sla" in late.message


@pytest.mark.usefixtures("prefect_server")
def test_the_audit_log_reads_at_80_columns():
    """`clausegate inbox audit` stays readable at 80 columns, not a five-column table squeezed unreadable."""
    from clausegate.cli import app

    run_id = str(uuid.uuid4())
    marker = f"audit-width-{uuid.uuid4().hex[:8]}"
    assert audit.record(audit.audit_event("gate.refused", actor="dana (U0DANA)", flow_run_id=run_id,
                                          reason="wrong_channel", gate=marker, via="slack"))
    def listing():
        out = CliRunner().invoke(app, ["inbox", "audit", "--limit", "200"], env={"COLUMNS": "80"})
        assert out.exit_code == 0, out.output
        return out if marker in out.output else None

    out = wait_until(listing, 30, what="the event in `clausegate inbox audit`", step=0.3, ignore=())
    lines = out.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    entry = next(e for e in audit_entries(out.output) if marker in e)
    assert "gate.refused by dana (U0DANA)" in entry and f"run {run_id}" in entry and "reason=wrong_channel" in entry


def audit_entries(output: str) -> list[str]:
    """`clausegate inbox audit`'s events, each as one string: its head line and the lines under it."""
    entries: list[str] = []
    for line in output.splitlines():
        if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", line):  # an event's head line starts with its time
            entries.append(line.strip())
        elif line.strip() and entries:  # indented details, or a detail line folded at the terminal's width
            entries[-1] += " " + line.strip()
    return entries
