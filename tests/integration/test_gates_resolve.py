"""resolve_gate, waiting_gates, the CLI and the SLA sweeper against runs Suspended at a gate (session server)."""

from __future__ import annotations

import asyncio
import getpass
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from prefect.client.orchestration import get_client
from typer.testing import CliRunner

from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import resolve_gate, waiting_gates
from tests.support.gates import open_synthetic_gate, slack_settings, state_of
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def fake_slack():
    with FakeSlack(token="xoxb-resolve-tests") as fake:
        yield fake


@pytest.fixture
def settings(fake_slack):
    return slack_settings(fake_slack)


def test_resume_then_later_answers_are_told_who_decided_first(settings, fake_slack):
    gate = open_synthetic_gate(settings)
    ref_ts = fake_slack.calls("chat.postMessage", ok_only=True)[-1]
    first = resolve_gate(gate.flow_run_id, "approve", reviewer="dana", via="cli", comment="fine", settings=settings)
    assert first.kind == "resumed", first.message
    # Attributed by the path (a signed receipt): the CLI, with the login that ran it; a --reviewer other than
    # that login is recorded as stated (test_gate_authority.py).
    assert first.decision.stated_reviewer == "dana" and first.decision.via == "cli"
    assert first.decision.verified_user == getpass.getuser()
    assert first.slack_updated is True
    assert state_of(gate.flow_run_id)[1] == "Resuming"

    # The Slack message now shows the decision and has no buttons.
    update = fake_slack.calls("chat.update", ok_only=True)[-1]
    assert update.args["ts"] and not any(b["type"] == "actions" for b in update.args["blocks"])
    assert "dana" in update.args["text"] and ref_ts.args["channel"] == update.args["channel"]

    late = resolve_gate(gate.flow_run_id, "changes", reviewer="eve", via="slack", settings=settings,
                        slack_channel="C0GATES")
    assert late.kind == "already_decided"
    assert "approved by dana (" in late.message and "via cli" in late.message and "not applied" in late.message
    assert late.decision.stated_reviewer == "dana" and late.decision.via == "cli"


def test_concurrent_answers_first_wins(settings):
    gate = open_synthetic_gate(settings)
    outcomes = []
    barrier = threading.Barrier(3)

    def answer(who: str, decision: str) -> None:
        barrier.wait()
        outcomes.append(resolve_gate(gate.flow_run_id, decision, reviewer=who, via="slack",
                                     slack_channel="C0GATES"))

    threads = [threading.Thread(target=answer, args=(w, d)) for w, d in
               (("ann", "approve"), ("bob", "changes"), ("cid", "escalate"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    kinds = sorted(o.kind for o in outcomes)
    assert kinds == ["already_decided", "already_decided", "resumed"], [o.message for o in outcomes]
    winner = next(o for o in outcomes if o.kind == "resumed").decision
    assert all(o.decision.reviewer == winner.reviewer for o in outcomes)


def test_unknown_and_malformed_runs():
    missing = resolve_gate(str(uuid.uuid4()), "approve", reviewer="dana", via="cli")
    assert missing.kind == "unknown_run" and "no flow run" in missing.message
    garbage = resolve_gate("not-a-run", "approve", reviewer="dana", via="cli")
    assert garbage.kind == "unknown_run"
    word = resolve_gate(str(uuid.uuid4()), "maybe", reviewer="dana", via="cli")
    assert word.kind == "rejected" and "not a decision" in word.message


def test_restricted_reviewers_and_stale_gate_keys(settings):
    gate = open_synthetic_gate(settings, allowed=["U0LEGAL"])
    denied = resolve_gate(gate.flow_run_id, "approve", reviewer="mallory", via="slack", slack_user_id="U0OTHER",
                          slack_channel="C0GATES")
    assert denied.kind == "forbidden" and state_of(gate.flow_run_id)[1] == "Suspended"
    stale = resolve_gate(gate.flow_run_id, "approve", reviewer="lee", via="slack", slack_user_id="U0LEGAL",
                         gate="gate-r0-000000000000", slack_channel="C0GATES")
    assert stale.kind == "not_suspended" and "earlier gate" in stale.message
    assert state_of(gate.flow_run_id)[1] == "Suspended"
    allowed = resolve_gate(gate.flow_run_id, "approve", reviewer="lee", via="slack", slack_user_id="U0LEGAL",
                           gate=gate.key, slack_channel="C0GATES")
    assert allowed.kind == "resumed"


def test_prefect_suspend_timeout_means_it_can_no_longer_be_answered():
    gate = open_synthetic_gate(None, timeout_seconds=1)
    with get_client(sync_client=True) as client:
        timeout_at = client.read_flow_run(gate.flow_run_id).state.state_details.pause_timeout
    assert timeout_at is not None
    wait_until(lambda: datetime.now(UTC) > timeout_at, 5, what="the suspension's timeout passed")
    outcome = resolve_gate(gate.flow_run_id, "approve", reviewer="dana", via="cli")
    assert outcome.kind == "timed_out", outcome.message
    assert state_of(gate.flow_run_id) == ("FAILED", "Failed")
    again = resolve_gate(gate.flow_run_id, "approve", reviewer="dana", via="cli")
    assert again.kind == "timed_out"


def test_waiting_gates_and_the_cli(settings, monkeypatch):
    old = open_synthetic_gate(settings, filename="overdue.pdf", sla_hours=1,
                              opened_at=datetime.now(UTC) - timedelta(hours=2))
    fresh = open_synthetic_gate(settings, filename="fresh.pdf", sla_hours=8)
    listed = {g.flow_run_id: g for g in waiting_gates()}
    assert old.flow_run_id in listed and fresh.flow_run_id in listed
    assert set(listed) == {g.flow_run_id for g in waiting_gates(page=1)}  # every page read, not only the first
    assert listed[old.flow_run_id].overdue and not listed[fresh.flow_run_id].overdue
    assert timedelta(hours=7, minutes=50) < listed[fresh.flow_run_id].sla_left <= timedelta(hours=8)
    assert listed[fresh.flow_run_id].slack.ok

    from clausegate.cli import app

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block-in-this-test")
    runner = CliRunner()
    table = runner.invoke(app, ["gates"], env={"COLUMNS": "80"})
    assert table.exit_code == 0, table.output
    assert fresh.flow_run_id in table.output and "fresh.pdf" in table.output and "overdue" in table.output
    # readable at 80 columns: lines fit, the run id is whole on one line, categories not cut
    lines = table.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert any(line.startswith(fresh.flow_run_id) for line in lines)
    assert "Uncapped Liability" in table.output and "Liquidated Damages" in table.output
    done = runner.invoke(app, ["resolve", fresh.flow_run_id, "changes", "--comment", "cap it",
                               "--reviewer", "cli-user"])
    assert done.exit_code == 0, done.output
    assert "resumed" in done.output
    again = runner.invoke(app, ["resolve", fresh.flow_run_id, "approve"])
    assert again.exit_code == 3 and "already decided" in again.output and "cli-user" in again.output
    unknown = runner.invoke(app, ["resolve", str(uuid.uuid4()), "approve"])
    assert unknown.exit_code == 2


def test_sla_sweeper_escalates_only_overdue_gates(fake_slack):
    name = f"sweeper-{uuid.uuid4().hex[:8]}"
    settings = slack_settings(fake_slack)
    settings.save(name, overwrite=True)
    overdue = open_synthetic_gate(settings, filename="late.pdf", sla_hours=0.5,
                                  opened_at=datetime.now(UTC) - timedelta(hours=1))
    fresh = open_synthetic_gate(settings, filename="on-time.pdf", sla_hours=8)

    import os

    os.environ["CLAUSEGATE_SLACK_BLOCK"] = name
    try:
        from flows.sla_sweeper import sla_sweeper

        done = asyncio.run(sla_sweeper())
    finally:
        os.environ.pop("CLAUSEGATE_SLACK_BLOCK", None)
    mine = [d for d in done if d["flow_run_id"] == overdue.flow_run_id]
    assert mine and mine[0]["outcome"] == "resumed" and mine[0]["escalation_posted"]
    assert not any(d["flow_run_id"] == fresh.flow_run_id for d in done)
    assert state_of(fresh.flow_run_id)[1] == "Suspended"
    late = resolve_gate(overdue.flow_run_id, "approve", reviewer="dana", via="cli")
    assert late.kind == "already_decided" and "escalated by sla via sla" in late.message
    posts = [c for c in fake_slack.calls("chat.postMessage", ok_only=True) if c.args["channel"] == "C0LEGAL"]
    assert any("late.pdf" in c.args["text"] and "SLA passed" in c.args["text"] for c in posts)


def test_a_suspend_timeout_that_runs_out_during_the_answer_is_reported_as_timed_out(monkeypatch):
    """Prefect's pause_expirations service fails the run between resolve_gate's read and its resume (a CI run hit
    this): the answer is told the gate timed out, not that the run is "no longer waiting"."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.states import Failed

    gate = open_synthetic_gate(None, timeout_seconds=3600)
    real_resume = SyncPrefectClient.resume_flow_run

    def expire_then_resume(client, flow_run_id, run_input=None):
        client.set_flow_run_state(flow_run_id, Failed(message="The flow was paused and never resumed."), force=True)
        return real_resume(client, flow_run_id, run_input=run_input)

    monkeypatch.setattr(SyncPrefectClient, "resume_flow_run", expire_then_resume)
    outcome = resolve_gate(gate.flow_run_id, "approve", reviewer="dana", via="cli")
    assert outcome.kind == "timed_out", outcome.message
    assert state_of(gate.flow_run_id) == ("FAILED", "Failed")


def test_a_gate_whose_record_cannot_be_read_is_refused_and_says_so(settings, caplog):
    """A run waiting at a gate whose stored record does not decode (here: a NaN, which JSON parsers refuse): the
    answer is refused (no record, no reviewers to check), the outcome names the gate, and the log says why."""
    from prefect.client.orchestration import get_client

    from clausegate.gates.model import record_key

    gate = open_synthetic_gate(settings)
    with get_client(sync_client=True) as client:
        run_id = uuid.UUID(gate.flow_run_id)
        client.delete_flow_run_input(flow_run_id=run_id, key=record_key(gate.key))
        client.create_flow_run_input(flow_run_id=run_id, key=record_key(gate.key),
                                     value='{"key": "' + gate.key + '", "cost_eur": NaN}')
    with caplog.at_level("WARNING", logger="clausegate.gates.store"):
        outcome = resolve_gate(gate.flow_run_id, "approve", reviewer="rita", via="cli")
    assert outcome.kind == "not_a_gate" and gate.key in outcome.message and "cannot be read" in outcome.message
    assert state_of(gate.flow_run_id) == ("PAUSED", "Suspended")  # nothing was resumed
    assert any(gate.key in r.getMessage() and "cannot be read" in r.getMessage() for r in caplog.records)


def test_a_record_that_could_not_be_read_back_is_not_stored():
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    gate = open_synthetic_gate(post=False)
    with get_client(sync_client=True) as client:
        with pytest.raises(ValueError, match="non-finite"):
            store.write_once(client, gate.flow_run_id, "clausegate-test-nan", {"cost_eur": float("nan")})
        assert store.read_model(client, gate.flow_run_id, "clausegate-test-nan", type(gate)) is None
