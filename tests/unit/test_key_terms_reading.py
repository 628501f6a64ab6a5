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


@pytest.mark.parametrize("sentence", [
    "Company commits to purchase a minimum of 100 Units within the first six months of term of this Agreement.",
    "HSNS will pay a minimum commitment of $750,000.00 during the initial three year term of this Agreement.",
    "Such phase-out period shall be the longer of (i) the remaining term of the agreement with its customers "
    "and (ii) 18 months.",
])
def test_a_period_inside_the_term_is_not_the_terms_length(sentence: str) -> None:
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value is None


@pytest.mark.parametrize("sentence", [
    "The initial term of this Agreement is one (1) year from the date of delivery of the Product to Licensee.",
    "The term of this Agreement will end three (3) years from the date the Application becomes accessible to "
    "Members.",
    "The term of this Agreement shall be ten (10) years which shall commence on the date upon which the Company "
    "delivers the last Sample.",
    "The Agreement shall remain in full force for ten (10) years after the First Commercial Sale of the Product.",
])
def test_a_term_counted_from_an_undated_event_has_no_end_date(sentence: str) -> None:
    term = read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"]
    assert term.value is None and term.extra.get("from_event") is True


@pytest.mark.parametrize(("sentence", "value"), [
    ("This Agreement shall be in full force commencing on the date of execution by both Parties and shall extend "
     "for an initial term of two (2) years.", "2016-05-08"),
    ("This Agreement shall become effective on the date on which it is signed by both Parties and have a term of "
     "five (5) years.", "2019-05-08"),
])
def test_a_term_from_signing_or_for_an_initial_term_is_still_computed(sentence: str, value: str) -> None:
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value == value


def test_a_sentence_ends_after_a_defined_terms_closing_quote() -> None:
    from clausegate.review.key_terms.extract import sentence_bounds

    text = 'The initial two (2) year term is referred to herein as the "Term." B. Notwithstanding the foregoing, X.'
    a, b = sentence_bounds(text, text.index("Notwithstanding"))
    assert text[a:b].strip() == "B. Notwithstanding the foregoing, X."


@pytest.mark.parametrize(("sentence", "value"), [
    ("6. TERM: November 01, 2014 to October 31, 2017", "2017-10-31"),  # a numbered label
    ("3. Term and Renewal The term of this Agreement shall begin on the Effective Date and continue in effect for "
     "a period of five (5) years, unless sooner terminated. Upon expiration of the Initial Term, this Agreement "
     "shall automatically renew.", "2019-05-08"),  # "Renewal" in the heading before the term's words
    ("This agreement will be in effect until the end of 2006 and will be evaluated at that time.", "2006-12-31"),
    ("This agreement shall remain in effect until the end of the current calendar year.", "2014-12-31"),
    ("Converge shall pay the Initial Term Minimum Fee in 18 equal installments (each, a \"Monthly Installment\"). "
     "The initial period of this "
     "Agreement shall commence upon the Effective Date and continue until March 31, 2016.", "2016-03-31"),
])
def test_more_ways_a_term_ends(sentence: str, value: str) -> None:
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value == value


def test_a_period_after_termination_is_not_the_terms_length() -> None:
    sentence = ("The confidentiality obligations contained in this Agreement shall continue for a period of five (5) "
                "years after termination of this Agreement.")
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value != "2019-05-08"


@pytest.mark.parametrize(("sentence", "value"), [
    # counted from the day the contract is made (May 8, 2014), not from the start the sentence names
    ('The term of this Agreement (the "Term") will begin on June 1, 2014 and end on the first anniversary of the '
     "date of this Agreement.", "2015-05-08"),
    # a range of dates just after "term", in a sentence no term pattern reads
    ("The Joint Venture is a fixed term Joint Venture beginning November 27, 2018 and ending November 30th, 2019 "
     "or as otherwise provided in this Agreement.", "2019-11-30"),
    ("Terms of the project: 12 weeks from February 8, 2018 to May 3, 2018.", "2018-05-03"),
])
def test_a_term_from_the_agreements_date_or_a_range_of_dates(sentence: str, value: str) -> None:
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value == value


def test_a_range_of_dates_for_another_period_is_not_the_term() -> None:
    sentence = '"Delivery Period" means the following: (i) July 1, 2008 - December 30th, 2009.'
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value is None


@pytest.mark.parametrize(("sentence", "value"), [
    ('1.11 "Term" means the period of time commencing on the Effective Date and continuing thereafter '
     "indefinitely until this Agreement is terminated pursuant to Section 10 below.", "perpetual"),
    # the range is read from the "term" just before it, not only from the heading's
    ("Chapter 3 Cooperation Term\n\n3.1 Cooperation Term\n\nThe Cooperation Term of the parties shall be two "
     "years from May 1, 2013 to April 30, 2015.", "2015-04-30"),
])
def test_a_quoted_term_that_means_and_a_range_under_a_heading(sentence: str, value: str) -> None:
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value == value


def test_a_severability_clause_is_no_perpetual_term() -> None:
    sentence = ("If any clause of this Agreement shall be held to be indefinite, invalid or unenforceable, the balance "
                "of this Agreement shall continue in full force and effect.")
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value is None


@pytest.mark.parametrize(("contract", "expires", "effective"), [
    # a term counted from a date the contract defines elsewhere, before or after its name
    ('"Commencement Date" means 16 October 2005.\nThis Agreement shall commence on the Commencement Date and shall '
     "continue for an initial period of five years.", "2010-10-16", "2005-10-16"),
    ('The Service shall launch on November 16, 2015 (the "Launch Date").\nThe term of this Agreement shall be three '
     "(3) years from the Launch Date.", "2018-11-16", "2015-11-16"),
    # the day it is signed counts the term but is not the day it takes effect
    ('This Agreement is executed on this 11th day of December, 2015 ("Execution Date") by and between A Inc. and '
     "B LLC.\nThe term of this Agreement is three (3) years from the Execution Date.", "2018-12-11", None),
])
def test_a_term_counted_from_a_named_date(contract: str, expires: str, effective: str | None) -> None:
    made = "This Agreement is entered into as of September 1, 2005 by and between A Inc. and B LLC.\n"
    terms = read_terms([contract if "Execution" in contract else made + contract]).terms
    assert terms["expiration_date"].value == expires
    assert terms["effective_date"].value == effective


def test_a_named_date_the_contract_does_not_date_gives_no_end() -> None:
    text = ('This Agreement is entered into by and between A Inc. and B LLC.\nThe term of this Agreement shall be '
            "three (3) years from the Launch Date.")
    assert read_terms([text]).terms["expiration_date"].value is None


def test_a_filings_redaction_legend_is_no_recital() -> None:
    text = ("[* * *] = Certain confidential information contained in this document, marked by brackets, has been "
            "omitted and filed separately with the Securities and Exchange Commission pursuant to Rule 406 of the "
            "Securities Act of 1933, as amended.\n\nMANUFACTURING AND SUPPLY AGREEMENT\n\nDATED AS OF January 1, 2013"
            "\n\nBETWEEN\n\nA, INC.\n\nAND\n\nB S.p.A.\n\nThe term of this Agreement is three years from and "
            "including the date of this Agreement.")
    terms = read_terms([text]).terms
    assert terms["agreement_date"].value == "2013-01-01"
    assert terms["expiration_date"].value == "2016-01-01"
    # a reference to another agreement is still no date of this one
    other = "WHEREAS, the parties are parties to that certain Agreement dated June 1, 2010."
    assert read_terms([other]).terms["agreement_date"].value is None


def test_a_term_ending_on_an_anniversary_of_a_named_date_after_the_effective_date() -> None:
    text = (PREAMBLE + '\nD. "Commencement Date" shall mean the date on which Conversion has been completed. The '
            "parties anticipate the Commencement Date to be November 16, 1998.\nX. \"Term\" shall mean the period "
            "commencing on the Effective Date and terminating on the eighth anniversary of the Commencement Date.")
    assert read_terms([text]).terms["expiration_date"].value == "2006-11-16"


def test_a_term_for_so_long_as_a_state_lasts_runs_until_ended() -> None:
    sentence = ("This Agreement shall become effective as of the Effective Date and shall continue to be in full force "
                "and effect for so long as A and B each remains a Shareholder of the Company.")
    assert read_terms([PREAMBLE + "\n" + sentence]).terms["expiration_date"].value == "perpetual"


@pytest.mark.parametrize(("text", "value"), [
    # a schedule's label
    ("2 TERMS\n\n 2.1 Contract start: 04-01-06\n\n 2.2 Contract end: 04-01-08\n\n", "2008-04-01"),
    # a first period, then on until a party ends it
    ("This Agreement shall commence on the Effective Date and continue in full force and effect until the end of the "
     "fifteenth (15th) Contract Year, and shall continue in full force and effect thereafter until terminated by "
     "either Party by providing thirty (30) days' prior written notice.", "perpetual"),
    # an end that comes automatically is no renewal; "Year 3" counted from the Effective Date
    ("The term of this Agreement will commence on the Effective Date, and unless earlier terminated as provided "
     "elsewhere in this Agreement, will end automatically upon the end of Year 3.", "2017-05-08"),
])
def test_a_schedules_end_label_a_term_then_until_ended_and_the_end_of_year_n(text: str, value: str) -> None:
    assert read_terms([PREAMBLE + "\n" + text]).terms["expiration_date"].value == value


def test_a_confidentiality_duty_that_outlasts_the_agreement_is_not_its_term() -> None:
    duty = ("8.3 The confidentiality and non-use obligations contained in this Agreement shall continue for the "
            "duration of this Agreement and thereafter, unless terminated by the Disclosing Party.")
    assert read_terms([PREAMBLE + "\n" + duty]).terms["expiration_date"].value is None
    term = "This Agreement as amended shall continue in force until terminated in accordance with Section 10."
    reading = read_terms([PREAMBLE + "\n" + duty + "\n" + term]).terms["expiration_date"]
    assert reading.value == "perpetual" and reading.quote.startswith("This Agreement as amended")


@pytest.mark.parametrize("signer", ["A Inc.", "İstanbul Ticaret A.Ş."])  # "İ" lowers to two characters
def test_a_contract_dated_only_in_its_signature_block(signer: str) -> None:
    filler = "The parties shall cooperate in good faith on the matters listed in the schedule. " * 60
    text = (f"SERVICES AGREEMENT between {signer} and B LLC.\n\n{filler}\n\nDate: 3 March 2012\n\n{filler}\n\n"
            "Signed by A\nDate: May 8, 2014\n")
    assert read_terms([text]).terms["agreement_date"].value == "2014-05-08"  # the last label's date
