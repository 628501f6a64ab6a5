"""The model as a second reader, end to end: the contract-review flow, a fake Anthropic server
over real HTTP, and the LeadersOnline sample, where the offline model reads a "possible" Liquidated Damages (CUAD
labels none).  A reasoned "not there" that saw the passage takes it off the gate, and it stays listed;
``model_review: never`` keeps it on the gate; strict text mode seals it and the model's reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from tests.support.model_flow import KEY, review, save_block

pytestmark = pytest.mark.usefixtures("prefect_server")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "leadersonline-co-branding-2000.pdf"
REASON = "6.3.2 is a placement fee per hired candidate, not damages fixed in advance for a breach."
_ID = re.compile(r'<contract_passage id="([^"]+)"')


def not_there(request) -> str:
    """Reads the prompt the product sent: every asked category is absent from every shown passage."""
    _, user = prompts_of(request)
    ids = _ID.findall(user)
    asked = re.findall(r'^- "([^"]+)": ', user, re.M)
    return json.dumps({"clauses": [], "absent": [{"category": c, "passage_ids": ids, "reason": REASON} for c in asked]})


def book(tmp_path, extractor: str, model_review: str) -> str:
    path = tmp_path / f"ld-{model_review}-{extractor.split('/')[0]}.yaml"
    path.write_text(f"""
name: ld-check
categories: [Liquidated Damages]
gates: [{{category: Liquidated Damages, sla_hours: 24}}]
possible_findings: gate
model_review: {model_review}
steps:
  extract: {{extractor: "{extractor}", retries: 1, retry_delay_seconds: [0.1], max_output_tokens: 800,
             key_terms: never}}
""")
    return str(path)


@pytest.fixture
def anthropic():
    server = FakeModelServer("anthropic", api_key=KEY, responder=not_there).start()
    yield server
    server.stop()


def test_a_reasoned_not_there_takes_a_possible_finding_off_the_gate_and_never_does_not(tmp_path, anthropic):
    offline, _ = review(tmp_path, SAMPLE, book(tmp_path, "offline", "low_confidence"), out="offline")
    before = offline.result()
    assert before.status == "pending_decision" and before.gated_categories == ["Liquidated Damages"]
    assert before.gate_reasons[0].why == "possible"

    block = save_block("anthropic", anthropic)
    state, _ = review(tmp_path, SAMPLE, book(tmp_path, block, "low_confidence"))
    after = state.result()
    assert anthropic.calls == 1
    assert after.gated_categories == [] and after.status == "complete"
    (cleared,) = after.cleared_by_model
    assert cleared.category == "Liquidated Damages" and cleared.possible and cleared.cleared.reason == REASON
    report = next((tmp_path / "reports").glob("*.md")).read_text()
    assert "## Cleared by the model" in report and REASON in report

    state, _ = review(tmp_path, SAMPLE, book(tmp_path, block, "never"), out="never")
    kept = state.result()
    assert kept.gated_categories == ["Liquidated Damages"] and kept.cleared_by_model == []
    assert any(r.why == "disputed" and "model_review is 'never'" in r.detail for r in kept.gate_reasons)


def test_strict_text_seals_what_the_model_cleared_and_its_reason(tmp_path, anthropic, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "true")
    monkeypatch.setenv("CLAUSEGATE_SEAL_REPORTS", "true")
    state, _ = review(tmp_path, SAMPLE, book(tmp_path, save_block("anthropic", anthropic), "low_confidence"),
                      out="strict")
    (cleared,) = state.result().cleared_by_model  # the run's own (sealed) result keeps it
    quote = " ".join(cleared.text.split())[:40]
    for path in (tmp_path / "strict").iterdir():
        if path.name.endswith(".sealed"):
            continue
        text = " ".join(path.read_text().split())
        assert quote not in text and REASON not in text, path.name
        assert "Cleared by the model" in text or path.suffix in (".json", ".ics")  # the calendar holds dates only
