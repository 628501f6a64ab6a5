"""End to end: a served contract review of a .docx whose gated Cap on Liability clause the other side rewrote as
tracked changes (a deletion and an insertion) suspends on those changes, and resumes through ``clausegate resolve``.

Processes as in test_gate_roles.py (the session Prefect server, the served contract-review deployment, the
gateway, the fake Slack). The run suspends at the gate; ``clausegate resolve RUN approve`` decides the finding, but
the run suspends again: its two tracked changes are undecided. ``--change C1=counter`` without text is refused
(exit 2, nothing resumed); ``--change C1=reject --change C2=counter:"…"`` decides them and the review completes
``changes_requested``, its report listing each change with its decision, the CLI and the login, each with a verified
receipt on the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support import docx_factory as d
from tests.support.contracts import SUPPLY_PAGES
from tests.support.gates import state_history, wait_for_state
from tests.support.served_gates import CLI, served_gate_stack
from tests.support.waiting import WaitTimeout, wait_until

DEPLOYMENT = "changes-e2e"
CAP_LEAD = ("3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
            "related to this Agreement exceed ")
CAP_OLD = "the total fees paid by Customer in the twelve months preceding the claim"
CAP_NEW = "one hundred dollars (US $100)"
COUNTER = "the fees paid in the twelve months before the claim, and at least US $1,000,000"
PLAYBOOK = """
name: changes-e2e
description: every cap on liability goes to a person (tracked changes end-to-end test)
categories: [Cap on Liability, Uncapped Liability, Insurance]
gates:
  - {category: Cap on Liability, sla_hours: 8, reason: Legal reads every cap.}
"""

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


@pytest.fixture(scope="module")
def stack(prefect_server, tmp_path_factory):
    with served_gate_stack(prefect_server, tmp_path_factory.mktemp("changes-logs"), name=DEPLOYMENT, slots=2,
                           token="xoxb-changes") as served:
        yield served


def redlined_docx(folder: Path) -> Path:
    lines = [line for page in SUPPLY_PAGES[:2] for line in page.split("\n")]
    lines[0] += f" Reference: CG-{uuid.uuid4().hex[:10].upper()}."  # a contract of its own: nothing from cache
    body = [d.para(d.run(line)) for line in lines]
    body += [d.para(d.run(CAP_LEAD), d.dele(CAP_OLD), d.ins(CAP_NEW), d.run("."))]
    return d.make_docx(folder / "supply-v2.docx", body)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "resolve", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "CLAUSEGATE_SLACK_BLOCK": DEPLOYMENT})


def record_of(run_id: str):
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    with get_client(sync_client=True) as client:
        return store.current_record(client, client.read_flow_run(uuid.UUID(run_id)))


_ROUND = re.compile(r"-a\d+$")  # an answer round's suffix (a gate key's hex digest may start with 'a')


def pause_key(run_id: str) -> str | None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(uuid.UUID(run_id)).state
    return state.state_details.pause_key if state is not None and state.is_paused() else None


def wait_round(run_id: str, n: int) -> None:
    try:
        wait_until(lambda: (key := pause_key(run_id)) and (key.endswith(f"-a{n}") if n else not _ROUND.search(key)),
                   180,
                   step=0.2, what=f"run {run_id} suspended at answer round {n}", ignore=())
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}: {state_history(run_id)[-3:]}") from None


def test_a_review_suspends_on_the_other_side_s_tracked_changes_and_resumes_through_the_cli(stack, tmp_path):
    from prefect.deployments import run_deployment

    (tmp_path / "changes.yaml").write_text(PLAYBOOK)
    out = tmp_path / "reports"
    run = run_deployment(f"contract-review/{DEPLOYMENT}", timeout=0, parameters={
        "source": str(redlined_docx(tmp_path)), "playbook": str(tmp_path / "changes.yaml"), "out_dir": str(out)})
    run_id = str(run.id)
    wait_round(run_id, 0)
    record = record_of(run_id)
    assert record.per_finding and [f.category for f in record.findings] == ["Cap on Liability"]
    assert [(c.id, c.kind, c.text) for c in record.changes] == [("C1", "deletion", CAP_OLD),
                                                                ("C2", "insertion", CAP_NEW)]

    approved = cli(run_id, "approve", "--comment", "the cap itself is fine")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    wait_round(run_id, 1)  # the finding is decided; the run waits again: its tracked changes are not

    refused = cli(run_id, "--change", "C1=counter")
    assert refused.returncode == 2 and "CG-GATE-CHANGE-ANSWER" in refused.stdout, refused.stdout + refused.stderr
    assert pause_key(run_id).endswith("-a1")  # nothing resumed

    decided = cli(run_id, "--change", "C1=reject", "--change", f'C2=counter:"{COUNTER}"')
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert "C1 rejected; C2 countered" in " ".join(decided.stdout.split())
    wait_for_state(run_id, {"Completed"}, timeout=240)

    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["status"] == "changes_requested"
    on_changes = {x["change"]["change"]["id"]: x for x in report["decisions"] if x.get("change")}
    assert set(on_changes) == {"C1", "C2"}
    assert on_changes["C1"]["change"]["decision"] == "reject" and on_changes["C1"]["via"] == "cli"
    assert on_changes["C2"]["change"]["counter"] == COUNTER and on_changes["C2"]["decision"] == "changes"
    assert not any("unverified" in x["reviewer"] for x in on_changes.values())  # the receipt proved the CLI path
    markdown = next(out.glob("*.md")).read_text()
    assert "## The other side's tracked changes (2 decided at the gate)" in markdown
    assert f"**countered** | {COUNTER} |" in markdown


def message_of(fake, run_id: str) -> dict:
    for (channel, ts), message in list(fake.messages.items()):
        if run_id in json.dumps(message.get("blocks") or []):
            return {**message, "channel": channel, "ts": ts}
    raise LookupError(f"no Slack message for run {run_id}")


def submission_body(view: dict, text: str, user: tuple[str, str]) -> bytes:
    """The form body Slack sends when ``user`` submits the counter modal with ``text``."""
    from urllib.parse import urlencode

    payload = {"type": "view_submission", "team": {"id": "T0FAKE"}, "user": {"id": user[0], "username": user[1]},
               "view": {"id": view["id"], "callback_id": view["callback_id"],
                        "private_metadata": view["private_metadata"],
                        "state": {"values": {"counter": {"text": {"type": "plain_text_input", "value": text}}}}}}
    return urlencode({"payload": json.dumps(payload)}).encode()


def test_slack_accepts_one_change_and_counters_the_other_through_the_modal(stack, tmp_path):
    from prefect.deployments import run_deployment

    dana = ("U0DANA", "dana")
    (tmp_path / "changes.yaml").write_text(PLAYBOOK)
    out = tmp_path / "reports"
    run = run_deployment(f"contract-review/{DEPLOYMENT}", timeout=0, parameters={
        "source": str(redlined_docx(tmp_path)), "playbook": str(tmp_path / "changes.yaml"), "out_dir": str(out)})
    run_id = str(run.id)
    wait_round(run_id, 0)
    message = wait_until(lambda: message_of(stack.fake, run_id), 60, what="the gate message")
    blocks = json.dumps(message["blocks"])
    assert "cgchange_accept" in blocks and "cgchange_counter" in blocks and "Tracked change" in blocks

    assert stack.slack.click(message, "accept", finding="C1", user=dana).status_code == 200
    wait_round(run_id, 1)
    message = wait_until(lambda: (m := message_of(stack.fake, run_id)) and "Accepted" in json.dumps(m["blocks"])
                         and m, 60, what="the message showing C1 accepted")
    assert stack.slack.click(message, "counter", finding="C2", user=dana).status_code == 200
    opened = wait_until(lambda: stack.fake.views, 30, what="the counter modal (views.open)")[0]["view"]
    assert json.loads(opened["private_metadata"])["change"] == "C2"

    empty = submission_body(opened, "   ", dana)
    refused = stack.slack.send(empty, stack.slack.headers(empty))
    assert refused.json()["response_action"] == "errors" and "CG-GATE-CHANGE-ANSWER" in refused.text
    assert pause_key(run_id).endswith("-a1")  # nothing resumed
    body = submission_body(opened, COUNTER, dana)
    assert stack.slack.send(body, stack.slack.headers(body)).status_code == 200
    wait_round(run_id, 2)  # both changes decided; the finding itself still open

    approve = cli(run_id, "approve")
    assert approve.returncode == 0, approve.stdout + approve.stderr
    wait_for_state(run_id, {"Completed"}, timeout=240)
    report = json.loads(next(out.glob("*.json")).read_text())
    on_changes = {x["change"]["change"]["id"]: x for x in report["decisions"] if x.get("change")}
    assert (on_changes["C1"]["change"]["decision"], on_changes["C1"]["via"]) == ("accept", "slack")
    assert (on_changes["C2"]["change"]["counter"], on_changes["C2"]["via"]) == (COUNTER, "slack")
    assert on_changes["C2"]["reviewer"] == "dana (U0DANA)"  # the signed request's user, verified by the receipt
    assert report["status"] == "changes_requested"
