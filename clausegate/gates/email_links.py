"""Signed, single-use, expiring decision links: one per answer per finding per person, in a gate's e-mail.

    token = issue(flow_run_id, gate, "F1", "approve", "lou@example.com", hours=72)
    link = read(token)                       # LinkRefused (FORGED, EXPIRED) unless signed by us and in time
    claim(client, link)                      # LinkRefused (REPLAYED, REUSED) unless the first use of its slot

A token is ``base64url(JSON).hex(HMAC-SHA256)``; the key is derived from ClauseGate's at-rest key (as the
decision receipts' is, with another context), so it never leaves the processes that run ClauseGate. The
address in the signed body is what the link proves: the decision is recorded ``via: email`` with it as the
verified identity, and the one slot check (:func:`clausegate.gates.findings.why_not`) decides whether that
address may fill the finding's slot (else ``CG-EMAIL-LINK-WRONG-PERSON``). Single use: the first POST of a
link claims its (gate, finding, address) with a write-once flow-run input; the same link again is
``REPLAYED``, another link for the same finding and person (an older e-mail's, another answer's) ``REUSED``.
A GET never claims or decides anything: mail scanners fetch links.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from uuid import UUID

from pydantic import BaseModel, ConfigDict, ValidationError

from clausegate.errors import ClauseGateError
from clausegate.gates import store
from clausegate.gates.model import RECORD_PREFIX
from clausegate.security import credentials

KEY_CONTEXT = b"clausegate/email-link/v1"
FORGED, EXPIRED, REPLAYED, REUSED, WRONG_PERSON = (
    "CG-EMAIL-LINK-FORGED", "CG-EMAIL-LINK-EXPIRED", "CG-EMAIL-LINK-REPLAYED", "CG-EMAIL-LINK-REUSED",
    "CG-EMAIL-LINK-WRONG-PERSON")
WHOLE_GATE = "gate"  # the finding a one-decision gate's links name: the whole contract
HINTS = {
    FORGED: "use the link exactly as it came in the gate e-mail; a changed or made-up link decides nothing",
    EXPIRED: "use the links of the newest e-mail (each reminder sends fresh ones), or answer in Slack",
    REPLAYED: "nothing to do: this link already gave its answer",
    REUSED: "nothing to do: you already answered this finding with another link",
    WRONG_PERSON: "the finding is for another person now (a reassignment or a role change); ask them",
}


class LinkRefused(ClauseGateError):
    """A decision link that decides nothing; ``code`` says why (one of the CG-EMAIL-LINK-* codes)."""

    code = FORGED

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, hint=HINTS[code], code=code)


class Link(BaseModel):
    """What a link's signature covers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str
    gate: str
    finding: str
    decision: str
    email: str
    exp: int
    nonce: str


def signing_key(context: bytes = KEY_CONTEXT) -> bytes:
    """A key derived from the at-rest key for one kind of link (``context``): one kind's token is forged as another."""
    base = credentials.at_rest_key(create=True)
    return hmac.new(str(base).encode(), context, hashlib.sha256).digest()


def link_key() -> bytes:
    return signing_key(KEY_CONTEXT)


def _sig(body: bytes, key: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def sign(content: BaseModel, key: bytes) -> str:
    """``base64url(JSON).hex(HMAC-SHA256)`` of ``content``: a token any link kind issues."""
    body = base64.urlsafe_b64encode(content.model_dump_json().encode()).rstrip(b"=")
    return f"{body.decode()}.{_sig(body, key)}"


def unsign(token: str, key: bytes) -> dict | None:
    """The JSON a token carries when ``key`` signed it, else None (changed, cut, made up, or another kind's)."""
    body, _, sig = (token or "").strip().partition(".")
    if not body or not hmac.compare_digest(sig.encode(), _sig(body.encode(), key).encode()):
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def issue(run: str, gate: str, finding: str, decision: str, email: str, *, hours: float,
          key: bytes | None = None, now: float | None = None) -> str:
    link = Link(run=str(run), gate=gate, finding=finding, decision=decision, email=email.strip().lower(),
                exp=int((now or time.time()) + hours * 3600), nonce=secrets.token_hex(12))
    return sign(link, key or link_key())


def read(token: str, *, key: bytes | None = None, now: float | None = None) -> Link:
    """The link a token carries, if we signed it and it has not expired; raises :class:`LinkRefused`."""
    value = unsign(token, key or link_key())
    if value is None:
        raise LinkRefused(FORGED, "this link was not signed by ClauseGate (changed, cut or made up); it decides "
                                  "nothing.")
    try:
        link = Link.model_validate(value)
    except ValidationError:
        raise LinkRefused(FORGED, "this link's content is not a decision link; it decides nothing.") from None
    if (now or time.time()) > link.exp:
        raise LinkRefused(EXPIRED, f"this link expired at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(link.exp))}"
                                   "; it decides nothing.")
    return link


def claim_key(link: Link) -> str:
    person = hashlib.sha256(link.email.encode()).hexdigest()[:16]
    return f"{RECORD_PREFIX}link-{link.gate}-{link.finding.lower()}-{person}"


def claim(client, link: Link) -> None:
    """Spend the link (first use of its gate, finding and address); raises REPLAYED / REUSED otherwise."""
    value = {"nonce": link.nonce, "decision": link.decision, "at": int(time.time())}
    if store.write_once(client, link.run, claim_key(link), value):
        return
    first = store.read_value(client, link.run, claim_key(link)) or {}
    if first.get("nonce") == link.nonce:
        raise LinkRefused(REPLAYED, f"this link was already used (it answered {link.finding} "
                                    f"'{first.get('decision')}'); a link decides once.")
    raise LinkRefused(REUSED, f"you already answered {link.finding} with another link ('{first.get('decision')}'); "
                              "one answer per finding.")


def release(client, link: Link) -> None:
    """Give the claim back when the answer was not applied (Prefect busy, a race): the link may be used again."""
    try:
        client.delete_flow_run_input(flow_run_id=UUID(link.run), key=claim_key(link))
    except Exception:  # best effort: a leftover claim only means this person answers in Slack or by a new link
        pass
