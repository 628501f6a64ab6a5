"""Which parser reads a contract: sniffed from its bytes, never from its file name.

* ``%PDF-`` in the first 1024 bytes of a file that does not open as a ZIP (``PK\x03\x04``): a PDF
  (:func:`clausegate.review.document.sandbox.parse_bytes`, unchanged);
* a ZIP holding ``word/document.xml``: a Word .docx, read in the same sandboxed child under the same caps
  (:mod:`clausegate.review.document.docx`); a ZIP whose ``mimetype`` entry is an OpenDocument text's: an .odt,
  read there too (:mod:`clausegate.review.document.odt`); a macro-enabled .docx (``vbaProject.bin``, a
  ``macroEnabled`` content type: .docm) is refused with ``CG-DOCX-MACROS`` (macros are never run, nor is the file read);
* the OLE header ``D0 CF 11 E0``: a password-protected .docx (Word stores one as an OLE file whose directory names an
  ``EncryptedPackage`` stream), refused with ``CG-DOCX-ENCRYPTED`` (remove the password); else a legacy binary Word
  .doc, refused with ``CG-DOCX-LEGACY-DOC`` (save it as .docx or PDF);
* valid UTF-8 text (.txt, .md, a pasted clause): plain text (:mod:`clausegate.review.document.plain_text`);
* anything else (an image, RTF, an HTML page, another ZIP, text with control characters such as terminal colour
  codes, binary data): ``CG-PDF-NOT-PDF`` saying what it looks like and what is read (:func:`not_a_known_format`).

So a .docx name holding PDF bytes is parsed as the PDF it is, and a .pdf name holding a .docx as the .docx.
Which format is which (magic, ZIP part, suffixes, display name, parser) is the format table's:
:mod:`clausegate.review.document.registry`; this module holds the order of the rules and the refusals.
"""

from __future__ import annotations

import io
import zipfile
from typing import Literal

from clausegate.errors import DocumentError
from clausegate.review.document import plain_text, registry, sandbox
from clausegate.review.document.codes import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_SECONDS,
    DOCX_CORRUPT,
    DOCX_ENCRYPTED,
    DOCX_LEGACY_DOC,
    DOCX_MACROS,
    ENCRYPTED_PACKAGE,
    NOT_PDF,
    POOL_MAX_PARSES,
)
from clausegate.review.schemas import ContractSource, ParsedDocument

Format = registry.FormatName
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = registry.ZIP_MAGIC
_CONTENT_TYPES = "[Content_Types].xml"
_CONTENT_TYPES_MAX = 1024 * 1024
_MIMETYPE_MAX = 256


def sniff(name: str, data: bytes) -> Format:
    """``data``'s format (see the module doc); a coded ``DocumentError`` for what is refused."""
    if data.startswith(_ZIP):  # before the PDF window: a ZIP storing a PDF is no PDF
        return _sniff_zip(name, data)
    if registry.is_pdf(data):
        return "pdf"
    if data.startswith(OLE_MAGIC) and ENCRYPTED_PACKAGE in data:
        raise DocumentError(
            f"'{name}' is a password-protected (encrypted) Word document: its text can only be read with the "
            "password, which ClauseGate never asks for.", code=DOCX_ENCRYPTED,
            hint="open it in Word, remove the password (File > Info > Protect Document > Encrypt with Password, "
            "clear it), save it as .docx, and submit that file (or export it as PDF).")
    if data.startswith(OLE_MAGIC):
        raise DocumentError(
            f"'{name}' is a legacy binary Word document (.doc, or another OLE file such as .xls), which ClauseGate "
            "does not read.", hint="open it in Word or LibreOffice and save it as .docx (File > Save As > Word "
            "Document) or as PDF, then submit that file.", code=DOCX_LEGACY_DOC)
    if plain_text.is_text(data):
        return "text"
    raise not_a_known_format(name, data)


def _sniff_zip(name: str, data: bytes) -> Format:
    """The ZIP format the table finds (.docx, .odt), or a coded refusal: a .docm, a broken archive, a ZIP that is no
    document.  Only the central directory and (capped) the content-type list and ``mimetype`` entry are read here;
    the parts are read in the sandbox."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            names = {info.filename for info in infos}
            types, mimetype = _small(archive, _CONTENT_TYPES, _CONTENT_TYPES_MAX), _small(archive, "mimetype",
                                                                                      _MIMETYPE_MAX)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise DocumentError(f"'{name}' is a damaged ZIP archive (a .docx or .odt is one) and cannot be read ({exc}).",
                            hint="save the document again from Word or LibreOffice (or download it again) and "
                            "resubmit.", code=DOCX_CORRUPT) from None
    macros = sorted(n for n in names if n.lower().rsplit("/", 1)[-1] in ("vbaproject.bin", "vbadata.xml"))
    if macros or b"macroenabled" in types.lower():
        why = f"it holds a VBA project ({macros[0]})" if macros else "its content type is macro-enabled"
        raise DocumentError(
            f"'{name}' is a macro-enabled Word document (.docm): {why}. ClauseGate never runs or reads macros, "
            "and does not review macro-enabled files.", code=DOCX_MACROS,
            hint="save it as a plain Word document (File > Save As > Word Document, .docx) or as PDF, and submit that.")
    found = registry.zip_format(names, mimetype)
    if found is not None:
        return found.name  # type: ignore[return-value]
    raise not_a_known_format(name, data)  # a ZIP that is no document read here


def _small(archive: zipfile.ZipFile, name: str, cap: int) -> bytes:
    """Entry ``name``'s bytes when it is there and at most ``cap`` bytes inflated, else nothing."""
    info = next((i for i in archive.infolist() if i.filename == name), None)
    if info is None or info.file_size > cap:
        return b""
    with archive.open(info) as fh:
        return fh.read(cap + 1)


ACCEPTED = registry.accepted()
_SEND = f"submit the contract as {ACCEPTED}"
# the PDF path's table (images, RTF), with the archive said as the formats read here see it (OLE files are refused
# before this table is read: sniff)
_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    *(entry for entry in sandbox.SIGNATURES if entry[0] not in (_ZIP, OLE_MAGIC[:4])),
    (_ZIP, "a ZIP archive that is no Word or OpenDocument text (no word/document.xml, no OpenDocument text "
     "mimetype; an Excel .xlsx, a .zip of files)", "submit the .docx, .odt or PDF itself, not an archive of it"),
)


def why_not_text(data: bytes) -> tuple[str, str]:
    """(what ``data`` looks like, what to do) when :func:`plain_text.is_text` refuses it as a text document."""
    head = data[:plain_text.SNIFF_BYTES]
    if b"\x00" in head:
        return "binary data (NUL bytes; UTF-16 text has them too)", _SEND
    try:
        sample = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:
            return ("text that is not UTF-8 (or binary data)",
                    "save it as UTF-8 text (File > Save As > Encoding: UTF-8), or submit the PDF or Word .docx")
        sample = head[:exc.start].decode("utf-8-sig")
    if sample.lstrip().lower().startswith(("<!doctype html", "<html")):
        return "an HTML page", "the download probably saved an error or login page; download the contract again"
    ansi = " (terminal colour or cursor codes: ANSI escape sequences)" if "\x1b[" in sample else ""
    return (f"text with {plain_text.control_characters(sample)} control characters{ansi} in its first "
            f"{len(sample):,} characters, which no text document holds",
            "remove the control characters (terminal colour codes: sed 's/\\x1b\\[[0-9;]*[A-Za-z]//g') and submit "
            "it as UTF-8 text, or submit the PDF or Word .docx")


def not_a_known_format(name: str, data: bytes) -> DocumentError:
    """``CG-PDF-NOT-PDF`` for bytes that are none of the formats read: what they look like, and what is read."""
    if not data:
        what, todo = "an empty file (0 bytes)", "the upload or download probably failed; fetch the contract again"
    else:
        what, todo = next(((kind, fix) for sig, kind, fix in _SIGNATURES if data.startswith(sig)), ("", ""))
        if not what:
            what, todo = why_not_text(data)
    return DocumentError(f"'{name}' is not a format ClauseGate reads ({ACCEPTED}; the content decides, not the "
                         f"file name): it looks like {what}.", hint=f"{todo}.", code=NOT_PDF)


def parse_document(
    source: ContractSource,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    ocr: Literal["auto", "off"] = "auto",
    pool_size: int = 0,
    pool_max_parses: int = POOL_MAX_PARSES,
) -> ParsedDocument:
    """``source`` parsed by the parser its bytes call for (re-hashed first: ``CG-PDF-CHANGED``)."""
    data = sandbox.read_verified(source)
    fmt = sniff(source.filename, data)
    if registry.FORMATS[fmt].parser is None:  # plain text: read here, no child
        return plain_text.parse_text(source, data, max_chars=max_chars)
    return sandbox.parse_bytes(source, data, fmt, max_chars=max_chars, timeout_seconds=timeout_seconds,
                               memory_mb=memory_mb, ocr=ocr, pool_size=pool_size, pool_max_parses=pool_max_parses)


def stored_name(name: str, fmt: Format) -> str:
    """``name`` with the suffix of its sniffed format when it has none of the format's (``x`` -> ``x.docx``)."""
    return registry.stored_name(name, fmt)
