"""What `clausegate review -` (stdin) and `clausegate review --text "…"` review: the input written to a private file.

The text (or the bytes piped in: a PDF or .docx works too, judged by its first bytes) goes to a 0600 file in a
0700 temporary folder, named ``stdin.txt`` / ``text.txt`` (``.pdf`` / ``.docx`` for piped documents); the same
review runs on it as on a file, and the folder is deleted when the review ends, whatever its outcome.  A single
clause is a valid review.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REVIEW_INPUT = "CG-REVIEW-INPUT"
ZIP_MAGIC, PDF_MAGIC = b"PK\x03\x04", b"%PDF-"


class ReviewInputError(Exception):
    """The text or stdin cannot be reviewed; ``str()`` is the line the CLI prints."""


def _suffix(data: bytes, what: str) -> str:
    if PDF_MAGIC in data[:1024]:
        return ".pdf"
    if data.startswith(ZIP_MAGIC):
        return ".docx"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewInputError(f"[{REVIEW_INPUT}] {what} is neither UTF-8 text nor a PDF or .docx. Next step: "
                               "pipe the contract's text (UTF-8) or the file itself.") from None
    if not text.strip() or "\x00" in text:
        raise ReviewInputError(f"[{REVIEW_INPUT}] {what} holds no text to review"
                               + (" (NUL bytes)" if "\x00" in text else "")
                               + ". Next step: pass the clause or contract text, e.g. clausegate review --text "
                                 "\"The Supplier's liability shall not exceed the fees paid.\"")
    return ".txt"


@contextlib.contextmanager
def review_input(file: Path | None, text: str | None, max_bytes: int = 64 * 1024 * 1024) -> Iterator[Path]:
    """The path to review: ``file`` itself, or a private temporary copy of stdin (``file`` is ``-``) or of
    ``text``; the temporary folder is removed on exit."""
    if text is None and str(file) != "-":
        yield file
        return
    if text is not None and file is not None:
        raise ReviewInputError(f"[{REVIEW_INPUT}] give either FILE (or -) or --text, not both. Next step: drop one.")
    if text is not None:
        data, stem, what = text.encode("utf-8", "surrogateescape"), "text", "--text"
    else:
        data, stem, what = sys.stdin.buffer.read(max_bytes + 1), "stdin", "stdin"
        if len(data) > max_bytes:
            raise ReviewInputError(f"[{REVIEW_INPUT}] stdin is larger than {max_bytes // 1024 // 1024} MB. "
                                   "Next step: save it to a file and review that.")
    suffix = _suffix(data, what)
    folder = tempfile.mkdtemp(prefix="clausegate-review-")  # 0700
    try:
        path = Path(folder) / f"{stem}{suffix}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)
