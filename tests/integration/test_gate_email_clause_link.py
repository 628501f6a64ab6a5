"""The gate e-mail carries the signed link to the annotated copy (sent over a real local SMTP server by the channel's
Prefect task), and none when the review has no copy the gateway can serve."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from clausegate.config import settings
from clausegate.gates import annotated_links
from clausegate.gates.email_channel import EmailChannel
from clausegate.gates.model import Finding, GateRecord, text_sha256
from tests.support.email_gates import smtp_of
from tests.support.mailbox import Mailbox

pytestmark = pytest.mark.usefixtures("prefect_server")
SHA = "7a" * 32
NAME = f"msa-{SHA[:12]}-default.annotated.pdf"
PUBLIC = "https://gates.example.com"


def record() -> GateRecord:
    text = "Supplier's liability shall be unlimited."
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id=SHA,
                      filename="msa.pdf", playbook="default", categories=["Uncapped Liability"],
                      findings=[Finding(id="F1", category="Uncapped Liability", pages=[4], text=text, confidence=0.9,
                                        where="p. 4", text_sha256=text_sha256(text))],
                      opened_at=datetime.now(UTC), sla_hours=24, suspend_timeout_seconds=86400,
                      allowed_addresses=["lou@example.com"], annotated=NAME)


def test_the_gate_e_mail_links_the_annotated_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_GATEWAY_PUBLIC_URL", PUBLIC)
    folder = settings().inbox.reports_dir
    folder.mkdir(parents=True)
    with Mailbox() as mailbox:
        channel = EmailChannel(smtp_of(mailbox.port, "http://127.0.0.1:9"))
        assert channel.post(record()).ok
        body = mailbox.wait_for(1)[0].get_content()
        assert "/annotated/" not in body  # no copy in the folder the gateway serves: no link
        (folder / NAME).write_bytes(b"%PDF-1.7 annotated")
        assert channel.post(record()).ok
        body = mailbox.wait_for(2)[1].get_content()
    found = re.search(rf"The contract with each finding marked: ({re.escape(PUBLIC)}/annotated/(\S+))", body)
    assert found, body
    assert annotated_links.read(found.group(2)).file == NAME
