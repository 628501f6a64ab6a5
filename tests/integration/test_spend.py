"""Money counted once and everywhere: what the fake model servers billed, the spend ledger as every
budget period reads it, and the reports' cost must be the same amounts, faults or not.

Against the project's fake Anthropic / OpenAI-style servers over real HTTP, through the real
contract-review flow.  The fakes bill like a provider (``FakeModelServer.billed``): every 200 they
delivered, usable or not.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from pydantic import SecretStr

from blocks.models import AnthropicModel, OpenAICompatibleModel
from clausegate.demo.model_server import FakeModelServer, prompts_of
from clausegate.demo.responders import contract_responder
from clausegate.ops.budget import spent_this_period
from clausegate.providers.errors import ProviderTimeout, ServerError
from flows.contract_review import contract_review
from tests.support.fake_model import client_for
from tests.support.pdf_factory import make_text_pdf
from tests.support.waiting import wait_until

KEY = "sk-spend-test-0123456789abcdef"
PRICE_IN, PRICE_OUT = 3.0, 15.0
PERIODS = ("day", "month", "year")
STORM_KINDS = ("rate_limit", "overloaded", "server_error", "unavailable", "slow", "not_json", "truncated")
pytestmark = pytest.mark.usefixtures("prefect_server")

PAGES = [
    "MASTER SUPPLY AGREEMENT\nThis Master Supply Agreement is entered into as of January 5, 2024 by and between "
    "Acme Corp., a Delaware corporation, and Widget Ltd.",
    "2. Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of New York, without regard to its conflict of laws principles.\n"
    "3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or related "
    "to this Agreement exceed the total fees paid by Customer in the twelve months preceding the claim.",
    "6. Liquidated Damages. If Supplier fails to deliver on time, Supplier shall pay Customer as liquidated "
    "damages an amount equal to two percent of the order value for each week of delay.\n"
    "7. Indemnification. Supplier's liability for breach of its confidentiality obligations shall be unlimited.",
]


@pytest.fixture
def anthropic():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder, slow_seconds=2.0).start()
    yield server
    server.stop()


@pytest.fixture
def openai():
    server = FakeModelServer("openai", api_key=KEY, responder=contract_responder, slow_seconds=2.0).start()
    yield server
    server.stop()


def save_block(server: FakeModelServer, **fields) -> str:
    cls = AnthropicModel if server.protocol == "anthropic" else OpenAICompatibleModel
    name = f"spend-{uuid.uuid4().hex[:8]}"
    options = dict(base_url=server.url, model=f"{server.protocol}-primary",
                   fallback_model=f"{server.protocol}-fallback",
                   api_key=SecretStr(KEY), read_timeout_seconds=1.5, eur_per_million_input_tokens=PRICE_IN,
                   eur_per_million_output_tokens=PRICE_OUT)
    options.update(fields)
    cls(**options).save(name, overwrite=True)
    return f"{cls.get_block_type_slug()}/{name}"


def playbook(tmp_path: Path, extractor: str, *, generate: str | None = None, budgets: str = "") -> str:
    path = tmp_path / f"playbook-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"""
name: spend-test
categories: [Governing Law, Cap on Liability, Uncapped Liability, Liquidated Damages, Insurance, Audit Rights]
high_risk: [Uncapped Liability, Liquidated Damages, Cap on Liability]
gates: []
steps:
  extract: {{extractor: "{extractor}", retries: 3, retry_delay_seconds: [0.1, 0.1, 0.1], max_output_tokens: 800,
             key_terms: never}}
  generate: {{provider: {json.dumps(generate)}, retries: 3, retry_delay_seconds: [0.1, 0.1, 0.1]}}
{budgets}
""")
    return str(path)


def review(pdf: Path, book: str, out: Path):
    return asyncio.run(contract_review(str(pdf), playbook=book, out_dir=str(out), return_state=True))


def report_of(out: Path, pdf: Path) -> dict:
    (path,) = [p for p in out.glob("*.json") if p.name.startswith(pdf.stem)]
    return json.loads(path.read_text())


def ledger() -> dict[str, float]:
    return {period: spent_this_period(period) for period in PERIODS}


def grown(before: dict[str, float]) -> dict[str, float]:
    now = ledger()
    return {p: round(now[p] - before[p], 6) for p in PERIODS}


def billed_eur(*servers: FakeModelServer) -> float:
    return round(sum(s.billed_eur(PRICE_IN, PRICE_OUT) for s in servers), 6)


def model_task_state(flow_run_id, name: str):
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    (run,) = [r for r in runs if r.name.startswith(name)]
    return run.state


# ------------------------------------------------------------------ the fakes bill like a provider

def test_the_fake_bills_delivered_answers_only(anthropic):
    client = client_for(anthropic, read_timeout=0.5, api_key=KEY)
    anthropic.script(["ok", "not_json", "500", "slow"])
    answers = [client.complete("s", "u")]
    answers.append(client.complete("s", "u"))  # a 200 that is no JSON: still charged
    for _ in range(2):
        with pytest.raises((ServerError, ProviderTimeout)):
            client.complete("s", "u")  # a 500 (free), then no answer within the read timeout
    # the slow answer is computed after the client hung up: wait for it to be recorded (abandoned, not charged)
    wait_until(lambda: anthropic.abandoned, anthropic.slow_seconds + 10, what="the slow answer recorded")
    assert [r.fault for r in anthropic.billed] == ["ok", "not_json"]
    assert [r.fault for r in anthropic.abandoned] == ["slow"]
    assert anthropic.billed_tokens() == (sum(a.input_tokens for a in answers), sum(a.output_tokens for a in answers))


# ------------------------------------------------------------------ the fault storm

@pytest.mark.slow
def test_ledger_and_reports_equal_what_the_fakes_billed_over_a_fault_storm(tmp_path, anthropic, openai):
    """12 contracts at 30 % faults, under daily, monthly and yearly playbooks: the ledger grows by
    exactly what the fakes billed, whichever period reads it, and so do the reports' costs."""
    for server in (anthropic, openai):
        server.fault_rate, server.fault_kinds = 0.3, list(STORM_KINDS)
    anthropic._rng.seed(11)
    openai._rng.seed(12)
    extract, generate = save_block(anthropic), save_block(openai)
    books = [playbook(tmp_path, extract, generate=generate,
                      budgets=f"budgets: {{period: {period}, per_run_eur: 5, per_period_eur: 1000}}")
             for period in PERIODS]
    out = tmp_path / "reports"
    before = ledger()
    # each contract's clauses differ (the liquidated damages rate): identical passages would reuse the model's
    # answers from the cache (prompts carry no contract id), and the storm needs every contract to ask
    pdfs = [make_text_pdf(tmp_path / f"contract-{i:02d}.pdf",
                          [*(p.replace("two percent", f"{i + 2} percent") for p in PAGES),
                           f"Schedule {i}. Purchase order number {i}."])
            for i in range(12)]
    for i, pdf in enumerate(pdfs):
        review(pdf, books[i % 3], out)

    billed = billed_eur(anthropic, openai)
    faults = {r.fault for s in (anthropic, openai) for r in s.requests}
    billed_faults = {r.fault for s in (anthropic, openai) for r in s.billed}
    assert {"not_json", "truncated"} & billed_faults, faults  # paid, unusable
    assert billed > 0
    assert grown(before) == {"day": billed, "month": billed, "year": billed}
    reports = [report_of(out, pdf)["cost"] for pdf in pdfs]
    assert round(sum(c["eur"] for c in reports), 6) == billed
    assert sum(c["calls"] for c in reports) == len(anthropic.billed) + len(openai.billed)
    in_tokens = anthropic.billed_tokens()[0] + openai.billed_tokens()[0]
    assert sum(c["input_tokens"] for c in reports) == in_tokens


# ------------------------------------------------------------------ failed attempts are paid spend

@pytest.mark.parametrize("script", [["not_json", "not_json"], ["not_json", "500", "500", "500", "500"]],
                         ids=["answer-and-repair-unusable", "repair-call-keeps-failing"])
def test_a_failed_model_step_shows_what_it_paid(tmp_path, anthropic, script):
    pdf = make_text_pdf(tmp_path / "failed.pdf", PAGES)
    book = playbook(tmp_path, save_block(anthropic))
    anthropic.script(script)
    before = ledger()
    state = review(pdf, book, tmp_path / "out")
    report = report_of(tmp_path / "out", pdf)
    billed = billed_eur(anthropic)
    assert billed > 0, state.message
    assert report["cost"]["eur"] == billed and report["cost"]["calls"] == len(anthropic.billed)
    assert report["cost_by_step"]["extract"]["eur"] == billed
    assert grown(before)["year"] == billed
    md = next((tmp_path / "out").glob("*.md")).read_text()
    assert f"this run ({len(anthropic.billed)} model calls" in md


def test_the_repair_path_never_resends_a_paid_request(tmp_path, anthropic):
    """A paid answer that needs a repair, then the repair call fails (503) and the task is retried:
    the retry sends the repair again, never the original request that was already paid for."""
    pdf = make_text_pdf(tmp_path / "repair.pdf", PAGES)
    book = playbook(tmp_path, save_block(anthropic))
    anthropic.script(["not_json", "503", "ok"])
    before = ledger()
    state = review(pdf, book, tmp_path / "out")
    assert state.is_completed(), state.message
    original = prompts_of(anthropic.requests[0].body)[1]
    assert [r.status for r in anthropic.requests] == [200, 503, 200]
    assert [prompts_of(r.body)[1] == original for r in anthropic.requests] == [True, False, False]
    assert all("<previous_output>" in prompts_of(r.body)[1] for r in anthropic.requests[1:])
    billed = billed_eur(anthropic)
    assert len(anthropic.billed) == 2
    assert grown(before)["year"] == billed
    cost = report_of(tmp_path / "out", pdf)["cost"]
    assert (cost["calls"], cost["eur"]) == (2, billed)


# ------------------------------------------------------------------ a cached rerun did not pay again

def test_a_cached_rerun_reports_no_spend_of_its_own_and_what_it_reused(tmp_path, anthropic, openai):
    pdf = make_text_pdf(tmp_path / "rerun.pdf", PAGES)
    book = playbook(tmp_path, save_block(anthropic), generate=save_block(openai))
    assert review(pdf, book, tmp_path / "first").is_completed()
    first = report_of(tmp_path / "first", pdf)["cost"]
    assert first["calls"] == 2 and first["eur"] == billed_eur(anthropic, openai) > 0
    before = ledger()
    assert review(pdf, book, tmp_path / "again").is_completed()
    again = report_of(tmp_path / "again", pdf)
    assert (again["cost"]["calls"], again["cost"]["eur"]) == (0, 0.0)
    assert (again["cost"]["reused_calls"], again["cost"]["reused_eur"]) == (2, first["eur"])
    assert again["cost_by_step"]["extract"]["reused_eur"] > 0 and again["cost_by_step"]["generate"]["reused_eur"] > 0
    assert grown(before)["year"] == 0 and len(anthropic.billed) + len(openai.billed) == 2
    md = next((tmp_path / "again").glob("*.md")).read_text()
    assert "€0.00 this run (0 model calls" in md and "reused from cache (2 model calls" in md


# ------------------------------------------------------------------ a budget skip is not a failure

def test_a_budget_skip_is_a_completed_task_with_a_notice_and_is_not_cached(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "budget.pdf", PAGES)
    block = save_block(anthropic)
    tight = playbook(tmp_path, block, budgets="budgets: {per_run_eur: 0.001}")
    state = review(pdf, tight, tmp_path / "out")
    assert state.is_completed(), state.message
    assert anthropic.calls == 0
    task = model_task_state(state.state_details.flow_run_id, "ask-extraction-model")
    assert task.is_completed() and task.name == "Completed" and "skipped" in task.message
    notice = next(w for w in state.result().warnings if w.code == "CG-BUDGET-EXCEEDED")
    assert "> €0.001" in notice.message  # not "€0.00"

    roomy = playbook(tmp_path, block, budgets="budgets: {per_run_eur: 1.0}")
    state = review(pdf, roomy, tmp_path / "out2")
    assert state.is_completed(), state.message
    assert anthropic.calls == 1, "the skip was cached: a bigger budget must ask the model"
