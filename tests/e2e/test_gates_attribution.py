"""Decisions are attributed by the path that received them, and each one is audited once, by the flow.

Real processes and real HTTP: the session Prefect server (basic auth), a warm-started process worker
running the ``gate-probe`` deployment (``tests/support/gate_probe.py``: the real ``run_gate`` on a synthetic review,
so every run really suspends, is resumed and re-runs from the top), and the fake Slack Web API.
Answers come through the Prefect API as an attacker or the UI form would send them (``POST
/api/flow_runs/{id}/resume`` with the credential), or through ``resolve_gate`` as the gateway
does after verifying a Slack request.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import time
import uuid
from pathlib import Path

import pytest

from clausegate import audit
from clausegate.demo.slack_server import FakeSlack
from clausegate.gates import resolve_gate
from clausegate.gates.model import RECEIPT_FIELD, UNVERIFIED_MARK, receipt_key
from tests.support.gates import api_resume, slack_settings, state_of, wait_for_state
from tests.support.processes import start_served, stop_process_group

DEPLOYMENT = "attribution"
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


class Probe:
    def __init__(self, label: str, folder: Path):
        from prefect.deployments import run_deployment

        self.label = f"{label}-{uuid.uuid4().hex[:6]}"
        self.filename = f"{self.label}.pdf"
        self.out = folder / f"{self.label}.json"
        run = run_deployment(f"gate-probe/{DEPLOYMENT}", timeout=0,
                             parameters={"label": self.label, "out": str(self.out)})
        self.id = str(run.id)

    def result(self) -> dict:
        wait_for_state(self.id, {"Completed"}, timeout=120)
        return json.loads(self.out.read_text())

    def gate(self) -> str:
        from prefect.client.orchestration import get_client

        from clausegate.gates import store

        with get_client(sync_client=True) as client:
            return store.gate_key_of(client.read_flow_run(uuid.UUID(self.id)))


@pytest.fixture(scope="module")
def fake():
    with FakeSlack(token="xoxb-attribution") as server:
        yield server


@pytest.fixture(scope="module")
def probes(prefect_server, fake, tmp_path_factory):
    """The served probe deployment and one suspended run per test, started together."""
    folder = tmp_path_factory.mktemp("attribution")
    block = f"attribution-{uuid.uuid4().hex[:8]}"
    slack_settings(fake).save(block, overwrite=True)
    log = folder / "serve.log"
    env = {**os.environ, "CLAUSEGATE_SLACK_BLOCK": block}
    serve = start_served(["tests.support.gate_probe", "serve", DEPLOYMENT], f"gate-probe/{DEPLOYMENT}", log, env)
    try:
        runs = {name: Probe(name, folder) for name in ("forged-via", "forged-receipt", "slack-escalate", "ui-escalate")}
        for probe in runs.values():
            wait_for_state(probe.id, {"Suspended"}, timeout=180)
        yield runs
    finally:
        stop_process_group(serve)
        print(f"\nserve log: {log}")



def audit_events(run_id: str, action: str, *, at_least: int = 1, timeout: float = 30.0, settle: float = 1.5) -> list:
    """The run's audit events of one action, once at least ``at_least`` arrived (then a moment more for extras)."""
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await audit.read(client, prefix=audit.PREFIX + action, flow_run_id=run_id)

    deadline = time.monotonic() + timeout
    events = asyncio.run(read())
    while len(events) < at_least and time.monotonic() < deadline:
        time.sleep(0.3)
        events = asyncio.run(read())
    if at_least:
        time.sleep(settle)
        events = asyncio.run(read())
    return events


def test_an_api_resume_claiming_slack_is_recorded_as_ui_and_audited(probes, fake):
    probe = probes["forged-via"]
    answer = api_resume(probe.id, {"decision": "approve", "reviewer": "dana (U0DANA)", "comment": "lgtm",
                                   "via": "slack"})
    assert answer["status"] == "ACCEPT", answer  # accepted (the claim is simply ignored), not refused
    result = probe.result()
    assert result["status"] == "complete"
    (decision,) = result["decisions"]
    assert decision["via"] == "ui"
    assert decision["reviewer"] == f"dana (U0DANA) ({UNVERIFIED_MARK})"

    (event,) = audit_events(probe.id, "gate.decided")
    payload = event.payload
    assert (payload["via"], payload["decision"], payload["gate"]) == ("ui", "approve", decision["gate"])
    assert payload["reviewer_verified"] is False and payload["stated_reviewer"] == "dana (U0DANA)"
    assert payload["claimed_via"] == "slack" and payload["flow_run_id"] == probe.id

    # Everyone who looks later is told the truth: the Slack message and a late answer say "via ui", unverified.
    message = next(m for m in fake.messages.values() if probe.id in json.dumps(m["blocks"]))
    assert "via ui" in json.dumps(message["blocks"]) and UNVERIFIED_MARK in json.dumps(message["blocks"])
    late = resolve_gate(probe.id, "changes", reviewer="eve", via="cli")
    assert late.kind == "already_decided" and "via ui" in late.message and "unverified" in late.message


def test_a_forged_receipt_is_not_accepted(probes):
    """Someone with the API credential can write flow-run inputs, but cannot sign a receipt."""
    from prefect.client.orchestration import get_client

    from clausegate.gates.receipts import DecisionReceipt

    probe = probes["forged-receipt"]
    gate = probe.gate()
    nonce = uuid.uuid4().hex
    forged = DecisionReceipt(nonce=nonce, flow_run_id=probe.id, gate=gate, decision="approve", reviewer="dana (U0DANA)",
                             via="slack", verified_user="U0DANA", issued_ms=int(time.time() * 1000))
    forged = forged.model_copy(update={"signature": hmac.new(b"a guessed key", forged.signed_bytes(),
                                                             hashlib.sha256).hexdigest()})
    with get_client(sync_client=True) as client:
        client.create_flow_run_input(flow_run_id=uuid.UUID(probe.id), key=receipt_key(gate, nonce),
                                     value=forged.model_dump_json())
    answer = api_resume(probe.id, {"decision": "approve", "reviewer": "dana (U0DANA)", "comment": "",
                                   RECEIPT_FIELD: nonce})
    assert answer["status"] == "ACCEPT", answer
    (decision,) = probe.result()["decisions"]
    assert decision["via"] == "ui" and UNVERIFIED_MARK in decision["reviewer"]
    (event,) = audit_events(probe.id, "gate.decided")
    assert event.payload["via"] == "ui" and event.payload["reviewer_verified"] is False
    assert "signature" in event.payload["receipt_problem"]


def test_a_slack_escalation_is_attributed_to_the_verified_user_and_tells_the_escalation_channel(probes, fake):
    probe = probes["slack-escalate"]
    settings = slack_settings(fake)
    outcome = resolve_gate(probe.id, "escalate", reviewer="dana (U0DANA)", via="slack", slack_user_id="U0DANA",
                           comment="liability is unlimited", settings=settings, gate=probe.gate(),
                           slack_channel="C0GATES")
    assert outcome.kind == "resumed", outcome.message
    result = probe.result()
    assert result["status"] == "needs_legal"
    (decision,) = result["decisions"]
    assert (decision["decision"], decision["via"], decision["reviewer"]) == ("escalate", "slack", "dana (U0DANA)")

    escalations = [c for c in fake.calls("chat.postMessage", ok_only=True)
                   if c.args["channel"] == "C0LEGAL" and probe.filename in c.args["text"]]
    assert len(escalations) == 1, escalations  # a person's Escalate tells the escalation channel, once
    text = escalations[0].args["text"]
    assert "Escalated to legal" in text and "dana (U0DANA)" in text and "via slack" in text
    assert outcome.decision.via == "slack" and outcome.decision.reviewer_verified

    (event,) = audit_events(probe.id, "gate.decided")
    payload = event.payload
    assert (payload["via"], payload["decision"], payload["reviewer"]) == ("slack", "escalate", "dana (U0DANA)")
    assert payload["reviewer_verified"] is True and payload["verified_user"] == "U0DANA"
    assert payload["receipt_problem"] is None and payload["claimed_via"] is None
    assert audit_events(probe.id, "gate.refused", at_least=0) == []  # the accepted answer is not a refusal


def test_a_ui_escalation_whose_notice_fails_is_still_applied_and_says_so(probes, fake):
    probe = probes["ui-escalate"]
    fake.fail("chat.postMessage", "500", times=10, match=f"Escalated to legal: *{probe.filename}*")
    answer = api_resume(probe.id, {"decision": "escalate", "reviewer": "uma", "comment": "form"})
    assert answer["status"] == "ACCEPT", answer
    result = probe.result()
    assert result["status"] == "needs_legal"
    codes = {n["code"] for n in result["notices"]}
    assert {"CG-GATE-ESCALATED", "CG-GATE-ESCALATION-UNDELIVERED"} <= codes
    tries = [c for c in fake.calls("chat.postMessage") if c.args["channel"] == "C0LEGAL"
             and probe.filename in c.args["text"]]
    assert [c.status for c in tries] == [500, 500, 500, 500]  # 1 try + 3 retries
    (decision,) = result["decisions"]
    assert decision["via"] == "ui" and decision["reviewer"] == f"uma ({UNVERIFIED_MARK})"
    (event,) = audit_events(probe.id, "gate.decided")
    assert event.payload["via"] == "ui" and event.payload["decision"] == "escalate"
    assert state_of(probe.id)[1] == "Completed"
