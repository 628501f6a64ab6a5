"""A German contract reviewed with a model configured, in process, against the fake Anthropic server over HTTP:
the model reads the whole text in German, its grounded finding is listed for a person, nothing is reported
missing, and the review waits for a person (never ``complete``); the model fills the key terms the English
offline reader cannot read, each with its German quote, and a value quoted from nowhere is dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from tests.support.model_flow import KEY, playbook, review, save_block

pytestmark = pytest.mark.usefixtures("prefect_server")

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "languages" / "liefervertrag-de.txt"
CAP = "Die Haftung des Lieferanten für leicht fahrlässig verursachte Schäden ist auf den vertragstypischen"


TERMS = {"terms": [
    {"name": "effective_date", "value": "2024-03-01", "quote": "Der Vertrag tritt am 1. März 2024 in Kraft"},
    {"name": "notice_period", "value": "3 months", "quote": "mit einer Frist von drei Monaten"},
    {"name": "governing_law", "value": "Germany", "quote": "unterliegt dem Recht der Bundesrepublik Deutschland"},
    {"name": "liability_cap", "value": "EUR 100000.00", "quote": "höchstens 1.000.000 Euro"},  # not in the text
]}


def _responder(request: dict) -> str:
    _, user = prompts_of(request)
    if "<contract_terms_request>" in user:
        return json.dumps(TERMS)
    if "The contract is written in German" not in user:
        return json.dumps({"clauses": []})  # the English pre-filter's passages: nothing the model vouches for
    return json.dumps({"clauses": [{"category": "Cap on Liability", "passage_id": "p0", "text": CAP,
                                    "confidence": 0.9, "reason": "caps the supplier's liability at EUR 100,000"}]})


def test_a_german_contract_is_read_by_the_model_in_german_and_waits_for_a_person(tmp_path):
    contract = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, contract)
    server = FakeModelServer("anthropic", api_key=KEY, responder=_responder).start()
    try:
        state, _ = review(tmp_path, contract, playbook(tmp_path, save_block("anthropic", server)))
        german = [r for r in server.requests if "The contract is written in German" in prompts_of(r.body)[1]]
        asked_terms = [r for r in server.requests if "<contract_terms_request>" in prompts_of(r.body)[1]]
    finally:
        server.stop()
    assert state.is_completed(), state.message
    result = state.result()
    assert len(german) == 1 and len(asked_terms) == 1 and result.language.code == "de"
    cap = next(c for c in result.clauses if c.source == "model" and c.category == "Cap on Liability")
    assert cap.possible and CAP in " ".join(cap.text.split())
    assert result.missing_categories == [] and result.status == "pending_decision"
    assert result.gated_categories[0] == "Language"
    warning = next(w for w in result.warnings if w.code == "CG-TEXT-LANGUAGE")
    assert "read the whole text in German" in warning.message and "not reported missing" in warning.message
    terms = result.contract_terms
    assert terms.get("effective_date").value == "2024-03-01" and terms.get("effective_date").source == "model"
    assert terms.get("notice_period").value == "P3M" and terms.get("governing_law").quote.startswith("unterliegt")
    assert terms.get("liability_cap").source == "offline"
    assert any(w.code == "CG-MODEL-UNGROUNDED" and "liability_cap" in w.message for w in result.warnings)
