"""An ``.eml`` upload taken apart: the documents to review in it, and what was refused or skipped, part by part.

Parsed by the standard library's ``email`` package with ``email.policy.default`` and ``raise_on_defect=True``: a
malformed header block or MIME structure (a header line without a colon, a multipart without its boundary, ...)
refuses the whole message (``CG-INBOX-EML-MALFORMED``), and so does a header whose value does not parse
(an invalid address or date; RFC 5322's obsolete syntax is accepted).  Then, walking the MIME tree:

* each message's body (its first ``text/plain`` part, else its first ``text/html`` one, converted to text by
  ``clausegate.inbox.html_text``) is reviewed as text when it holds contract language
  (``clausegate.inbox.contract_language``), else skipped; an HTML body's hidden text (``display:none``, ...) and
  drawings' text (``<svg>``) are left out, each said in a skipped note quoting it;
* every attachment of a format the format table takes as one (:data:`clausegate.review.document.registry.
  ATTACHMENT_FORMATS`: PDF, Word .docx) is a document of its own (checked by content: a ``.pdf`` that is
  not one is refused with ``CG-INBOX-NOT-PDF``, an encrypted .docx with ``CG-INBOX-NOT-DOCX`` saying so); images
  (inline or not), ZIP archives (never opened) and other files are skipped, each with its reason;
* an attached message (``message/rfc822``) is walked the same way, ``MAX_DEPTH`` levels deep at most
  (deeper: ``CG-INBOX-EML-TOO-DEEP``, for that part);
* an attachment over the upload cap is refused (``CG-INBOX-TOO-LARGE``), judged by its encoded size before it
  is decoded; attachments past ``max_attachments`` are refused (``CG-INBOX-EML-TOO-MANY-ATTACHMENTS``); each
  refusal is for its part alone and the other documents go through.  More than ``MAX_PARTS`` MIME parts, or
  multiparts nested too deeply for the parser (it recurses once per level), refuse the message.

``From:`` and ``Subject:`` are kept as metadata (the subject becomes the tasks' topic); the sender of the
tasks is always the API key's.

This module runs in the e-mail parser's sandboxed child (:mod:`clausegate.inbox.eml_sandbox`, under a time and a
memory cap): it imports nothing heavy, and :func:`read_message` is called there, never in the gateway itself.
"""

from __future__ import annotations

import email.policy
import hashlib
import re
from dataclasses import dataclass, field
from email.errors import MessageDefect, ObsoleteHeaderDefect
from email.message import EmailMessage
from email.parser import BytesParser

from clausegate.inbox.contract_language import holds_contract_language
from clausegate.inbox.errors import MalformedMessage, clip
from clausegate.inbox.html_text import read_html
from clausegate.inbox.magic import ENCRYPTED_PACKAGE, OLE_MAGIC, ZIP_MAGIC, Kind, suffix_of
from clausegate.review.document import registry

POLICY = email.policy.default.clone(raise_on_defect=True)
MAX_DEPTH = 3  # attached messages inside attached messages
MAX_PARTS = 500  # MIME parts in one message, nested ones included
TOO_DEEP = "CG-INBOX-EML-TOO-DEEP"
TOO_MANY_ATTACHMENTS = "CG-INBOX-EML-TOO-MANY-ATTACHMENTS"
ENVELOPE = ("from", "to", "subject", "date", "message-id", "mime-version")
LEGACY_WORD = ("application/msword", ".doc")  # a Word claim no format reads: refused with the next step
REVIEWED = " and ".join(registry.display(k) for k in registry.ATTACHMENT_FORMATS)  # "PDF and Word .docx"


@dataclass(frozen=True)
class MessageLimits:
    """The inbox settings the walk needs (``InboxSettings``'s, passed to the child as plain numbers)."""

    max_upload_bytes: int
    max_upload_mb: float
    max_attachments: int


@dataclass(frozen=True)
class Document:
    """A part to review: the message body as text, or a PDF/DOCX attachment."""

    part: str  # "body", "2", "3.body", "3.1": where it sits in the MIME tree
    kind: Kind
    filename: str
    data: bytes


@dataclass(frozen=True)
class PartNote:
    """A part that was refused (``code`` set) or skipped (``code`` None: not a document to review)."""

    part: str
    filename: str | None
    message: str
    code: str | None = None
    hint: str = ""


@dataclass
class ParsedMessage:
    message_id: str  # ours: the message's content hash (stable: the same .eml is the same message)
    header_message_id: str | None
    subject: str | None
    from_header: str | None
    documents: list[Document] = field(default_factory=list)
    refused: list[PartNote] = field(default_factory=list)
    skipped: list[PartNote] = field(default_factory=list)

    @property
    def topic(self) -> str | None:
        return subject_topic(self.subject)


def _header_text(message: EmailMessage, name: str, limit: int = 200) -> str | None:
    value = message.get(name)
    return clip(" ".join(str(value).split()), limit) if value is not None else None


def _check_headers(message: EmailMessage, where: str) -> None:
    """MalformedMessage when a header's value does not parse (the policy records those on the header)."""
    for name, value in message.items():
        bad = [d for d in getattr(value, "defects", ()) if not isinstance(d, ObsoleteHeaderDefect)]
        if bad:
            raise MalformedMessage(f"{where}: the header '{clip(name, 60)}' is malformed "
                                   f"({type(bad[0]).__name__}: {clip(str(bad[0]) or 'no detail', 120)})",
                                   hint="send the message as the mail client exported it, unedited")


def _parse(data: bytes, where: str) -> EmailMessage:
    try:
        message = BytesParser(policy=POLICY).parsebytes(data)
        if not any(name.lower() in ENVELOPE for name in message.keys()):
            raise MalformedMessage(f"{where} has no e-mail headers (From, To, Subject, Date, Message-ID)",
                                   hint="export the message from the mail client as .eml (RFC 5322)")
        _check_headers(message, where)
    except MessageDefect as defect:
        raise MalformedMessage(f"{where} is malformed: {type(defect).__name__}"
                               + (f" ({clip(str(defect), 120)})" if str(defect).strip() else ""),
                               hint="send the message as the mail client exported it, unedited") from None
    return message


def read_message(data: bytes, limits: MessageLimits) -> ParsedMessage:
    """The message's documents, refusals and skipped parts (see the module docstring). In the sandboxed child only:
    the gateway calls :func:`clausegate.inbox.eml_sandbox.parse_message`."""
    try:
        return _parse_message(data, limits)
    except RecursionError:  # the stdlib parser and walk() recurse once per nested multipart: ~1,000 levels
        raise MalformedMessage("the e-mail nests its MIME parts too deeply to be read",
                               hint="send the contract documents in a simpler message, or upload them one by one"
                               ) from None


def _parse_message(data: bytes, limits: MessageLimits) -> ParsedMessage:
    message = _parse(data, "the e-mail")
    parts = sum(1 for _ in message.walk())
    if parts > MAX_PARTS:
        raise MalformedMessage(f"the e-mail has {parts} MIME parts, more than {MAX_PARTS}",
                               hint="send the contract documents in a simpler message, or upload them one by one")
    parsed = ParsedMessage(message_id="msg-" + hashlib.sha256(data).hexdigest()[:20],
                           header_message_id=_header_text(message, "Message-ID"),
                           subject=_header_text(message, "Subject"), from_header=_header_text(message, "From"))
    _Walker(parsed, limits).message(message, "", depth=0)
    return parsed


class _Walker:
    def __init__(self, parsed: ParsedMessage, limits: MessageLimits) -> None:
        self.parsed, self.limits, self.attachments = parsed, limits, 0

    def refuse(self, part: str, filename: str | None, code: str, message: str, hint: str) -> None:
        self.parsed.refused.append(PartNote(part, filename, message, code, hint))

    def skip(self, part: str, filename: str | None, why: str) -> None:
        self.parsed.skipped.append(PartNote(part, filename, why))

    def unseen(self, part: str, pieces: list[str], why: str) -> None:
        """Say what of a body was left out (``pieces``: its text, quoted in part)."""
        if pieces:
            joined = " | ".join(pieces)
            self.skip(part, None, f"{why} ({len(pieces)} element(s)): “{clip(joined, 160)}”")

    def message(self, message: EmailMessage, prefix: str, depth: int) -> None:
        bodies: list[tuple[str, EmailMessage]] = []
        body_part = (prefix + ".body") if prefix else "body"
        if message.is_multipart():
            self.walk(message, prefix, depth, bodies)
        elif _is_body(message):  # a single-part message: the message is its body
            bodies.append((body_part, message))
        else:  # a message that is one attachment (e.g. Content-Type: application/pdf)
            self.attachment(message, (prefix + ".1") if prefix else "1")
        chosen = next((b for b in bodies if b[1].get_content_type() == "text/plain"), None) or next(iter(bodies), None)
        if chosen is None:
            return
        try:
            text = chosen[1].get_content()
        except (MessageDefect, LookupError, ValueError) as error:
            self.refuse(body_part, None, MalformedMessage.code,
                        f"the body could not be decoded ({type(error).__name__})",
                        "send the message as the mail client exported it")
            return
        if chosen[1].get_content_type() == "text/html":
            html = read_html(text)
            text = html.text
            self.unseen(body_part, html.hidden, "hidden text in the HTML body (display:none, visibility:hidden, "
                        "font-size:0, opacity:0 or the hidden attribute) was left out: a reader of the message "
                        "does not see it")
            self.unseen(body_part, html.skipped, "text inside a drawing or formula (<svg>, <math>) in the HTML "
                        "body was not read")
            self.unseen(body_part, html.unjudged_css, "the HTML body's stylesheet hides elements by selectors "
                        "ClauseGate does not apply, so text they hide may have been reviewed as visible: read the "
                        "message in a mail client before relying on the review")
        if not holds_contract_language(text):
            self.skip(body_part, None, "the body holds no contract language (reviewed only when it has at least 3 "
                                       "contract cues, one of them an operative verb such as 'shall')")
            return
        encoded = text.encode("utf-8", "replace")
        if len(encoded) > self.limits.max_upload_bytes:
            self.refuse(body_part, None, "CG-INBOX-TOO-LARGE", f"the body is over the inbox limit of "
                        f"{self.limits.max_upload_mb:g} MB", "send the contract as an attachment or split it")
            return
        subject = _header_text(message, "Subject")
        name = (_slug(subject_topic(subject)) or "message") + ("-body" if not prefix else f"-{prefix}-body") + ".txt"
        self.parsed.documents.append(Document(body_part, "text", name, encoded))

    def walk(self, node: EmailMessage, prefix: str, depth: int, bodies: list) -> None:
        for index, part in enumerate(node.iter_parts(), start=1):
            where = f"{prefix}.{index}" if prefix else str(index)
            ctype = part.get_content_type()
            if ctype == "message/rfc822":
                self.nested(part, where, depth)
            elif part.is_multipart():
                self.walk(part, where, depth, bodies)
            elif _is_body(part):
                bodies.append((where, part))
            else:
                self.attachment(part, where)

    def nested(self, part: EmailMessage, where: str, depth: int) -> None:
        if depth + 1 > MAX_DEPTH:
            self.refuse(where, None, TOO_DEEP, f"an attached message nested more than {MAX_DEPTH} levels deep "
                        "was not opened", "forward the innermost message itself")
            return
        inner = part.get_content()
        try:
            _check_headers(inner, f"the attached message at part {where}")
        except MalformedMessage as error:
            self.refuse(where, None, error.code, error.message, error.hint)
            return
        self.message(inner, where, depth + 1)

    def attachment(self, part: EmailMessage, where: str) -> None:
        ctype = part.get_content_type()
        name = part.get_filename()
        shown = clip(name, 120) if name else None
        if part.get_content_maintype() == "image":
            self.skip(where, shown, "an image (inline or attached) is not reviewed")
            return
        claimed = _claimed(name, ctype)
        claims_pdf = claimed == "pdf"
        claims_word = claimed not in (None, "pdf") or ctype in LEGACY_WORD or suffix_of(name or "") in LEGACY_WORD
        cap = self.limits.max_upload_bytes
        encoded = part.get_payload()
        if isinstance(encoded, str):
            cte = part.get("content-transfer-encoding", "").strip().lower()
            estimate = len(encoded) * 3 // 4 if cte == "base64" else len(encoded)
            if estimate > cap + 4:
                self.refuse(where, shown, "CG-INBOX-TOO-LARGE", f"the attachment {shown or where} is about "
                            f"{estimate / 1024 / 1024:.1f} MB, over the inbox limit of "
                            f"{self.limits.max_upload_mb:g} MB",
                            "send it on its own (split it or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB)")
                return
        try:
            data = part.get_content()
        except (MessageDefect, LookupError, ValueError) as error:
            self.refuse(where, shown, MalformedMessage.code, f"the attachment {shown or where} could not be decoded "
                        f"({type(error).__name__})", "send it on its own")
            return
        data = data.encode("utf-8", "replace") if isinstance(data, str) else data
        kind = _document_kind(data, name, ctype)
        if kind is None:
            if data.startswith(ZIP_MAGIC) and not claims_word:
                self.skip(where, shown, f"a ZIP archive is not opened (only {REVIEWED} files are reviewed): "
                                        "attach the documents in it themselves")
            elif claims_pdf:
                self.refuse(where, shown, "CG-INBOX-NOT-PDF", f"the attachment {shown or where} is named or typed "
                            "as a PDF but its bytes are not one", "attach the PDF itself")
            elif claims_word:
                ole = data.startswith(OLE_MAGIC)
                encrypted = ole and ENCRYPTED_PACKAGE in data
                self.refuse(where, shown, "CG-INBOX-NOT-DOCX", f"the attachment {shown or where} is "
                            + ("a password-protected (encrypted) Word document" if encrypted else
                               "a legacy binary Word document (.doc)" if ole else "not a Word .docx file"),
                            "remove the password in Word and send the .docx again (or a PDF)" if encrypted else
                            "save it as .docx (or PDF) and send that")
            else:
                self.skip(where, shown, f"a {ctype} attachment (only {REVIEWED} files are reviewed)")
            return
        if len(data) > cap:
            self.refuse(where, shown, "CG-INBOX-TOO-LARGE", f"the attachment {shown or where} is "
                        f"{len(data) / 1024 / 1024:.1f} MB, over the inbox limit of {self.limits.max_upload_mb:g} MB",
                        "send it on its own (split it or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB)")
            return
        self.attachments += 1
        if self.attachments > self.limits.max_attachments:
            self.refuse(where, shown, TOO_MANY_ATTACHMENTS, f"the e-mail has more than "
                        f"{self.limits.max_attachments} document attachments; {shown or where} was not taken",
                        "send the rest in another message or upload them one by one")
            return
        filename = _safe_name(name) or f"attachment-{where}"
        filename = registry.stored_name(filename, kind)
        self.parsed.documents.append(Document(where, kind, filename, data))


def _is_body(part: EmailMessage) -> bool:
    """A text part that is not an attached file: a candidate for the message's body."""
    return (part.get_content_type() in ("text/plain", "text/html") and not part.get_filename()
            and part.get_content_disposition() != "attachment")


def _claimed(name: str | None, ctype: str) -> str | None:
    """The attachment format the name (else the content type) claims; None when it claims none."""
    row = registry.by_suffix(name or "") or registry.by_mime(ctype)
    return row.name if row is not None and row.name in registry.ATTACHMENT_FORMATS else None


def _document_kind(data: bytes, name: str | None, ctype: str) -> Kind | None:
    """The attachment's format by its bytes (what its head proves, a PDF or an ODF), else a ZIP format its name or
    type claims (a .docx: the parse checks the archive); None when it is none the table takes as an attachment."""
    proven = registry.head_format(data[:1024])
    if proven is not None:
        return proven.name if proven.name in registry.ATTACHMENT_FORMATS else None  # type: ignore[return-value]
    claimed = _claimed(name, ctype)
    if data.startswith(ZIP_MAGIC) and claimed is not None and registry.FORMATS[claimed].zip_part:
        return claimed  # type: ignore[return-value]
    return None


def _safe_name(name: str | None) -> str:
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._")[:120]


def _slug(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text or "").strip("-")[:60].lower()


def subject_topic(subject: str | None) -> str | None:
    """A subject as an inbox topic: reply/forward prefixes dropped, only the topic's characters, 80 at most."""
    text = subject or ""
    while True:
        stripped = re.sub(r"^\s*(re|fw|fwd|aw|wg|tr)\s*(\[\d+\])?\s*:\s*", "", text, flags=re.I)
        if stripped == text:
            break
        text = stripped
    text = re.sub(r"[^A-Za-z0-9 ._:/@-]+", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"^[^A-Za-z0-9]+", "", text)[:80].rstrip()
    return text or None  # (so it matches clausegate.inbox.fields.TOPIC_PATTERN: tests/unit/test_email_intake.py)
