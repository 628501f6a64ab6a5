"""The report's section on the counterparty's tracked changes decided at the gate: each change and its decision.

    lines = change_lines(review)   # Markdown; the JSON report has the same in ``decisions[].change``
"""

from __future__ import annotations

from clausegate.review.report_formats import md_cell
from clausegate.review.schemas import Review

PAST = {"accept": "accepted", "reject": "rejected", "counter": "countered"}
QUOTE = 200


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE else flat[: QUOTE - 1].rstrip() + "…"


def change_lines(review: Review) -> list[str]:
    """One row per decided tracked change (empty when the gate decided none)."""
    decided = [d for d in review.decisions if d.change is not None]
    if not decided:
        return []
    lines = ["", f"## The other side's tracked changes ({len(decided)} decided at the gate)", "",
             "| Change | In finding | Change by | Text | Decision | Counter-proposal | Reviewer | Via | When |",
             "|---|---|---|---|---|---|---|---|---|"]
    for d in decided:
        c = d.change.change
        kind = "inserted" if c.kind == "insertion" else "deleted"
        by = f"{c.author or 'unknown'}{' ' + c.date[:10] if c.date else ''}"
        lines.append(f"| {c.id} (¶ {c.paragraph}) | {d.finding or c.finding} {md_cell(c.category)} | {md_cell(by)} "
                     f"| {kind}: {md_cell(_short(c.text))} | **{PAST[d.change.decision]}** "
                     f"| {md_cell(_short(d.change.counter)) or '-'} | {md_cell(d.reviewer)} | {d.via} "
                     f"| {d.decided_at:%Y-%m-%d %H:%M} |")
    return lines
