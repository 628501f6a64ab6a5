"""Which kind of document a submission is, judged at intake: a row of the format table
(:mod:`clausegate.review.document.registry`: PDF, Word .docx, OpenDocument .odt, text .txt/.md, or the e-mail
envelope .eml).

The content decides what its first bytes prove (``%PDF-`` in its first KB; an OpenDocument text's ``mimetype`` entry
first in its ZIP), whatever its name. A name that states another kind must agree with the content: a ZIP named
``.docx`` or ``.odt`` (with the whole file at hand, the parse's own sniff says which ZIP format it is), UTF-8 text
without NUL bytes named ``.txt``/``.md``, a message named ``.eml`` (the e-mail parser then judges it:
``clausegate.inbox.email_intake``); text named ``.pdf`` is refused. Text (an upload, pasted ``content``) is judged
by the parser's own rule (:func:`clausegate.review.document.plain_text.is_text` on the same first 64 KiB): text the
review would refuse, such as terminal output full of colour codes, is refused here with ``CG-INBOX-NOT-TEXT``. A
name that states no kind (a link's ``…/draft``, a referenced ``contract``) leaves it to the parse's own sniff of the
whole file (``clausegate.review.document.formats.sniff``) where the whole file is at hand (path and URL sources).
Anything else is refused with 415 and the next step. The parse (in the sandbox) checks the document itself.
"""

from __future__ import annotations

import codecs
import re

from clausegate.errors import DocumentError
from clausegate.inbox.errors import NotDocx, NotPdf, NotText
from clausegate.inbox.magic import ENCRYPTED_PACKAGE, OLE_MAGIC, ZIP_MAGIC, Kind, suffix_of  # noqa: F401 (intake's)
from clausegate.review.document import formats, plain_text, registry
from clausegate.review.document.sandbox import check_pdf_magic

TEXT_SUFFIXES = registry.FORMATS["text"].suffixes
ACCEPTED = ", ".join(row.display if row.suffixes[0] in row.display else f"{row.display} ({', '.join(row.suffixes)})"
                     for row in registry.ROWS)


class ContentProbe:
    """What the kind check needs of a file that streams in: its first bytes and whether all of it is UTF-8
    text without NUL bytes (an incremental decoder: one chunk held, whatever the size)."""

    HEAD = 1024

    def __init__(self) -> None:
        self.head = b""
        self.sample = b""  # the bytes the parser judges text by (plain_text.is_text: its first 64 KiB)
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.is_text = True
        self.encrypted_package = False  # an OLE file naming an EncryptedPackage stream: a password-protected .docx
        self._tail = b""  # the last bytes of the previous chunk, so the stream name is found across a chunk boundary

    def feed(self, chunk: bytes) -> None:
        if len(self.head) < self.HEAD:
            self.head += chunk[: self.HEAD - len(self.head)]
        if len(self.sample) < plain_text.SNIFF_BYTES:
            self.sample += chunk[: plain_text.SNIFF_BYTES - len(self.sample)]
        if not self.encrypted_package and self.head.startswith(OLE_MAGIC):
            window = self._tail + chunk
            self.encrypted_package = ENCRYPTED_PACKAGE in window
            self._tail = window[-(len(ENCRYPTED_PACKAGE) - 1):]
        if self.is_text:
            try:
                self._decoder.decode(chunk)
                self.is_text = b"\x00" not in chunk
            except UnicodeDecodeError:
                self.is_text = False

    def finish(self) -> ContentProbe:
        if self.is_text:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                self.is_text = False
        return self

    @classmethod
    def of(cls, data: bytes) -> ContentProbe:
        probe = cls()
        probe.feed(data)
        return probe.finish()


def kind_of(name: str, probe: ContentProbe, data: bytes | None = None) -> Kind:
    """The document kind of a file called ``name`` whose content ``probe`` saw (``data``: all of it, when at hand);
    415 (coded) when it is none."""
    proven = registry.head_format(probe.head)
    if proven is not None:
        return proven.name  # type: ignore[return-value]
    try:
        check_pdf_magic(name, probe.head)  # not a PDF (head_format said so): the PDF check's words for what it is
        raise DocumentError(f"'{name}' is a ZIP archive, not a PDF")
    except DocumentError as error:
        not_pdf = error
    row = registry.by_suffix(name)
    if data is not None and row is None:
        try:
            return formats.sniff(name, data)  # a name that says nothing: the bytes decide, as in the parse
        except DocumentError as error:
            raise NotPdf(error.message, hint=f"{error.hint.rstrip('.')}; the inbox takes {ACCEPTED}.") from None
    if data is not None and row is not None and not row.envelope:
        sniffed = _sniffed(name, data)  # the whole file at hand: a document the parse reads is that document
        if sniffed is not None and sniffed != "text":  # (text named .pdf or .docx stays refused below)
            return sniffed
    if row is not None and (row.zip_part or row.zip_mimetype):
        if probe.head.startswith(ZIP_MAGIC):
            return _zip_kind(name, row.name, data)
        if probe.encrypted_package:
            raise NotDocx(f"'{name}' is a password-protected (encrypted) Word document: its text can only be read "
                          "with the password, which ClauseGate never asks for",
                          hint="open it in Word, remove the password (File > Info > Protect Document > Encrypt with "
                          "Password, clear it), save it as .docx and send that file (or export it as PDF)")
        legacy = probe.head.startswith(OLE_MAGIC)
        raise NotDocx(f"'{name}' is not a {row.display} file: it is "
                      + ("a legacy binary Word document (.doc)" if legacy else "not a ZIP package"),
                      hint=f"open it in Word or LibreOffice and save it as {row.suffixes[0]} (or as PDF), then send "
                      "that file")
    if row is not None and row.name == "text":
        if not probe.is_text:
            raise NotText(f"'{name}' is not UTF-8 text (invalid UTF-8 or NUL bytes)",
                          hint="save it as UTF-8 plain text, or send the original PDF / .docx instead")
        if not plain_text.is_text(probe.sample):  # the parser's own rule on the same bytes: refused here, not later
            what, todo = formats.why_not_text(probe.sample)
            raise NotText(f"'{name}' is not a text document: it is {what}", hint=todo)
        return "text"
    if row is not None and row.envelope:
        return row.name  # type: ignore[return-value]  # the e-mail parser judges it
    if probe.head.startswith(ZIP_MAGIC):
        raise NotPdf(f"'{name}' is a ZIP archive, not one of the kinds the inbox takes ({ACCEPTED})",
                     hint="a Word or OpenDocument document: send it under its .docx or .odt name; anything else: "
                     "export it to PDF")
    raise NotPdf(not_pdf.message, hint=f"{not_pdf.hint.rstrip('.')}; or send it as one of {ACCEPTED}, "
                                       "named by its kind (e.g. notes.txt).")


def _sniffed(name: str, data: bytes) -> Kind | None:
    """The parse's format for ``data`` (:func:`clausegate.review.document.formats.sniff`); None when it refuses it."""
    try:
        return formats.sniff(name, data)
    except DocumentError:
        return None


def _zip_kind(name: str, claimed: str, data: bytes | None) -> Kind:
    """A ZIP named as a ZIP format: the format the parse's sniff finds when the whole file is at hand (a .docx name
    holding an .odt is the .odt), else the one the name claims; what the sniff refuses, the parse refuses again."""
    return (_sniffed(name, data) if data is not None else None) or claimed  # type: ignore[return-value]


def stored_name(name: str, kind: Kind) -> str:
    """``name`` (already a safe file name) ending in its kind's suffix: what the parse's type sniff and a reader see."""
    return registry.stored_name(name, kind)


def text_name(topic: str | None) -> str:
    """The stored name of pasted text: the topic's letters and digits (``renewals.txt``) or ``pasted-text.txt``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", topic or "").strip("-")[:60].lower()
    return f"{slug or 'pasted-text'}.txt"
