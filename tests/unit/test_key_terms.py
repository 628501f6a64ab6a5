"""Key terms offline: dates and durations read, a contract's terms and renewal dates, the .ics, the report's table,
and a contract not in English warned and gated on Language (never "missing")."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from icalendar import Calendar

from clausegate.review.key_terms.attach import LANGUAGE_CATEGORY, LANGUAGE_CODE, with_key_terms
from clausegate.review.key_terms.dates import durations, find_dates, parse_date
from clausegate.review.key_terms.deadlines import renewal_dates
from clausegate.review.key_terms.ics import calendar
from clausegate.review.key_terms.terms import contract_terms
from clausegate.review.language import detect
from clausegate.review.report import render_markdown, write_report
from clausegate.review.schemas import (
    ContractTerm,
    GateReason,
    Page,
    ParsedDocument,
    PositionCheck,
    Review,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "auto-renewal-90-days.txt"
FOREIGN = sorted((ROOT / "samples" / "languages").glob("*.txt"))
TODAY = date(2026, 12, 7)


def _document(text: str) -> ParsedDocument:
    return ParsedDocument(contract_id="a" * 64, filename="contract.txt", pages=[Page(number=1, text=text)],
                          format="text")


def _review(**extra) -> Review:
    return Review(contract_id="a" * 64, filename="contract.txt", playbook="default", status="complete",
                  extractor="offline", **extra)


@pytest.mark.parametrize(("written", "iso"), [
    ("May 8, 2014", "2014-05-08"), ("the 8th day of May, 2014", "2014-05-08"), ("1 August 2019", "2019-08-01"),
    ("10/1/99", "1999-10-01"), ("29/3/18", "2018-03-29"), ("July 11 , 2006", "2006-07-11"),
])
def test_dates_as_contracts_write_them(written: str, iso: str) -> None:
    found = find_dates(f"This Agreement is dated {written} between the parties.")
    assert [d.value.isoformat() for d in found] == [iso]


@pytest.mark.parametrize(("written", "iso"), [
    ("made and effective as of1 August 2019, by and between", "2019-08-01"),  # a space lost in the PDF
    ("as of the 1s t day of June, 2004.", "2004-06-01"),  # an ordinal split in two
    ("shall be effective as of _Dec. 8, 2005 (hereinafter", "2005-12-08"),  # a blank's underscore before it
])
def test_dates_as_a_pdf_garbles_them_keep_their_day(written: str, iso: str) -> None:
    assert [(d.value.isoformat(), d.has_day) for d in find_dates(written)] == [(iso, True)]


def test_a_year_alone_is_no_date_and_durations_read_number_words() -> None:
    assert find_dates("in fiscal 2014 the parties") == [] and parse_date("31 February 2014") is None
    read = [(d.count, d.unit) for d, _, _ in durations("ninety (90) days' notice, one (1) year, twelve months")]
    assert read == [(90, "days"), (1, "years"), (12, "months")]


def test_the_terms_of_a_contract_with_a_90_day_auto_renewal_notice() -> None:
    terms = contract_terms(_document(SAMPLE.read_text()), today=TODAY)
    got = {t.name: t.value for t in terms.terms}
    assert got == {
        "parties": got["parties"], "agreement_date": "2024-01-15", "effective_date": "2024-01-15",
        "expiration_date": "2026-01-15", "renewal_term": "P1Y", "notice_period": "P90D",
        "governing_law": "New York", "liability_cap": "USD 200000.00"}
    assert "Harborview Analytics" in got["parties"] and "Maple Street Retail" in got["parties"]
    notice = terms.get("notice_period")
    assert "ninety (90) days" in notice.quote and notice.page == 1
    # the initial term ended 2026-01-15; rolled a year at a time to the first term whose deadline is ahead
    assert terms.renewal.auto_renews
    assert (terms.renewal.term_end, terms.renewal.notice_deadline) == ("2028-01-15", "2027-10-17")


def test_a_term_not_stated_is_not_found() -> None:
    terms = contract_terms(_document("The parties shall cooperate in good faith. " * 40), today=TODAY)
    assert all(t.value is None and t.quote == "" for t in terms.terms)
    assert terms.renewal is None
    assert "| Governing law | not found |" in "\n".join(render_markdown(_review(contract_terms=terms)).splitlines())


def test_a_contract_that_does_not_renew_keeps_its_end_and_says_a_past_deadline() -> None:
    def term(name: str, value: str | None) -> ContractTerm:
        return ContractTerm(name=name, value=value)

    dates = renewal_dates(term("expiration_date", "2026-12-31"), None, term("notice_period", "P60D"),
                          automatic=False, today=TODAY)
    assert (dates.term_end, dates.notice_deadline, dates.auto_renews) == ("2026-12-31", "2026-11-01", False)
    assert "already past" in dates.explanation


def test_ics_holds_the_notice_deadline_and_the_term_end() -> None:
    review = _review(contract_terms=contract_terms(_document(SAMPLE.read_text()), today=TODAY))
    parsed = Calendar.from_ical(calendar([review]))
    events = {str(e["uid"]): e for e in parsed.walk("VEVENT")}
    deadline = events[f"{'a' * 32}-notice-deadline@clausegate"]
    assert deadline.decoded("dtstart") == date(2027, 10, 17)
    assert "Last day to give notice" in str(deadline["summary"])
    assert events[f"{'a' * 32}-term-end@clausegate"].decoded("dtstart") == date(2028, 1, 15)


def test_the_report_opens_with_the_key_terms_and_writes_the_ics(tmp_path: Path) -> None:
    review = with_key_terms(_review(missing_categories=["Audit Rights"]), _document(SAMPLE.read_text()), today=TODAY)
    markdown = render_markdown(review)
    assert markdown.index("## Key terms") < markdown.index("## Missing categories")
    assert "| Notice to stop renewal | 90 days |" in markdown and "notice deadline 2027-10-17" in markdown
    json_path, _ = write_report(review, tmp_path)
    data = json.loads(json_path.read_text())
    assert list(data)[:6] == ["contract_id", "filename", "playbook", "status", "contract_terms", "language"]
    assert json_path.with_suffix(".ics").read_text().count("BEGIN:VEVENT") == 2
    assert review.language.code == "en" and review.missing_categories == ["Audit Rights"]  # English: unchanged


@pytest.mark.parametrize("path", FOREIGN, ids=lambda p: p.stem)
def test_a_contract_not_in_english_is_warned_and_gated_never_missing(path: Path) -> None:
    assert {p.stem.rsplit("-", 1)[1] for p in FOREIGN} == {"de", "fr", "es"}
    language = detect(path.read_text())
    assert not language.english and language.code == path.stem.rsplit("-", 1)[1]
    missing = GateReason(category="Cap on Liability", why="missing", detail="required clause missing")
    found = GateReason(category="Revenue/Profit Sharing", why="found", detail="found by the offline reader")
    before = _review(missing_categories=["Cap on Liability", "Governing Law"],
                     gated_categories=["Cap on Liability", "Revenue/Profit Sharing"], gate_reasons=[missing, found],
                     positions=[PositionCheck(category="Cap on Liability", verdict="missing", reason="not found")])
    after = with_key_terms(before, _document(path.read_text()), today=TODAY)
    assert after.missing_categories == [] and after.positions == []
    assert after.gated_categories == [LANGUAGE_CATEGORY, "Revenue/Profit Sharing"]
    assert [r.why for r in after.gate_reasons] == ["language", "found"]
    assert [w.code for w in after.warnings] == [LANGUAGE_CODE]
    assert language.name in after.warnings[0].message and "Language" in render_markdown(after)


def test_strict_text_mode_seals_the_quotes_and_the_parties_and_keeps_the_figures() -> None:
    from clausegate.review.redact import SEALED_TEXT, redact_review

    review = with_key_terms(_review(), _document(SAMPLE.read_text()), today=TODAY)
    sealed = redact_review(review).contract_terms
    assert {t.quote for t in sealed.terms if t.quote} == {SEALED_TEXT}
    assert sealed.get("parties").value == SEALED_TEXT and "Harborview" not in sealed.model_dump_json()
    assert sealed.get("notice_period").value == "P90D" and sealed.renewal == review.contract_terms.renewal
