"""Inbox errors: each carries the HTTP status the API answers with, a stable code and a next step."""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable

from clausegate.errors import ClauseGateError


class InboxError(ClauseGateError):
    code = "CG-INBOX"
    http_status = 400

    def __init__(self, message: str, *, hint: str = "", code: str | None = None, http_status: int | None = None,
                 headers: dict[str, str] | None = None) -> None:
        if http_status is not None:
            self.http_status = http_status
        self.headers = headers or {}
        super().__init__(message, hint=hint, code=code)


class Unauthorized(InboxError):
    code, http_status = "CG-INBOX-AUTH", 401


class TaskNotFound(InboxError):
    """No such inbox task for this sender (others' tasks are invisible)."""

    code, http_status = "CG-INBOX-NOT-FOUND", 404


class BadSubmission(InboxError):
    code, http_status = "CG-INBOX-BAD-REQUEST", 422


class TooLarge(InboxError):
    code, http_status = "CG-INBOX-TOO-LARGE", 413


class NotPdf(InboxError):
    code, http_status = "CG-INBOX-NOT-PDF", 415


class NotDocx(InboxError):
    """A file named .docx that is not an OOXML (ZIP) package, e.g. a legacy binary .doc."""

    code, http_status = "CG-INBOX-NOT-DOCX", 415


class NotText(InboxError):
    """A file named .txt/.md that is not UTF-8 text (invalid UTF-8 or NUL bytes)."""

    code, http_status = "CG-INBOX-NOT-TEXT", 415


class MalformedMessage(InboxError):
    """An .eml upload the standard library's parser refuses (malformed headers or MIME structure)."""

    code, http_status = "CG-INBOX-EML-MALFORMED", 422


class MessageTooComplex(InboxError):
    """An .eml whose reading hit the sandboxed child's time or memory cap (very large, or built to be slow)."""

    code, http_status = "CG-INBOX-EML-TOO-COMPLEX", 422


class NothingToReview(InboxError):
    """An e-mail with no PDF/DOCX attachment that could be taken and no contract language in its body."""

    code, http_status = "CG-INBOX-EML-NO-CONTRACT", 422


class RevisesNotFound(InboxError):
    """A submission's ``revises`` names no task of its sender (unknown, malformed, or another sender's: the same
    answer, so a key learns nothing of other senders' tasks)."""

    code, http_status = "CG-INBOX-REVISES", 422


class SourceUnavailable(InboxError):
    code, http_status = "CG-INBOX-SOURCE", 422


class SenderRateLimited(InboxError):
    """The sender submitted more than its rate per minute."""

    code, http_status = "CG-INBOX-RATE-LIMIT", 429


class Conflict(InboxError):
    code, http_status = "CG-INBOX-CONFLICT", 409


class Unavailable(InboxError):
    """Prefect (the inbox's store) cannot be reached: nothing was created; the client may retry."""

    code, http_status = "CG-INBOX-UNAVAILABLE", 503
    transient = True


# --------------------------------------------------------------------------- what an answer may repeat
ECHO_LIMIT = 100
"""At most this many characters of a client's value are repeated in an error message."""


def _escaped(ch: str) -> str:
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def clip(value: object, limit: int = ECHO_LIMIT) -> str:
    """A client's value fit to be repeated in an answer or a log line: control, invisible and unassigned
    characters escaped (``\\x00``, ``\\u202e``), at most ``limit`` characters, then an ellipsis."""
    text = value if isinstance(value, str) else str(value)
    cut = text[:limit]
    shown = "".join(_escaped(ch) for ch in cut)
    return shown + "…" if len(text) > limit else shown


def redact_paths(text: str, roots: Iterable[tuple[str | os.PathLike, str]] = ()) -> str:
    """``text`` with the server's own folders replaced by a neutral name (``<inbox>/uploads/…``).

    ``roots`` are (absolute folder, replacement) pairs, longest first wins; the working directory,
    the home folder and the temp folder are always replaced.  The client learns the file name it
    sent, never where the server keeps things.
    """
    pairs = [(str(root), name) for root, name in roots if root]
    pairs += [(os.getcwd(), "."), (tempfile.gettempdir(), "<tmp>"), (os.path.expanduser("~"), "~")]
    for root, name in sorted(pairs, key=lambda pair: len(pair[0]), reverse=True):
        root = root.rstrip("/")
        if len(root) > 1 and root in text:
            text = re.sub(re.escape(root) + r"(?![\w.-])", lambda _match, replacement=name: replacement, text)
    return text
