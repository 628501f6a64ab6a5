"""The per-provider circuit breaker in the contract-review flow, against a fake provider that hangs.

Its state lives in Prefect (a Variable per endpoint), so it is shared by every process: a batch
during an outage costs the calls that fail until ``breaker_failures`` distinct calls have failed (each
with all the attempts a retry sends to that endpoint), and every later contract nothing."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from prefect import flow, task
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.runtime import task_run
from prefect.variables import Variable

from blocks.models import AnthropicModel
from clausegate.demo.model_server import FakeModelServer
from clausegate.demo.responders import contract_responder
from clausegate.providers import (
    AnthropicClient,
    CircuitBreaker,
    MemoryStore,
    PrefectVariableStore,
    ProviderCircuitOpen,
    ProviderTimeout,
)
from clausegate.providers.circuit import variable_name
from clausegate.providers.retry import MODEL_RETRY_POLICY, use_fallback_now
from tests.support.contracts import LIABILITY_PAGES
from tests.support.model_flow import KEY, playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture
def hung():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start()
    server.down("hang")  # an outage: every request hangs, no answer at all
    yield server
    server.stop()


def breaker_state(server: FakeModelServer) -> dict | None:
    return Variable.get(variable_name(server.url + "/v1/messages"), default=None)


def model_step_seconds(flow_run_id, timeout: float = 20.0) -> float:
    """Seconds the flow run spent in its ask-extraction-model task run (first attempt to final state)."""
    def done():
        with get_client(sync_client=True) as client:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        return [r for r in runs if r.name.startswith("ask-extraction-model") and r.state and r.state.is_final()
                and r.start_time and r.end_time]

    finished = wait_until(done, timeout, what=f"the model task runs of {flow_run_id} finished", step=0.2)
    return sum((r.end_time - r.start_time).total_seconds() for r in finished)


def contracts(tmp_path, n: int, tag: str):
    """``n`` contracts whose model prompts differ (the liquidated damages rate): prompts carry no contract id, so
    identical passages would take the model's answer from the cache instead of calling it."""
    return [make_text_pdf(tmp_path / f"{tag}{i}.pdf",
                          [*(p.replace("two percent", f"{i + 2} percent") for p in LIABILITY_PAGES),
                           f"Schedule {tag}{i}: delivery terms."])
            for i in range(n)]


@pytest.mark.slow
def test_an_outage_costs_a_batch_seconds_not_minutes(tmp_path, hung):
    read_timeout, retries = 3.0, 3
    block = save_block("anthropic", hung, read_timeout_seconds=read_timeout, connect_timeout_seconds=1.0,
                       breaker_failures=2, breaker_cooldown_seconds=300)
    book = playbook(tmp_path, block)  # extract: retries 3, retry delays 0.1 s
    wall, model_step, results = [], [], []
    for pdf in contracts(tmp_path, 5, "batch"):
        started = time.monotonic()
        state, _ = review(tmp_path, pdf, book)
        wall.append(time.monotonic() - started)
        assert state.is_completed(), state.message
        model_step.append(model_step_seconds(state.state_details.flow_run_id))
        results.append(state.result())
    print(f"\noutage, per contract: model step {[round(s, 2) for s in model_step]} s, whole review "
          f"{[round(s, 2) for s in wall]} s; without the breaker each model step waits "
          f">= {(retries + 1) * read_timeout:g} s on the provider")

    # the breaker counts calls, not requests: the first contract's 4 attempts are one failed call, the second
    # contract's call (its retry failed too) the other one; then nothing reaches the hung provider
    assert hung.calls == (retries + 1) + 2, hung.calls
    for result in results:
        assert result.status == "degraded" and result.clauses and all(c.source == "offline" for c in result.clauses)
    for result in results[1:]:
        assert {"CG-MODEL-CIRCUIT-OPEN", "CG-MODEL-DEGRADED"} <= {w.code for w in result.warnings}
    assert model_step[0] >= (retries + 1) * read_timeout  # the first contract pays its four timeouts
    # the later ones pay none of them: together they cost less than one contract would without the breaker
    # (the margin is Prefect's own overhead on a busy machine: typically 0.1-0.4 s per contract)
    without_breaker = (retries + 1) * read_timeout
    assert sum(model_step[2:]) < without_breaker and max(model_step[2:]) < without_breaker / 3, model_step

    # the state is in Prefect, not in this process: a breaker with no memory of its own sees it open
    state = breaker_state(hung)
    assert state["failures"] >= 2 and state["open_until"] > time.time() and state["last_error"] == "CG-MODEL-TIMEOUT"
    with pytest.raises(ProviderCircuitOpen):
        CircuitBreaker(PrefectVariableStore(), failures=2).before_call(hung.url + "/v1/messages")


@pytest.mark.slow
def test_the_breaker_closes_after_the_cooldown_when_the_provider_answers(tmp_path, hung):
    cooldown = 4.0
    block = save_block("anthropic", hung, read_timeout_seconds=0.5, connect_timeout_seconds=0.5,
                       breaker_failures=1, breaker_cooldown_seconds=cooldown)
    book = playbook(tmp_path, block)
    first, second = contracts(tmp_path, 2, "close")
    state, _ = review(tmp_path, first, book, out="first")
    sent = hung.calls
    assert state.result().status == "degraded" and sent < 4  # opened before the call's last attempt
    with pytest.raises(ProviderCircuitOpen):  # skipped during the cool-down
        CircuitBreaker(PrefectVariableStore(), failures=1).before_call(hung.url + "/v1/messages")

    hung.up()
    open_until = breaker_state(hung)["open_until"]  # the stored end of the cool-down (epoch seconds)
    assert open_until - time.time() <= cooldown
    wait_until(lambda: time.time() > open_until, cooldown + 5, what="the cool-down over", step=0.1)
    state, _ = review(tmp_path, second, book, out="second")
    assert state.is_completed(), state.message
    result = state.result()
    assert result.status != "degraded" and any(c.source == "model" for c in result.clauses)
    assert hung.calls == sent + 1 and hung.probes == ["ok"]  # the probe answered, then the trial call, answered
    assert breaker_state(hung)["failures"] == 0 and breaker_state(hung)["open_until"] == 0


# ------------------------------------------------------------------ storms, 529 outages, the fallback

@pytest.fixture
def fallback():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start()
    yield server
    server.stop()


def test_an_open_primary_sends_the_call_to_a_healthy_fallback(tmp_path, hung, fallback):
    block = save_block("anthropic", hung, fallback_base_url=fallback.url, read_timeout_seconds=1.0,
                       connect_timeout_seconds=1.0, breaker_failures=3, breaker_cooldown_seconds=300)
    primary = CircuitBreaker(PrefectVariableStore(), failures=3, outage_seconds=0)
    for _ in range(3):  # the primary is down: its breaker is open
        primary.record_failure(hung.url + "/v1/messages", ProviderTimeout("no answer"))
    book = playbook(tmp_path, block)
    results = []
    for pdf in contracts(tmp_path, 2, "fallback"):
        state, _ = review(tmp_path, pdf, book)
        assert state.is_completed(), state.message
        results.append(state.result())
    assert hung.calls == 0, "nothing may be sent to an endpoint whose breaker is open"
    assert fallback.calls >= 2 and {r.model for r in fallback.requests} == {"anthropic-fallback"}
    for result in results:
        assert result.status != "degraded", [w.code for w in result.warnings]
        assert any(c.source == "model" for c in result.clauses)


@flow
def storm(base_url: str, calls: int) -> list[str]:
    """``calls`` model calls in flight at once, each a task with Prefect retries (as a batch runs them)."""
    return [f.result() for f in [ask_storm.submit(base_url, i) for i in range(calls)]]


@task(**{**MODEL_RETRY_POLICY, "retries": 2, "retry_delay_seconds": 3, "retry_jitter_factor": None})
def ask_storm(base_url: str, i: int) -> str:
    if task_run.run_count == 1:
        time.sleep(0.7 * i)  # the first attempts fail one after the other, before any retry is answered
    block = AnthropicModel(base_url=base_url, api_key=KEY, model="primary-model", read_timeout_seconds=5,
                           breaker_failures=3)
    return block.get_client().complete("sys", f"user {i}", max_tokens=50, use_fallback=use_fallback_now()).text


def test_a_storm_that_retries_cure_does_not_open_the_breaker():
    server = FakeModelServer("anthropic", api_key=KEY).start()
    try:
        server.script(["503", "503", "503"])  # the first attempt of each of the 3 calls in flight fails
        assert storm(server.url, 3) == ['{"clauses": []}'] * 3  # each retry is answered
        assert server.calls == 6 and [r.status for r in server.requests[3:]] == [200] * 3
        state = breaker_state(server)
        assert state is None or (state["failures"] == 0 and state["open_until"] == 0)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_529_outage_opens_the_breaker_like_a_hang(tmp_path):
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start()
    server.down("529")  # overloaded, on every attempt: an outage the retries do not cure
    try:
        # the breaker also wants 2 x read timeout (0.5 s) without an answer: a storm answers in between
        block = save_block("anthropic", server, read_timeout_seconds=0.25, breaker_failures=2,
                           breaker_cooldown_seconds=300)
        book = playbook(tmp_path, block)  # extract: retries 3 (4 attempts), retry delays 0.1 s
        results, sent = [], []
        for pdf in contracts(tmp_path, 3, "overloaded"):
            before = server.calls
            state, _ = review(tmp_path, pdf, book)
            results.append(state.result())
            sent.append(server.calls - before)
        # two failed calls (each all its attempts) open it: the third contract sends nothing
        assert sent[-1] == 0 and sum(sent) < 3 * 4, f"requests per contract: {sent} (4 each without the breaker)"
        assert all(r.status == "degraded" for r in results)
        assert {"CG-MODEL-CIRCUIT-OPEN"} <= {w.code for w in results[-1].warnings}
        assert breaker_state(server)["last_error"] == "CG-MODEL-OVERLOADED"
    finally:
        server.stop()


def test_calls_during_the_half_open_probe_wait_for_it_instead_of_failing():
    server = FakeModelServer("anthropic", api_key=KEY, slow_seconds=1.5).start()
    try:
        breaker = CircuitBreaker(MemoryStore(), failures=1, cooldown_seconds=0.2, outage_seconds=0)
        client = AnthropicClient(base_url=server.url, api_key=KEY, model="m", read_timeout=10, breaker=breaker)
        breaker.record_failure(server.url + "/v1/messages", ProviderTimeout("no answer"))
        until = breaker.state(server.url + "/v1/messages").open_until
        wait_until(lambda: time.time() > until, 5, what="the cool-down over")  # the next call is the probe
        server.script(["slow"])  # the probe's answer takes 1.5 s
        with ThreadPoolExecutor(1) as pool:
            probe = pool.submit(client.complete, "sys", "probe")
            wait_until(lambda: server.calls, 10, what="the probe sent", step=0.02)
            waiting = client.complete("sys", "in flight meanwhile")  # waits for the probe, then goes on
            assert probe.result().text == waiting.text == '{"clauses": []}'
        assert server.calls == 2 and not breaker.state(server.url + "/v1/messages").tripped
    finally:
        server.stop()
