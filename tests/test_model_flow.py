"""The contract-review flow with a model provider: cascade, error classes, budgets, generation and
the repeat-nothing guarantee — against fake Anthropic/OpenAI servers over real HTTP."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr

from clausegate.fakes.model_server import FakeModelServer, prompts_of
from clausegate.fakes.responders import contract_responder
from clausegate.providers.cooldown import COOLDOWNS
from tests.flow_runs import task_states
from tests.pdf_factory import make_text_pdf
from tests.test_flow import PAGES

KEY = "sk-ant-test-SECRET-abcdef0123456789"
pytestmark = pytest.mark.usefixtures("prefect_server")

LIABILITY_PAGES = PAGES + [
    "6. Liquidated Damages. If Supplier fails to deliver on time, Supplier shall pay Customer as liquidated "
    "damages an amount equal to two percent of the order value for each week of delay.\n"
    "7. Indemnification. Supplier's liability for breach of its confidentiality obligations shall be unlimited."
]


@pytest.fixture(autouse=True)
def _clear_cooldowns():
    COOLDOWNS.clear()
    yield


@pytest.fixture
def anthropic():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder, slow_seconds=3).start()
    yield server
    server.stop()


@pytest.fixture
def openai():
    server = FakeModelServer("openai", api_key=KEY, responder=contract_responder).start()
    yield server
    server.stop()


def save_block(kind: str, server: FakeModelServer, **fields) -> str:
    from blocks.models import AnthropicModel, OpenAICompatibleModel

    cls = AnthropicModel if kind == "anthropic" else OpenAICompatibleModel
    name = f"t-{uuid.uuid4().hex[:8]}"
    options = dict(base_url=server.url, model=f"{kind}-primary", fallback_model=f"{kind}-fallback",
                   api_key=SecretStr(KEY), read_timeout_seconds=1.5, eur_per_million_input_tokens=3.0,
                   eur_per_million_output_tokens=15.0)
    options.update(fields)
    cls(**options).save(name, overwrite=True)
    return f"{cls.get_block_type_slug()}/{name}"


def playbook(tmp_path: Path, extractor: str, *, generate: str | None = None, budgets: str = "", extract: str = "") -> str:
    text = f"""
name: test-model
categories: [Governing Law, Cap on Liability, Uncapped Liability, Liquidated Damages, Insurance, Audit Rights]
high_risk: [Uncapped Liability, Liquidated Damages]
gates: []
steps:
  extract: {{extractor: "{extractor}", retries: 3, retry_delay_seconds: [0.1, 0.1, 0.1], max_output_tokens: 800 {extract}}}
  generate: {{provider: {json.dumps(generate)}, retries: 2, retry_delay_seconds: [0.1, 0.1]}}
{budgets}
"""
    path = tmp_path / f"playbook-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    return str(path)


def review(tmp_path, pdf, book, out="reports"):
    from flows.contract_review import contract_review

    state = contract_review(str(pdf), playbook=book, out_dir=str(tmp_path / out), return_state=True)
    return state, task_states(state.state_details.flow_run_id, expected=5)


def test_cascade_with_claude_and_repeat_nothing(tmp_path, anthropic, openai):
    pdf = make_text_pdf(tmp_path / "msa.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic), generate=save_block("openai", openai))
    state, states = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    result = state.result()
    assert any(c.source == "model" for c in result.clauses)
    model_clause = next(c for c in result.clauses if c.source == "model")
    assert model_clause.model == "anthropic-primary"
    assert " ".join(model_clause.text.split()) in " ".join(" ".join(LIABILITY_PAGES).split())
    # the cascade sent only the high-risk / unsure categories, far fewer tokens than the naive prompt
    assert set(result.cascade.categories_sent) >= {"Uncapped Liability", "Liquidated Damages"}
    assert len(result.cascade.categories_sent) < result.cascade.categories_total
    assert result.cascade.prompt_tokens_sent < result.cascade.prompt_tokens_naive
    # cost from the fake's usage fields and the block's prices
    assert result.cost.calls == 2 and result.cost.eur > 0
    assert result.cost_by_step["extract"].calls == 1 and result.cost_by_step["generate"].calls == 1
    assert result.suggestions and result.suggestions[0].questions
    _, user = prompts_of(anthropic.requests[0].body)
    asked = user.split("Passages")[0]
    for category in result.cascade.categories_sent:
        assert f'"{category}"' in asked
    for category in set(result.missing_categories) - set(result.cascade.categories_sent):
        assert f'"{category}"' not in asked
    report = next((tmp_path / "reports").glob("*.md")).read_text()
    assert "| **run** | 2 |" in report and "Suggested redlines" in report and "Cascade:" in report
    calls = (anthropic.calls, openai.calls)

    again, states = review(tmp_path, pdf, book)
    assert again.is_completed()
    assert (anthropic.calls, openai.calls) == calls, "a rerun of a finished flow must make 0 model calls"
    assert states["ask-extraction-model"] == "Cached" and states["ask-generation-model"] == "Cached"


def test_overloaded_then_ok_switches_to_fallback(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "a.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    anthropic.script(["529", "ok"])
    state, _ = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    assert anthropic.calls == 2
    models = [r.model for r in anthropic.requests]
    assert models == ["anthropic-primary", "anthropic-fallback"]


def test_rate_limit_waits_for_retry_after(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "b.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    anthropic.script(["429", "ok"])
    state, _ = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    first, second = anthropic.requests[:2]
    assert second.at - first.at >= 1.0  # retry-after: 1 honoured despite 0.1 s Prefect delay


def test_auth_error_does_not_retry_and_is_a_partial_failure(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "c.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic, api_key=SecretStr("sk-ant-wrong-key-999")))
    state, _ = review(tmp_path, pdf, book)
    assert state.is_failed()
    assert anthropic.calls == 1
    report = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    assert report["status"] == "partial_failure" and report["failure"]["code"] == "CG-MODEL-AUTH"
    assert "sk-ant-wrong-key-999" not in json.dumps(report) and KEY not in json.dumps(report)


def test_context_too_long_truncates_instead_of_retrying(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "d.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    anthropic.script(["context_too_long", "ok"])
    state, _ = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    result = state.result()
    assert [r.status for r in anthropic.requests] == [400, 200]
    first, second = (len(json.dumps(r.body)) for r in anthropic.requests)
    assert second < first, "the second request must be a smaller one, not a retry of the same request"
    assert result.cascade.truncated
    assert any("[TRUNCATED]" in w.message for w in result.warnings)


def test_budget_guard_degrades_to_offline_without_calling(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "e.pdf", LIABILITY_PAGES)
    block = save_block("anthropic", anthropic, eur_per_million_input_tokens=50_000.0)
    book = playbook(tmp_path, block, budgets="budgets: {per_run_eur: 0.01}")
    state, _ = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    result = state.result()
    assert anthropic.calls == 0
    assert result.extractor.startswith("offline (budget")
    assert any(w.code == "CG-BUDGET-EXCEEDED" for w in result.warnings)
    assert all(c.source == "offline" for c in result.clauses)


def test_invalid_json_twice_is_an_explicit_partial_failure(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "f.pdf", LIABILITY_PAGES)
    anthropic.responder = lambda request: '{"clauses": [{"passage_id": "p0", "text": "x"}]}'  # no category
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    state, _ = review(tmp_path, pdf, book)
    assert state.is_failed()
    assert anthropic.calls == 2  # the call and one repair, no Prefect retry
    report = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    assert report["failure"]["step"] == "extract" and report["failure"]["code"] == "CG-MODEL-BAD-OUTPUT"
    assert report["clauses"] == []


def test_retry_after_failure_at_last_step_repays_no_model_call(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "g.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    blocked = tmp_path / "out"
    blocked.write_text("not a folder")
    state, _ = review(tmp_path, pdf, book, out="out")
    assert state.is_failed()
    calls = anthropic.calls
    assert calls == 1
    blocked.unlink()
    state, states = review(tmp_path, pdf, book, out="out")
    assert state.is_completed()
    assert anthropic.calls == calls
    assert states["ask-extraction-model"] == "Cached"


def test_truncated_output_asks_once_more_with_a_bigger_output_budget(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "h.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, save_block("anthropic", anthropic))
    anthropic.script(["truncated", "ok"])
    state, _ = review(tmp_path, pdf, book)
    assert state.is_completed(), state.message
    assert [r.body["max_tokens"] for r in anthropic.requests] == [800, 1600]
    assert any(w.code == "CG-MODEL-TRUNCATED" for w in state.result().warnings)
