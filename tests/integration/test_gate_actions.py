"""Acknowledge, reassign and extend-once at a per-finding gate, and the roles the CLI cannot satisfy.

A synthetic gate (tests.support.gates.open_synthetic_gate) really Suspended on the session Prefect server; the
actions are the same calls the gateway makes for a verified Slack user (``via="slack"``) and the CLI makes
(``via="cli"``)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from prefect.client.orchestration import get_client

from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import resolve_gate, store, waiting_gates
from clausegate.gates.actions import act as act_
from tests.support.gates import open_synthetic_gate, slack_settings

ROLES = {"Uncapped Liability": ["legal"], "Liquidated Damages": ["finance"]}
MEMBERS = {"legal": ["U0LOU", "U0LEE"], "finance": ["U0FAY"]}
pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


def extras(record):
    with get_client(sync_client=True) as client:
        return store.read_extras(client, record.flow_run_id, record.key)


@pytest.fixture(scope="module")
def settings():
    with FakeSlack(token="xoxb-gate-actions") as fake:
        yield slack_settings(fake)


def test_ack_extend_once_and_reassign_within_the_role(settings):
    record = open_synthetic_gate(settings, sla_hours=8, roles=ROLES, role_members=MEMBERS)
    run = record.flow_run_id

    def act(*args, **kw):  # a Slack answer given in the gate's channel, as the gateway passes it
        if kw.get("via") == "slack":
            kw = {"slack_channel": "C0GATES", "settings": settings, **kw}
        return act_(*args, **kw)

    assert act(run, "ack", user_id="U0LOU", reviewer="lou (U0LOU)", via="slack").ok
    assert "already" in act(run, "ack", user_id="U0LOU", reviewer="lou (U0LOU)", via="slack").message
    assert act(run, "ack", user_id=None, reviewer="operator", via="cli").ok
    assert [a["reviewer"] for a in extras(record).acks] == ["lou (U0LOU)", "operator"]

    assert act(run, "extend", user_id=None, reviewer="operator", via="cli", hours=2).reason == "not_in_role"
    assert act(run, "extend", user_id="U0FAY", reviewer="fay", via="slack", hours=9).reason == "invalid_answer"
    assert act(run, "extend", user_id="U0FAY", reviewer="fay", via="slack", hours=4).ok
    again = act(run, "extend", user_id="U0LOU", reviewer="lou", via="slack", hours=1)
    assert not again.ok and again.reason == "already_extended"
    gate = next(g for g in waiting_gates() if g.flow_run_id == run)
    assert gate.sla_deadline == record.sla_deadline + timedelta(hours=4)

    assert act(run, "reassign", user_id="U0FAY", reviewer="fay", via="slack", finding="F1",
               target="U0LEE").reason == "not_in_role"  # finance cannot hand over legal's finding
    assert act(run, "reassign", user_id="U0LOU", reviewer="lou", via="slack", finding="F1",
               target="U0FAY").reason == "not_in_role"  # only to someone with the same role
    assert act(run, "reassign", user_id=None, reviewer="operator", via="cli", finding="F1",
               target="U0LEE").reason == "role_unverified"
    assert act(run, "reassign", user_id="U0LOU", reviewer="lou", via="slack", finding="f1", target="<@U0LEE|lee>").ok
    assert extras(record).assignments == {("F1", "legal"): "U0LEE"}


def test_the_cli_cannot_decide_a_role_s_finding_and_says_where_to_answer():
    record = open_synthetic_gate(None, post=False, sla_hours=8, roles=ROLES, role_members=MEMBERS)
    outcome = resolve_gate(record.flow_run_id, "approve", reviewer="operator", via="cli", finding="F1")
    assert outcome.kind == "forbidden" and outcome.reason == "role_unverified"
    assert "Answer in Slack" in outcome.message and f"/resolve {record.flow_run_id} F1" in outcome.message
    outcome = resolve_gate(record.flow_run_id, "approve", reviewer="operator", via="cli")  # every finding has a role
    assert outcome.kind == "forbidden"
    nowhere = slack_settings(SimpleNamespace(token="xoxb-unused", api_url="http://127.0.0.1:9/api/"))
    outcome = resolve_gate(record.flow_run_id, "approve", reviewer="fay (U0FAY)", via="slack", slack_user_id="U0FAY",
                           finding="F1", slack_channel="C0GATES", settings=nowhere)
    assert outcome.kind == "forbidden" and outcome.reason == "not_in_role" and "role legal" in outcome.message
    assert resolve_gate(record.flow_run_id, "approve", reviewer="x", via="cli", finding="F9").reason == \
        "unknown_finding"


def test_the_cli_extends_a_gate_without_roles_once_and_a_roles_gate_never(monkeypatch):
    from typer.testing import CliRunner

    from clausegate.cli import app

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block-in-this-test")
    runner = CliRunner()
    plain = open_synthetic_gate(None, post=False, sla_hours=8)
    done = runner.invoke(app, ["resolve", plain.flow_run_id, "extend", "--hours", "3", "--reviewer", "ops"])
    assert done.exit_code == 0 and "extended" in done.output and "3 h" in done.output, done.output
    assert extras(plain).extension["hours"] == 3.0 and extras(plain).extension["via"] == "cli"
    again = runner.invoke(app, ["resolve", plain.flow_run_id, "extend"])
    assert again.exit_code == 4 and "already" in again.output, again.output
    too_long = open_synthetic_gate(None, post=False, sla_hours=2)
    assert runner.invoke(app, ["resolve", too_long.flow_run_id, "extend", "--hours", "5"]).exit_code == 4
    roles = open_synthetic_gate(None, post=False, sla_hours=8, roles=ROLES, role_members=MEMBERS)
    refused = runner.invoke(app, ["resolve", roles.flow_run_id, "extend", "--hours", "1"])
    assert refused.exit_code == 5 and "Slack" in refused.output, refused.output
    assert extras(roles).extension is None
