"""Re-locating a reused review in another layout of the same words (clausegate/review/relocate.py): every place
is this document's own, and a text without a single place here is refused (the review then computes its own)."""

from __future__ import annotations

import pytest

from clausegate.review.relocate import NotFound, relocate
from clausegate.review.schemas import Clause, FilteredDocument, Notice, Page, ParsedDocument, Passage, Suggestion

ID = "0" * 64
CAP = "3. Limitation of Liability. In no event shall either party's liability exceed the fees paid."
LD = "6. Liquidated Damages. Supplier shall pay two percent of the order value for each week of delay."


def _doc(pages: list[str]) -> ParsedDocument:
    return ParsedDocument(contract_id=ID, filename="x.pdf", pages=[Page(number=i, text=t)
                                                                   for i, t in enumerate(pages, 1)])


def _reused(page_cap: int = 1, page_ld: int = 1) -> tuple[FilteredDocument, list[Clause]]:
    """A result computed on a one-part layout (the .docx): both clauses on part 1."""
    filtered = FilteredDocument(contract_id=ID, tokens_total=10, tokens_kept=10, pages_kept=[1], passages=[
        Passage(page=page_cap, text=CAP, score=0.9), Passage(page=page_ld, text=LD, score=0.9)])
    clauses = [Clause(category="Cap on Liability", text=CAP, pages=[page_cap], confidence=0.9, source="model"),
               Clause(category="Liquidated Damages", text=LD, pages=[page_ld], confidence=0.9, source="offline")]
    return filtered, clauses


def test_every_passage_finding_suggestion_and_notice_cites_this_documents_pages():
    filtered, clauses = _reused()
    here = _doc(["MASTER AGREEMENT", CAP, "Other words.\n" + LD])
    notice = Notice(code="CG-MODEL-DISPUTED", page=1, message="Liquidated Damages: found on p. 1; kept as disputed")
    moved = relocate(here, filtered, clauses, [Suggestion(category="Cap on Liability", pages=[1], redline="x")],
                     [notice])
    assert [p.page for p in moved.filtered.passages] == [2, 3] and moved.filtered.pages_kept == [2, 3]
    assert [c.pages for c in moved.clauses] == [[2], [3]]
    assert moved.suggestions[0].pages == [2]
    assert moved.notices[0].page == 3 and "p. 3" in moved.notices[0].message


def test_a_text_found_twice_where_the_reused_result_cannot_tell_which_is_refused():
    filtered, clauses = _reused()
    twice = _doc([CAP + " " + LD, CAP + " " + LD])
    with pytest.raises(NotFound):
        relocate(twice, filtered, clauses, [], [])


def test_a_text_missing_here_is_refused():
    filtered, clauses = _reused()
    with pytest.raises(NotFound):
        relocate(_doc([CAP]), filtered, clauses, [], [])
