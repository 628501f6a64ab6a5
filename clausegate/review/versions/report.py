"""The Markdown of a review as the next version of an earlier one: what changed since it (clause by clause, with
the word-level redline, untracked .docx changes flagged) and, per gated finding, whether the earlier decision was
carried (who, when, the receipt) or the finding was asked again (the earlier decision, its reason, the redline)."""

from __future__ import annotations

from clausegate.review.schemas import Review
from clausegate.review.versions.catalog import version_status

STATUS_WORDS = {"changed": "changed", "moved": "moved (words unchanged)", "added": "added", "removed": "removed"}
MAX_SHOWN = 40


def _cell(text: str | None, limit: int = 400) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def version_lines(review: Review) -> list[str]:
    """The report's "Versions" section (none when the review revises no earlier version)."""
    v = review.versions
    if v is None:
        return []
    counts = ", ".join(f"{n} {status}" for status, n in v.counts.items() if n)
    named = "proposed: same parties and title" if v.proposed else "named"
    lines = ["", f"## Versions: revises {_cell(v.filename_or(v.revises))} ({named})", "",
             f"Clauses compared by their words (layout, line breaks, hyphenation, page furniture and PDF ↔ .docx "
             f"never count): {counts or 'nothing to compare'}."]
    if v.history:
        lines += ["", "| Version | File | Review id | Version status |", "|---|---|---|---|"]
        lines += [f"| v{n} | {_cell(e.filename, 80)} | `{e.review_id[:8] or '-'}` | {_cell(e.status, 120)} |"
                  for n, e in enumerate(v.history, 1)]
        lines.append(f"| v{len(v.history) + 1} (this one) | {_cell(review.filename, 80)} | "
                     f"`{review.flow_run_id[:8] or '-'}` | {version_status(review.model_dump(mode='json'), False)} |")
    decided = {(d.categories[0], d.carried.role): d for d in review.decisions if d.carried is not None and d.categories}
    if v.findings:
        lines += ["", "| Finding | This version | Earlier decision | Why |", "|---|---|---|---|"]
        for f in v.findings:
            if f.outcome == "carried" and (f.category, f.role) in decided:
                d = decided[(f.category, f.role)]
                nonce, run = d.carried.receipt.get("nonce", "")[:12], d.carried.flow_run_id[:8]
                earlier = (f"**carried**: {d.decision} by {_cell(d.reviewer, 80)} on {d.decided_at:%Y-%m-%d %H:%M} "
                           f"UTC (receipt `{nonce}`, run `{run}`)")
            elif f.earlier_decision:
                earlier = (f"{f.earlier_decision} by {_cell(f.earlier_reviewer, 80)}"
                           + (f" on {f.earlier_decided_at:%Y-%m-%d}" if f.earlier_decided_at else "")
                           + (f": “{_cell(f.earlier_comment, 200)}”" if f.earlier_comment else ""))
            else:
                earlier = "none"
            shown = {"carried": "carried from the earlier version", "asked_again": "**asked again**: it changed",
                     "new": "decided now"}[f.outcome]
            why = _cell(f.why, 200) + (f"<br>{_cell(f.redline, 600)}" if f.redline else "")
            lines.append(f"| {f.category}{f' ({f.role})' if f.role else ''} | {shown} | {earlier} | {why} |")
    if v.changes:
        lines += ["", "| Clause | Change | Redline (~~deleted~~ **inserted**) |", "|---|---|---|"]
        for change in v.changes[:MAX_SHOWN]:
            status = STATUS_WORDS[change.status] + (" and moved" if change.moved else "")
            status += " · **untracked**" if change.untracked else ""
            text = change.redline or change.new_text or change.old_text
            lines.append(f"| {_cell(change.old_text or change.new_text, 80)} | {status} | {_cell(text)} |")
        if len(v.changes) > MAX_SHOWN:
            lines.append(f"\n{len(v.changes) - MAX_SHOWN} more changed clauses are in the JSON report.")
    return lines
