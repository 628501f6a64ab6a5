"""Playbook positions in the contract-review flow: PDFs written here (fpdf2), reviewed by the real
flow on the session Prefect server with a playbook that has no gates but a position on Cap on Liability.  A
deviating cap and a missing required cap each send the review to a person (no deployment here, so the run ends
``pending_decision`` instead of suspending); a cap at the standard does not."""

from __future__ import annotations

import asyncio
import json

import pytest

from clausegate.gates.model import findings_of
from tests.support.pdf_factory import make_text_pdf
from tests.support.positions import NO_CAP_PAGES, POSITIONS_PLAYBOOK, cap_pages

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


def review_pdf(tmp_path, name: str, pages: list[str]):
    from flows.contract_review import contract_review

    book = tmp_path / "positions-test.yaml"
    book.write_text(POSITIONS_PLAYBOOK)
    pdf = make_text_pdf(tmp_path / f"{name}.pdf", pages)
    state = asyncio.run(contract_review(str(pdf), playbook=str(book), out_dir=str(tmp_path / "out"),
                                        return_state=True))
    assert state.is_completed(), state.message
    report = json.loads(next((tmp_path / "out").glob(f"{name}-*.json")).read_text())
    return state.result(), report


def test_a_deviating_cap_and_a_missing_cap_gate_the_review_a_standard_cap_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    short, report = review_pdf(tmp_path, "short-cap", cap_pages("three (3)"))
    assert short.status == "pending_decision" and short.gated_categories == ["Cap on Liability"]
    assert report["positions"][0]["verdict"] == "deviates" and "12 months' fees" in report["positions"][0]["reason"]
    assert any(w.code == "CG-GATE-NO-DEPLOYMENT" for w in short.warnings)  # it waits for a person's decision

    missing, report = review_pdf(tmp_path, "no-cap", NO_CAP_PAGES)
    assert missing.status == "pending_decision" and missing.gated_categories == ["Cap on Liability"]
    assert [f.text for f in findings_of(missing, missing.gated_categories)] == ["required clause not found"]
    assert report["positions"] == [{**report["positions"][0], "verdict": "missing", "clause": None}]

    standard, report = review_pdf(tmp_path, "standard-cap", cap_pages("twelve (12)"))
    assert standard.status == "complete" and standard.gated_categories == []
    assert report["positions"][0]["verdict"] == "matches standard"


def test_with_a_generation_model_the_deviation_is_explained_with_the_fallback(tmp_path, monkeypatch):
    """The existing suggestion step, against the fake OpenAI-style server over real HTTP: the deviating cap is
    sent with the standard, the fallback and the reason; the answer is validated (grounded) as every suggestion."""
    from clausegate.demo.model_server import FakeModelServer, prompts_of
    from clausegate.demo.responders import contract_responder
    from flows.contract_review import contract_review
    from tests.support.model_flow import KEY, save_block

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    server = FakeModelServer("openai", api_key=KEY, responder=contract_responder).start()
    try:
        block = save_block("openai", server)
        book = tmp_path / "positions-model.yaml"
        book.write_text(POSITIONS_PLAYBOOK + f"steps:\n  generate: {{provider: {block}, retries: 1}}\n")
        pdf = make_text_pdf(tmp_path / "short-cap.pdf", cap_pages("three (3)"))
        state = asyncio.run(contract_review(str(pdf), playbook=str(book), out_dir=str(tmp_path / "out"),
                                            return_state=True))
        assert state.is_completed(), state.message
        review = state.result()
        _, user = prompts_of(server.requests[0].body)
    finally:
        server.stop()
    assert "It deviates from our standard: walk-away: cap below 12 months' fees" in user
    assert "Acceptable fallback: Each party's aggregate liability shall not exceed the fees paid" in user
    assert [s.category for s in review.suggestions] == ["Cap on Liability"] and review.suggestions[0].redline
    assert review.gated_categories == ["Cap on Liability"] and review.status == "pending_decision"
