"""The configured model confirms or fills the key terms over the real provider client and HTTP (the fake model
server), under the clauses' grounding rule: a value without a quote found in the contract is dropped, with a
notice."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from clausegate.demo.responders import contract_responder
from clausegate.providers.structured import complete_json
from clausegate.review.key_terms.model import TermsAnswer, ground_terms, terms_prompt
from clausegate.review.key_terms.terms import contract_terms
from clausegate.review.schemas import Page, ParsedDocument
from tests.support.fake_model import client_for, fake_model_server, replies

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "samples" / "auto-renewal-90-days.txt").read_text(encoding="utf-8")


def _offline(text: str = TEXT):
    document = ParsedDocument(contract_id="a" * 64, filename="c.txt", pages=[Page(number=1, text=text)],
                              format="text")
    return contract_terms(document, today=date(2026, 12, 7))


def _ask(responder, offline, text: str = TEXT):
    system, user = terms_prompt(text, offline)
    with fake_model_server("anthropic", responder=responder) as server:
        answer, _ = complete_json(client_for(server), system, user, TermsAnswer, max_tokens=2000)
        assert "<contract_terms_request>" in server.requests[-1].body["messages"][0]["content"]
    return ground_terms(answer, text, offline, model="fake-model", today=date(2026, 12, 7))


def test_the_fake_models_reading_confirms_the_offline_terms() -> None:
    offline = _offline()
    merged, notices = _ask(contract_responder, offline)
    assert notices == []
    for before, after in zip(offline.terms, merged.terms, strict=True):
        assert after.value == before.value and after.source == "offline"
        if before.value:
            assert "confirmed by fake-model" in after.note


def test_a_grounded_answer_fills_a_missing_term_and_an_ungrounded_one_is_dropped() -> None:
    law_sentence = next(line for line in TEXT.splitlines() if "Governing Law" in line)
    text = TEXT.replace(law_sentence, "8. Disputes. Any dispute under this Agreement is heard under English law.")
    offline = _offline(text)
    cap = offline.get("liability_cap")
    assert offline.get("governing_law").value is None and cap.value
    answer = {"terms": [
        {"name": "governing_law", "value": "England", "quote": "is heard under English law"},
        {"name": "liability_cap", "value": "USD 5000000", "quote": "liability shall not exceed five million dollars"},
        {"name": "expiration_date", "value": "no date", "quote": "7. Limitation of Liability."},
    ]}
    merged, notices = _ask(replies(answer), offline, text)
    law = merged.get("governing_law")
    assert law.value == "England" and law.source == "model" and "filled by fake-model" in law.note
    assert law.quote == "is heard under English law"
    assert merged.get("liability_cap") == cap  # its quote is not in the contract: dropped, the offline value stays
    assert [n.code for n in notices] == ["CG-MODEL-UNGROUNDED", "CG-MODEL-CLAUSE-INVALID"]
    assert "not in the contract" in notices[0].message


def test_a_term_end_the_model_states_replaces_a_computed_one_and_moves_the_deadline() -> None:
    text = TEXT.replace("January 15, 2024", "January 15, 2024 (ends on March 31, 2027)", 1)
    offline = _offline(text)
    end = offline.get("expiration_date")
    assert end.note and end.value != "2027-03-31"  # read offline as the start plus the term
    answer = {"terms": [{"name": "expiration_date", "value": "2027-03-31", "quote": "ends on March 31, 2027"}]}
    merged, notices = _ask(replies(answer), offline, text)
    got = merged.get("expiration_date")
    assert notices == [] and got.value == "2027-03-31" and got.source == "model"
    assert "replaces the offline" in got.note
    assert merged.renewal.term_end != offline.renewal.term_end
