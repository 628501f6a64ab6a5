"""Read a contract PDF into per-page text, treating the file as untrusted input.

Public API
----------
``fingerprint(path, *, max_bytes=50 MB) -> ContractSource``
    Hash the file (sha256 = ``contract_id``); refuse missing, unreadable or too-large files.
``parse_pdf(source, *, max_chars, timeout_seconds, memory_mb, ocr) -> ParsedDocument``
    Re-read the file, check it still has the fingerprinted sha256, and extract each page's text
    with pypdf **in a child process** (``python -I``, minimal environment) that runs under an
    address-space cap (``RLIMIT_AS`` = ``memory_mb``) and a wall-clock timeout, in its own
    process group that is killed on timeout.  A hostile file can therefore cost at most
    ``timeout_seconds`` and ``memory_mb``; it cannot crash or hang the caller.

Every failure is a :class:`~clausegate.errors.DocumentError` whose ``code`` is one of the
``CG-PDF-*`` constants of :mod:`clausegate.review.document.codes`, with a message (what failed,
why) and a hint (what to do).  Soft problems (a page without a text layer, OCR used, an empty password) come back as
:class:`~clausegate.review.schemas.Notice` entries on the document, never silently.

The document is untrusted in a second sense: what ClauseGate reads may not be what a person
sees.  The worker (:mod:`clausegate.review.document.worker`) therefore also

* finds **hidden text** (:mod:`clausegate.review.document.hidden`: invisible render modes, text in the
  background's colour or transparent, outside the page or its clip, microscopic), leaves it out
  of the page text and reports it per page as ``CG-PDF-HIDDEN-TEXT`` with an excerpt;
* scores each page's **text quality** (:mod:`clausegate.review.document.text_quality`); a garbled page
  (mojibake, fonts without a Unicode map) is OCR'd when tesseract can read its images, else
  reported as ``CG-PDF-GARBLED-TEXT``.

These integrity notices (``INTEGRITY_CODES``) make the review ask a person
(:func:`clausegate.review.assemble.assemble_review` gates them as ``INTEGRITY_CATEGORY``).

Text is normalised lightly (:func:`clausegate.review.document.text.normalise_text`): NULs
removed, CR/CRLF turned into LF, other control characters (except tab and LF) replaced by a
space, lone surrogates replaced by U+FFFD.  Line breaks are
kept; otherwise the text is pypdf's ``extract_text()`` of the page (of its visible text only,
when hidden text was found on it).

The child process is new per contract, or (``pool_size`` > 0) one of a pool of long-lived children with the
same caps (:mod:`clausegate.review.document.pool`): it saves the child's start-up (Python, pypdf, PDFium) on
every contract but the first few.

Where the bytes are read: :func:`fingerprint` (hashing) and :func:`read_verified` (the bytes
handed to the worker on stdin).  The worker never opens the file itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Literal

from clausegate.errors import ConfigurationError, DocumentError
from clausegate.review.document import pool, registry
from clausegate.review.document.child import PdfWorkerError, run_one_shot
from clausegate.review.document.codes import (
    CHANGED,
    CORRUPT,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT_SECONDS,
    MIN_MEMORY_MB,
    NOT_FOUND,
    NOT_PDF,
    POOL_MAX_PARSES,
    SETTING_MAX_CHARS,
    SETTING_MAX_FILE,
    SETTING_MEMORY,
    SETTING_OCR,
    SETTING_TIMEOUT,
    TOO_LARGE,
    UNREADABLE,
    WORKER_FAILED,
)
from clausegate.review.schemas import Comment, ContractSource, Notice, Page, ParsedDocument, Revision

log = logging.getLogger(__name__)

MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024


# ---------------------------------------------------------------------------------------------
# fingerprint
# ---------------------------------------------------------------------------------------------
def fingerprint(path: str | Path, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ContractSource:
    """Hash the contract file: ``contract_id`` = sha256 of its bytes.

    Raises ``CG-PDF-NOT-FOUND`` (missing / not a file), ``CG-PDF-UNREADABLE`` (permissions, I/O)
    or ``CG-PDF-TOO-LARGE`` (more than ``max_bytes``).
    """
    p = Path(path).expanduser()
    st = _stat(p)
    if st.st_size > max_bytes:
        raise _too_large(p.name, st.st_size, max_bytes)
    digest = hashlib.sha256()
    size = 0
    try:
        with p.open("rb") as fh:
            while chunk := fh.read(1024 * 1024):
                size += len(chunk)
                if size > max_bytes:  # the file grew while we read it
                    raise _too_large(p.name, size, max_bytes)
                digest.update(chunk)
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    return ContractSource(path=str(p.absolute()), contract_id=digest.hexdigest(), size_bytes=size, filename=p.name)


def _stat(p: Path) -> os.stat_result:
    try:
        st = p.stat()
    except FileNotFoundError:
        raise DocumentError(
            f"contract file '{p}' does not exist.",
            hint=f"check the path (relative paths are resolved from {Path.cwd()}); "
            "quote paths that contain spaces.",
            code=NOT_FOUND,
        ) from None
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    if stat.S_ISDIR(st.st_mode):
        raise DocumentError(
            f"'{p}' is a folder, not a contract file.",
            hint="pass the path of one contract file inside it (batch runs take folders, single reviews do not).",
            code=NOT_FOUND,
        )
    if not stat.S_ISREG(st.st_mode):
        raise DocumentError(
            f"'{p}' is not a regular file (a device, pipe or socket).",
            hint="save the contract as a file and pass that file's path.",
            code=NOT_FOUND,
        )
    return st


def _unreadable(p: Path, exc: OSError) -> DocumentError:
    return DocumentError(
        f"contract file '{p}' cannot be read: {exc.strerror or exc}.",
        hint="check the file's permissions (the reviewing user needs read access) and that the disk or "
        "network share is available, then rerun.",
        code=UNREADABLE,
    )


def _too_large(name: str, size: int, limit: int) -> DocumentError:
    return DocumentError(
        f"'{name}' is {size / 1048576:.1f} MB, over the {limit / 1048576:.1f} MB limit for contract files.",
        hint=f"ask the sender for a smaller export (e.g. without scanned images) or raise {SETTING_MAX_FILE}.",
        code=TOO_LARGE,
    )


# ---------------------------------------------------------------------------------------------
# parse_pdf (parent side)
# ---------------------------------------------------------------------------------------------
def parse_pdf(
    source: ContractSource,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    ocr: Literal["auto", "off"] = "auto",
    pool_size: int = 0,
    pool_max_parses: int = POOL_MAX_PARSES,
) -> ParsedDocument:
    """Extract per-page text from ``source`` in a sandboxed child process.

    ``pool_size`` 0: a new child for this contract (one-shot).  Above 0: one of up to ``pool_size`` long-lived
    children of this process's parse pool (:mod:`clausegate.review.document.pool`; same caps, a child is replaced
    after a crash, a cap hit or a timeout, and after ``pool_max_parses`` parses); the caller reads the size
    from its settings (``CLAUSEGATE_PARSE_POOL_SIZE``, see clausegate/pipeline/tasks.py).

    Raises :class:`DocumentError` with one of the ``CG-PDF-*`` codes; returns a
    :class:`ParsedDocument` with 1-based pages and notices otherwise.
    """
    data = read_verified(source)
    check_pdf_magic(source.filename, data)
    return parse_bytes(source, data, "pdf", max_chars=max_chars, timeout_seconds=timeout_seconds,
                       memory_mb=memory_mb, ocr=ocr, pool_size=pool_size, pool_max_parses=pool_max_parses)


def parse_bytes(
    source: ContractSource,
    data: bytes,
    fmt: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    memory_mb: int = DEFAULT_MEMORY_MB,
    ocr: Literal["auto", "off"] = "auto",
    pool_size: int = 0,
    pool_max_parses: int = POOL_MAX_PARSES,
) -> ParsedDocument:
    """Parse ``data`` (``source``'s verified bytes, sniffed to be ``fmt``) in the sandboxed child: see
    :func:`parse_pdf`.  Every format with a parser in the format table (:mod:`clausegate.review.document.registry`:
    .docx, .odt) goes through the same child, caps and pool as a PDF; the child's time and memory codes are named
    for the format (``CG-DOCX-TIMEOUT``, ...)."""
    if fmt not in registry.FORMATS or registry.FORMATS[fmt].parser is None:
        raise ValueError(f"parse_bytes: no sandboxed parser for format {fmt!r}")
    if ocr not in ("auto", "off"):
        raise ConfigurationError(f"parse_pdf: ocr must be 'auto' or 'off', not {ocr!r}.", hint=f"fix {SETTING_OCR}.")
    if max_chars <= 0:
        raise ConfigurationError(f"parse_pdf: max_chars must be positive, not {max_chars}.",
                                 hint=f"fix {SETTING_MAX_CHARS}.")
    if not timeout_seconds > 0:
        raise ConfigurationError(f"parse_pdf: timeout_seconds must be positive, not {timeout_seconds}.",
                                 hint=f"fix {SETTING_TIMEOUT}.")
    if memory_mb < MIN_MEMORY_MB:
        raise ConfigurationError(
            f"parse_pdf: memory_mb={memory_mb} is below the {MIN_MEMORY_MB} MB the parser process needs to start.",
            hint=f"raise {SETTING_MEMORY}.",
        )
    if pool_size < 0 or pool_max_parses < 1:
        raise ConfigurationError(f"parse_pdf: pool_size={pool_size} must be 0 (one-shot) or more and "
                                 f"pool_max_parses={pool_max_parses} at least 1.",
                                 hint="fix CLAUSEGATE_PARSE_POOL_SIZE (0 = a new parser process per contract).")

    name = source.filename
    tesseract = shutil.which("tesseract") if ocr == "auto" and fmt == "pdf" else None
    options = {"max_chars": max_chars, "timeout": float(timeout_seconds), "memory_mb": int(memory_mb),
               "ocr": ocr, "tesseract": tesseract, "format": fmt}
    named = registry.FORMATS[fmt].child_codes
    try:
        if pool_size:
            result = pool.parse(name, data, options, size=pool_size, max_parses=pool_max_parses)
        else:
            result = run_one_shot(name, data, options)
    except DocumentError as error:
        if error.code not in named:
            raise
        raise DocumentError(error.message, hint=error.hint, code=named[error.code]) from None

    if not result.get("ok"):
        code = str(result.get("code") or CORRUPT)
        code = named.get(code, code)
        cls = PdfWorkerError if code == WORKER_FAILED else DocumentError
        raise cls(f"'{name}': {result.get('message', 'the PDF could not be parsed.')}",
                  hint=str(result.get("hint", "")), code=code)

    try:
        pages = [Page(**p) for p in result["pages"]]
        notices = [Notice(**n) for n in result["notices"]]
        return ParsedDocument(contract_id=source.contract_id, filename=name, pages=pages, notices=notices, format=fmt,
                              revisions=[Revision(**r) for r in result.get("revisions", [])],
                              comments=[Comment(**c) for c in result.get("comments", [])])
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise PdfWorkerError(
            f"'{name}': the parser process returned an unexpected result ({type(exc).__name__}: {exc}).",
            hint="this is a ClauseGate bug or a mismatched installation; "
                 "rerun, and report it with the file if it repeats.",
        ) from exc


def read_verified(source: ContractSource) -> bytes:
    """The file's bytes, provided they still hash to ``source.contract_id``."""
    p = Path(source.path)
    st = _stat(p)
    changed = DocumentError(
        f"'{source.filename}' changed since it was fingerprinted (expected sha256 {source.contract_id[:12]}…, "
        f"{source.size_bytes} bytes; the file on disk is now different).",
        hint="fingerprint the file again and start a new review; do not edit contracts while a review is running.",
        code=CHANGED,
    )
    if st.st_size != source.size_bytes:
        raise changed
    try:
        with p.open("rb") as fh:
            data = fh.read(source.size_bytes + 1)
    except OSError as exc:
        raise _unreadable(p, exc) from exc
    if len(data) != source.size_bytes or hashlib.sha256(data).hexdigest() != source.contract_id:
        raise changed
    return data


SIGNATURES: tuple[tuple[bytes, str, str], ...] = (  # (magic, what it is, how to make a PDF of it)
    (b"\x89PNG", "a PNG image", "scan or export the contract to PDF"),
    (b"\xff\xd8\xff", "a JPEG image", "scan or export the contract to PDF"),
    (b"GIF8", "a GIF image", "export the contract to PDF"),
    (b"II*\x00", "a TIFF image", "convert the scan to PDF"),
    (b"MM\x00*", "a TIFF image", "convert the scan to PDF"),
    (b"PK\x03\x04", "a ZIP archive (Word .docx and Excel .xlsx files are ZIP archives)",
     "open it in Word (or LibreOffice) and use File > Save as PDF"),
    (b"\xd0\xcf\x11\xe0", "a legacy Microsoft Office file (.doc/.xls)", "open it and use File > Save as PDF"),
    (b"{\\rtf", "an RTF document", "open it and use File > Save as PDF"),
)


def check_pdf_magic(name: str, data: bytes) -> None:
    if MAGIC in data[:MAGIC_WINDOW]:
        return
    if not data:
        what, todo = "an empty file (0 bytes)", "the upload or download probably failed; fetch the PDF again"
    else:
        what, todo = "", ""
        for sig, kind, fix in SIGNATURES:
            if data.startswith(sig):
                what, todo = kind, fix
                break
        if not what:
            head = data[:MAGIC_WINDOW].lstrip().lower()
            if head.startswith((b"<!doctype html", b"<html")):
                what = "an HTML page"
                todo = "the download probably saved an error or login page; download the PDF again"
            else:
                try:
                    data[:MAGIC_WINDOW].decode("utf-8")
                    what = "plain text"
                except UnicodeDecodeError:
                    what = "unrecognised binary data"
                todo = "export or print the contract to PDF and use that file"
    raise DocumentError(
        f"'{name}' is not a PDF: it looks like {what} (there is no '%PDF-' header in its first "
        f"{MAGIC_WINDOW} bytes; the content is checked, not the file name's extension).",
        hint=f"{todo}.",
        code=NOT_PDF,
    )
