"""A person's decision carried to the next version of a contract only by the decided clause's own text.

A decision recorded on version 1 (its signed receipt holds the sha256 of each decided clause's normalised text
and the playbook's sha256) is **carried** to a finding of version 2 only when the finding is in the same category,
its clause's hash equals the receipt's and the playbook's hash is the same.  Anything else is **asked again**:
a one-word or one-digit change makes another hash, so it never inherits; the finding then shows the earlier
decision (who, when, the answer and its reason) and the word-level redline from the decided text to the new one.
A finding with no earlier decision in its category is **new**.  Nothing here clears a gate by itself: a carried
finding carries the receipt it stands on, which ``clausegate receipts verify`` checks.

On a per-finding gate whose category names roles (``gates[].roles``), each role's slot of a finding carries on its
own (:func:`carry_slots`): legal's decision carries only legal's slot, finance's only finance's, each by the
receipt of the answer that filled it; a changed clause asks every role again.
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
    role: str = Field("", description="the role whose slot it filled on a per-finding gate; '' for a decision on "
                      "the whole gate or a finding anyone may decide")
    flow_run_id: str = Field("", description="the earlier review's run")
    receipt: dict[str, Any] | None = Field(None, description="the signed decision receipt it stands on")


class Carried(BaseModel):
    """What the later version's finding gets from the earlier version's decisions."""

    category: str
    text_sha256: str
    role: str = Field("", description="the role's slot this outcome is for ('' : the finding as a whole)")
    outcome: Literal["carried", "asked_again", "new"]
    why: str
    earlier: EarlierDecision | None = None
    redline: str = Field("", description="asked again: the decided text → this text, ~~deleted~~ **inserted**")


def carry_one(category: str, text: str, earlier: list[EarlierDecision], playbook_sha256: str, *,
              digest: str | None = None, role: str = "") -> Carried:
    """The carry outcome of one finding, or of one ``role``'s slot of it (module doc); ``digest``: its clause's
    hash when known (a gate finding's ``text_sha256``, computed on the clause's whole text), else the hash of
    ``text``.  Only a decision that filled the same role's slot counts for a role."""
    digest = digest or clause_sha256(text)
    whose = f"role {role}'s " if role else ""
    out = {"category": category, "text_sha256": digest, "role": role}
    same_category = [d for d in earlier if d.category == category and d.role == role]
    if not same_category:
        return Carried(**out, outcome="new", why=f"no earlier {whose}decision on {category}")
    exact = [d for d in same_category if d.clause_sha256 == digest]
    if exact and exact[0].playbook_sha256 == playbook_sha256 and playbook_sha256:
        return Carried(**out, outcome="carried", earlier=exact[0],
                       why=f"the decided clause's text and the playbook are unchanged (the {whose}receipt's hashes)")
    if exact:
        return Carried(**out, outcome="asked_again", earlier=exact[0],
                       why="the clause is unchanged but the playbook changed since it was decided")
    closest = max(same_category, key=lambda d: similarity(d.clause_text, text) if d.clause_text else 0.0)
    shown = markdown(redline(closest.clause_text, text)) if closest.clause_text else ""
    return Carried(**out, outcome="asked_again", earlier=closest, redline=shown,
                   why="the clause changed since it was decided")


def carry_slots(category: str, text: str, roles: list[str], earlier: list[EarlierDecision], playbook_sha256: str,
                *, digest: str | None = None) -> list[Carried]:
    """One outcome per slot of a finding: one per role its category names, or one for the finding as a whole."""
    return [carry_one(category, text, earlier, playbook_sha256, digest=digest, role=role) for role in roles or [""]]


def category_carries(outcomes: list[Carried]) -> bool:
    """Whether a gated category leaves the gate: every slot of every finding carried, and a category decided as a
    whole (no roles) by one decision (two different decisions on its findings are asked again)."""
    if not outcomes or any(o.outcome != "carried" for o in outcomes):
        return False
    return any(o.role for o in outcomes) or len({o.earlier.decision for o in outcomes}) == 1


def as_a_whole(outcomes: list[Carried]) -> list[Carried]:
    """A category that stays on the gate: its slots that would carry are asked again with it (the gate asks
    about a category's findings together), saying so."""
    return [o.model_copy(update={"outcome": "asked_again", "why": "unchanged, but asked again with the rest of "
                                 f"{o.category}: not every finding{' and role' if o.role else ''} of it carries"})
            if o.outcome == "carried" else o for o in outcomes]


def signed_decision_of(signed: str, finding: str) -> str | None:
    """The decision a receipt signs for ``finding``: a one-decision gate's decision, or the finding's entry of a
    per-finding answer's summary (``F1=approve;F2=changes``); None when the summary does not name it."""
    if "=" not in signed:
        return signed
    parts = dict(part.split("=", 1) for part in signed.split(";") if "=" in part)
    return parts.get(finding)


def carry(findings: list[tuple[str, str]], earlier: list[EarlierDecision],
          playbook_sha256: str) -> list[Carried]:
    """``findings`` (category, clause text) of the later version, each with its carry outcome."""
    return [carry_one(category, text, earlier, playbook_sha256) for category, text in findings]
