"""Issue 23 item 6: when the passages are over the model's context window even shrunk to one, the review takes
the summary path (CG-MODEL-SUMMARY-PATH): the model is asked about an offline, cited summary of the key terms
plus the gated passages, and the report shows that summary.  Against the fake model's context window (its
``context_too_long`` answer) on both protocols, over real HTTP."""

from __future__ import annotations

import json

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from clausegate.demo.model_wire import estimate_tokens
from clausegate.demo.responders import contract_responder
from tests.support.long_passages import LONG_PASSAGE_PAGES
from tests.support.model_flow import KEY, playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture(params=["anthropic", "openai"])
def server(request):
    fake = FakeModelServer(request.param, api_key=KEY, responder=contract_responder).start()
    yield fake
    fake.stop()


def _summary_prompt(record) -> bool:
    return "<key_terms>" in prompts_of(record.body)[1]


def test_context_too_long_after_shrinking_takes_the_summary_path(tmp_path, server):
    pdf = make_text_pdf(tmp_path / "long.pdf", [*LONG_PASSAGE_PAGES, f"Schedule S. Summary path ({server.protocol})."])
    book = playbook(tmp_path, save_block(server.protocol, server))

    # 1. Nothing fits: every prompt, the summary's too, is over the window.  The offline result is kept
    # (degraded), and the report still shows the offline summary, saying the model could not take it.
    server.down("context_too_long")
    state, _ = review(tmp_path, pdf, book, out="none-fits")
    assert state.is_completed(), state.message
    result = state.result()
    assert result.status == "degraded" and all(c.source == "offline" for c in result.clauses)
    codes = [w.code for w in result.warnings]
    assert "CG-MODEL-SUMMARY-PATH" in codes and "CG-MODEL-CONTEXT-TOO-LONG" in codes
    assert result.key_terms is not None and not result.key_terms.model_asked
    liability = next(t for t in result.key_terms.terms if t.topic == "liability")
    assert liability.category and liability.pages and liability.text  # cited: category, page(s), text
    assert [t.topic for t in result.key_terms.terms] == ["parties", "term", "renewal", "payment", "liability",
                                                         "termination"]
    passages = [r for r in server.requests if not _summary_prompt(r)]
    summaries = [r for r in server.requests if _summary_prompt(r)]
    assert passages and summaries and all(r.status == 400 for r in server.requests)
    size = lambda record: estimate_tokens(json.dumps(record.body))  # noqa: E731 - what the fake measures
    smallest = min(map(size, passages))
    assert min(map(size, summaries)) < smallest, "the summary path must send less than the smallest shrunk prompt"

    # 2. A window the shrunk passages do not fit but the summary prompt does: the model answers about it.
    server.up()
    server.context_window = smallest - 1
    before = len(server.requests)
    state, _ = review(tmp_path, pdf, book, out="summary-fits")
    assert state.is_completed(), state.message
    result = state.result()
    sent = server.requests[before:]
    assert any(_summary_prompt(r) and r.status == 200 for r in sent)
    assert all(r.status == 400 for r in sent if not _summary_prompt(r))
    assert result.key_terms.model_asked and result.cascade.summary_path
    assert any(c.source == "model" for c in result.clauses), "the model's answer to the summary prompt is used"
    assert "CG-MODEL-SUMMARY-PATH" in [w.code for w in result.warnings]
    markdown = next((tmp_path / "summary-fits").glob("*.md")).read_text()
    assert "## Key terms (summary path" in markdown and "| liability |" in markdown
