"""What an annotation says about one finding, the same words in a Word comment, a PDF highlight and the HTML page:
its number and category, its confidence, why it gates (``Review.gate_reasons``), its verdict against the playbook's
position, and once a person decided, the decision with who and when.

Every note starts with its tag, ``ClauseGate #N`` (N: the finding's 1-based index in ``Review.clauses``), which is how
the read-back (:mod:`clausegate.review.annotate.readback`) ties an annotation to its finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the capped child builds notes without the schemas (their import is most of its start-up)
    from clausegate.review.schemas import Clause, GateDecision, Review

AUTHOR = "ClauseGate"
INITIALS = "CG"
CUT_MARK = " […]"
TAG = re.compile(r"ClauseGate #(\d+)\b")
CONTINUED = re.compile(r"ClauseGate #\d+ \(continued\)")  # a later piece's mark: the note is on the first piece


@dataclass(frozen=True)
class Note:
    """One finding to annotate: its index in ``Review.clauses``, the clause, the note's lines, and the playbook's
    fallback wording when the finding deviates from its position (None otherwise)."""

    index: int
    clause: Clause
    lines: tuple[str, ...]
    fallback: str | None = None

    @property
    def tag(self) -> str:
        return f"ClauseGate #{self.index + 1}"

    @property
    def continued(self) -> str:
        """What a later piece of the finding's text carries (a page's part in a PDF, a piece of a quote that is not
        one passage): its tag, marked continued; the read-back counts the note once (:func:`is_continued`)."""
        return f"{self.tag} (continued)"

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def quote(self) -> str:
        """The clause's quote as the document has it: the cut mark dropped, white space collapsed."""
        return quote_of(self.clause)


def is_continued(text: str) -> bool:
    """An annotation's text is a later piece's mark (:attr:`Note.continued`), not a note."""
    return CONTINUED.fullmatch(text.strip()) is not None


def quote_of(clause: Clause) -> str:
    text = clause.text[:-len(CUT_MARK)] if clause.text.endswith(CUT_MARK) else clause.text
    return " ".join(text.split())


def notes_for(review: Review, fallbacks: dict[str, str] | None = None) -> list[Note]:
    """A note per finding of ``review`` (a possible finding too, marked so); ``fallbacks``: per category, the
    playbook position's fallback wording, inserted where the finding's verdict is ``deviates``."""
    fallbacks = fallbacks or {}
    out = []
    for index, clause in enumerate(review.clauses):
        check = next((p for p in review.positions if p.clause == index), None)
        lines = [f"{AUTHOR} #{index + 1} · {clause.category}"
                 + (" (possible)" if clause.possible else "")
                 + f" · confidence {clause.confidence:.2f}"]
        gated = clause.category in review.gated_categories
        reasons = [r for r in review.gate_reasons if r.category == clause.category]
        if gated:
            said = "; ".join(r.detail if r.detail.startswith(r.why) else f"{r.why}: {r.detail}" if r.detail
                             else r.why for r in reasons) or "gated category"
            lines.append(f"Gates: {said}")
        else:
            lines.append("Does not gate this review")
        if check is not None:
            lines.append(f"Position: {check.verdict}" + (f": {check.reason}" if check.reason else ""))
        fallback = fallbacks.get(clause.category) if check is not None and check.verdict == "deviates" else None
        if fallback and review.format == "docx":
            lines.append("The playbook's fallback wording follows as a tracked change by ClauseGate (not applied).")
        elif fallback:
            lines.append(f"The playbook's fallback wording: {fallback}")
        decided = [d for d in review.decisions if clause.category in d.categories and _on(d, clause)]
        if decided:
            lines.extend(_decision(d) for d in decided)
        elif gated:
            lines.append("Decision: pending")
        out.append(Note(index=index, clause=clause, lines=tuple(lines), fallback=fallback or None))
    return out


def _on(decision: GateDecision, clause: Clause) -> bool:
    """A decision on one of the other side's tracked changes is on the finding whose text holds the change (when the
    finding has a span); any other decision is on every finding of its categories."""
    change, span = decision.change, getattr(clause, "span", None)
    return change is None or not span or span[0] <= change.change.start <= span[1]


def _decision(decision: GateDecision) -> str:
    """"Decision: changes by alice via slack, 2026-12-07 09:30 UTC: cap it"; on a tracked change "Decision on
    tracked change C2 (counter): …", per finding and role "Decision (F1, legal): …"."""
    from datetime import UTC  # local import: the capped child imports this module and never writes a decision

    at = decision.decided_at
    when = (at.astimezone(UTC) if at.tzinfo else at).strftime("%Y-%m-%d %H:%M UTC")
    if decision.change is not None:
        head = f"Decision on tracked change {decision.change.change.id} ({decision.change.decision})"
    else:
        of = ", ".join(x for x in (decision.finding, decision.role) if x)
        head = f"Decision ({of})" if of else "Decision"
    said = f"{head}: {decision.decision} by {decision.reviewer} via {decision.via}, {when}"
    comment = decision.comment or (decision.change.counter if decision.change is not None else "")
    return said + (f": {comment}" if comment else "")


def fallback_wording(positions) -> dict[str, str]:
    """Per category, the wording a deviating finding is offered: the position's first fallback, else its preferred
    wording (``positions``: the playbook's :class:`~clausegate.review.positions.Position` list)."""
    out = {}
    for position in positions or ():
        wording = (position.fallback[0] if position.fallback else position.preferred).strip()
        if wording:
            out[position.category] = wording
    return out


def where(clause: Clause) -> str:
    """Where the finding is, for a person: the page, or the § and ¶ of a .docx."""
    parts = []
    if clause.section:
        parts.append(f"§ {clause.section}")
    if clause.paragraph:
        parts.append(f"¶ {clause.paragraph}")
    if not parts:
        pages = clause.pages
        parts.append(f"page {pages[0]}" if len(pages) == 1 else f"pages {pages[0]}–{pages[-1]}")
    return ", ".join(parts)
