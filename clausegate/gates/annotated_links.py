"""Signed, expiring links to a review's annotated copy: one click from a gate (Slack, the Prefect UI form, e-mail)
to the clause, without the inbox's API key.

    token = issue(contract_sha256, "default", "nda-…-default.annotated.docx", hours=24)
    link = read(token)                     # AnnotatedLinkRefused (FORGED, EXPIRED) unless signed by us and in time
    url = record_link(record)              # "https://gateway/annotated/<token>", or None (no copy to link)

The signature covers the contract's sha256, the playbook, the annotated file's name and the expiry; the key is
derived from ClauseGate's at-rest key with a context of its own (:func:`clausegate.gates.email_links.signing_key`,
the same signer as the decision links), so a decision link is no annotated link and the other way round. The
gateway serves ``GET /annotated/{token}`` (clausegate/gateway/annotated_links.py) from the inbox's reports folder;
a link names one file there and nothing else. A link lasts the gate's SLA (``sla_hours``), or
``CLAUSEGATE_GATEWAY_ANNOTATED_LINK_HOURS``; a message re-rendered later (a per-finding gate's answers, the
decided view) carries a fresh one. Whoever holds a link reads the copy until it expires: in strict text mode the
file stays sealed at rest and is unsealed for a valid link only.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clausegate.config import settings
from clausegate.errors import ClauseGateError
from clausegate.gates.email_links import sign, signing_key, unsign

KEY_CONTEXT = b"clausegate/annotated-link/v1"
PATH = "/annotated"
FORGED, EXPIRED, GONE = "CG-ANNOTATED-LINK-FORGED", "CG-ANNOTATED-LINK-EXPIRED", "CG-ANNOTATED-LINK-GONE"
HINTS = {
    FORGED: "use the link exactly as the gate message gave it; a changed or made-up link opens nothing",
    EXPIRED: "open the gate message again (Slack shows a fresh link after each answer) or ask the inbox API: "
             "GET /inbox/tasks/{id}/annotated with the task's key",
    GONE: "the copy was removed (retention) or written outside the inbox's reports folder; the review's report "
          "names the clause's page or § and ¶",
}
STATUS = {FORGED: 403, EXPIRED: 410, GONE: 404}


class AnnotatedLinkRefused(ClauseGateError):
    """A link to an annotated copy that opens nothing; ``code`` says why (one of the CG-ANNOTATED-LINK-* codes)."""

    code = FORGED

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, hint=HINTS[code], code=code)

    @property
    def http_status(self) -> int:
        return STATUS[self.code]


class AnnotatedLink(BaseModel):
    """What a link's signature covers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    playbook: str
    file: str = Field(pattern=r"^[^/\\]+$", description="the annotated copy's name in the reports folder")
    exp: int


def link_key() -> bytes:
    return signing_key(KEY_CONTEXT)


def issue(sha256: str, playbook: str, file: str, *, hours: float, key: bytes | None = None,
          now: float | None = None) -> str:
    link = AnnotatedLink(sha256=sha256, playbook=playbook, file=file, exp=int((now or time.time()) + hours * 3600))
    return sign(link, key or link_key())


def read(token: str, *, key: bytes | None = None, now: float | None = None) -> AnnotatedLink:
    """The link a token carries, if we signed it and it has not expired; raises :class:`AnnotatedLinkRefused`."""
    value = unsign(token, key or link_key())
    if value is None:
        raise AnnotatedLinkRefused(FORGED, "this link to an annotated contract was not signed by ClauseGate "
                                           "(changed, cut or made up); it opens nothing.")
    try:
        link = AnnotatedLink.model_validate(value)
    except ValidationError:
        raise AnnotatedLinkRefused(FORGED, "this link is not a link to an annotated contract; it opens "
                                           "nothing.") from None
    if (now or time.time()) > link.exp:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(link.exp))
        raise AnnotatedLinkRefused(EXPIRED, f"this link to the annotated contract expired at {when}.")
    return link


def url(token: str, base: str | None = None) -> str:
    return f"{(base or settings().gateway.public_url).rstrip('/')}{PATH}/{token}"


def link_hours(sla_hours: float) -> float:
    return settings().gateway.annotated_link_hours or sla_hours


def record_link(record, *, now: float | None = None) -> str | None:
    """The signed link to the gate's annotated copy, or None: the review wrote none (annotation off or failed), or
    it is not in the inbox's reports folder the gateway serves (a run with another ``out_dir``)."""
    name = getattr(record, "annotated", None)
    if not name or "/" in name or "\\" in name or len(record.contract_id) != 64:
        return None
    if not (settings().inbox.reports_dir / name).is_file():
        return None
    token = issue(record.contract_id, record.playbook, name, hours=link_hours(record.sla_hours), now=now)
    return url(token)
