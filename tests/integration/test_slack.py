"""The fake Slack Web API, the Block Kit views, and the notification task's retries against the fake."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from blocks.slack import SlackSettings
from clausegate.demo.slack_server import FakeSlack
from clausegate.gates.model import DecisionInfo, Finding, GateRecord
from clausegate.gates.slack_tasks import notify_gate
from clausegate.gates.slack_view import (
    decided_message,
    escalation_message,
    findings_table,
    gate_message,
    person_escalation_message,
)
from clausegate.review.schemas import Suggestion
from clausegate.slack import SlackError, call_slack
from tests.support.gates import FINDINGS, slack_settings
from tests.support.prefect_server import free_port

TOKEN = "xoxb-slack-tests"


@pytest.fixture(scope="module")
def fake():
    with FakeSlack(token=TOKEN) as server:
        yield server


@pytest.fixture
def client(fake) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.api_url, retry_handlers=[])


def record(findings=FINDINGS, **kw) -> GateRecord:
    values = dict(key="gate-r1-0123456789ab", flow_run_id="5b6f3f5e-7d1c-4b8a-9a57-0d6f1c2e3a4b", contract_id="c" * 64,
                  filename="master-services.pdf", playbook="payment-liability",
                  categories=sorted({f.category for f in findings}), findings=findings, cost_eur=0.0421,
                  opened_at=datetime(2025, 3, 1, 9, 0, tzinfo=UTC), sla_hours=8,
                  suspend_timeout_seconds=633600)
    values.update(kw)
    return GateRecord(**values)


# -- the fake speaks Slack's protocol -------------------------------------------------------------
def test_fake_checks_the_token_and_records_calls(fake, client):
    assert client.auth_test()["user_id"] == "U0BOT"
    with pytest.raises(SlackApiError) as bad:
        WebClient(token="xoxb-wrong", base_url=fake.api_url).chat_postMessage(channel="C1", text="x")
    assert bad.value.response["error"] == "invalid_auth"
    missing = httpx.post(fake.api_url + "chat.postMessage", data={"channel": "C1", "text": "x"}).json()
    assert missing == {"ok": False, "error": "not_authed"}
    posted = client.chat_postMessage(channel="C1", text="hello", blocks=[{"type": "divider"}])
    client.chat_update(channel="C1", ts=posted["ts"], text="edited", blocks=[])
    assert fake.message("C1", posted["ts"])["text"] == "edited"
    with pytest.raises(SlackApiError) as gone:
        client.chat_update(channel="C1", ts="1.000000", text="x")
    assert gone.value.response["error"] == "message_not_found"
    assert client.chat_postEphemeral(channel="C1", user="U1", text="psst")["ok"]
    assert "Bearer ***" in json.dumps(fake.calls("chat.postMessage")[-1].headers)  # the token is not recorded


def test_fake_faults_and_how_they_are_classified(fake, client):
    for kind, code, transient in (("503", "CG-SLACK-UNAVAILABLE", True), ("500", "CG-SLACK-UNAVAILABLE", True),
                                  ("ratelimited", "CG-SLACK-RATELIMITED", True),
                                  ("channel_not_found", "CG-SLACK-REJECTED", False),
                                  ("not_in_channel", "CG-SLACK-REJECTED", False),
                                  ("invalid_auth", "CG-SLACK-REJECTED", False)):
        fake.fail("chat.postMessage", kind, retry_after=1)
        started = time.monotonic()
        with pytest.raises(SlackError) as error:
            call_slack(client.chat_postMessage, channel="C1", text="x")
        assert (error.value.code, error.value.transient) == (code, transient), kind
        if kind == "ratelimited":
            assert time.monotonic() - started >= 0.9  # Retry-After honoured before the next attempt
            assert fake.calls("chat.postMessage")[-1].status == 429
    fake.fail("*", "503", times=2, match="only-this")
    assert call_slack(client.chat_postMessage, channel="C1", text="other")["ok"]
    with pytest.raises(SlackError):
        call_slack(client.chat_postMessage, channel="C1", text="only-this one")
    unreachable = WebClient(token=TOKEN, base_url=f"http://127.0.0.1:{free_port()}/api/", retry_handlers=[])
    with pytest.raises(SlackError) as error:
        call_slack(unreachable.auth_test)
    assert error.value.code == "CG-SLACK-UNREACHABLE" and error.value.transient


def test_fake_rejects_blocks_slack_would_reject(client):
    with pytest.raises(SlackApiError) as error:
        client.chat_postMessage(channel="C1", text="x",
                                blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}])
    assert error.value.response["error"] == "invalid_blocks"


def test_fake_runs_as_a_process():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "clausegate.demo.slack_server", "--port", str(port),
                             "--token", "xoxb-proc"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = WebClient(token="xoxb-proc", base_url=f"http://127.0.0.1:{port}/api/").auth_test()
                break
            except Exception:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        assert answer["ok"]
        assert httpx.post(f"http://127.0.0.1:{port}/actions/x", json={"text": "hi"}).status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)


# -- the views -------------------------------------------------------------------------------------
def test_gate_message_has_findings_buttons_link_and_run_id(fake, client):
    rec = record()
    text, blocks = gate_message(rec, "http://prefect.example/runs/flow-run/" + rec.flow_run_id)
    dump = json.dumps(blocks, ensure_ascii=False)
    for expected in ("Uncapped Liability", "Liquidated Damages", "0.71", "0.89", "Cost so far: €0.0421",
                     rec.flow_run_id, "http://prefect.example/runs/flow-run/", "SLA"):
        assert expected in dump, expected
    (actions,) = [b for b in blocks if b["type"] == "actions"]
    values = {e["action_id"]: json.loads(e["value"]) for e in actions["elements"]}
    assert set(values) == {"clausegate_approve", "clausegate_changes", "clausegate_escalate"}
    assert values["clausegate_changes"] == {"run": rec.flow_run_id, "gate": rec.key, "decision": "changes"}
    assert not any("url" in e for e in actions["elements"])  # value buttons only
    assert client.chat_postMessage(channel="C1", text=text, blocks=blocks)["ok"]  # Slack's limits hold

    decision = DecisionInfo(decision="changes", reviewer="dana (U0DANA)", comment="cap it at 12 months",
                            via="slack", decided_at=datetime(2025, 3, 1, 10, 30, tzinfo=UTC))
    text, blocks = decided_message(rec, decision, "http://prefect.example")
    assert not any(b["type"] == "actions" for b in blocks)
    assert "dana (U0DANA)" in json.dumps(blocks) and "cap it at 12 months" in json.dumps(blocks)
    assert "requested changes by dana" in text
    assert client.chat_postMessage(channel="C1", text=text, blocks=blocks)["ok"]
    text, blocks = escalation_message(rec, "http://prefect.example", "Overdue by 5m.")
    assert "SLA passed" in text and client.chat_postMessage(channel="C1", text=text, blocks=blocks)["ok"]


def test_gate_message_keeps_its_line_breaks():
    """Each reason is a bullet on its own line and the SLA line is its own line (mrkdwn needs real line breaks in
    one section's text; never collapsed into one run-on paragraph)."""
    rec = record(reasons={"Uncapped Liability": "no cap\non damages", "Liquidated Damages": "fixed sum per day"})
    _, blocks = gate_message(rec, "http://prefect.example/runs/flow-run/" + rec.flow_run_id)
    summary = blocks[1]["text"]
    assert blocks[1]["type"] == "section" and summary["type"] == "mrkdwn"
    lines = summary["text"].split("\n")
    assert lines[1:] == ["• *Uncapped Liability*: no cap on damages", "• *Liquidated Damages*: fixed sum per day",
                         "*SLA:* decide by 2025-03-01 17:00 UTC (8 h); then it escalates to legal."]
    assert lines[0].startswith("*master-services.pdf* (playbook `payment-liability`): 2 finding(s)")
    rec = record(suggestions=[Suggestion(category="Uncapped Liability", pages=[4], redline="Cap at 12 months' fees.",
                                         questions=["Why uncapped?", "Insurance?"])])
    (redlines,) = [b["text"]["text"] for b in gate_message(rec, "http://x")[1] if "Suggested" in str(b)]
    assert redlines.split("\n") == ["*Suggested redlines*", "*Uncapped Liability* (p. 4): Cap at 12 months' fees.",
                                     "   ? Why uncapped?", "   ? Insurance?"]


def test_person_escalation_notice_names_who_and_how(client):
    rec = record()
    verified = DecisionInfo(decision="escalate", reviewer="dana (U0DANA)", comment="<uncapped> & unusual " * 60,
                            via="slack", reviewer_verified=True, decided_at=datetime(2025, 3, 1, 10, 30, tzinfo=UTC))
    text, blocks = person_escalation_message(rec, verified, "http://prefect.example/runs/flow-run/x")
    assert "Escalated to legal" in text and "master-services.pdf" in text and "dana (U0DANA) via slack" in text
    assert "<uncapped>" not in text and "&lt;uncapped&gt;" in text  # the comment is escaped, not markup
    assert client.chat_postMessage(channel="C1", text=text, blocks=blocks)["ok"]  # within Slack's limits
    stated = DecisionInfo(decision="escalate", reviewer="uma (as stated in the Prefect UI form, unverified)",
                          via="ui", decided_at=datetime(2025, 3, 1, 10, 30, tzinfo=UTC))
    text, _ = person_escalation_message(rec, stated, "http://x")
    assert "unverified) via ui" in text


def test_many_long_findings_still_fit_slack_limits(client):
    many = [Finding(category=f.category, pages=[i + 1], confidence=0.5, text="word " * 200 + "<b>&")
            for i in range(40) for f in FINDINGS[:1]]
    rec = record(findings=many)
    text, blocks = gate_message(rec, "http://x")
    assert client.chat_postMessage(channel="C1", text=text, blocks=blocks)["ok"]
    table = findings_table(many)
    assert "… and 28 more finding(s)" in table
    assert all(len(line) <= 110 for line in table.splitlines())


def test_settings_block_masks_secrets_and_builds_the_client(fake):
    settings = SlackSettings(bot_token=TOKEN, signing_secret="shh", channel="C1", api_base_url=fake.api_url,
                             allowed_reviewer_ids=["U1"], category_reviewer_ids={"Uncapped Liability": ["U2"]})
    assert TOKEN not in repr(settings) and "shh" not in repr(settings)
    client = settings.get_client()
    assert client.base_url == fake.api_url and client.retry_handlers == []
    assert client.auth_test()["ok"]
    assert settings.reviewers_for(["Uncapped Liability"]) == ["U1", "U2"]
    assert settings.reviewers_for(["Liquidated Damages"]) == ["U1"]


# -- the notification task: retries transient failures, not permanent ones, posts once per run ----
@pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
def test_notify_task_retries_transient_failures_and_posts_once(fake):
    from prefect import flow

    settings = slack_settings(fake, bot_token=TOKEN)
    quick = notify_gate.with_options(retry_delay_seconds=[0.1, 0.1, 0.1])

    @flow
    def post_twice(rec: GateRecord):
        first = quick(rec, settings, return_state=True)
        second = quick(rec, settings, return_state=True)  # same run, same gate: from cache
        return first, second

    rec = record(filename="flaky.pdf")
    fake.fail("chat.postMessage", "503", times=1, match="flaky.pdf")
    fake.fail("chat.postMessage", "ratelimited", times=1, match="flaky.pdf", retry_after=1)
    first, second = post_twice(rec)
    assert first.is_completed() and second.name == "Cached"
    assert first.result().ts == second.result().ts
    attempts = [c for c in fake.calls("chat.postMessage") if "flaky.pdf" in c.args["text"]]
    assert [c.status for c in attempts] == [503, 429, 200]

    @flow
    def post_once(rec: GateRecord) -> tuple[bool, str]:
        state = quick(rec, settings, return_state=True)
        return state.is_failed(), state.message or ""

    rec = record(filename="misconfigured.pdf")
    fake.fail("chat.postMessage", "channel_not_found", times=5, match="misconfigured.pdf")
    failed, message = post_once(rec)
    assert failed and "channel_not_found" in message
    assert len([c for c in fake.calls("chat.postMessage") if "misconfigured.pdf" in c.args["text"]]) == 1
