"""End to end: per-finding gates with roles, on the real gateway with the fake Slack.

Processes as in test_gates_e2e.py: the session Prefect server, the served contract-review deployment,
the gateway (``clausegate gateway``), the fake Slack Web API (real HTTP, in this process). The playbook
gates Uncapped Liability for role ``legal`` and Liquidated Damages for role ``finance``; the block maps
legal to U0LEGAL and U0LEE, finance to U0FIN.

* ``order-legal-first`` / ``order-finance-first``: both roles answer their findings, in either order; after the
  first answer the run suspends again (the message updated in place), only the second finishes it;
  finance's *changes* next to legal's *approve* gives ``changes_requested``.
* ``life``: a ladder of seconds (reminders at 4 s and 6.4 s, decided at 8 s). A Prefect UI answer
  (``POST /resume``) for legal's finding is not counted (the run waits again, ``gate.refused``
  ``role_unverified``); the CLI is refused too (exit 5); *I'm on it*; legal reassigns its finding to U0LEE, who
  approves it; the sweep, read as of 4 s and 6.4 s after the gate opened (``sla.sweep(now=...)``: the rungs due
  then), reminds finance at 50% and 80%; nobody from finance answers, so the next sweep escalates (``needs_legal``).
  Nothing sweeps but the test, so however long the steps take, each rung acts when the test sweeps, in order.
  Its whole Slack log is printed (``-s``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prefect import flow

from clausegate.demo.slack_server import FakeSlack
from clausegate.ops import sla
from tests.support.gates import state_history, wait_for_state
from tests.support.served_gates import CLI, GateStack, served_gate_stack, start_gated_review
from tests.support.waiting import WaitTimeout, wait_until

DEPLOYMENT = "roles-e2e"
BLOCK = "roles-e2e"
LEGAL, LEE, FIN = ("U0LEGAL", "legal-lou"), ("U0LEE", "lee"), ("U0FIN", "fin-fay")
LADDER = "[{at: 4s, do: remind}, {at: 6.4s, do: remind}, {at: 8s, do: decide}]"  # the life gate: 50%, 80%, SLA

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]

PLAYBOOK = """
name: {name}
description: payment-liability with a role per gated category (issue 24 tests)
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability,
             Liquidated Damages]
gates:
  - {{category: Uncapped Liability, sla_hours: 8, roles: [legal], reason: Legal signs off uncapped liability.,
      ladder: {ladder}}}
  - {{category: Liquidated Damages, sla_hours: 8, roles: [finance], reason: Finance signs off fixed damages.,
      ladder: {ladder}}}
"""


@pytest.fixture(scope="module")
def stack(prefect_server, tmp_path_factory):
    role_members = {"legal": [LEGAL[0], LEE[0], "lou@example.com"], "finance": [FIN[0]]}
    with served_gate_stack(prefect_server, tmp_path_factory.mktemp("roles-logs"), name=DEPLOYMENT, slots=6,
                           token="xoxb-roles", role_members=role_members) as served:
        yield served


class Review:
    def __init__(self, label: str, folder: Path, playbook: Path):
        self.label, self.filename = label, f"{label}.pdf"
        self.id, self.out = start_gated_review(DEPLOYMENT, label, folder, str(playbook))

    def report(self) -> dict:
        return json.loads(next(self.out.glob("*.json")).read_text())


@pytest.fixture(scope="module")
def runs(stack, tmp_path_factory):
    folder = tmp_path_factory.mktemp("roles-contracts")
    (folder / "roles.yaml").write_text(PLAYBOOK.format(name="roles-e2e", ladder="[]"))
    (folder / "short.yaml").write_text(PLAYBOOK.format(name="roles-short", ladder=LADDER))
    started = {label: Review(label, folder / label, folder / "roles.yaml")
               for label in ("order-legal-first", "order-finance-first")}
    started["life"] = Review("life", folder / "life", folder / "short.yaml")
    for review in started.values():
        wait_for_state(review.id, {"Suspended"}, timeout=240)
    return started


def message_of(fake: FakeSlack, run_id: str) -> dict:
    for (channel, ts), message in list(fake.messages.items()):
        if run_id in json.dumps(message["blocks"]) and message.get("blocks"):
            return {**message, "channel": channel, "ts": ts}
    raise LookupError(f"no Slack message for run {run_id}")


def record_of(run_id: str):
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    with get_client(sync_client=True) as client:
        return store.current_record(client, client.read_flow_run(uuid.UUID(run_id)))


def ids_of(record, category: str) -> list[str]:
    return [f.id for f in record.findings if f.category == category]


def pause_keys(run_id: str) -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(uuid.UUID(run_id)).state
    return [state.state_details.pause_key] if state.is_paused() else []


def wait_suspended_at_round(run_id: str, n: int, timeout: float = 180) -> None:
    try:
        wait_until(lambda: (keys := pause_keys(run_id)) and keys[0].endswith(f"-a{n}"), timeout, step=0.2,
                   what=f"run {run_id} suspended at answer round {n}", ignore=())
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}: {state_history(run_id)[-3:]}") from None


def click(stack: GateStack, run_id: str, decision: str, user, finding: str | None = None) -> None:
    response = stack.slack.click(message_of(stack.fake, run_id), decision, user=user, finding=finding)
    assert response.status_code == 200, response.text


def responses_for(stack: GateStack, text: str) -> list[str]:
    return [str(r["body"].get("text", "")) for r in stack.fake.responses if text in str(r["body"].get("text", ""))]


def decide_all(stack: GateStack, review: Review, first, second) -> None:
    """first/second: (user, category, decision, via) — a button click or /resolve with the finding id; each
    answer is one round: the run resumes and, until the last, suspends again at the next round."""
    record = record_of(review.id)
    n = 0
    for k, (user, category, decision, via) in enumerate((first, second)):
        ids = ids_of(record, category)
        for j, fid in enumerate(ids):
            if via == "button":
                click(stack, review.id, decision, user, finding=fid)
            else:
                response = stack.slack.command("/resolve", f"{review.id} {fid} {decision} see clause {fid}", user=user)
                assert response.status_code == 200 and fid in response.json()["text"]
            n += 1
            if not (k == 1 and j == len(ids) - 1):
                wait_suspended_at_round(review.id, n)
        if k == 0:  # the first role is in: the run waits again, and the message (updated in place) shows it
            shown = json.dumps(message_of(stack.fake, review.id)["blocks"])
            assert user[1] in shown and "waiting" in shown and "Decision needed" in shown, shown[:2000]


def test_two_roles_in_either_order_and_a_change_next_to_an_approve(stack, runs):
    legal_first, finance_first = runs["order-legal-first"], runs["order-finance-first"]
    decide_all(stack, legal_first, (LEGAL, "Uncapped Liability", "approve", "button"),
               (FIN, "Liquidated Damages", "approve", "button"))
    decide_all(stack, finance_first, (FIN, "Liquidated Damages", "changes", "command"),
               (LEGAL, "Uncapped Liability", "approve", "button"))
    for review, status in ((legal_first, "complete"), (finance_first, "changes_requested")):
        wait_for_state(review.id, {"Completed"}, timeout=180)
        report = review.report()
        assert report["status"] == status, report["status"]
        by_role = {(d["finding"], d["role"]): d for d in report["decisions"]}
        record = record_of(review.id)
        for fid in ids_of(record, "Uncapped Liability"):
            assert by_role[(fid, "legal")]["reviewer"] == "legal-lou (U0LEGAL)"
            assert by_role[(fid, "legal")]["via"] == "slack" and by_role[(fid, "legal")]["decision"] == "approve"
        for fid in ids_of(record, "Liquidated Damages"):
            assert by_role[(fid, "finance")]["reviewer"] == "fin-fay (U0FIN)"
        final = message_of(stack.fake, review.id)
        assert final["blocks"][0]["text"]["text"].startswith("Decided:")
        assert not any(b["type"] == "actions" for b in final["blocks"])
    changes = [d for d in finance_first.report()["decisions"] if d["decision"] == "changes"]
    assert changes and all(d["comment"].startswith("see clause") for d in changes)
    print_life(stack.fake, finance_first, "a gate with two roles (finance: changes, then legal: approve)")


def ui_resume(api_url: str, run_id: str, run_input: dict) -> dict:
    """``POST /api/flow_runs/{id}/resume`` as the Prefect UI's form sends it (SQLite's 503 retried)."""
    for _ in range(10):
        response = httpx.post(f"{api_url}/flow_runs/{run_id}/resume", json={"run_input": run_input}, timeout=30,
                              auth=tuple(os.environ["PREFECT_API_AUTH_STRING"].split(":", 1)))
        if response.status_code != 503:
            response.raise_for_status()
            return response.json()
        time.sleep(1.0)
    raise AssertionError(f"resume kept answering 503: {response.text}")


@flow(name="sla-sweep-as-of")
def sweep_as_of(as_of: datetime) -> list[dict]:
    return sla.sweep(now=as_of)


def run_sweep(as_of: datetime | None = None) -> list[dict]:
    """The sla-sweeper flow (``as_of``: its sweep read as of that moment, in a flow of its own)."""
    os.environ["CLAUSEGATE_SLACK_BLOCK"] = BLOCK
    try:
        from flows.sla_sweeper import sla_sweeper

        return asyncio.run(sla_sweeper()) if as_of is None else sweep_as_of(as_of)
    finally:
        os.environ.pop("CLAUSEGATE_SLACK_BLOCK", None)


def extras_of(run_id: str, key: str):
    from prefect.client.orchestration import get_client

    from clausegate.gates import store

    with get_client(sync_client=True) as client:
        return store.read_extras(client, run_id, key)


def refused_events(run_id: str) -> list:
    from prefect.client.orchestration import get_client

    from clausegate import audit

    async def read():
        async with get_client() as client:
            return await audit.read(client, prefix=audit.PREFIX + "gate.", flow_run_id=run_id, limit=100)

    return asyncio.run(read())


def test_a_gate_s_life_ui_refused_ack_reminders_reassign_decision_and_sla_breach(stack, runs):
    review = runs["life"]
    record = record_of(review.id)
    legal_ids, finance_ids = ids_of(record, "Uncapped Liability"), ids_of(record, "Liquidated Damages")
    assert legal_ids and finance_ids and record.per_finding
    fake = stack.fake

    # 1. the Prefect UI form cannot prove who answers: legal's finding is not counted, the run waits again
    answer = ui_resume(stack.api_url, review.id, {"reviewer": "dana", legal_ids[0]: "approve"})
    assert answer["status"] == "ACCEPT", answer
    wait_suspended_at_round(review.id, 1)
    refused = wait_until(lambda: [e for e in refused_events(review.id) if e.event.endswith("gate.refused")
                                  and e.payload.get("reason") == "role_unverified"], 60, what="role_unverified audit")
    assert "Answer in Slack" in refused[0].payload["message"]
    cli = subprocess.run([CLI, "resolve", review.id, "approve", "--finding", legal_ids[0]], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "CLAUSEGATE_SLACK_BLOCK": BLOCK})
    assert cli.returncode == 5, cli.stdout + cli.stderr
    assert "Answer in Slack" in " ".join(cli.stdout.split()), cli.stdout

    # 2. I'm on it: recorded, shown in Slack and in `clausegate gates`
    click(stack, review.id, "ack", LEGAL)
    wait_until(lambda: "Acknowledged by legal-lou" in json.dumps(message_of(fake, review.id)["blocks"]), 60,
               what="the ack in the Slack message")
    listing = subprocess.run([CLI, "gates"], capture_output=True, text=True, timeout=120)
    assert "acknowledged: legal-lou (U0LEGAL)" in " ".join(listing.stdout.split()), listing.stdout

    # 3. reassign legal's finding to another person of role legal
    for fid in legal_ids:
        stack.slack.command("/resolve", f"{review.id} {fid} reassign <@U0LEE|lee>", user=LEGAL)
    wait_until(lambda: len(extras_of(review.id, record.key).assignments) == len(legal_ids), 60, what="reassignment")
    wait_until(lambda: "assigned to <@U0LEE>" in json.dumps(message_of(fake, review.id)["blocks"]), 60,
               what="the assignee in the Slack message")

    # 4. the assignee decides legal's findings (the original legal person no longer can)
    click(stack, review.id, "approve", LEGAL, finding=legal_ids[0])
    wait_until(lambda: responses_for(stack, "assigned to U0LEE"), 120, what="the refusal of the unassigned legal")
    for n, fid in enumerate(legal_ids, 2):
        click(stack, review.id, "approve", LEE, finding=fid)
        wait_suspended_at_round(review.id, n)

    # 5. the ladder's reminders (50% and 80% of the SLA), to whoever still has to answer (finance, now): the sweep
    # as of the moment each rung came due
    for seconds, percent in ((4.0, 50), (6.4, 80)):
        done = run_sweep(as_of=record.opened_at + timedelta(seconds=seconds))
        assert [(d["percent"], d["outcome"]) for d in done if d["flow_run_id"] == review.id] == [
            (percent, "reminded")], done
        assert percent in extras_of(review.id, record.key).reminders
    assert extras_of(review.id, record.key).reminders == [50, 80]
    reminders = [c for c in fake.calls("chat.postMessage", ok_only=True) if "of the SLA" in c.args.get("text", "")
                 and review.filename in c.args["text"]]
    assert reminders and all(c.args.get("thread_ts") for c in reminders)
    assert "<@U0FIN>" in reminders[-1].args["text"] and "<@U0LEE>" not in reminders[-1].args["text"]

    # 6. finance never answers: the SLA breach still escalates (what is open), the review ends needs_legal
    mine = sweep_until_escalated(review.id, record)
    assert mine["outcome"] == "resumed" and mine["escalation_posted"], mine
    wait_for_state(review.id, {"Completed"}, timeout=180)
    report = review.report()
    assert report["status"] == "needs_legal"
    by = {(d["finding"], d["role"]): (d["decision"], d["via"], d["reviewer"]) for d in report["decisions"]}
    assert all(by[(f, "legal")] == ("approve", "slack", "lee (U0LEE)") for f in legal_ids)
    assert all(by[(f, "finance")][:2] == ("escalate", "sla") for f in finance_ids)

    print_life(fake, review, "one gate's life (UI refused, ack, reassign, reminders, a decision, SLA breach)")


def sweep_until_escalated(run_id: str, record) -> dict:
    """The sweep's entry escalating ``run_id``. First wait for what the sweep acts on: the gate listed overdue
    (``waiting_gates``: the SLA has passed by the product's clock, the run is Suspended); then sweep, again if a
    sweep did not escalate it (as the scheduled sweeper would, every few minutes), within two minutes."""
    from clausegate.gates import waiting_gates

    def listed() -> list:
        return [g for g in waiting_gates() if g.flow_run_id == run_id]

    left = max((record.sla_deadline - datetime.now(UTC)).total_seconds(), 0.0)
    try:
        wait_until(lambda: (gate := listed()) and gate[0].overdue, left + 60, step=1.0, max_step=2.0,
                   what=f"the gate of {run_id} listed overdue")
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}; states {state_history(run_id)[-3:]}; {paused_runs()} paused runs on the "
                          "server (waiting_gates reads at most 200)") from None
    sweeps: list[list[dict]] = []

    def escalated() -> dict | None:
        sweeps.append(run_sweep())
        return next((d for d in sweeps[-1] if d["flow_run_id"] == run_id and "outcome" in d
                     and "percent" not in d), None)

    try:
        return wait_until(escalated, 120, step=2.0, max_step=5.0, ignore=(), what=f"a sweep escalating {run_id}")
    except WaitTimeout as exc:
        raise WaitTimeout(f"{exc}; sweeps returned {sweeps}; states {state_history(run_id)[-3:]}") from None


def paused_runs() -> int:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType

    with get_client(sync_client=True) as client:
        return client.count_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED]))))


def print_life(fake: FakeSlack, review: Review, title: str) -> None:
    """Every Slack call about ``review``'s gate as the fake logged it (``-s`` shows it)."""
    print(f"\n--- {title}, as the fake Slack logged it ---")
    for call in fake.calls():
        if review.id not in json.dumps(call.args) and review.filename not in json.dumps(call.args):
            continue
        print(f"{time.strftime('%H:%M:%S', time.gmtime(call.at))} {call.method} {call.args.get('channel')} "
              f"thread={call.args.get('thread_ts')}: {call.args.get('text')}")
        blocks = call.args.get("blocks")
        blocks = json.loads(blocks) if isinstance(blocks, str) else blocks or []
        for block in blocks:
            if block.get("type") in ("section", "header"):
                print("    | " + block["text"]["text"].replace("\n", "\n    | "))
            elif block.get("type") == "context":
                print("    ~ " + " · ".join(e.get("text", "") for e in block["elements"]))
            elif block.get("type") == "actions":
                print("    [" + "] [".join(e["text"]["text"] for e in block["elements"]) + "]")
