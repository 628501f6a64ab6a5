"""A reply in a gate message's thread acknowledges the gate, like "I'm on it".

The gateway runs on uvicorn in a thread; Slack's Events API requests are signed like Slack's (a bad signature
is refused before anything is read); the gate is a run really Suspended on the session Prefect server with its
message posted to the fake Slack (``open_synthetic_gate``)."""

from __future__ import annotations

import json
import time

import pytest
from prefect.client.orchestration import get_client

from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import store
from clausegate.gateway import GatewayConfig, create_app
from tests.support.gates import SIGNING_SECRET, GatewayThread, open_synthetic_gate, slack_settings
from tests.support.slack_client import SlackTestClient
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
ROLES = {"Uncapped Liability": ["legal"], "Liquidated Damages": ["finance"]}
MEMBERS = {"legal": ["U0LOU"], "finance": ["U0FAY"]}


@pytest.fixture(scope="module")
def fake_slack():
    with FakeSlack(token="xoxb-events-tests") as fake:
        yield fake


@pytest.fixture(scope="module")
def settings(fake_slack):
    return slack_settings(fake_slack)


@pytest.fixture(scope="module")
def slack(settings):
    with GatewayThread(create_app(GatewayConfig(slack=settings))) as server:
        yield SlackTestClient(server.url, SIGNING_SECRET)


def post_event(slack: SlackTestClient, payload: dict, **header_args):
    body = json.dumps(payload).encode()
    headers = {**slack.headers(body, **header_args), "Content-Type": "application/json"}
    return slack.send(body, headers, path="/slack/events")


def reply_event(channel: str, thread_ts: str, user: str, **extra) -> dict:
    return {"type": "event_callback", "event_id": f"Ev{time.time_ns()}",
            "event": {"type": "message", "channel": channel, "user": user, "text": "looking at it now",
                      "ts": f"{time.time():.6f}", "thread_ts": thread_ts, **extra}}


def acks(record) -> list[dict]:
    with get_client(sync_client=True) as client:
        return store.read_extras(client, record.flow_run_id, record.key).acks


def wait_for_acks(record, n: int, timeout: float = 30.0) -> list[dict]:
    return wait_until(lambda: (found := acks(record)) and len(found) >= n and found, timeout,
                      what=f"{n} acknowledgement(s) of run {record.flow_run_id}")


def test_the_url_check_is_answered_and_an_unsigned_request_is_refused(slack):
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    answer = post_event(slack, {"type": "url_verification", "challenge": challenge})
    assert answer.status_code == 200 and answer.json() == {"challenge": challenge}
    forged = post_event(slack, {"type": "url_verification", "challenge": "x"}, secret="not-the-signing-secret")
    assert forged.status_code == 403


def test_a_reply_in_the_gates_thread_acknowledges_it_and_other_messages_do_not(slack, settings):
    record = open_synthetic_gate(settings, filename="events.pdf", roles=ROLES, role_members=MEMBERS)
    with get_client(sync_client=True) as client:
        ref = store.read_slack_ref(client, record.flow_run_id, record.key)
    assert ref.ok and ref.channel and ref.ts

    ignored = [reply_event(ref.channel, ref.ts, "U0BOT", bot_id="B0BOT"),            # a bot
               reply_event(ref.channel, ref.ts, "U0LOU", subtype="message_changed"),  # an edit
               reply_event(ref.channel, "1700000000.000001", "U0LOU"),                # another thread
               reply_event("C0OTHER", ref.ts, "U0LOU"),                               # same ts, other channel
               {"type": "event_callback", "event": {"type": "message", "channel": ref.channel, "user": "U0LOU",
                                                     "ts": ref.ts}}]                  # the parent itself
    for payload in ignored:
        assert post_event(slack, payload).status_code == 200
    assert post_event(slack, reply_event(ref.channel, ref.ts, "U0LOU")).status_code == 200
    found = wait_for_acks(record, 1)
    assert [(a["user"], a["via"]) for a in found] == [("U0LOU", "slack")]
    # a redelivery of the same reply changes nothing (an acknowledgement is written once)
    again = reply_event(ref.channel, ref.ts, "U0LOU")
    assert post_event(slack, again).status_code == 200
    # a later reply by another member is recorded: the gateway has handled everything sent before it, and only
    # the two genuine replies counted (no ack from the ignored events, none from the redelivery)
    assert post_event(slack, reply_event(ref.channel, ref.ts, "U0FAY")).status_code == 200
    found = wait_for_acks(record, 2)
    assert sorted(a["user"] for a in found) == ["U0FAY", "U0LOU"], found
