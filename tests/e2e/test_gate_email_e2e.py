"""End to end on a served stack: a per-finding gate where legal approves by e-mail and finance in Slack.

The session Prefect server, the served contract-review deployment, the gateway (``clausegate gateway``), the
fake Slack Web API and a real local SMTP server (aiosmtpd, tests/support/mailbox.py). Who decides is a Deciders
block (lou: a Slack id and an address, legal; fay: finance); the SmtpSettings block points at the local server
and its links at the gateway. Lou confirms each legal finding on the link page (POST), Fay clicks in Slack; the
run completes and the report and ``clausegate gates --stats`` show both decisions with their channels.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import httpx
import pytest
from prefect.client.orchestration import get_client

from blocks.deciders import Deciders
from blocks.smtp import SmtpSettings
from clausegate.gates import store
from clausegate.gates.rounds import current_progress
from tests.support.gates import wait_for_state
from tests.support.mailbox import Mailbox
from tests.support.served_gates import CLI, ROOT, served_gate_stack, start_gated_review
from tests.support.waiting import wait_until

NAME = "email-e2e"
FAY = ("U0FAY", "fin-fay")
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]

PLAYBOOK = """
name: email-e2e
categories: [Uncapped Liability, Liquidated Damages, Cap on Liability]
gates:
  - {category: Uncapped Liability, sla_hours: 8, roles: [legal], reason: Legal signs off uncapped liability.}
  - {category: Liquidated Damages, sla_hours: 8, roles: [finance], reason: Finance signs off fixed damages.}
"""


def slack_message(fake, run_id: str) -> dict:
    return wait_until(lambda: next(({**m, "channel": c, "ts": t} for (c, t), m in list(fake.messages.items())
                                    if run_id in json.dumps(m.get("blocks") or [])), None), 120,
                      what=f"the Slack message of run {run_id}")


def record_of(run_id: str):
    with get_client(sync_client=True) as client:
        return store.current_record(client, client.read_flow_run(uuid.UUID(run_id)))


def answered(run_id: str, finding: str) -> bool:
    record = record_of(run_id)
    with get_client(sync_client=True) as client:
        return record is not None and current_progress(client, record)[0].get(finding).done


def test_legal_by_e_mail_and_finance_in_slack_complete_the_run(prefect_server, tmp_path):
    with Mailbox() as mailbox, served_gate_stack(prefect_server, tmp_path, name=NAME, slots=2,
                                                 token="xoxb-email-e2e") as stack:
        Deciders(people={"lou": ["U0LOU", "lou@example.com"], "fay": [FAY[0], "fay@example.com"]},
                 roles={"legal": ["lou"], "finance": ["fay"]}).save(NAME, overwrite=True)
        SmtpSettings(host="127.0.0.1", port=mailbox.port, security="none", sender="ClauseGate <gates@example.com>",
                     link_base_url=stack.gateway_url).save(NAME, overwrite=True)
        (tmp_path / "email.yaml").write_text(PLAYBOOK)
        run_id, out = start_gated_review(NAME, "email-e2e", tmp_path / "contract", str(tmp_path / "email.yaml"))
        wait_for_state(run_id, {"Suspended"}, timeout=240)

        wait_until(lambda: mailbox.to("lou@example.com"), 60, what="legal's e-mail")
        legal = sorted((f, url) for (f, decision), url in mailbox.links("lou@example.com").items()
                       if decision == "approve")
        assert legal, mailbox.to("lou@example.com")[0].get_content()
        for finding, url in legal:
            wait_for_state(run_id, {"Suspended"}, timeout=240)
            assert "Confirm: Approve" in httpx.get(url, timeout=60).text  # the page; a GET decides nothing
            done = httpx.post(url, timeout=240)
            assert done.status_code == 200 and f"{finding} approved by lou@example.com" in done.text, done.text

        record = record_of(run_id)
        finance = [f.id for f in record.findings if f.category == "Liquidated Damages"]
        assert finance and sorted(f for f, _ in legal) == [f.id for f in record.findings
                                                           if f.category == "Uncapped Liability"]
        for finding in finance:
            wait_for_state(run_id, {"Suspended"}, timeout=240)
            response = stack.slack.click(slack_message(stack.fake, run_id), "approve", user=FAY, finding=finding)
            assert response.status_code == 200, response.text
            wait_until(lambda f=finding: answered(run_id, f), 240, what=f"{finding} decided in Slack")

        wait_for_state(run_id, {"Completed"}, timeout=240)
        report = json.loads(next(out.glob("*.json")).read_text())
        assert report["status"] == "complete", report["status"]
        by_role = {(d["finding"], d["role"]): d for d in report["decisions"]}
        assert {d["via"] for (_, role), d in by_role.items() if role == "legal"} == {"email"}
        assert {d["reviewer"] for (_, role), d in by_role.items() if role == "legal"} == {"lou@example.com"}
        assert {d["via"] for (_, role), d in by_role.items() if role == "finance"} == {"slack"}

        stats = subprocess.run([CLI, "gates", "--stats", "--days", "1"], cwd=ROOT, capture_output=True, text=True,
                               env={**os.environ, "COLUMNS": "200"}, timeout=120)
        assert stats.returncode == 0, stats.stderr
        channel = stats.stdout.split("Channel")[1]
        assert "email" in channel and "slack" in channel, stats.stdout
        print(stats.stdout)
