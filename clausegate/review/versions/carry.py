"""A person's decision carried to the next version of a contract only by the decided clause's own text.

A decision recorded on version 1 (its signed receipt holds the sha256 of each decided clause's normalised text
and the playbook's sha256) is **carried** to a finding of version 2 only when the finding is in the same category,
its clause's hash equals the receipt's and the playbook's hash is the same.  Anything else is **asked again**:
a one-word or one-digit change makes another hash, so it never inherits; the finding then shows the earlier
decision (who, when, the answer and its reason) and the word-level redline from the decided text to the new one.
A finding with no earlier decision in its category is **new**.  Nothing here clears a gate by itself: a carried
finding carries the receipt it stands on, which ``clausegate receipts verify`` checks.
"""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from clausegate.review.versions.redline import markdown, redline, similarity


def clause_sha256(text: str) -> str:
    """sha256 of a clause's normalised text (whitespace collapsed, NFC): the hash a decision receipt signs."""
    return hashlib.sha256(unicodedata.normalize("NFC", " ".join(text.split())).encode("utf-8")).hexdigest()


class EarlierDecision(BaseModel):
    """A decision recorded on an earlier version, with what its receipt proves was decided."""

    category: str
    finding: str = Field("", description="the finding's id in the earlier review's gate (F1, …)")
    clause_sha256: str = Field(description="the receipt's hash of the decided clause's normalised text")
    playbook_sha256: str = ""
    clause_text: str = Field("", description="the decided clause's text, for the redline")
    decision: str
    reviewer: str
    comment: str = ""
    decided_at: datetime | None = None
    via: str = ""
    flow_run_id: str = Field("", description="the earlier review's run")
    receipt: dict[str, Any] | None = Field(None, description="the signed decision receipt it stands on")


class Carried(BaseModel):
    """What the later version's finding gets from the earlier version's decisions."""

    category: str
    text_sha256: str
    outcome: Literal["carried", "asked_again", "new"]
    why: str
    earlier: EarlierDecision | None = None
    redline: str = Field("", description="asked again: the decided text → this text, ~~deleted~~ **inserted**")


def carry_one(category: str, text: str, earlier: list[EarlierDecision], playbook_sha256: str, *,
              digest: str | None = None) -> Carried:
    """The carry outcome of one finding (module doc); ``digest``: its clause's hash when known (a gate finding's
    ``text_sha256``, computed on the clause's whole text), else the hash of ``text``."""
    digest = digest or clause_sha256(text)
    same_category = [d for d in earlier if d.category == category]
    if not same_category:
        return Carried(category=category, text_sha256=digest, outcome="new", why="no earlier decision on "
                       f"{category}")
    exact = [d for d in same_category if d.clause_sha256 == digest]
    if exact and exact[0].playbook_sha256 == playbook_sha256 and playbook_sha256:
        return Carried(category=category, text_sha256=digest, outcome="carried", earlier=exact[0],
                       why="the decided clause's text and the playbook are unchanged (the receipt's hashes)")
    if exact:
        return Carried(category=category, text_sha256=digest, outcome="asked_again", earlier=exact[0],
                       why="the clause is unchanged but the playbook changed since it was decided")
    closest = max(same_category, key=lambda d: similarity(d.clause_text, text) if d.clause_text else 0.0)
    shown = markdown(redline(closest.clause_text, text)) if closest.clause_text else ""
    return Carried(category=category, text_sha256=digest, outcome="asked_again", earlier=closest, redline=shown,
                   why="the clause changed since it was decided")


def carry(findings: list[tuple[str, str]], earlier: list[EarlierDecision],
          playbook_sha256: str) -> list[Carried]:
    """``findings`` (category, clause text) of the later version, each with its carry outcome."""
    return [carry_one(category, text, earlier, playbook_sha256) for category, text in findings]
