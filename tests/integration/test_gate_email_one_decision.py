"""A one-decision gate answered by e-mail, against a real local SMTP server (aiosmtpd) and the gateway on uvicorn.

The gate's allowed addresses get one e-mail with the contract's findings and three links for the whole contract;
GET shows the findings and decides nothing; only the confirming POST decides, ``via: email`` with the link's
address verified, through the same permission check as the other channels (an address not allowed on the gate is
refused with ``CG-EMAIL-LINK-WRONG-PERSON``; a submitter's own approval likewise).
"""

from __future__ import annotations

import httpx
import pytest
from prefect.client.orchestration import get_client

from clausegate.gates import email_links, store, waiting_gates
from clausegate.gates.email_channel import EmailChannel
from clausegate.gateway import GatewayConfig, create_app
from clausegate.ops import reminders
from tests.support.email_gates import one_decision_gate, smtp_of
from tests.support.gates import GatewayThread, state_of
from tests.support.mailbox import Mailbox

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


@pytest.fixture(scope="module")
def gateway():
    with GatewayThread(create_app(GatewayConfig())) as server:
        yield server


@pytest.fixture()
def mailbox():
    with Mailbox() as box:
        yield box


def code_of(response: httpx.Response) -> str:
    return response.text.split("<p id=code class=code>")[1].split("<")[0] if "id=code" in response.text else ""


def test_an_allowed_address_decides_a_one_decision_gate_by_e_mail(gateway, mailbox):
    record = one_decision_gate(["lou@example.com"], reviewers=["U0LOU"])
    ref = EmailChannel(smtp_of(mailbox.port, gateway.url)).post(record)
    assert ref.ok and ref.sent_to == ["lou@example.com"], ref
    mailbox.wait_for(1)
    links = mailbox.links("lou@example.com")
    assert set(links) == {("gate", d) for d in ("approve", "changes", "escalate")}
    body = mailbox.to("lou@example.com")[0].get_content()
    assert all(f.category in body for f in record.findings)  # every finding, one decision

    page = httpx.get(links[("gate", "approve")], timeout=60)  # a mail scanner's fetch decides nothing
    assert page.status_code == 200 and "Confirm: Approve" in page.text and "the contract" in page.text
    assert state_of(record.flow_run_id)[0] == "PAUSED"

    eve = email_links.issue(record.flow_run_id, record.key, email_links.WHOLE_GATE, "approve", "eve@example.com",
                            hours=1)  # signed by us, but eve is not allowed on this gate
    refused = httpx.post(f"{gateway.url}/gates/email/{eve}", timeout=60)
    assert (refused.status_code, code_of(refused)) == (403, email_links.WRONG_PERSON)
    assert state_of(record.flow_run_id)[0] == "PAUSED"

    done = httpx.post(links[("gate", "changes")], timeout=60)
    assert done.status_code == 200 and "The contract requested changes by lou@example.com" in done.text, done.text
    assert state_of(record.flow_run_id)[1] in {"Resuming", "Scheduled"}  # resumed by the answer
    with get_client(sync_client=True) as client:
        info = store.read_decision(client, record.flow_run_id, record.key)
    assert (info.decision, info.via, info.verified_user) == ("changes", "email", "lou@example.com")
    again = httpx.post(links[("gate", "approve")], timeout=60)  # the gate is decided: no second answer
    assert again.status_code == 409


def test_a_one_decision_gate_reminds_its_addresses_with_fresh_links(gateway, mailbox):
    record = one_decision_gate(["lou@example.com", "fay@example.com"])
    gate = next(g for g in waiting_gates() if g.flow_run_id == record.flow_run_id)
    people = reminders._people(record, None)
    assert {"lou@example.com", "fay@example.com"} <= set(people)
    assert EmailChannel(smtp_of(mailbox.port, gateway.url)).remind(gate, people, 50)
    mailbox.wait_for(2)
    assert "Reminder: 50%" in mailbox.to("fay@example.com")[0].get_content()
    assert set(mailbox.links("fay@example.com")) == {("gate", d) for d in ("approve", "changes", "escalate")}
