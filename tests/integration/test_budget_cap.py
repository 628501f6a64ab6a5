"""A budget is a cap: every paid request is checked against its worst case before it is sent (the
first one, the repair call, the larger re-ask of a truncated answer), and an answer that was paid for is used as
far as it can be (its complete, valid clauses) instead of being thrown away.

Against the fake Anthropic server over real HTTP, through the real contract-review flow.  Input tokens are
priced at 0 so a call's worst case is exactly ``max_tokens`` x the output price, whatever the prompt.
"""

from __future__ import annotations

import json
import re

import pytest

from clausegate.demo.model_server import FakeModelServer, prompts_of
from clausegate.demo.responders import contract_responder
from clausegate.ops.budget import spent_this_period
from tests.support.contracts import LIABILITY_PAGES
from tests.support.model_flow import KEY, playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")

PRICE_OUT = 15.0  # EUR per million output tokens; input is free here
MAX_TOKENS = 800  # the test playbook's steps.extract.max_output_tokens
ONE_CALL = MAX_TOKENS * PRICE_OUT / 1_000_000  # the worst case of one request: EUR 0.012


@pytest.fixture
def anthropic():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start()
    yield server
    server.stop()


def block(server: FakeModelServer) -> str:
    return save_block("anthropic", server, eur_per_million_input_tokens=0.0,
                      eur_per_million_output_tokens=PRICE_OUT)


def budget(eur: float) -> str:
    return f"budgets: {{per_run_eur: {eur}, per_period_eur: 1000}}"


def clauses_of(request: dict) -> list[dict]:
    return json.loads(contract_responder(request))["clauses"]


def padded(text: str, chars: int = 2900) -> str:
    """``text`` padded with blanks to about ``chars`` characters (~725 output tokens): an answer that costs."""
    return text + " " * max(0, chars - len(text))


def keyed_by_number(request: dict) -> str:
    """The model's clauses in a JSON object keyed by number instead of a list: the envelope fails validation,
    every clause in it is complete and valid."""
    clauses = {str(i): clause for i, clause in enumerate(clauses_of(request), start=1)}
    return padded(json.dumps({"clauses": clauses}))


def first_then(first, then):
    """A responder: ``first`` for the first request, ``then`` for the others."""
    seen = []

    def responder(request: dict) -> str:
        seen.append(1)
        return (first if len(seen) == 1 else then)(request)

    return responder


def model_categories(result) -> set[str]:
    return {c.category for c in result.clauses if c.source == "model"}


def test_the_repair_call_is_checked_and_the_first_answer_keeps_its_valid_clauses(tmp_path, anthropic):
    """The first answer fits the budget but fails validation; its repair would not fit: it is not sent, and the
    paid answer's valid clauses are used, named in a notice.  It was: the repair sent unchecked, over budget."""
    pdf = make_text_pdf(tmp_path / "repair.pdf", LIABILITY_PAGES)
    anthropic.responder = first_then(keyed_by_number, lambda request: padded(contract_responder(request)))
    before = spent_this_period("year")
    model = block(anthropic)
    state, _ = review(tmp_path, pdf, playbook(tmp_path, model, budgets=budget(ONE_CALL)))
    assert state.is_completed(), state.message
    result = state.result()
    billed = anthropic.billed_eur(0.0, PRICE_OUT)
    assert result.cost.eur == billed <= ONE_CALL, f"spent {billed} on a {ONE_CALL} budget"
    assert round(spent_this_period("year") - before, 6) == billed
    assert anthropic.calls == 1, "the repair call would go over the budget: it must not be sent"
    expected = {c["category"] for c in clauses_of(anthropic.requests[0].body)}
    assert expected and model_categories(result) == expected
    skip = next(w for w in result.warnings if w.code == "CG-BUDGET-EXCEEDED")
    assert skip.message.startswith("repair call skipped: run budget")
    partial = next(w for w in result.warnings if w.code == "CG-MODEL-PARTIAL")
    assert all(category in partial.message for category in expected)

    # Kept because the budget refused the repair: not cached, so a rerun with more budget asks again.
    state, states = review(tmp_path, pdf, playbook(tmp_path, model, budgets=budget(1.0)), out="again")
    assert state.is_completed(), state.message
    assert states["ask-extraction-model"] == "Completed" and anthropic.calls == 2
    assert model_categories(state.result()) == expected


PASSAGE = re.compile(r'<contract_passage id="(?P<id>[^"]+)" page="\d+">\n(?P<text>.*?)\n</contract_passage>', re.S)


def one_clause_per_category(request: dict) -> str:
    """A valid clause for every category asked (each quoting a passage's first words), all but the first with a
    long extra field: the fake's "truncated" fault (the first half of the text) keeps the first clause whole
    and cuts the last one."""
    _, user = prompts_of(request)
    passages = [m.groupdict() for m in PASSAGE.finditer(user)]
    categories = re.findall(r'^- "([^"]+)": ', user, re.M)
    return json.dumps({"clauses": [
        {"category": category, "passage_id": passages[0]["id"], "text": " ".join(passages[0]["text"].split()[:12]),
         "confidence": 0.9, "note": "n" * (700 if i else 0)} for i, category in enumerate(categories)]})


def test_a_truncated_answer_is_used_when_the_bigger_retry_does_not_fit(tmp_path, anthropic):
    """The answer is cut at max_tokens; asking again with twice the output budget would not fit: the paid
    answer's complete clauses are used, the categories it never reached are reported as not confirmed."""
    pdf = make_text_pdf(tmp_path / "cut.pdf", LIABILITY_PAGES)
    anthropic.script(["truncated"])  # the fake cuts the answer in half and says max_tokens
    anthropic.responder = one_clause_per_category
    state, _ = review(tmp_path, pdf, playbook(tmp_path, block(anthropic), budgets=budget(ONE_CALL)))
    assert state.is_completed(), state.message
    result = state.result()
    assert anthropic.calls == 1 and result.cost.eur == anthropic.billed_eur(0.0, PRICE_OUT) <= ONE_CALL
    asked = result.cascade.categories_sent
    assert len(asked) >= 2, [w.message for w in result.warnings]
    kept = model_categories(result)
    assert kept and kept < set(asked), "the complete clauses of the cut answer are used, the cut one is not"
    partial = next(w for w in result.warnings if w.code == "CG-MODEL-PARTIAL")
    assert all(category in partial.message for category in kept)
    skip = next(w for w in result.warnings if w.code == "CG-BUDGET-EXCEEDED")
    assert f"max_tokens={2 * MAX_TOKENS}: model call skipped: run budget" in skip.message
    assert set(result.model_unconfirmed) == set(asked) - kept
    assert any(w.code == "CG-MODEL-DEGRADED" and "used in part" in w.message for w in result.warnings)
    assert result.status != "complete"  # degraded, or waiting for a person when a quote disputes a finding


def test_an_answer_invalid_after_its_repair_keeps_its_valid_clauses(tmp_path, anthropic):
    pdf = make_text_pdf(tmp_path / "twice.pdf", LIABILITY_PAGES)
    anthropic.responder = keyed_by_number
    state, _ = review(tmp_path, pdf, playbook(tmp_path, block(anthropic), budgets=budget(1.0)))
    assert state.is_completed(), state.message
    result = state.result()
    assert anthropic.calls == 2  # the answer and its repair, both unusable as a whole
    assert model_categories(result) == {c["category"] for c in clauses_of(anthropic.requests[0].body)}
    assert {"CG-MODEL-BAD-OUTPUT", "CG-MODEL-PARTIAL"} <= {w.code for w in result.warnings}


def test_the_first_call_is_checked_against_its_worst_case(tmp_path, anthropic):
    """A budget of 3/4 of one call's worst case: the call could cost more than the budget, so it is not sent
    (it was: half of max_tokens was assumed, and a long answer went over)."""
    pdf = make_text_pdf(tmp_path / "worst.pdf", LIABILITY_PAGES)
    anthropic.responder = lambda request: padded(contract_responder(request), 3100)
    state, _ = review(tmp_path, pdf, playbook(tmp_path, block(anthropic), budgets=budget(0.75 * ONE_CALL)))
    assert state.is_completed(), state.message
    assert anthropic.calls == 0, f"spent {anthropic.billed_eur(0.0, PRICE_OUT)} on a {0.75 * ONE_CALL} budget"
    assert any(w.code == "CG-BUDGET-EXCEEDED" for w in state.result().warnings)


# ------------------------------------------------------------------ reviews running together

def test_reviews_started_together_stay_within_the_period_budget(tmp_path):
    """4 reviews at once, each with a call that costs about its worst case, and period headroom for 2.5 such
    calls: each request's worst case is reserved before it is sent, so together they never pass the cap (they
    spent 4 calls' worth: every check read the ledger before any of them had paid)."""
    from concurrent.futures import ThreadPoolExecutor

    server = FakeModelServer("anthropic", api_key=KEY, responder=lambda r: padded(contract_responder(r), 3100),
                             fault_rate=1.0, fault_kinds=["slow"], slow_seconds=3.0).start()  # answers take 3 s
    try:
        name = save_block("anthropic", server, eur_per_million_input_tokens=0.0,
                          eur_per_million_output_tokens=PRICE_OUT, read_timeout_seconds=20.0)
        headroom = 2.5 * ONE_CALL
        before = spent_this_period("day")
        book = playbook(tmp_path, name,
                        budgets=f"budgets: {{per_run_eur: 1.0, period: day, per_period_eur: {before + headroom}}}")
        pdfs = [make_text_pdf(tmp_path / f"together{i}.pdf",  # prompts differ: no answer comes from the cache
                              [p.replace("two percent", f"{i + 2} percent") for p in LIABILITY_PAGES])
                for i in range(4)]
        with ThreadPoolExecutor(4) as pool:
            states = list(pool.map(lambda pdf: review(tmp_path, pdf, book, out=pdf.stem)[0], pdfs))
        assert all(s.is_completed() for s in states), [s.message for s in states]
        spent = round(spent_this_period("day") - before, 6)
        billed = server.billed_eur(0.0, PRICE_OUT)
        assert billed > ONE_CALL / 2, "at least one request must have been sent (and paid)"
        assert spent == billed and spent <= headroom, f"spent {spent} (billed {billed}) against {headroom} of headroom"
        skipped = [s.result() for s in states if any(w.code == "CG-BUDGET-EXCEEDED" for w in s.result().warnings)]
        assert len(skipped) == 4 - len(server.billed) and skipped, "the requests that did not fit were skipped"
    finally:
        server.stop()
