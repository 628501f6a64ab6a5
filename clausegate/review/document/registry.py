"""The one table of the formats ClauseGate reads: per format its sniff rule, suffixes, MIME types, display name, how
findings are located in it and the parser the sandboxed child calls.

Every place that judges bytes or names a format asks this table: the parse's sniff
(:mod:`clausegate.review.document.formats`), the sandboxed child's dispatch (:mod:`clausegate.review.document.worker`,
:mod:`clausegate.review.document.sandbox`), the inbox (:mod:`clausegate.inbox.kinds`), e-mail attachments
(:mod:`clausegate.inbox.email_intake`), ``clausegate review -`` (:mod:`clausegate.cli.review_input`) and the batch's
folder source (:mod:`clausegate.batch.sources`).  So the inbox and the parser cannot disagree about one file, and a
new format is one row here plus its parser module.

``eml`` is a row too, marked ``envelope``: an e-mail is how contracts arrive (the inbox takes it apart,
:mod:`clausegate.inbox.email_intake`), never a contract format the parser reads; :data:`CONTRACT_FORMATS` leaves it out.

Imports nothing but the standard library and the codes: the sandboxed child and the e-mail child import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from clausegate.review.document.codes import (
    DOCX_TIMEOUT,
    DOCX_TOO_COMPLEX,
    TIMEOUT,
    TOO_COMPLEX,
)

# The format names as types (tests/unit/test_formats_registry.py checks them against the rows below, and
# clausegate.review.schemas.DocumentFormat against CONTRACT_FORMATS).
FormatName = Literal["pdf", "docx", "odt", "text"]
Kind = Literal["pdf", "docx", "odt", "text", "eml"]

ZIP_MAGIC = b"PK\x03\x04"
PDF_MAGIC = b"%PDF-"
PDF_WINDOW = 1024  # %PDF- anywhere in the first KB (some producers write bytes before it)
ODT_MIMETYPE = b"application/vnd.oasis.opendocument.text"
# ODF puts a stored (uncompressed) ``mimetype`` entry first: its name at byte 30 of the file, its content after it
_ODF_MIMETYPE_AT = 30


@dataclass(frozen=True)
class Format:
    """One row of the table."""

    name: str
    display: str  # "Word .docx": in messages and the report
    suffixes: tuple[str, ...]  # the first is the one a stored file gets
    mime_types: tuple[str, ...] = ()
    zip_part: str | None = None  # a ZIP format: the part that makes an archive this format
    zip_mimetype: bytes | None = None  # ... or the content of its ``mimetype`` entry (ODF)
    parser: str | None = None  # "module:function" the sandboxed child calls with (data, options); None: no child
    located_by: Literal["page", "paragraph", "span"] = "span"
    child_codes: dict[str, str] = field(default_factory=dict)  # the child's PDF codes named for this format
    envelope: bool = False  # how contracts arrive (an e-mail), not a contract format
    attachment: bool = False  # taken as an e-mail attachment (clausegate.inbox.email_intake)
    folder: bool = False  # picked up by a batch's folder source (text is not: a folder's READMEs are no contracts)


ROWS: tuple[Format, ...] = (
    Format("pdf", "PDF", (".pdf",), ("application/pdf",), parser="clausegate.review.document.worker:extract_pdf",
           located_by="page", attachment=True, folder=True),
    Format("docx", "Word .docx", (".docx",),
           ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
           zip_part="word/document.xml", parser="clausegate.review.document.docx:extract", located_by="paragraph",
           child_codes={TIMEOUT: DOCX_TIMEOUT, TOO_COMPLEX: DOCX_TOO_COMPLEX}, attachment=True, folder=True),
    Format("odt", "OpenDocument .odt", (".odt",), (ODT_MIMETYPE.decode(),), zip_mimetype=ODT_MIMETYPE,
           parser="clausegate.review.document.odt:extract", located_by="paragraph",
           child_codes={TIMEOUT: "CG-ODT-TIMEOUT", TOO_COMPLEX: "CG-ODT-TOO-COMPLEX"}, attachment=True, folder=True),
    Format("text", "plain text", (".txt", ".md"), ("text/plain", "text/markdown")),
    Format("eml", "e-mail", (".eml",), ("message/rfc822",), envelope=True),
)
FORMATS: dict[str, Format] = {row.name: row for row in ROWS}
CONTRACT_FORMATS: tuple[str, ...] = tuple(row.name for row in ROWS if not row.envelope)
ATTACHMENT_FORMATS: tuple[str, ...] = tuple(row.name for row in ROWS if row.attachment)


def suffix_of(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


def by_suffix(name: str) -> Format | None:
    """The row whose suffixes include ``name``'s (``contract.ODT`` -> odt); None when no row claims it."""
    suffix = suffix_of(name)
    return next((row for row in ROWS if suffix in row.suffixes), None)


def by_mime(ctype: str) -> Format | None:
    return next((row for row in ROWS if ctype.lower() in row.mime_types), None)


def is_pdf(head: bytes) -> bool:
    """``%PDF-`` in the first KB of bytes that are no ZIP (a ZIP storing a PDF uncompressed shows it too)."""
    return not head.startswith(ZIP_MAGIC) and PDF_MAGIC in head[:PDF_WINDOW]


def zip_format(names: set[str] | frozenset[str], mimetype: bytes = b"") -> Format | None:
    """The ZIP format of an archive with these entry names (and ``mimetype`` entry content); None: no format's."""
    for row in ROWS:
        if row.zip_part and row.zip_part in names:
            return row
        if row.zip_mimetype and "mimetype" in names and mimetype.strip() == row.zip_mimetype:
            return row
    return None


def head_format(head: bytes) -> Format | None:
    """What the first bytes alone prove (the inbox's streamed uploads): a PDF, or an ODF whose ``mimetype`` entry
    comes first as the standard says.  A .docx cannot be told from other ZIPs by its head: None."""
    if is_pdf(head):
        return FORMATS["pdf"]
    if head.startswith(ZIP_MAGIC) and head[_ODF_MIMETYPE_AT:_ODF_MIMETYPE_AT + 8] == b"mimetype":
        content = head[_ODF_MIMETYPE_AT + 8:_ODF_MIMETYPE_AT + 8 + 80]
        return next((row for row in ROWS if row.zip_mimetype and content.startswith(row.zip_mimetype)), None)
    return None


def display(name: str) -> str:
    return FORMATS[name].display if name in FORMATS else name


def accepted(names: tuple[str, ...] = CONTRACT_FORMATS) -> str:
    """"PDF, Word .docx, OpenDocument .odt or plain text (UTF-8)": the formats ``names`` in a sentence."""
    shown = [display(n) + (" (UTF-8)" if n == "text" else "") for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def parser(name: str) -> tuple[str, str]:
    """(module, function) of the parser the sandboxed child runs for format ``name``; ``ValueError`` for a format
    the child does not parse (text is read in the parent, an e-mail by the inbox)."""
    row = FORMATS.get(name)
    if row is None or row.parser is None:
        raise ValueError(f"no sandboxed parser for format {name!r}")
    module, _, function = row.parser.partition(":")
    return module, function


def stored_suffix(name: str, fmt: str) -> str:
    """The suffix a file called ``name`` of format ``fmt`` is stored under: its own when it is one of the format's,
    else the format's first."""
    suffix = suffix_of(name)
    return suffix if suffix in FORMATS[fmt].suffixes else FORMATS[fmt].suffixes[0]


def stored_name(name: str, fmt: str) -> str:
    """``name`` ending in a suffix of its format (``x`` -> ``x.docx``; ``notes.md`` stays; ``a.pdf`` holding a .docx
    -> ``a.pdf.docx``): what a reader and the parse's sniff see."""
    return name if suffix_of(name) in FORMATS[fmt].suffixes else name + FORMATS[fmt].suffixes[0]


def folder_patterns() -> tuple[str, ...]:
    """The glob patterns of a batch folder's contract files (``*.pdf``, ``*.PDF``, ...)."""
    return tuple(p for row in ROWS if row.folder for s in row.suffixes for p in (f"*{s}", f"*{s.upper()}"))
