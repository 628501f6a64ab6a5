"""An English contract's key terms and the configured model, in process, against the fake Anthropic server over
HTTP: a term the offline reader misses is asked of the model over the passages that can state it (not the whole
text), filled with its grounded quote; a contract whose terms were all read asks nothing; ``key_terms: never``
asks nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from tests.support.model_flow import KEY, playbook, review, save_block

pytestmark = pytest.mark.usefixtures("prefect_server")

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "auto-renewal-90-days.txt"
HEARD = "8. Disputes. Any dispute under this Agreement is heard under English law."
FILLER = "\n".join(f"{n}.{k} The parties shall keep records of the services for inspection." for n in range(20, 60)
                   for k in range(1, 4))
TERMS = {"terms": [{"name": "governing_law", "value": "England", "quote": "is heard under English law"}]}


def _contract(tmp_path: Path, *, law_read: bool) -> Path:
    text = SAMPLE.read_text(encoding="utf-8")
    if not law_read:
        law = next(line for line in text.splitlines() if "Governing Law" in line)
        text = text.replace(law, HEARD)
    path = tmp_path / "services.txt"
    path.write_text(text + "\n" + FILLER + "\n", encoding="utf-8")
    return path


def _run(tmp_path: Path, contract: Path, key_terms: str = "missing"):
    server = FakeModelServer("anthropic", api_key=KEY, responder=lambda request: json.dumps(
        TERMS if "<contract_terms_request>" in prompts_of(request)[1] else {"clauses": []})).start()
    try:
        state, _ = review(tmp_path, contract, playbook(tmp_path, save_block("anthropic", server),
                                                         key_terms=key_terms))
        asked = [prompts_of(r.body)[1] for r in server.requests if "<contract_terms_request>" in prompts_of(r.body)[1]]
    finally:
        server.stop()
    assert state.is_completed(), state.message
    return state.result(), asked


def test_a_term_the_offline_reader_missed_is_filled_by_the_model_from_the_passages_that_state_it(tmp_path):
    contract = _contract(tmp_path, law_read=False)
    result, asked = _run(tmp_path, contract)
    assert len(asked) == 1
    assert HEARD in asked[0] and "Harborview Analytics" in asked[0]  # the law's passage and the opening
    assert "59.3 The parties shall keep records" not in asked[0]  # not the whole text
    assert len(asked[0]) < len(contract.read_text(encoding="utf-8"))
    law = result.contract_terms.get("governing_law")
    assert law.value == "England" and law.source == "model" and "filled by" in law.note
    assert law.quote == "is heard under English law"
    assert result.contract_terms.get("notice_period").value == "P90D"  # the offline reading stands


def test_all_terms_read_offline_ask_the_model_nothing(tmp_path):
    result, asked = _run(tmp_path, _contract(tmp_path, law_read=True))
    assert asked == [] and result.contract_terms.get("governing_law").value == "New York"


def test_key_terms_never_asks_the_model_nothing(tmp_path):
    result, asked = _run(tmp_path, _contract(tmp_path, law_read=False), key_terms="never")
    assert asked == [] and result.contract_terms.get("governing_law").value is None
