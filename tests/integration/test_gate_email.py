"""Gates by e-mail against a real local SMTP server (aiosmtpd) and the real gateway on uvicorn.

A per-finding gate really Suspended on the session Prefect server (tests.support.gates); its people get e-mails
through ``EmailChannel`` (smtplib to the local server), the links are opened on the gateway as a browser would:
GET shows and decides nothing, POST decides ``via: email`` with the address verified; forged, expired, replayed,
reused and wrong-person links are refused with their codes. After each answer the test suspends the run at the
next round, as the resumed flow does (clausegate.gates.rounds). SMTP down: a coded failure, retried, the gate waits.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.states import Running

from clausegate.gates import email_links, store, waiting_gates
from clausegate.gates.email_channel import UNREACHABLE, EmailChannel, send_email
from clausegate.gates.model import GateRecord, gate_key
from clausegate.gateway import GatewayConfig, create_app
from clausegate.ops import reminders
from clausegate.review import ladder
from clausegate.review.playbook import Gate
from tests.support.email_gates import MEMBERS, next_round, per_finding_gate, progress_of, smtp_of
from tests.support.gates import FINDINGS, GatewayThread, fixture_deployment_id, state_of
from tests.support.mailbox import Mailbox
from tests.support.prefect_server import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def gateway():
    with GatewayThread(create_app(GatewayConfig())) as server:
        yield server


@pytest.fixture()
def mailbox():
    with Mailbox() as box:
        yield box


def post(url: str) -> httpx.Response:
    return httpx.post(url, timeout=60)


def code_of(response: httpx.Response) -> str:
    return response.text.split("<p id=code class=code>")[1].split("<")[0] if "id=code" in response.text else ""


def test_each_person_decides_their_finding_by_e_mail_and_bad_links_are_refused(gateway, mailbox):
    record = per_finding_gate()
    ref = EmailChannel(smtp_of(mailbox.port, gateway.url)).post(record)
    assert ref.ok and sorted(ref.sent_to) == ["fay@example.com", "lou@example.com"], ref
    mailbox.wait_for(2)
    lou, fay = mailbox.links("lou@example.com"), mailbox.links("fay@example.com")
    assert set(lou) == {("F1", d) for d in ("approve", "changes", "escalate")}  # legal's finding only
    assert set(fay) == {("F2", d) for d in ("approve", "changes", "escalate")}

    page = httpx.get(lou[("F1", "approve")], timeout=60)  # what a mail scanner does: shows, decides nothing
    assert page.status_code == 200 and "Confirm: Approve F1" in page.text and "unlimited" in page.text
    assert httpx.get(lou[("F1", "approve")], timeout=60).status_code == 200
    assert state_of(record.flow_run_id)[0] == "PAUSED" and progress_of(record).get("F1").open_slots == ["legal"]

    wrong = email_links.issue(record.flow_run_id, record.key, "F2", "approve", "lou@example.com", hours=1)
    refused = post(f"{gateway.url}/gates/email/{wrong}")  # signed, but lou is not finance
    assert (refused.status_code, code_of(refused)) == (403, email_links.WRONG_PERSON)
    token = lou[("F1", "approve")].rsplit("/", 1)[1]
    refused = post(f"{gateway.url}/gates/email/{token[:-2]}{'00' if token[-2:] != '00' else '11'}")
    assert (refused.status_code, code_of(refused)) == (403, email_links.FORGED)
    old = email_links.issue(record.flow_run_id, record.key, "F1", "approve", "lou@example.com", hours=1,
                            now=datetime.now(UTC).timestamp() - 7200)
    refused = post(f"{gateway.url}/gates/email/{old}")
    assert (refused.status_code, code_of(refused)) == (410, email_links.EXPIRED)
    assert state_of(record.flow_run_id)[0] == "PAUSED"  # nothing refused was applied

    done = post(lou[("F1", "approve")])
    assert done.status_code == 200 and "F1 approved by lou@example.com" in done.text, done.text
    next_round(record, 1)
    answer = progress_of(record).get("F1").answers["legal"]
    assert (answer.via, answer.verified_user, answer.decision) == ("email", "lou@example.com", "approve")

    replayed = post(lou[("F1", "approve")])
    assert (replayed.status_code, code_of(replayed)) == (409, email_links.REPLAYED)
    reused = post(lou[("F1", "changes")])
    assert (reused.status_code, code_of(reused)) == (409, email_links.REUSED)

    assert post(fay[("F2", "changes")]).status_code == 200
    prog = progress_of(record)
    assert prog.complete and prog.status == "changes_requested"
    assert prog.get("F2").answers["finance"].via == "email"


@pytest.mark.slow
def test_smtp_down_is_a_coded_retried_failure_and_the_gate_keeps_waiting(gateway):
    record = per_finding_gate()
    port = free_port()  # nothing listens here yet
    smtp = smtp_of(port, gateway.url)
    state = send_email(smtp, ["lou@example.com"], "subject", "body", return_state=True)
    assert state.is_failed() and UNREACHABLE in str(state.result(raise_on_failure=False))
    with get_client(sync_client=True) as client:  # 1 + 3 retries; the server records the last one a little later
        wait_until(lambda: client.read_task_run(state.state_details.task_run_id).run_count == 4, 30,
                   what="the send task's fourth run recorded")
    ref = EmailChannel(smtp).post(record)
    assert not ref.ok and UNREACHABLE in ref.error and ref.sent_to == []
    assert state_of(record.flow_run_id)[0] == "PAUSED"
    with Mailbox(port) as box:  # the server is back: the next ladder rung reaches the people
        gate = next(g for g in waiting_gates() if g.flow_run_id == record.flow_run_id)
        assert EmailChannel(smtp).remind(gate, ["lou@example.com", "U0LOU"], 50)
        assert "Reminder: 50%" in box.wait_for(1)[0].get_content()


def open_laddered_gate(rungs: list[dict], sla_hours: float, elapsed_hours: float,
                       submitters: list[str] | None = None) -> GateRecord:
    """A per-finding gate opened ``elapsed_hours`` ago with this ladder, its record as the gate step writes it."""
    hours, steps = ladder.fixed(Gate(category="Uncapped Liability", sla_hours=sla_hours, ladder=rungs).ladder,
                                sla_hours)
    with get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(fixture_deployment_id(client), name="review-laddered")
        client.set_flow_run_state(run.id, Running(), force=True)
        contract = uuid.uuid4().hex * 2
        record = GateRecord(key=gate_key(contract, ["Uncapped Liability"], 1), flow_run_id=str(run.id),
                            contract_id=contract, filename="laddered.pdf", playbook="p",
                            categories=["Uncapped Liability"], findings=[FINDINGS[0].model_copy(update={"id": "F1"})],
                            roles={"Uncapped Liability": ["legal"]}, role_members=MEMBERS, ladder=steps,
                            opened_at=datetime.now(UTC) - timedelta(hours=elapsed_hours), sla_hours=hours,
                            suspend_timeout_seconds=int(hours * 3600 + 7 * 86400), submitters=submitters or [])
        store.write_once(client, run.id, record.record_key, record)
    next_round(record, 0)
    return record


def test_a_two_level_escalation_reaches_each_level_once_by_e_mail(gateway, mailbox):
    rungs = [{"at": "25%", "do": "remind"}, {"at": "50%", "do": "escalate", "to": "lead"},
             {"at": "75%", "do": "escalate", "to": "counsel"}]
    record = open_laddered_gate(rungs, sla_hours=4, elapsed_hours=2.5)  # past 25% and 50%, not 75%
    channels = [EmailChannel(smtp_of(mailbox.port, gateway.url))]

    def sweep():
        return reminders.remind_due([g for g in waiting_gates() if g.flow_run_id == record.flow_run_id], channels,
                                    logging.getLogger("test"))

    first = sweep()
    assert [(e["outcome"], e["percent"], e.get("to")) for e in first] == [("reminded", 25, None),
                                                                          ("escalation_sent", 50, "lead")]
    assert sweep() == []  # each rung acts once
    mailbox.wait_for(2)
    assert mailbox.links("lou@example.com") and mailbox.to("lead@example.com") and not mailbox.to("counsel@example.com")

    with get_client(sync_client=True) as client:  # later: the second level is due (the opening moved back 1 h)
        later = record.model_copy(update={"opened_at": record.opened_at - timedelta(hours=1)})
        gate = next(g for g in waiting_gates() if g.flow_run_id == record.flow_run_id)
        gate = gate.model_copy(update={"record": later, "extras": store.read_extras(client, record.flow_run_id,
                                                                                    record.key)})
    second = reminders.remind_due([gate], channels, logging.getLogger("test"))
    assert [(e["outcome"], e["percent"], e.get("to")) for e in second] == [("escalation_sent", 75, "counsel")]
    mailbox.wait_for(3)
    assert "is late" in mailbox.to("counsel@example.com")[0].get_content()
    assert state_of(record.flow_run_id)[0] == "PAUSED"  # escalation levels tell people; the gate keeps waiting


def test_a_submitter_cannot_approve_their_own_contract_by_e_mail(gateway, mailbox):
    record = open_laddered_gate([], sla_hours=8, elapsed_hours=0, submitters=["U0LOU", "lou@example.com"])
    assert EmailChannel(smtp_of(mailbox.port, gateway.url)).post(record).ok
    links = (mailbox.wait_for(1), mailbox.links("lou@example.com"))[1]
    refused = post(links[("F1", "approve")])
    assert (refused.status_code, code_of(refused)) == (403, email_links.WRONG_PERSON) and "submitted" in refused.text
    assert post(links[("F1", "changes")]).status_code == 200  # changes keep the contract from proceeding: allowed
    assert progress_of(record).get("F1").answers["legal"].decision == "changes"
