"""Inbox errors: each carries the HTTP status the API answers with, a stable code and a next step."""

from __future__ import annotations

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


class NotFound(InboxError):
    code, http_status = "CG-INBOX-NOT-FOUND", 404


class BadSubmission(InboxError):
    code, http_status = "CG-INBOX-BAD-REQUEST", 422


class TooLarge(InboxError):
    code, http_status = "CG-INBOX-TOO-LARGE", 413


class NotPdf(InboxError):
    code, http_status = "CG-INBOX-NOT-PDF", 415


class SourceUnavailable(InboxError):
    code, http_status = "CG-INBOX-SOURCE", 422


class RateLimited(InboxError):
    code, http_status = "CG-INBOX-RATE-LIMIT", 429


class Conflict(InboxError):
    code, http_status = "CG-INBOX-CONFLICT", 409


class Unavailable(InboxError):
    """Prefect (the inbox's store) cannot be reached: nothing was created; the client may retry."""

    code, http_status = "CG-INBOX-UNAVAILABLE", 503
    transient = True
