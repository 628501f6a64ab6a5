"""The Slack gateway over real HTTP: verification, replays, malformed input, the 3-second ack, outcomes in Slack.

The gateway runs on uvicorn in a thread with the real resolver against runs Suspended at a gate on
the session Prefect server; the fake Slack records the message updates and the ``response_url``
posts. Every rejected request must leave the run Suspended.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from urllib.parse import urlencode

import httpx
import pytest

from clausegate.demo.slack_server import FakeSlack
from clausegate.gateway import GatewayConfig, create_app
from tests.support.gates import SIGNING_SECRET, GatewayThread, open_synthetic_gate, slack_settings, state_of
from tests.support.slack_client import SlackTestClient, find_button, sign
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def fake_slack():
    with FakeSlack(token="xoxb-gateway-tests") as fake:
        yield fake


@pytest.fixture(scope="module")
def settings(fake_slack):
    return slack_settings(fake_slack, category_reviewer_ids={"Uncapped Liability": ["U0LEGAL", "U0DANA"]})


@pytest.fixture(scope="module")
def gateway(settings):
    with GatewayThread(create_app(GatewayConfig(slack=settings))) as server:
        yield server


@pytest.fixture
def slack(gateway, fake_slack):
    return SlackTestClient(gateway.url, SIGNING_SECRET, response_base=f"{fake_slack.url}/actions")


def posted_message(fake_slack, record) -> dict:
    call = next(c for c in reversed(fake_slack.calls("chat.postMessage", ok_only=True))
                if record.flow_run_id in json.dumps(c.args))
    ts = next(m["ts"] for (ch, _), m in fake_slack.messages.items() if record.flow_run_id in json.dumps(m["blocks"]))
    return {**fake_slack.message(call.args["channel"], ts), "channel": call.args["channel"]}


def responses_for(fake_slack, name: str) -> list[dict]:
    return [r for r in fake_slack.responses if r["name"] == name]


def test_healthz(gateway):
    assert httpx.get(gateway.url + "/healthz").json() == {"status": "ok"}


def test_rejected_requests_leave_the_run_suspended(slack, fake_slack, settings):
    gate = open_synthetic_gate(settings)
    message = posted_message(fake_slack, gate)
    body = slack.block_actions_body(message, "approve")

    forged = slack.send(body, slack.headers(body, secret="not-the-signing-secret"))
    stale = slack.send(body, slack.headers(body, timestamp=time.time() - 6 * 60))
    future = slack.send(body, slack.headers(body, timestamp=time.time() + 6 * 60))
    no_headers = httpx.post(slack.gateway_url + "/slack/interactions", content=body,
                            headers={"Content-Type": "application/x-www-form-urlencoded"})
    no_signature = slack.send(body, {k: v for k, v in slack.headers(body).items() if k != "X-Slack-Signature"})
    bad_timestamp = slack.send(body, {**slack.headers(body), "X-Slack-Request-Timestamp": "yesterday"})
    tampered = slack.block_actions_body(message, "approve", user=("U0MALLORY", "mallory"))
    signed_other = slack.send(tampered, slack.headers(body))  # signature of another body
    for response in (forged, stale, future, no_headers, no_signature, bad_timestamp, signed_other):
        assert response.status_code == 403, response.text

    # Correctly signed but malformed: 400, nothing resumed.
    for junk in (b"payload=%7Bnot-json", b"nothing=here", urlencode({"payload": json.dumps([1, 2])}).encode(),
                 urlencode({"payload": json.dumps({"type": "block_actions", "actions": []})}).encode(),
                 slack.block_actions_body(message, "approve", value_override='{"run": "x"}'),
                 slack.block_actions_body(message, "approve", value_override=json.dumps(
                     {"run": gate.flow_run_id, "decision": "escalate"})),  # approve button claiming escalate
                 b"\xff\xfe=\x00"):
        response = slack.send(junk, slack.headers(junk))
        assert response.status_code == 400, (junk, response.text)
    junk_command = urlencode({"text": f"{gate.flow_run_id} approve"}).encode()
    assert slack.send(junk_command, slack.headers(junk_command), path="/slack/commands").status_code == 400

    # A refusal is decided before the answer (nothing is queued), so the run is still Suspended now; and the
    # genuine click below being answered "approved by dana" (not "already decided") proves none of these resolved it.
    assert state_of(gate.flow_run_id)[1] == "Suspended"

    # The genuine click is accepted once; the same bytes again are a replay.
    name = "genuine"
    body = slack.block_actions_body(message, "approve", response_url=fake_slack.response_url(name))
    headers = slack.headers(body)
    assert slack.send(body, headers).status_code == 200
    replay = slack.send(body, headers)
    assert replay.status_code == 403 and "replayed" in replay.text
    fake_slack.wait_for_response(1, timeout=20)
    reply = responses_for(fake_slack, name)
    assert len(reply) == 1 and "approved by dana (U0DANA)" in reply[0]["body"]["text"]
    assert state_of(gate.flow_run_id)[1] in {"Resuming", "Scheduled"}


def test_ack_is_immediate_even_when_the_resume_is_slow(fake_slack, settings):
    calls = []
    release = threading.Event()  # the resolver cannot finish before the test has seen both acks

    def slow_resolver(*args, **kwargs):
        calls.append((args, kwargs))
        release.wait(60)
        from clausegate.gates.resolve import ResolveOutcome

        return ResolveOutcome(kind="resumed", flow_run_id=args[0], message="slowly approved")

    with GatewayThread(create_app(GatewayConfig(slack=settings, resolver=slow_resolver))) as server:
        slack = SlackTestClient(server.url, SIGNING_SECRET, response_base=f"{fake_slack.url}/actions")
        gate = open_synthetic_gate(settings)
        message = posted_message(fake_slack, gate)
        started = time.monotonic()
        response = slack.click(message, "escalate", response_url=fake_slack.response_url("slow"))
        acked = time.monotonic() - started
        assert response.status_code == 200 and acked < 1.0, acked
        command_started = time.monotonic()
        response = slack.command("/resolve", f"{gate.flow_run_id} changes please cap liability",
                                 response_url=fake_slack.response_url("slow-cmd"))
        # within Slack's 3 s: the quick refusal check (clausegate.gateway.slack.PRECHECK_SECONDS) may take up to 2 s
        assert response.status_code == 200 and time.monotonic() - command_started < 3.0
        assert "Resolving run" in response.json()["text"]
        assert not responses_for(fake_slack, "slow") and not responses_for(fake_slack, "slow-cmd")
        wait_until(lambda: len(calls) == 2, 15, what="both resolutions started")
        release.set()
        wait_until(lambda: responses_for(fake_slack, "slow") and responses_for(fake_slack, "slow-cmd"), 15,
                   what="both outcomes posted back")
    (args, kwargs), (cargs, ckwargs) = calls
    assert args[1] == "escalate" and kwargs["via"] == "slack" and kwargs["gate"] == gate.key
    assert cargs[1] == "changes" and ckwargs["comment"] == "please cap liability" and ckwargs["gate"] is None


def test_slash_command_outcomes(slack, fake_slack, settings):
    gate = open_synthetic_gate(settings)
    usage = slack.command("/resolve", "help")
    assert usage.status_code == 200 and "Usage" in usage.json()["text"]
    bad = slack.command("/resolve", f"{gate.flow_run_id} maybe")
    assert "not a decision" in bad.json()["text"]

    ok = slack.command("/resolve", f"{gate.flow_run_id} changes cap the liability at 12 months of fees",
                       response_url=fake_slack.response_url("cmd-ok"))
    assert ok.status_code == 200
    fake_slack.wait_for_response(1, timeout=20)
    _wait(lambda: responses_for(fake_slack, "cmd-ok"))
    assert "requested changes by dana (U0DANA)" in responses_for(fake_slack, "cmd-ok")[0]["body"]["text"]

    again = slack.command("/resolve", f"{gate.flow_run_id} approve", user=("U0EVE", "eve"),
                          response_url=fake_slack.response_url("cmd-late"))
    assert again.status_code == 200
    _wait(lambda: responses_for(fake_slack, "cmd-late"))
    text = responses_for(fake_slack, "cmd-late")[0]["body"]["text"]
    assert "already decided" in text and "dana" in text and "cap the liability" in text

    slack.command("/resolve", f"{uuid.uuid4()} approve", response_url=fake_slack.response_url("cmd-unknown"))
    _wait(lambda: responses_for(fake_slack, "cmd-unknown"))
    assert "no flow run" in responses_for(fake_slack, "cmd-unknown")[0]["body"]["text"]


def test_button_click_updates_the_message_and_late_clicks_are_told(slack, fake_slack, settings):
    gate = open_synthetic_gate(settings)
    message = posted_message(fake_slack, gate)
    assert {find_button(message, d)["action_id"] for d in ("approve", "changes", "escalate")} == {
        "clausegate_approve", "clausegate_changes", "clausegate_escalate"}

    # Only reviewers allowed for Uncapped Liability (or the global list) may answer from Slack.
    slack.click(message, "approve", user=("U0MALLORY", "mallory"), response_url=fake_slack.response_url("denied"))
    _wait(lambda: responses_for(fake_slack, "denied"))
    assert "not one of the reviewers" in responses_for(fake_slack, "denied")[0]["body"]["text"]
    assert state_of(gate.flow_run_id)[1] == "Suspended"

    slack.click(message, "escalate", user=("U0LEGAL", "lee"), response_url=fake_slack.response_url("first"))
    _wait(lambda: responses_for(fake_slack, "first"))
    updated = fake_slack.message(message["channel"], message["ts"])
    assert not any(b["type"] == "actions" for b in updated["blocks"])
    assert "Escalate" in json.dumps(updated["blocks"]) and "lee (U0LEGAL)" in json.dumps(updated["blocks"])

    # A second person clicks the (stale, still open in their client) message.
    slack.click(message, "approve", user=("U0DANA", "dana"), response_url=fake_slack.response_url("second"))
    _wait(lambda: responses_for(fake_slack, "second"))
    text = responses_for(fake_slack, "second")[0]["body"]["text"]
    assert "already decided" in text and "escalated by lee (U0LEGAL) via slack" in text


def test_other_interactions_are_acknowledged_and_ignored(slack):
    body = urlencode({"payload": json.dumps({"type": "view_closed", "user": {"id": "U1"}})}).encode()
    assert slack.send(body, slack.headers(body)).status_code == 200
    body = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1"},
                                             "actions": [{"action_id": "someone_else", "value": "x"}]})}).encode()
    assert slack.send(body, slack.headers(body)).status_code == 200


def test_signature_matches_slack_documentation_example():
    # The example from Slack's "Verifying requests from Slack" page.
    body = (b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&"
            b"channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&"
            b"response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&"
            b"trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
    assert sign("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", body) == \
        "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def _wait(predicate, timeout: float = 20.0):
    return wait_until(predicate, timeout, what="the outcome posted back to Slack", max_step=0.05)


def test_a_failed_resume_is_reported_back_in_slack(fake_slack, settings):
    def broken_resolver(*args, **kwargs):
        raise RuntimeError("Prefect API answered 503")

    with GatewayThread(create_app(GatewayConfig(slack=settings, resolver=broken_resolver))) as server:
        slack = SlackTestClient(server.url, SIGNING_SECRET, response_base=f"{fake_slack.url}/actions")
        gate = open_synthetic_gate(settings)
        response = slack.click(posted_message(fake_slack, gate), "approve",
                               response_url=fake_slack.response_url("broken"))
        assert response.status_code == 200
        _wait(lambda: responses_for(fake_slack, "broken"))
    text = responses_for(fake_slack, "broken")[0]["body"]["text"]
    assert "Could not resume run" in text and "Prefect API answered 503" in text
    assert state_of(gate.flow_run_id)[1] == "Suspended"


def test_resolver_reports_an_unreachable_prefect_api():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from clausegate.gates import resolve_gate

    with temporary_settings({PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        outcome = resolve_gate(str(uuid.uuid4()), "approve", reviewer="dana", via="slack")
    assert outcome.kind == "error" and "could not reach the Prefect API" in outcome.message
