"""The term's end as contracts state it (rules developed on CUAD's TRAIN contracts), and the key terms as the
first table ``clausegate review`` prints."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from rich.console import Console

from clausegate.cli.key_terms_view import key_terms_table
from clausegate.review.key_terms.reading import read_terms
from clausegate.review.key_terms.terms import contract_terms
from clausegate.review.schemas import Page, ParsedDocument, Review

ROOT = Path(__file__).resolve().parents[2]
PREAMBLE = 'This Agreement is entered into as of May 8, 2014 (the "Effective Date") by and between A Inc. and B LLC. '


@pytest.mark.parametrize(("sentence", "value"), [
    ("This Agreement shall commence on the Effective Date and shall continue until the twentieth (20th) anniversary "
     "of the Effective Date.", "2034-05-08"),
    ('"Contract Period" shall mean that period of time commencing on January 1, 2000 and concluding '
     "December 31, 2003.", "2003-12-31"),
    ("This Agreement shall remain in effect from the Effective Date and perpetually thereafter unless terminated "
     "pursuant to Section 9.", "perpetual"),
    ("This Agreement shall become effective on the Effective Date and shall continue in effect until either Party "
     "informs the other with thirty (30) days prior written notice of termination.", "perpetual"),
    ('TERM: November 01, 2014 to October 31, 2017', "2017-10-31"),
])
def test_the_terms_end(sentence: str, value: str | None) -> None:
    term = read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"]
    assert term.value == value
    assert sentence[:20] in term.quote  # the words it was read from


def test_a_license_that_is_perpetual_is_not_the_agreements_term() -> None:
    text = PREAMBLE + "The term of the license for the Content shall be perpetual, exclusive and irrevocable."
    assert read_terms([text]).terms["expiration_date"].value is None


def test_clausegate_review_prints_the_key_terms_first() -> None:
    text = (ROOT / "samples" / "auto-renewal-90-days.txt").read_text(encoding="utf-8")
    document = ParsedDocument(contract_id="a" * 64, filename="c.txt", pages=[Page(number=1, text=text)],
                              format="text")
    review = Review(contract_id="a" * 64, filename="c.txt", playbook="default", status="complete",
                    extractor="offline", contract_terms=contract_terms(document, today=date(2026, 12, 7)))
    console = Console(record=True, width=160)
    console.print(key_terms_table(review))
    out = console.export_text()
    assert "Key terms" in out and "Notice to stop renewal" in out and "90 days" in out
    assert f"Notice deadline {review.contract_terms.renewal.notice_deadline}" in out
    assert key_terms_table(review.model_copy(update={"contract_terms": None})) is None


def test_scanning_near_an_anchor_finds_what_a_full_scan_finds() -> None:
    from clausegate.review.key_terms.expiry import _TERM, _TERM_ANCHOR
    from clausegate.review.key_terms.scan import near

    filler = "The parties agree to cooperate in good faith on the matters listed in the schedule. " * 30
    low = (filler + "The initial term of this Agreement is two (2) years. " + filler
           + "This agreement is valid for one year. Term: 5 years. Either party shall notify the other. " + filler
           + "the term of the agreement shall be three years.").lower()
    full = [(m.start(), m.end()) for m in _TERM.finditer(low)]
    assert len(full) == 3
    assert [(m.start(), m.end()) for m in near(_TERM, _TERM_ANCHOR, low)] == full
    assert [(m.start(), m.end()) for m in near(_TERM, _TERM_ANCHOR, low, 0, len(low) // 2)] == [
        (m.start(), m.end()) for m in _TERM.finditer(low, 0, len(low) // 2)]
