"""The report's parts that differ by format: where a finding is (p. 7; § 8.5, ¶ 41; chars 120–560), the document
line, and a .docx's pending tracked changes and comments (flagged first when they fall in a gated or high-risk
finding)."""

from __future__ import annotations

from clausegate.review.document import registry
from clausegate.review.schemas import Clause, Review


def md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


CLAUSE_NOTE = ("This text is a single clause, not a whole contract: what it contains is listed; the categories it "
               "lacks are not listed as missing (review the whole contract for that). A required clause the "
               "playbook's positions name still asks a person when it is not here.")


def pages_text(pages: list[int]) -> str:
    if len(pages) == 1:
        return f"p. {pages[0]}"
    return f"pp. {pages[0]}–{pages[-1]}"


def where(clause: Clause) -> str:
    """"§ 11.3 Limitation of Liability, p. 7" in a PDF; "§ 8.5, ¶ 41" in a .docx; "chars 120–560" in text."""
    if clause.paragraph is not None:
        place = f"¶ {clause.paragraph}"
    elif clause.span is not None:
        place = f"chars {clause.span[0]}–{clause.span[1]}"
    else:
        place = pages_text(clause.pages)
    return f"§ {md_cell(clause.section)}, {place}" if clause.section else place


def document_line(review: Review) -> str:
    """The header line on the document: its pages (PDF), or its format and parts (no pages)."""
    if review.format == "pdf":
        return (f"- **Pages:** {review.pages_total} ({len(review.pages_kept)} kept by the pre-filter: "
                f"{', '.join(map(str, review.pages_kept)) or 'none'})")
    how = ("section and paragraph (¶)" if registry.FORMATS[review.format].located_by == "paragraph"
           else "character span")
    return (f"- **Format:** {registry.display(review.format)}, no pages: findings are located by {how}; read in "
            f"{review.pages_total} part(s), {len(review.pages_kept)} kept by the pre-filter")


def markup_sections(review: Review) -> list[str]:
    """A .docx's pending tracked changes and comments, flagged ones first."""
    lines: list[str] = []
    if review.revisions:
        flagged = sum(1 for r in review.revisions if r.flagged)
        lines += ["", f"## Tracked changes ({len(review.revisions)} pending, {flagged} in gated or high-risk findings)",
                  "", "The text was reviewed with every change accepted. Check each one, flagged ones first.", "",
                  "| In finding | Where | Change | Author | Date | Text |", "|---|---|---|---|---|---|"]
        for r in sorted(review.revisions, key=lambda r: (not r.flagged, r.start)):
            mark = f"**⚑ {', '.join(r.flagged)}**" if r.flagged else ""
            kind = "inserted" if r.kind == "insertion" else "deleted"
            lines.append(f"| {mark} | ¶ {r.paragraph} | {kind} | {md_cell(r.author or 'unknown')} | "
                         f"{(r.date or '')[:10]} | {md_cell(_short(r.text))} |")
    if review.comments:
        flagged = sum(1 for c in review.comments if c.flagged)
        lines += ["", f"## Comments ({len(review.comments)}, {flagged} in gated or high-risk findings)", "",
                  "| In finding | Where | Author | Date | Comment | On the text |", "|---|---|---|---|---|---|"]
        for c in sorted(review.comments, key=lambda c: (not c.flagged, c.start)):
            mark = f"**⚑ {', '.join(c.flagged)}**" if c.flagged else ""
            lines.append(f"| {mark} | ¶ {c.paragraph} | {md_cell(c.author or 'unknown')} | {(c.date or '')[:10]} | "
                         f"{md_cell(_short(c.text))} | {md_cell(_short(c.anchor))} |")
    return lines


def pending_changes_note(review: Review, clause: Clause) -> str:
    """For a gate's finding: the pending tracked changes and comments flagged in ``clause`` ("" when none)."""
    if clause.span is None:
        return ""
    a, b = clause.span
    inside = [r for r in review.revisions if clause.category in r.flagged and a <= r.start <= b]
    notes = [f"{'inserted' if r.kind == 'insertion' else 'deleted'} “{_short(r.text, 120)}” by {r.author or 'unknown'}"
             for r in inside]
    notes += [f"comment by {c.author or 'unknown'}: “{_short(c.text, 120)}”" for c in review.comments
              if clause.category in c.flagged and a <= c.start <= b]
    return f" [PENDING in the draft: {'; '.join(notes)}]" if notes else ""


def _short(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 2].rsplit(" ", 1)[0] + " …"
