"""A contract not in English read by the configured model in its own language, over the real provider client and
HTTP (the fake model server): the whole text sent page by page, quotes grounded in it, findings listed for a person,
nothing reported missing, the Language gate kept."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from clausegate.providers.structured import complete_json
from clausegate.review.key_terms.attach import LANGUAGE_CATEGORY, with_key_terms
from clausegate.review.language_reading import language_prompt, with_language_reading
from clausegate.review.llm.extract import ModelAnswer, ground_answer
from clausegate.review.schemas import Page, ParsedDocument, Review
from tests.support.fake_model import client_for, fake_model_server, replies

ROOT = Path(__file__).resolve().parents[2]
ASKED = ["Cap on Liability", "Governing Law", "Liquidated Damages"]


def _review(path: Path):
    text = path.read_text(encoding="utf-8")
    document = ParsedDocument(contract_id="a" * 64, filename=path.name, pages=[Page(number=1, text=text)],
                              format="text")
    review = Review(contract_id="a" * 64, filename=path.name, playbook="default", status="complete",
                    extractor="anthropic", missing_categories=["Cap on Liability"])
    return document, with_key_terms(review, document, today=date(2026, 12, 7), model="fake-model")


def _cap_quote(text: str) -> str:
    line = next(line for line in text.splitlines() if any(w in line for w in ("Haftung des", "responsabilité",
                                                                               "responsabilidad")) and len(line) > 80)
    return " ".join(line.split()[:12])


@pytest.mark.parametrize("path", sorted((ROOT / "samples" / "languages").glob("*.txt")), ids=lambda p: p.stem)
def test_the_model_reads_it_in_its_language_and_a_person_checks(path: Path) -> None:
    document, review = _review(path)
    assert not review.language.english
    prompt = language_prompt(document, ASKED, review.language)
    assert f"written in {review.language.name}" in prompt.user and document.pages[0].text[:200] in prompt.user
    quote = _cap_quote(document.pages[0].text)
    answer = {"clauses": [
        {"category": "Cap on Liability", "passage_id": "p0", "text": quote, "confidence": 0.9, "reason": "cap"},
        {"category": "Liquidated Damages", "passage_id": "p0", "text": "a penalty of ten thousand euros per day",
         "confidence": 0.8, "reason": "made up"},
    ]}
    with fake_model_server("anthropic", responder=replies(answer)) as server:
        parsed, _ = complete_json(client_for(server), prompt.system, prompt.user, ModelAnswer, max_tokens=2000)
        assert "<contract_passage" in server.requests[-1].body["messages"][0]["content"]
    clauses, notices = ground_answer(parsed, prompt, model="fake-model")
    assert [c.category for c in clauses] == ["Cap on Liability"]  # the made-up quote is dropped, with a notice
    assert [n.code for n in notices] == ["CG-MODEL-UNGROUNDED"]
    read = with_language_reading(review, clauses, notices, model="fake-model", asked=ASKED)
    cap = next(c for c in read.clauses if c.source == "model")
    assert cap.possible and " ".join(quote.split()) in " ".join(cap.text.split())
    assert read.missing_categories == [] and read.gated_categories[0] == LANGUAGE_CATEGORY
    warning = next(w for w in read.warnings if w.code == "CG-TEXT-LANGUAGE")
    assert "1 finding(s) in 1 category listed for a person" in warning.message
    assert "2 categories it did not find are not read offline" in warning.message
