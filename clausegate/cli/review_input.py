"""What `clausegate review -` (stdin) and `clausegate review --text "…"` review: the input written to a private file.

The text (or the bytes piped in: a PDF, .docx or .odt works too, judged by the parse's own sniff of the format table,
:mod:`clausegate.review.document.registry`) goes to a 0600 file in a 0700 temporary folder, named ``stdin.txt`` /
``text.txt`` (``stdin.pdf``, ``stdin.docx``, ``stdin.odt`` for piped documents); the same
review runs on it as on a file, and the folder is deleted when the review ends, whatever its outcome.  A single
clause is a valid review.  stdin is capped (``STDIN_MAX_BYTES``, checked while it is read) and a SIGTERM while it
is read stops the command at once; text the parser would refuse (control characters) is refused before a review.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from clausegate.errors import DocumentError
from clausegate.review.document import formats, plain_text, registry

REVIEW_INPUT = "CG-REVIEW-INPUT"
STDIN_MAX_BYTES = 20 * 1024 * 1024  # as the inbox's upload limit; a larger document is reviewed as a file
CHUNK = 1024 * 1024


class ReviewInputError(Exception):
    """The text or stdin cannot be reviewed; ``str()`` is the line the CLI prints."""


class Stopped(ReviewInputError):
    """A termination signal arrived while stdin was read."""


def _suffix(data: bytes, what: str) -> str:
    if registry.is_pdf(data) or data.startswith(registry.ZIP_MAGIC):
        try:  # a document: the parse's own sniff names it (a ZIP it refuses is still reviewed, and refused there)
            return registry.FORMATS[formats.sniff(what, data)].suffixes[0]
        except DocumentError:
            return ".pdf" if registry.is_pdf(data) else ".zip"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReviewInputError(f"[{REVIEW_INPUT}] {what} is neither UTF-8 text nor a document "
                               f"({formats.ACCEPTED}). Next step: pipe the contract's text (UTF-8) or the file "
                               "itself.") from None
    if not text.strip() or "\x00" in text:
        raise ReviewInputError(f"[{REVIEW_INPUT}] {what} holds no text to review"
                               + (" (NUL bytes)" if "\x00" in text else "")
                               + ". Next step: pass the clause or contract text, e.g. clausegate review --text "
                                 "\"The Supplier's liability shall not exceed the fees paid.\"")
    if not plain_text.is_text(data):  # the parser's rule (e.g. terminal colour codes): refused here, not after
        looks, todo = formats.why_not_text(data)
        raise ReviewInputError(f"[{REVIEW_INPUT}] {what} is not a text document: it is {looks}. Next step: {todo}.")
    return ".txt"


def _stop(signum, _frame) -> None:
    raise Stopped(f"[{REVIEW_INPUT}] stopped by {signal.Signals(signum).name} while reading stdin; nothing was "
                  "reviewed.")


def read_stdin(max_bytes: int = STDIN_MAX_BYTES) -> bytes:
    """stdin, at most ``max_bytes`` (``ReviewInputError`` past that, before the rest is read).  SIGTERM or SIGHUP
    while it is read stops at once (``Stopped``), whatever handler the process had: a writer that never finishes
    cannot hold the command."""
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        data, stream = bytearray(), sys.stdin.buffer
        while len(data) <= max_bytes:
            chunk = stream.read1(CHUNK) if hasattr(stream, "read1") else stream.read(CHUNK)
            if not chunk:
                return bytes(data)
            data += chunk
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    raise ReviewInputError(f"[{REVIEW_INPUT}] stdin is larger than {max_bytes / 1024 / 1024:g} MB, the limit for a "
                           "piped contract. Next step: save it to a file and run clausegate review FILE (files up to "
                           "the playbook's steps.parse.max_file_mb).")


@contextlib.contextmanager
def review_input(file: Path | None, text: str | None, max_bytes: int = STDIN_MAX_BYTES) -> Iterator[Path]:
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
        data, stem, what = read_stdin(max_bytes), "stdin", "stdin"
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
