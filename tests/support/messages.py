"""Files the intake tests build: a minimal Word .docx (raw OOXML via zipfile) and .eml messages (the standard
library's ``email`` package), with attachments and an attached (nested) message."""

from __future__ import annotations

import hashlib
import io
import zipfile
from email.message import EmailMessage
from email.policy import SMTP
from xml.sax.saxutils import escape

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
    'wordprocessingml.document.main+xml"/></Types>')
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    'officeDocument" Target="word/document.xml"/></Relationships>')


def docx_bytes(paragraphs: list[str]) -> bytes:
    """A minimal, valid .docx whose body is ``paragraphs`` (what Word needs to open it: three parts)."""
    body = "".join(f"<w:p><w:r><w:t xml:space=\"preserve\">{escape(p)}</w:t></w:r></w:p>" for p in paragraphs)
    document = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
                f"<w:body>{body}</w:body></w:document>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", document)
    return buffer.getvalue()


def message(subject: str, body: str, *, sender: str = "Bob Counsel <bob@counterparty.example>",
            html: str | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "legal@acme.example"
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{hashlib.sha256(subject.encode()).hexdigest()[:16]}@counterparty.example>"
    msg.set_content(body)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return msg


def attach(msg: EmailMessage, data: bytes, filename: str, mime: str = "application/pdf") -> EmailMessage:
    maintype, subtype = mime.split("/", 1)
    msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=filename)
    return msg


def attach_message(msg: EmailMessage, inner: EmailMessage) -> EmailMessage:
    msg.add_attachment(inner)  # message/rfc822
    return msg


def eml_bytes(msg: EmailMessage) -> bytes:
    return msg.as_bytes(policy=SMTP)
