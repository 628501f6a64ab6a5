"""A gate's signed, expiring link to the annotated copy: the token (valid, expired, forged, another kind's, another
file's) and the link a gate record gets (the gateway serving it: tests/integration/test_annotated_link_gateway.py)."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime

import pytest

from clausegate.config import settings
from clausegate.gates import annotated_links, email_links
from clausegate.gates.annotated_links import EXPIRED, FORGED, AnnotatedLinkRefused
from clausegate.gates.model import GateRecord

SHA = "ab12cd34ef56" + "0" * 52
NAME = f"msa-{SHA[:12]}-default.annotated.docx"
OTHER = f"nda-{'9' * 12}-default.annotated.docx"
DOCX = b"PK\x03\x04 an annotated .docx"
KEY = b"k" * 32


@pytest.fixture()
def reports(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "false")
    folder = settings().inbox.reports_dir
    folder.mkdir(parents=True)
    return folder


def _body(token: str) -> dict:
    body = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def _with_body(token: str, **change) -> str:
    body = base64.urlsafe_b64encode(json.dumps({**_body(token), **change}).encode()).rstrip(b"=").decode()
    return f"{body}.{token.split('.')[1]}"


def test_a_token_names_its_contract_playbook_file_and_expiry():
    now = 1_800_000_000
    token = annotated_links.issue(SHA, "default", NAME, hours=24, key=KEY, now=now)
    link = annotated_links.read(token, key=KEY, now=now + 3600)
    assert (link.sha256, link.playbook, link.file, link.exp) == (SHA, "default", NAME, now + 24 * 3600)
    with pytest.raises(AnnotatedLinkRefused) as expired:
        annotated_links.read(token, key=KEY, now=now + 24 * 3600 + 1)
    assert expired.value.code == EXPIRED and expired.value.http_status == 410


def test_a_changed_made_up_or_other_kind_of_token_is_forged():
    token = annotated_links.issue(SHA, "default", NAME, hours=24, key=KEY)
    decision = email_links.issue("run", "gate", "F1", "approve", "lou@example.com", hours=24, key=KEY)
    other_kind = email_links.issue("run", "gate", "F1", "approve", "lou@example.com", hours=24,
                                   key=email_links.signing_key(annotated_links.KEY_CONTEXT))
    forged = [
        _with_body(token, file=OTHER),                      # another file under the same signature
        _with_body(token, exp=_body(token)["exp"] + 10**6),  # a longer life
        token[:-2] + ("00" if not token.endswith("00") else "11"),  # a changed signature
        token.split(".")[0],                                # no signature
        "",                                                 # nothing
        annotated_links.issue(SHA, "default", NAME, hours=24, key=b"x" * 32),  # another key
        other_kind,                                         # our key for this kind, a decision link's content
    ]
    for bad in forged:
        with pytest.raises(AnnotatedLinkRefused) as refused:
            annotated_links.read(bad, key=KEY)
        assert refused.value.code == FORGED and refused.value.http_status == 403, bad
    # the kinds' keys differ: a decision link does not verify as an annotated link, nor the other way
    with pytest.raises(AnnotatedLinkRefused):
        annotated_links.read(decision)
    with pytest.raises(email_links.LinkRefused):
        email_links.read(annotated_links.issue(SHA, "default", NAME, hours=1))


def test_a_file_name_with_a_folder_is_never_signed():
    with pytest.raises(ValueError):
        annotated_links.issue(SHA, "default", "../" + NAME, hours=1, key=KEY)


def _record(name: str | None, sla_hours: float = 8) -> GateRecord:
    return GateRecord(key="gate-r1-abc", flow_run_id="0b9c0000-0000-0000-0000-000000000001", contract_id=SHA,
                      filename="msa.docx", playbook="default", categories=["Uncapped Liability"], findings=[],
                      opened_at=datetime(2026, 12, 7, tzinfo=UTC), sla_hours=sla_hours, suspend_timeout_seconds=9,
                      annotated=name)


def test_a_record_links_its_copy_only_when_the_gateway_can_serve_it(reports, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_GATEWAY_PUBLIC_URL", "https://gates.example.com/")
    assert annotated_links.record_link(_record(None)) is None  # annotation off or failed
    assert annotated_links.record_link(_record(NAME)) is None  # not in the reports folder the gateway serves
    (reports / NAME).write_bytes(DOCX)
    now = time.time()
    url = annotated_links.record_link(_record(NAME), now=now)
    assert url.startswith("https://gates.example.com/annotated/")
    link = annotated_links.read(url.rsplit("/", 1)[1])
    assert link.file == NAME and link.exp == int(now + 8 * 3600)  # the gate's SLA
    monkeypatch.setenv("CLAUSEGATE_GATEWAY_ANNOTATED_LINK_HOURS", "2")
    url = annotated_links.record_link(_record(NAME), now=now)
    assert annotated_links.read(url.rsplit("/", 1)[1]).exp == int(now + 2 * 3600)  # the setting
