"""Stable codes, limits and setting names shared by the PDF parser (parent) and its worker (child).

Kept in a module of their own (no pypdf, no pydantic) so that the sandboxed worker, the parent
(:mod:`clausegate.review.document.sandbox`) and the review steps can import them cheaply.  Documented in the runbook;
never rename a code.
"""

from __future__ import annotations

from typing import Any

# Errors (a DocumentError with one of these codes stops the review)
NOT_FOUND = "CG-PDF-NOT-FOUND"
UNREADABLE = "CG-PDF-UNREADABLE"
TOO_LARGE = "CG-PDF-TOO-LARGE"
CHANGED = "CG-PDF-CHANGED"
NOT_PDF = "CG-PDF-NOT-PDF"
CORRUPT = "CG-PDF-CORRUPT"
ENCRYPTED = "CG-PDF-ENCRYPTED"
CRYPTO_MISSING = "CG-PDF-CRYPTO-MISSING"
EMPTY = "CG-PDF-EMPTY"
NO_TEXT = "CG-PDF-NO-TEXT"
TOO_MUCH_TEXT = "CG-PDF-TOO-MUCH-TEXT"
TIMEOUT = "CG-PDF-TIMEOUT"
TOO_COMPLEX = "CG-PDF-TOO-COMPLEX"
WORKER_FAILED = "CG-PDF-WORKER-FAILED"

ERROR_CODES = (
    NOT_FOUND, UNREADABLE, TOO_LARGE, CHANGED, NOT_PDF, CORRUPT, ENCRYPTED, CRYPTO_MISSING,
    EMPTY, NO_TEXT, TOO_MUCH_TEXT, TIMEOUT, TOO_COMPLEX, WORKER_FAILED,
)

# Notices (warnings attached to a successfully parsed document)
NOTICE_DECRYPTED_EMPTY_PASSWORD = "CG-PDF-DECRYPTED-EMPTY-PASSWORD"
NOTICE_NEEDS_OCR = "CG-PDF-NEEDS-OCR"
NOTICE_OCR_USED = "CG-PDF-OCR-USED"
NOTICE_PAGE_UNREADABLE = "CG-PDF-PAGE-UNREADABLE"
# Document-integrity notices: the text a reader sees and the text ClauseGate reads may differ.
NOTICE_HIDDEN_TEXT = "CG-PDF-HIDDEN-TEXT"  # invisible / same colour as background / off-page / microscopic
NOTICE_GARBLED_TEXT = "CG-PDF-GARBLED-TEXT"  # the text layer does not read as words (mojibake)
NOTICE_INTEGRITY_UNCHECKED = "CG-PDF-INTEGRITY-UNCHECKED"  # the page could not be checked for hidden text
NOTICE_DOCX_HIDDEN_TEXT = "CG-DOCX-HIDDEN-TEXT"  # integrity: vanish, background-coloured, tiny or squeezed .docx text
NOTICE_DOCX_UNREAD_PART = "CG-DOCX-UNREAD-PART"  # integrity: a part Word shows that is not read (altChunk import)

NOTICE_CODES = (
    NOTICE_DECRYPTED_EMPTY_PASSWORD, NOTICE_NEEDS_OCR, NOTICE_OCR_USED, NOTICE_PAGE_UNREADABLE,
    NOTICE_HIDDEN_TEXT, NOTICE_GARBLED_TEXT, NOTICE_INTEGRITY_UNCHECKED,
)

# A review with any of these notices is never a plain `complete`: the human gate lists them under
# this pseudo-category (it is not one of CUAD's 41 clause categories).
INTEGRITY_CODES = frozenset({NOTICE_HIDDEN_TEXT, NOTICE_GARBLED_TEXT, NOTICE_INTEGRITY_UNCHECKED,
                             NOTICE_DOCX_HIDDEN_TEXT, NOTICE_DOCX_UNREAD_PART, "CG-ODT-HIDDEN-TEXT"})
INTEGRITY_CATEGORY = "Document integrity"

# What the parser produces: bump when its output changes for the same bytes (the parse-pdf task's cache
# key should include it, so parses cached before a change are not reused; see clausegate/pipeline/tasks.py).
# The version names what this parser reads: a .docx's text boxes, headers, footers, footnotes and endnotes, hidden
# text judged against its effective background, scale and the 3 pt size threshold (PDFs too).
PARSER_VERSION = "6-docx-parts"

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
DEFAULT_MAX_CHARS = 500_000
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MEMORY_MB = 1024
MIN_MEMORY_MB = 128
POOL_MAX_PARSES = 50  # a pooled parser process is replaced after this many parses (bounds slow leaks)

# Where users raise the limits (named in hints; keep in sync with clausegate/review/playbook.py).
SETTING_MAX_CHARS = "the playbook's `steps.parse.max_chars`"
SETTING_MAX_FILE = "the playbook's `steps.parse.max_file_mb`"
SETTING_TIMEOUT = "the playbook's `steps.parse.timeout_seconds`"
SETTING_MEMORY = "the playbook's `steps.parse.memory_mb`"
SETTING_OCR = "the playbook's `steps.parse.ocr`"

TESSERACT_INSTALL = "install it with `apt-get install tesseract-ocr` (macOS: `brew install tesseract`)"
OCR_MAX_IMAGES_PER_PAGE = 8
OCR_MAX_SECONDS_PER_IMAGE = 120.0

# Word (.docx) and plain-text contracts (clausegate/review/document/formats.py, docx.py, plain_text.py)
DOCX_MACROS = "CG-DOCX-MACROS"  # a macro-enabled document (.docm, vbaProject.bin): refused, macros never run
DOCX_LEGACY_DOC = "CG-DOCX-LEGACY-DOC"  # a legacy binary Word .doc (OLE): refused with the next step
DOCX_ENCRYPTED = "CG-DOCX-ENCRYPTED"  # a password-protected .docx (an OLE file with an EncryptedPackage): refused
ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")  # the stream an encrypted OOXML file's OLE directory names
DOCX_ZIP_BOMB = "CG-DOCX-ZIP-BOMB"  # the archive inflates past the caps (size or ratio): refused before reading
DOCX_XML_UNSAFE = "CG-DOCX-XML-UNSAFE"  # a DTD or entity declaration in a part (entity expansion): refused
DOCX_CORRUPT = "CG-DOCX-CORRUPT"  # not a readable .docx (a broken ZIP, malformed XML, no main document part)
DOCX_EMPTY = "CG-DOCX-EMPTY"  # the document body has no text
DOCX_TOO_MUCH_TEXT = "CG-DOCX-TOO-MUCH-TEXT"  # over max_chars, or over DOCX_MAX_PARAGRAPHS paragraphs
DOCX_TIMEOUT = "CG-DOCX-TIMEOUT"  # the sandboxed parse of a .docx hit the time cap (a PDF's: CG-PDF-TIMEOUT)
DOCX_TOO_COMPLEX = "CG-DOCX-TOO-COMPLEX"  # ... ran out of memory or was killed (a PDF's: CG-PDF-TOO-COMPLEX)
# The parser child answers with the PDF codes whatever it read; the parent names them for the format it sent.
TEXT_EMPTY = "CG-TEXT-EMPTY"  # a plain-text contract with no text
TEXT_TOO_MUCH_TEXT = "CG-TEXT-TOO-MUCH-TEXT"  # a plain-text contract over max_chars
NOTICE_DOCX_TRACKED_CHANGES = "CG-DOCX-TRACKED-CHANGES"  # pending w:ins / w:del: reviewed as accepted, listed
NOTICE_DOCX_COMMENTS = "CG-DOCX-COMMENTS"  # comments in the document: listed in the report

DOCX_MAX_UNCOMPRESSED = 128 * 1024 * 1024  # all the parts read, inflated
DOCX_MAX_PART_BYTES = 64 * 1024 * 1024  # one XML part, inflated
DOCX_MAX_RATIO = 200  # inflated / compressed size of a part over 1 MB
DOCX_MAX_PARAGRAPHS = 50_000  # a 300-page contract has some 10,000
PART_CHARS = 3000  # a .docx or text contract is cut into parts ("pages") of about this many characters

EXIT_NO_MEMORY = 86  # the worker's exit status when it ran out of memory and could not report it


def failure(code: str, message: str, hint: str) -> dict[str, Any]:
    """The worker's answer for a definitive failure."""
    return {"ok": False, "code": code, "message": message, "hint": hint}
