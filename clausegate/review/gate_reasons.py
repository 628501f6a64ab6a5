"""Why each gated category asks a person, said once for every channel (report, Slack, the Resume form):
found at high confidence; possible; disputed by the model (both sides, and why it could not clear it); found by
the model; a position the finding deviates from; a required clause missing; document integrity."""

from __future__ import annotations

from collections.abc import Iterable

from clausegate.review.document.codes import INTEGRITY_CATEGORY, INTEGRITY_CODES
from clausegate.review.schemas import Clause, GateReason, Notice, PositionCheck


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


__all__ = ["describe_reasons", "gate_reasons"]
