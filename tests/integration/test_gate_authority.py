"""Who may decide a gate: the gate's channel, its reviewers, never the submitter's own approval; what is verified.

The gateway runs on uvicorn in a thread with the real resolver; the requests are signed like Slack's
and the gates are runs really Suspended on the session Prefect server (``open_synthetic_gate``).
The block is the default one (no ``allowed_reviewer_ids``): the case where, before, anyone in the
workspace could decide any gate from anywhere.
"""

from __future__ import annotations

import getpass
import json
import time
import uuid

import pytest
from typer.testing import CliRunner

from clausegate import audit
from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import resolve_gate
from clausegate.gateway import GatewayConfig, create_app
from tests.support.gates import SIGNING_SECRET, GatewayThread, open_synthetic_gate, slack_settings, state_of
from tests.support.slack_client import SlackTestClient
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
DM = ("D0EVEDM", "directmessage")


@pytest.fixture(scope="module")
def fake_slack():
    with FakeSlack(token="xoxb-authority-tests") as fake:
        yield fake


@pytest.fixture(scope="module")
def settings(fake_slack):
    return slack_settings(fake_slack, submitter_slack_ids={"acme-legal": ["U0SUBMIT"]})


@pytest.fixture(scope="module")
def slack(settings, fake_slack):
    with GatewayThread(create_app(GatewayConfig(slack=settings))) as server:
        yield SlackTestClient(server.url, SIGNING_SECRET, response_base=f"{fake_slack.url}/actions")


def reply(fake_slack, name: str, timeout: float = 30.0) -> str:
    found = wait_until(lambda: [r for r in fake_slack.responses if r["name"] == name], timeout,
                       what=f"a reply on response_url {name}", max_step=0.05)
    return found[0]["body"]["text"]


def answered(response, fake_slack, name: str) -> str:
    """What the person is told about a ``/resolve``: a refusal at once (the command's own reply), else the outcome
    on its response_url (also when the gateway's quick check could not finish in time on a loaded machine)."""
    assert response.status_code == 200, response.text
    text = response.json()["text"]
    return reply(fake_slack, name) if text.startswith("Resolving run") else text


def posted_message(fake_slack, record) -> dict:
    return next(m for m in fake_slack.messages.values() if record.flow_run_id in json.dumps(m["blocks"]))


def refusals(run_id: str, count: int, timeout: float = 30.0) -> list[dict]:
    import asyncio

    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await audit.read(client, prefix=audit.PREFIX + "gate.refused", flow_run_id=run_id, limit=50)

    return wait_until(lambda: len(found := [e.payload for e in asyncio.run(read())]) >= count and found, timeout,
                      what=f"{count} gate.refused event(s) of run {run_id}", step=0.2)


def test_a_decision_counts_only_in_the_gate_channel(slack, fake_slack, settings):
    assert not settings.allowed_reviewer_ids and not settings.category_reviewer_ids  # the default block
    gate = open_synthetic_gate(settings, filename="channel.pdf")
    message = posted_message(fake_slack, gate)

    sent = slack.command("/resolve", f"{gate.flow_run_id} approve", user=("U0EVE", "eve"), channel=DM,
                         response_url=fake_slack.response_url("from-dm"))
    assert "count only in its channel (C0GATES)" in answered(sent, fake_slack, "from-dm")
    body = slack.block_actions_body(message, "approve", user=("U0EVE", "eve"), channel="C0OTHER",
                                    response_url=fake_slack.response_url("other-channel"))
    assert slack.send(body, slack.headers(body)).status_code == 200
    assert "count only in its channel" in reply(fake_slack, "other-channel")
    # the refusal is told after it was decided: nothing can resume the run later ("approved by eve" below proves it)
    assert state_of(gate.flow_run_id)[1] == "Suspended"
    reasons = {(r["reason"], r["slack_user_id"]) for r in refusals(gate.flow_run_id, 2)}
    assert reasons == {("wrong_channel", "U0EVE")}, reasons

    slack.command("/resolve", f"{gate.flow_run_id} approve", user=("U0EVE", "eve"),
                  response_url=fake_slack.response_url("in-channel"))
    assert "approved by eve (U0EVE)" in reply(fake_slack, "in-channel")
    assert state_of(gate.flow_run_id)[1] in {"Resuming", "Scheduled"}


def test_a_submitter_never_approves_their_own_contract(slack, fake_slack, settings):
    gate = open_synthetic_gate(settings, filename="own.pdf", tags=["inbox", "inbox-sender:acme-legal"])
    message = posted_message(fake_slack, gate)
    sent = slack.command("/resolve", f"{gate.flow_run_id} approve", user=("U0SUBMIT", "sam"),
                         response_url=fake_slack.response_url("own-command"))
    assert "you submitted this contract (inbox sender 'acme-legal')" in answered(sent, fake_slack, "own-command")
    body = slack.block_actions_body(message, "approve", user=("U0SUBMIT", "sam"),
                                    response_url=fake_slack.response_url("own-click"))
    slack.send(body, slack.headers(body))
    assert "cannot approve it" in reply(fake_slack, "own-click")
    assert state_of(gate.flow_run_id)[1] == "Suspended"
    assert {r["reason"] for r in refusals(gate.flow_run_id, 2)} == {"own_contract"}

    slack.click(message, "approve", user=("U0DANA", "dana"), response_url=fake_slack.response_url("other-person"))
    assert "approved by dana (U0DANA)" in reply(fake_slack, "other-person")


ROLES = {"Uncapped Liability": ["legal"], "Liquidated Damages": ["finance"]}
MEMBERS = {"legal": ["U0LOU", "U0LEE"], "finance": ["U0FAY"]}


def test_ack_extend_and_reassign_follow_the_decisions_rule(slack, fake_slack, settings):
    """From a DM, or from a person in none of the gate's roles, an acknowledgement, an extension or a reassignment
    is refused like a decision (none accepted, none shown on the gate)."""
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    gate = open_synthetic_gate(settings, filename="actions.pdf", roles=ROLES, role_members=MEMBERS)
    run = gate.flow_run_id
    tries = [("ack-dm", "ack", ("U0LOU", "lou"), DM), ("extend-dm", "extend 2", ("U0FAY", "fay"), DM),
             ("reassign-dm", "F1 reassign <@U0LEE>", ("U0LOU", "lou"), DM),
             ("ack-eve", "ack", ("U0EVE", "eve"), None), ("extend-eve", "extend 2", ("U0EVE", "eve"), None)]
    for name, text, user, channel in tries:
        sent = slack.command("/resolve", f"{run} {text}", user=user, channel=channel,
                             response_url=fake_slack.response_url(name))
        told = answered(sent, fake_slack, name)
        expected = "count only in its channel" if channel else "refused: not in role"
        assert expected in told, (name, told)
    with get_client(sync_client=True) as client:
        extras = store.read_extras(client, run, gate.key)
    assert (extras.acks, extras.extension, extras.assignments) == ([], None, {})
    assert {(r["reason"], r["slack_user_id"]) for r in refusals(run, 5)} == {
        ("wrong_channel", "U0LOU"), ("wrong_channel", "U0FAY"), ("not_in_role", "U0EVE")}

    sent = slack.command("/resolve", f"{run} ack", user=("U0LOU", "lou"), response_url=fake_slack.response_url("ok"))
    assert "acknowledged by lou (U0LOU)" in answered(sent, fake_slack, "ok")


def test_a_refused_resolve_says_refused_at_once(slack, fake_slack, settings):
    """A non-member's ``/resolve RUN F1 approve`` is answered "refused: … not in role legal" at once (no
    "Resolving run … F1 approve…" first), audited, and the run keeps waiting."""
    gate = open_synthetic_gate(settings, filename="refused-now.pdf", roles=ROLES, role_members=MEMBERS)
    sent = slack.command("/resolve", f"{gate.flow_run_id} F1 approve", user=("U0FAY", "fay"),
                         response_url=fake_slack.response_url("fay-f1"))
    text = sent.json()["text"]
    assert "refused" in text and "not in role legal" in text and "Resolving" not in text, text
    assert [r["reason"] for r in refusals(gate.flow_run_id, 1)] == ["not_in_role"]
    assert state_of(gate.flow_run_id)[1] == "Suspended"
    sent = slack.command("/resolve", f"{gate.flow_run_id} F2 extend", user=("U0FAY", "fay"),
                         response_url=fake_slack.response_url("fay-f2"))
    assert "extended once" in answered(sent, fake_slack, "fay-f2")  # finance's own finding's person may


def test_a_real_workspace_without_reviewers_is_warned_about(settings):
    from blocks.deciders import Deciders
    from clausegate.gates.authority import trust_warnings

    def codes(warnings):
        return [w.split(":")[0] for w in warnings]

    # no Deciders block saved: the Slack block's older fields say who decides
    assert codes(trust_warnings(settings)) == ["CG-GATE-DECIDERS-IN-SLACK-BLOCK", "CG-SLACK-OPEN-REVIEWERS"]
    guarded = settings.model_copy(update={"category_reviewer_ids": {"Uncapped Liability": ["U0LEGAL"]},
                                          "submitter_slack_ids": {"acme": ["U0SUBMIT"]}})
    assert codes(trust_warnings(guarded)) == ["CG-GATE-DECIDERS-IN-SLACK-BLOCK"]  # works; says how to move
    unmapped = guarded.model_copy(update={"submitter_slack_ids": {}})  # nobody known as a submitter: said too
    said = trust_warnings(unmapped)
    assert codes(said) == ["CG-GATE-DECIDERS-IN-SLACK-BLOCK", "CG-SLACK-OPEN-REVIEWERS"] and "submitter" in said[1]
    bare = settings.model_copy(update={"submitter_slack_ids": {}})
    named = Deciders(people={"lou": ["U0LEGAL", "lou@example.com"], "sam": ["U0SUBMIT"]}, roles={"legal": ["lou"]},
                     reviewers=["lou"], submitters={"acme": ["sam"]})
    assert trust_warnings(bare, named) == []  # who decides lives apart from the Slack credentials


def test_up_prints_the_warning_for_a_real_workspace(settings, monkeypatch, prefect_server):
    from clausegate.stack.demo_slack import setup_slack
    from clausegate.stack.state import StackOptions

    real = settings.model_copy(update={"api_base_url": "https://slack.com/api/"})
    real.save("authority-real", overwrite=True)
    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "authority-real")
    said: list[str] = []
    kind = setup_slack(StackOptions(), None, {"api_url": prefect_server.api_url}, lambda _: None, said.append)
    assert kind == "real"
    assert any(line.startswith("warning: CG-SLACK-OPEN-REVIEWERS") for line in said), said


def test_only_what_the_cli_proves_is_verified(settings):
    from clausegate.cli import app

    login = getpass.getuser()
    stated = open_synthetic_gate(settings, filename="cli-stated.pdf")
    done = CliRunner().invoke(app, ["resolve", stated.flow_run_id, "approve", "--reviewer", "any text"])
    assert done.exit_code == 0, done.output
    late = resolve_gate(stated.flow_run_id, "changes", reviewer=login, via="cli")
    info = late.decision
    assert (info.via, info.reviewer_verified, info.verified_user) == ("cli", False, login)
    assert info.reviewer == f"any text (as stated to clausegate resolve by login {login}, unverified)"

    own = open_synthetic_gate(settings, filename="cli-login.pdf")
    outcome = resolve_gate(own.flow_run_id, "approve", reviewer=login, via="cli")
    assert outcome.kind == "resumed"
    assert (outcome.decision.reviewer, outcome.decision.reviewer_verified) == (login, True)


def test_held_answers_a_restart_does_not_apply_too_old_or_forged(fake_slack, settings):
    """The start-up recovery (``recover``) applies held answers, but not one older than Slack's 30 minutes
    (the person is told, the refusal audited) nor one a gateway did not write (its MAC does not verify: a
    Prefect API user cannot make the gateway apply an answer as a verified Slack user's)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import VariableCreate

    from clausegate.gateway import slack_state
    from clausegate.gateway.slack import Answer, recover

    old, forged = (open_synthetic_gate(settings, filename=f"{label}.pdf") for label in ("held-old", "held-forged"))
    names = {}
    with get_client(sync_client=True) as client:
        for gate, received, label in ((old, time.time() - slack_state.PENDING_MAX_AGE_SECONDS - 60, "old"),
                                      (forged, time.time(), "forged")):
            answer = Answer(run_id=gate.flow_run_id, decision="approve", user_id="U0DANA", reviewer="dana (U0DANA)",
                            comment="", response_url=fake_slack.response_url(label), channel_id="C0GATES").__dict__
            names[label] = slack_state.PENDING_PREFIX + uuid.uuid4().hex
            mac = slack_state._mac(names[label], answer, received) if label == "old" else "0" * 64
            client.create_variable(VariableCreate(name=names[label], value={"answer": answer, "received": received,
                                                                            "mac": mac}))
    assert recover(GatewayConfig(slack=settings)) >= 1
    assert state_of(old.flow_run_id)[1] == "Suspended" and state_of(forged.flow_run_id)[1] == "Suspended"
    told = [c for c in fake_slack.calls("chat.postEphemeral") if old.flow_run_id in c.args.get("text", "")]
    assert told and "it was not applied" in told[0].args["text"] and told[0].args["user"] == "U0DANA"
    assert {r["reason"] for r in refusals(old.flow_run_id, 1)} == {"gateway_stopped"}
    held = [n for n, _, _ in slack_state.held_answers()]
    assert names["old"] not in held and names["forged"] not in held
