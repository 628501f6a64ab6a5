"""Why each gated category asks a person, said once for every channel (report, Slack, the Resume form):
found at high confidence; possible; disputed by the model (both sides, and why it could not clear it); found by
the model; a position the finding deviates from; a required clause missing; document integrity; and a high-risk
clause the playbook does not gate that the other side changed as tracked changes (each change asks a decision of its
own, the finding does not: :func:`with_tracked_change_gates`)."""

from __future__ import annotations

from collections.abc import Iterable

from clausegate.review.document.codes import INTEGRITY_CATEGORY, INTEGRITY_CODES
from clausegate.review.schemas import Clause, GateReason, Notice, PositionCheck, Review

TRACKED_CHANGE = "tracked change in a high-risk clause"


def gate_reasons(gated: list[str], clauses: list[Clause], checks: list[PositionCheck], disputed: set[str],
                 warnings: Iterable[Notice]) -> list[GateReason]:
    """One or more reasons per gated category, in the gate's order."""
    out: list[GateReason] = []
    for category in gated:
        if category == INTEGRITY_CATEGORY:
            codes = sorted({w.code for w in warnings if w.code in INTEGRITY_CODES})
            out.append(GateReason(category=category, why="integrity", detail=(
                f"what was reviewed may not be what the contract says ({', '.join(codes)})")))
            continue
        mine = [c for c in clauses if c.category == category]
        for clause in mine:
            if clause.dispute is not None and category in disputed:
                out.append(GateReason(category=category, why="disputed", detail=_disputed(clause)))
        if not any(r.category == category and r.why == "disputed" for r in out):
            found = [c for c in mine if not c.possible]
            best = max(found or mine, key=lambda c: c.confidence, default=None)
            if best is not None and best.source == "model":
                out.append(GateReason(category=category, why="model_found", detail=(
                    f"found by the model {best.model} ({best.confidence:.2f})"
                    + (f": {best.reason}" if best.reason else ""))))
            elif best is not None and not best.possible:
                out.append(GateReason(category=category, why="found", detail=(
                    f"found by the offline reader at confidence {best.confidence:.2f}")))
            elif best is not None:
                out.append(GateReason(category=category, why="possible", detail=(
                    f"possible: scored near the threshold ({best.confidence:.2f}), not certain; please check")))
        for check in checks:
            if check.category != category or check.verdict not in ("deviates", "missing"):
                continue
            why = "missing" if check.verdict == "missing" else "position"
            detail = check.reason if why == "position" else f"required clause missing: {check.reason}"
            if not any(r.category == category and r.why == why and r.detail == detail for r in out):
                out.append(GateReason(category=category, why=why, detail=detail))
    return out


def _disputed(clause: Clause) -> str:
    d = clause.dispute
    ours = f"the offline reader found it at {clause.confidence:.2f}" + (" (possible)" if clause.possible else "")
    if d.model_found == "nothing":
        theirs = f"{d.model} says it is not there"
    elif d.model_found == "lower":
        theirs = f"{d.model} quoted it at a lower confidence ({d.model_confidence:.2f})"
    else:
        theirs = f"{d.model} quoted other text (p. {', '.join(map(str, d.model_pages))})"
    because = f" because \"{d.model_reason}\"" if d.model_reason else ""
    kept = f"; not cleared: {d.not_cleared}" if d.not_cleared else ""
    return f"disputed: {ours}; {theirs}{because}{kept}"


def describe_reasons(reasons: Iterable[GateReason], category: str) -> str:
    """The reasons of one category in one line, for a gate message."""
    return "; ".join(r.detail for r in reasons if r.category == category)


def with_tracked_change_gates(review: Review, high_risk: Iterable[str]) -> Review:
    """``review`` with a gate opened for each high-risk category the playbook does not gate whose finding holds a
    pending tracked change (``Revision.flagged``): the category joins ``gated_categories`` with one reason, why
    ``tracked_change``, so a person accepts, rejects or counters each change (``clausegate.gates.changes``); the
    finding itself is shown, not asked (:func:`change_only_categories`)."""
    if review.status != "complete":
        return review
    risky = set(high_risk) - set(review.gated_categories)
    found: dict[str, list] = {}
    for rev in sorted(review.revisions, key=lambda r: r.start):
        for category in rev.flagged:
            if category in risky:
                found.setdefault(category, []).append(rev)
    if not found:
        return review
    reasons = []
    for category, revs in found.items():
        authors = ", ".join(dict.fromkeys(r.author or "unknown" for r in revs))
        reasons.append(GateReason(category=category, why="tracked_change", detail=(
            f"{TRACKED_CHANGE}: {len(revs)} pending change(s) by {authors}; accept, reject or counter each one "
            "(the finding itself is not asked)")))
    return review.model_copy(update={"gated_categories": [*review.gated_categories, *found],
                                     "gate_reasons": [*review.gate_reasons, *reasons]})


def change_only_categories(reasons: Iterable[GateReason]) -> list[str]:
    """The gated categories whose only reason is a tracked change in a high-risk clause (their findings not asked)."""
    reasons = list(reasons)
    other = {r.category for r in reasons if r.why != "tracked_change"}
    return list(dict.fromkeys(r.category for r in reasons if r.why == "tracked_change" and r.category not in other))


__all__ = ["change_only_categories", "describe_reasons", "gate_reasons", "with_tracked_change_gates"]
