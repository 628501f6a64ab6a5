"""Playbook positions: the figures a walk-away condition reads, the verdict of a finding
against its standard, and the gate a deviating or missing required clause opens (assembled offline, no server)."""

from __future__ import annotations

import hashlib

import pytest

from clausegate.errors import PlaybookError
from clausegate.gates.model import findings_of
from clausegate.gates.slack_view import findings_table
from clausegate.review import assemble
from clausegate.review.figures import figures
from clausegate.review.playbook import load_playbook, parse_playbook
from clausegate.review.positions import MISSING_REASON, Position, WalkAway, check_clause
from clausegate.review.report import render_markdown
from clausegate.review.schemas import Clause, Page, ParsedDocument
from tests.support.positions import NO_CAP_PAGES, POSITIONS_PLAYBOOK, cap_clause, cap_pages


@pytest.mark.parametrize(("kind", "text", "expected"), [
    ("months_of_fees", "shall not exceed the fees paid by Customer in the three (3) months preceding the claim", [3]),
    ("months_of_fees", "EXCEED THE TOTAL AMOUNT PAID BY CUSTOMER IN THE TWELVE (12) MONTHS PRECEDING THE EVENT", [12]),
    ("months_of_fees", "limited to the fees paid during the prior year", [12]),
    ("months_of_fees", "capped at the annual fees payable under this Agreement", [12]),
    ("months_of_fees", "fees paid over the twenty-four month period before the claim", [24]),
    ("months_of_fees", "within thirty (30) days after the end of the term", []),  # not about fees, not months
    ("period_days", "pay all undisputed invoices within thirty (30) days, net 45, or two weeks", [30, 45, 14]),
    ("period_days", "terminate on one hundred twenty (120) days' notice or after 1 year", [120, 365]),
    ("amount", "shall not exceed $1,000,000 or EUR 2 million or five hundred thousand dollars",
     [1_000_000, 2_000_000, 500_000]),
    ("amount", "a fee of 2.5 million euros", [2_500_000]),
    ("multiple_of_fees", "two times the fees paid; twice the amounts payable; 1.5x the fees", [2, 2, 1.5]),
    ("multiple_of_fees", "two times a year the parties meet", []),  # no fee word near it
])
def test_figures_read_from_clause_text(kind, text, expected):
    assert figures(text, kind) == expected


def test_a_walk_away_condition_names_the_line_and_the_figure():
    floor = WalkAway(kind="months_of_fees", min=12, reason="cap below 12 months' fees")
    assert floor.broken_by([3]) == ("walk-away: cap below 12 months' fees (3 months of fees is below the minimum of "
                                    "12 months of fees)")
    assert floor.broken_by([12, 24]) is None and floor.broken_by([]) is None  # no figure: nothing to break
    assert "lesser" not in (floor.broken_by([24, 3]) or "") and floor.broken_by([24, 3])  # the smaller one binds
    notice = WalkAway(kind="period_days", max=30)
    assert notice.broken_by([45]) == "walk-away: 45 days is above the maximum of 30 days"
    with pytest.raises(ValueError, match="give min or max"):
        WalkAway(kind="amount", currency="USD")
    with pytest.raises(ValueError, match="min 5 is above max 1"):
        WalkAway(kind="amount", min=5, max=1, currency="USD")


BOOK = parse_playbook(POSITIONS_PLAYBOOK)
CAP = BOOK.positions[0]


def clause(text: str) -> Clause:
    return Clause(category="Cap on Liability", text=text, pages=[2], confidence=0.9, source="offline")


def test_verdicts_of_a_finding_against_the_standard():
    assert check_clause(clause(cap_clause("twelve (12)")), CAP).verdict == "matches standard"
    greater = ("Each party's aggregate liability shall not exceed the fees paid by Customer in the twelve (12) months "
               "before the claim, or one hundred thousand dollars ($100,000), whichever is greater.")
    on_figures = check_clause(clause(greater), CAP)  # its 12 months meet the line: judged on figures, not wording
    assert on_figures.verdict == "matches standard" and on_figures.reason.startswith("judged on figures: ")
    wording_only = Position(category="Cap on Liability", preferred=CAP.preferred, fallback=CAP.fallback)
    fallback = check_clause(clause(greater), wording_only)
    assert fallback.verdict == "acceptable fallback" and fallback.fallback_similarity > fallback.preferred_similarity
    assert fallback.reason.startswith("judged on wording (the position sets no figure): close to a fallback")
    short = check_clause(clause(cap_clause("three (3)")), CAP)
    assert short.verdict == "deviates" and "cap below 12 months' fees" in short.reason
    assert short.figures == {"months_of_fees": [3.0]}
    other = check_clause(clause("Supplier's liability for breach of confidentiality shall be unlimited."), CAP)
    assert other.verdict == "deviates" and "wording unlike" in other.reason
    assert "judged on wording (no figure in the clause for 'at least 12 months of fees')" in other.reason
    bare = Position(category="Cap on Liability", walk_away=[WalkAway(kind="months_of_fees", min=12)])
    assert check_clause(clause(cap_clause("twenty-four")), bare).verdict == "matches standard"


def review_of(pages: list[str], book=BOOK):
    doc = ParsedDocument(contract_id=hashlib.sha256("\n".join(pages).encode()).hexdigest(), filename="c.pdf",
                         pages=[Page(number=i + 1, text=t) for i, t in enumerate(pages)])
    filtered = assemble.prefilter_step(doc, book.categories)
    extraction = assemble.extract_step(filtered, book.categories)
    return assemble.assemble_review(doc, filtered, extraction, playbook=book.name, gated=book.gated_categories,
                                    positions=book.positions)


def test_a_deviating_cap_gates_the_review_and_the_gate_says_why():
    review = review_of(cap_pages("three (3)"))
    assert review.gated_categories == ["Cap on Liability"]  # the playbook has no gates: the position gates it
    (check,) = review.positions
    assert check.verdict == "deviates" and check.clause is not None
    assert review.clauses[check.clause].category == "Cap on Liability"
    (finding,) = findings_of(review, review.gated_categories)
    assert finding.position.startswith("deviates: walk-away: cap below 12 months' fees")
    assert "↳ deviates: walk-away: cap below 12 months" in findings_table([finding])
    (sealed,) = findings_of(review, review.gated_categories, strict=True)  # strict text: no figure of the clause
    assert sealed.position == "deviates" and "3 months" not in sealed.text
    assert "| Cap on Liability | p. 2 | **deviates** | walk-away: cap below 12 months' fees" in render_markdown(review)


def test_a_missing_required_clause_gates_the_review_with_no_quote():
    review = review_of(NO_CAP_PAGES)
    assert review.gated_categories == ["Cap on Liability"]
    assert [(c.verdict, c.reason, c.clause) for c in review.positions] == [("missing", MISSING_REASON, None)]
    (finding,) = findings_of(review, review.gated_categories)
    assert (finding.text, finding.pages, finding.position) == (MISSING_REASON, [], "missing: " + MISSING_REASON)
    assert "| Cap on Liability | not found | **missing** | required clause not found |" in render_markdown(review)


def test_a_matching_cap_adds_no_gate():
    review = review_of(cap_pages("twelve (12)"))
    assert review.gated_categories == [] and [c.verdict for c in review.positions] == ["matches standard"]


def test_without_gate_on_a_deviation_is_reported_not_gated():
    quiet = parse_playbook(POSITIONS_PLAYBOOK.replace("gate_on: [deviates, missing]", "gate_on: []"))
    review = review_of(cap_pages("three (3)"), quiet)
    assert review.gated_categories == [] and review.positions[0].verdict == "deviates"


def test_position_fields_are_validated():
    with pytest.raises(PlaybookError, match="gate_on 'missing' needs required: true"):
        parse_playbook(POSITIONS_PLAYBOOK.replace("required: true", "required: false"))
    with pytest.raises(PlaybookError, match="positions names categories not in 'categories'"):
        parse_playbook(POSITIONS_PLAYBOOK.replace("- category: Cap on Liability", "- category: Insurance"))
    with pytest.raises(PlaybookError, match="positions.0.walk_away.0.kind"):
        parse_playbook(POSITIONS_PLAYBOOK.replace("kind: months_of_fees", "kind: furlongs"))


def test_shipped_playbooks_give_positions_for_their_gated_categories():
    for name in ("default", "payment-liability"):
        book = load_playbook(name)
        assert set(book.gated_categories) <= {p.category for p in book.positions}, name
        assert all(p.preferred and p.fallback and p.gate_on for p in book.positions), name
    cap = next(p for p in load_playbook("payment-liability").positions if p.category == "Cap on Liability")
    assert cap.required and cap.walk_away[0].min == 12 and cap.gate_on == ["deviates", "missing"]


def test_the_suggestion_step_is_asked_to_explain_the_deviation_and_propose_the_fallback():
    from clausegate.review.llm.redlines import build_generation_prompt, clauses_needing_suggestions

    short, standard = clause(cap_clause("three (3)")), clause(cap_clause("twelve (12)"))
    assert clauses_needing_suggestions([short], BOOK) == [short]  # position-gated, in no gate nor high_risk
    prompt = build_generation_prompt([short, standard], BOOK)
    deviating, matching = prompt.items
    assert "cap below 12 months' fees" in deviating.deviation and deviating.fallback == CAP.fallback[0]
    assert matching.deviation == "" and prompt.user.count("It deviates from our standard") == 1
    assert f"Acceptable fallback: {CAP.fallback[0]}" in prompt.user and "explaining the deviation" in prompt.user


def test_the_review_command_lists_a_missing_required_clause():
    from rich.console import Console

    from clausegate.cli.review import findings_table as review_table

    console = Console(width=160, record=True)
    console.print(review_table(review_of(NO_CAP_PAGES)))
    row = next(line for line in console.export_text().splitlines() if "Cap on Liability" in line)
    assert "needs a person" in row and MISSING_REASON in row


def test_twelve_findings_with_positions_stay_within_a_slack_section():
    from clausegate.gates.model import Finding
    from clausegate.gates.slack_view import SECTION_LIMIT, _table_block

    line = "deviates: walk-away: cap below 12 months' fees (3 months of fees is below the minimum of 12 months of fees)"
    findings = [Finding(category="Cap on Liability", pages=[i + 1], text="word " * 80, confidence=0.5, position=line)
                for i in range(12)]
    text = _table_block(findings)["text"]["text"]
    assert len(text) <= SECTION_LIMIT and text.count("↳ deviates") == 12


def test_a_short_pasted_text_without_a_required_clause_still_gates():
    """A text under the single-clause size lists no missing categories, but a required clause that is absent
    still asks a person: a text's length never clears a gate."""
    words = " ".join(NO_CAP_PAGES)
    assert len(words.split()) < assemble.CLAUSE_WORDS
    doc = ParsedDocument(contract_id=hashlib.sha256(words.encode()).hexdigest(), filename="clause.txt",
                         format="text", pages=[Page(number=1, text=words)])
    filtered = assemble.prefilter_step(doc, BOOK.categories)
    review = assemble.assemble_review(doc, filtered, assemble.extract_step(filtered, BOOK.categories),
                                      playbook=BOOK.name, gated=BOOK.gated_categories, positions=BOOK.positions)
    assert review.scope == "clause" and review.missing_categories == []
    assert review.gated_categories == ["Cap on Liability"]
    assert [c.verdict for c in review.positions] == ["missing"]
