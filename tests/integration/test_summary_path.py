"""When the passages are over the model's context window even shrunk to one, the review takes
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


@pytest.mark.slow
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
    sizes = [size(r) for r in summaries]  # sent whole first, then each one smaller than the one refused before it
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes), sizes

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


class PassageWindow(FakeModelServer):
    """A model whose window every passage prompt exceeds (each gets its ``context_too_long`` 400) and the
    summary prompt fits: what a provider answers is the only measure of what it takes."""

    def _precheck(self, path, headers, body):
        refused = isinstance(body, dict) and "messages" in body and "<key_terms>" not in prompts_of(body)[1]
        return super()._precheck(path, headers, body) or ("context_too_long" if refused else None)


def test_the_summary_prompt_is_sent_even_when_it_is_not_smaller_than_the_refused_passage_prompts(tmp_path):
    """The summary prompt is always sent, whatever our token count says: with short passages and several gated
    categories our count never puts it below the smallest prompt refused (the one-passage prompt), so a
    count-based rule would never ask the model and "it could not take it either" would be a guess."""
    from tests.support.contracts import LIABILITY_PAGES

    fake = PassageWindow("anthropic", api_key=KEY, responder=contract_responder).start()
    try:
        pdf = make_text_pdf(tmp_path / "short.pdf", [*LIABILITY_PAGES, "Schedule T. Short passages."])
        book = playbook(tmp_path, save_block("anthropic", fake),
                        high_risk="[Uncapped Liability, Liquidated Damages, Cap on Liability, Insurance, Audit Rights, "
                                  "Governing Law]")
        state, _ = review(tmp_path, pdf, book)
        assert state.is_completed(), state.message
        result = state.result()
        refused = [r for r in fake.requests if not _summary_prompt(r)]
        summaries = [r for r in fake.requests if _summary_prompt(r)]
        assert refused and all(r.status == 400 for r in refused)
        assert summaries, "the summary prompt must reach the model"
        assert summaries[0].status == 200 and result.key_terms.model_asked
        assert "CG-MODEL-SUMMARY-PATH" in [w.code for w in result.warnings]
    finally:
        fake.stop()
