"""The report's positions table says where a finding is the way the rest of the report does: a
PDF's page, a .docx's § and ¶, a text's character span (never "p. 1" for every .docx or text finding)."""

from __future__ import annotations

from clausegate.review.report import render_markdown
from clausegate.review.schemas import Clause, PositionCheck, Review

TEXT = "The Supplier's total liability shall not exceed the fees paid in the twelve months before the claim."


def review_of(fmt: str, **where) -> Review:
    clause = Clause(category="Cap on Liability", text=TEXT, pages=[1], confidence=0.9, source="offline", **where)
    check = PositionCheck(category="Cap on Liability", verdict="deviates", reason="cap below 12 months' fees",
                          clause=0, pages=[1])
    missing = PositionCheck(category="Insurance", verdict="missing", reason="required clause not found")
    return Review(contract_id="a" * 64, filename=f"msa.{fmt}", playbook="p", status="complete", extractor="offline",
                  clauses=[clause], positions=[check, missing], format=fmt)


def position_rows(markdown: str) -> list[str]:
    table = markdown.split("## Against the playbook's positions", 1)[1].split("\n## ", 1)[0]
    return [line for line in table.splitlines() if line.startswith("| Cap on") or line.startswith("| Insurance")]


def test_a_docx_finding_is_placed_by_section_and_paragraph():
    rows = position_rows(render_markdown(review_of("docx", paragraph=4, section="8 Liability", span=[10, 110])))
    assert rows[0].startswith("| Cap on Liability | § 8 Liability, ¶ 4 |"), rows
    assert "p. 1" not in rows[0] and "| not found |" in rows[1]


def test_a_text_finding_is_placed_by_its_character_span():
    rows = position_rows(render_markdown(review_of("text", span=[120, 220])))
    assert rows[0].startswith("| Cap on Liability | chars 120–220 |"), rows


def test_a_pdf_finding_keeps_its_page():
    rows = position_rows(render_markdown(review_of("pdf", section="8 Liability")))
    assert rows[0].startswith("| Cap on Liability | p. 1 |"), rows
