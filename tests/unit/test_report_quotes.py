"""The Review artifact (the report's Markdown, shown in the Prefect UI) keeps each clause's quote readable:
the quote on its own line under its category, place and confidence, never squeezed into a table cell (the UI
cut a table's quote column after about 25 characters at a 1400-pixel window)."""

from __future__ import annotations

from clausegate.review.report import render_markdown
from clausegate.review.schemas import Clause, Review

QUOTE = ("In no event shall either party's aggregate liability arising out of or related to this Agreement exceed "
         "the total fees paid by Customer in the twelve months preceding the claim.")


def section(markdown: str, heading: str) -> str:
    return markdown.split(heading, 1)[1].split("\n## ", 1)[0]


def test_each_quote_is_on_its_own_line_under_its_finding():
    clauses = [Clause(category="Cap on Liability", text=QUOTE, pages=[3], confidence=0.91, source="offline",
                      section="8 Liability"),
               Clause(category="Governing Law", text="This Agreement is governed by the laws of New York.", pages=[5],
                      confidence=0.6, source="offline", possible=True)]
    markdown = render_markdown(Review(contract_id="a" * 64, filename="msa.pdf", playbook="p", status="complete",
                                      extractor="offline", clauses=clauses))
    found = section(markdown, "## Clauses found")
    assert "**Cap on Liability** · § 8 Liability, p. 3 · confidence 0.91" in found, found
    assert f"> {QUOTE}" in found.splitlines(), found  # whole, on its own line: no table cell to squeeze it
    assert not [line for line in found.splitlines() if line.startswith("|") and "In no event" in line], found
    possible = section(markdown, "## Possible clauses")
    assert "**Governing Law** · p. 5 · confidence 0.60" in possible
    assert "> This Agreement is governed by the laws of New York." in possible.splitlines()
