"""An .eml taken apart (``clausegate.inbox.email_intake``): the caps (nesting depth, attachment count), HTML bodies,
inline images, a damaged attachment refused alone, and the contract-language rule for bodies."""

from __future__ import annotations

import json
import os
import re
from email.message import EmailMessage

import pytest

from clausegate.config import InboxSettings
from clausegate.inbox import email_intake, eml_sandbox
from clausegate.inbox.contract_language import holds_contract_language
from clausegate.inbox.email_intake import MAX_DEPTH, TOO_DEEP, TOO_MANY_ATTACHMENTS, subject_topic
from clausegate.inbox.eml_sandbox import parse_message
from clausegate.inbox.errors import MalformedMessage, MessageTooComplex, Unavailable
from clausegate.inbox.fields import TOPIC_PATTERN
from tests.support.messages import attach, attach_message, eml_bytes, message

PDF = b"%PDF-1.4\n% a tiny stand-in: the intake checks the magic bytes; the parse checks the rest\n"
CLAUSE = "The Supplier's total liability under this Agreement shall not exceed the fees paid in the prior year."


@pytest.fixture
def settings(tmp_path):
    return InboxSettings(data_dir=tmp_path, max_upload_mb=1.0, max_attachments=2)


def test_nesting_beyond_the_depth_cap_is_refused_for_that_part_only(tmp_path):
    settings = InboxSettings(data_dir=tmp_path, max_upload_mb=1.0)
    innermost = attach(message("level", "Hi"), PDF, "deepest.pdf")
    msg = innermost
    for level in range(MAX_DEPTH + 1):  # MAX_DEPTH + 1 attached messages around it
        msg = attach_message(attach(message(f"level {level}", "Hi"), PDF, f"l{level}.pdf"), msg)
    parsed = parse_message(eml_bytes(msg), settings)
    assert [(n.code, n.part) for n in parsed.refused] == [(TOO_DEEP, "3.3.3.3")], parsed.refused
    assert [d.filename for d in parsed.documents] == ["l3.pdf", "l2.pdf", "l1.pdf", "l0.pdf"]  # 3 levels opened


def test_attachments_past_the_cap_are_refused_one_by_one(settings):
    msg = message("Three drafts", "See attached.")
    for i in range(3):
        attach(msg, PDF + bytes([i]), f"draft-{i}.pdf")
    parsed = parse_message(eml_bytes(msg), settings)
    assert [d.filename for d in parsed.documents] == ["draft-0.pdf", "draft-1.pdf"]
    assert [(n.part, n.code) for n in parsed.refused] == [("4", TOO_MANY_ATTACHMENTS)]


def test_an_html_body_is_read_as_text_and_inline_images_are_ignored(settings):
    msg = EmailMessage()
    msg["From"], msg["Subject"] = "bob@counterparty.example", "FW: cap wording"
    msg.set_content(f"<html><head><style>p {{color: red}}</style><script>alert('x')</script></head><body>"
                    f"<p>{CLAUSE.replace(chr(39), '&#39;')}</p><img src='cid:logo'></body></html>", subtype="html")
    msg.add_related(b"\x89PNG\r\n\x1a\n" + b"\0" * 32, maintype="image", subtype="png", cid="<logo>")
    parsed = parse_message(eml_bytes(msg), settings)
    assert parsed.topic == "cap wording"
    [body] = parsed.documents
    assert body.kind == "text" and body.data.decode() == CLAUSE, body.data
    assert [n.message for n in parsed.skipped] == ["an image (inline or attached) is not reviewed"]


def test_a_damaged_attachment_is_refused_alone(settings):
    msg = attach(message("Two files", "See attached."), PDF, "good.pdf")
    attach(msg, PDF, "bad.pdf")
    raw = eml_bytes(msg)
    good_b64 = raw.split(b"filename=\"bad.pdf\"", 1)[1].split(b"\r\n\r\n", 1)[1].split(b"\r\n", 1)[0]
    damaged = raw.replace(b"filename=\"bad.pdf\"\r\nMIME-Version: 1.0\r\n\r\n" + good_b64,
                          b"filename=\"bad.pdf\"\r\nMIME-Version: 1.0\r\n\r\n" + b"!!!" + good_b64[3:])
    assert damaged != raw
    parsed = parse_message(damaged, settings)
    assert [d.filename for d in parsed.documents] == ["good.pdf"]
    assert [(n.part, n.code) for n in parsed.refused] == [("3", MalformedMessage.code)], parsed.refused


@pytest.mark.parametrize("text, reviewed", [
    (CLAUSE, True),
    ("The Recipient hereby agrees to keep the Confidential Information of the Disclosing Party secret.", True),
    ("Hi Anna, please find the draft agreement and the NDA attached; the liability section is on page 3.", False),
    ("See you on Tuesday. Best, Bob", False),
    ("shall shall shall", False),
])
def test_the_contract_language_rule(text, reviewed):
    assert holds_contract_language(text) is reviewed


def test_subjects_become_topics():
    assert subject_topic("Re: FW: Supply agreement (v3) – redline!") == "Supply agreement v3 redline"
    assert subject_topic("Re:  ") is None and subject_topic(None) is None


@pytest.mark.parametrize("subject", ["Re: FW: Supply agreement (v3) – redline!", "  --- [EXT] ünïcödé ---  ", "@@@",
                                     "Re: " + "x" * 300, "a" + "\u200b" * 5 + "b", "Fwd: Fwd: .hidden", "RE: 1/2 MSA"])
def test_topics_always_match_the_inbox_topic_pattern(subject):
    topic = subject_topic(subject)
    assert topic is None or re.fullmatch(TOPIC_PATTERN, topic), topic


def test_the_gateway_never_reads_a_message_itself(settings, monkeypatch):
    """The parse runs in the sandboxed child: broken in this process, it still works."""
    def not_here(*args, **kwargs):
        raise AssertionError("read_message was called in the gateway's process")

    monkeypatch.setattr(email_intake, "read_message", not_here)
    parsed = parse_message(eml_bytes(attach(message("One file", "See attached."), PDF, "draft.pdf")), settings)
    assert [(d.part, d.kind, d.filename, d.data) for d in parsed.documents] == [("2", "pdf", "draft.pdf", PDF)]


def test_a_message_that_needs_more_than_the_memory_cap_is_refused_whole(tmp_path):
    big = eml_bytes(attach(message("Big", "See attached."), PDF + os.urandom(20_000_000), "big.pdf"))
    capped = InboxSettings(data_dir=tmp_path, max_upload_mb=30, eml_memory_mb=128)
    with pytest.raises(MessageTooComplex, match="128 MB memory cap") as info:
        parse_message(big, capped)
    assert info.value.http_status == 422 and "CLAUSEGATE_INBOX_EML_MEMORY_MB" in info.value.hint
    parsed = parse_message(big, InboxSettings(data_dir=tmp_path, max_upload_mb=30))  # the default cap: 1024 MB
    assert [len(d.data) for d in parsed.documents] == [len(PDF) + 20_000_000]


def test_a_message_that_cannot_be_read_in_time_is_refused_whole(tmp_path):
    slow = InboxSettings(data_dir=tmp_path, eml_timeout_seconds=0.001)  # (a Python child cannot even start in 1 ms)
    with pytest.raises(MessageTooComplex, match="within 0.001 s"):
        parse_message(eml_bytes(message("Cap wording", CLAUSE)), slow)


def _answer(documents, blobs=b""):
    head = {"ok": True, "message_id": "msg-1", "header_message_id": None, "subject": "s", "from_header": None,
            "documents": documents, "refused": [], "skipped": []}
    return json.dumps(head).encode() + b"\n" + blobs


@pytest.mark.parametrize("out", [
    b"not json",
    _answer([{"part": "2", "kind": "pdf", "filename": "../../etc/cron.d/x", "size": 0}]),
    _answer([{"part": "2", "kind": "exe", "filename": "x.exe", "size": 0}]),
    _answer([{"part": "2; rm", "kind": "pdf", "filename": "x.pdf", "size": 0}]),
    _answer([{"part": "2", "kind": "pdf", "filename": "x.pdf", "size": 10}], b"short"),
    _answer([{"part": "2", "kind": "pdf", "filename": "x.pdf", "size": 2}], b"%Ptrailing"),
])
def test_an_answer_from_the_child_is_checked_before_it_is_believed(out):
    with pytest.raises(Unavailable):
        eml_sandbox._answer(out)
    assert eml_sandbox._answer(_answer([{"part": "2", "kind": "pdf", "filename": "x.pdf", "size": 5}],
                                       b"%PDF-")).documents[0].data == b"%PDF-"
