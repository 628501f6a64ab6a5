"""Provider clients, the error mapper, the retry policy and the blocks, over real HTTP to the fakes."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
from datetime import UTC, datetime

import pytest
import requests
from prefect import flow, task
from prefect.states import Failed

from blocks.models import AnthropicModel, OpenAICompatibleModel
from clausegate.errors import ClauseGateError
from clausegate.providers import (
    AnthropicClient,
    AuthError,
    BadRequest,
    CircuitBreaker,
    ContextTooLong,
    CooldownRegistry,
    InvalidOutput,
    MemoryStore,
    ModelResponse,
    NotFound,
    OpenAICompatClient,
    OutputLimitRejected,
    OutputTruncated,
    Overloaded,
    Pricing,
    ProviderCircuitOpen,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
    QuotaExceeded,
    RateLimited,
    ServerError,
    cost_eur,
    error_from_response,
    retry_after_from_headers,
)
from clausegate.providers.ratelimits import pacing_wait, parse_duration
from clausegate.providers.retry import MODEL_RETRY_POLICY, RETRY_DELAYS, retry_condition, use_fallback_now
from tests.support.fake_model import KEY, client_for, fake_model_server

TRANSIENT = {RateLimited, Overloaded, ServerError, ProviderTimeout, ProviderUnreachable}


def failure_of(call) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        call()
    return caught.value


def retries(exc: BaseException) -> bool:
    return retry_condition(None, None, Failed(data=exc))


# ------------------------------------------------------------------ mapping, both protocols

@pytest.mark.parametrize(
    "fault, expected, statuses",
    [
        ("429", RateLimited, {429}),
        ("quota", QuotaExceeded, {400, 429}),
        ("529", Overloaded, {529, 503}),
        ("500", ServerError, {500}),
        ("503", ServerError, {503}),
        ("context_too_long", ContextTooLong, {400}),
        ("413", ContextTooLong, {413}),
        ("401", AuthError, {401}),
        ("403", AuthError, {403}),
        ("404", NotFound, {404}),
        ("bad_request", BadRequest, {400}),
        ("422", BadRequest, {422}),
    ],
)
def test_each_http_fault_maps_to_one_error(model_server, fault, expected, statuses):
    model_server.script([fault])
    error = failure_of(lambda: client_for(model_server).complete("sys", "user", max_tokens=50))
    assert type(error) is expected and error.code == expected.code
    assert error.status in statuses and f"HTTP {error.status}" in str(error)
    assert error.request_id == "req_fake000001" and "req_fake000001" in str(error)
    assert error.provider == model_server.protocol and error.hint
    assert retries(error) is (expected in TRANSIENT) is error.transient
    assert model_server.calls == 1  # the client never retries


def test_slow_answer_is_a_timeout(model_server):
    model_server.slow_seconds = 0.6
    model_server.script(["slow"])
    error = failure_of(lambda: client_for(model_server, read_timeout=0.2).complete("s", "u"))
    assert type(error) is ProviderTimeout and error.code == "CG-MODEL-TIMEOUT" and retries(error)


@pytest.mark.parametrize("client_class", [AnthropicClient, OpenAICompatClient])
def test_refused_connection_is_unreachable(client_class):
    with fake_model_server("openai") as server:
        url = server.url  # the port is free again after stop()
    client = client_class(base_url=url, model="m", api_key=KEY, block_name="anthropic-model/prod")
    error = failure_of(lambda: client.complete("s", "u"))
    assert type(error) is ProviderUnreachable and retries(error)
    assert "anthropic-model/prod" in error.hint and "base_url" in error.hint


def test_rate_limit_carries_retry_after_and_sets_the_cooldown(model_server):
    slept: list[float] = []
    registry = CooldownRegistry(sleep=slept.append)
    client = client_for(model_server, cooldowns=registry)
    model_server.script(["429"])
    error = failure_of(lambda: client.complete("s", "u"))
    assert isinstance(error, RateLimited) and error.retry_after_seconds == 1.0
    assert client.complete("s", "u").text == '{"clauses": []}'
    assert len(slept) == 1 and 1.0 <= slept[0] <= 1.1  # waited out retry-after (+ jitter) first


def test_permanent_and_foreign_errors_never_retry():
    for exc in (ContextTooLong("x"), AuthError("x"), NotFound("x"), BadRequest("x"), InvalidOutput("x"),
                OutputTruncated("x"), QuotaExceeded("x"), ClauseGateError("x"), ValueError("x"), KeyError("x")):
        assert retries(exc) is False, exc
    for cls in TRANSIENT:
        assert retries(cls("x")) is True


# ------------------------------------------------------------------ requests on the wire

def test_anthropic_request_and_response(anthropic_server):
    response = client_for(anthropic_server).complete("be precise", "the contract", max_tokens=77)
    (record,) = anthropic_server.requests
    assert record.path == "/v1/messages"
    assert record.headers["anthropic-version"] == "2023-06-01"
    assert record.headers["content-type"] == "application/json" and record.headers["x-api-key"] == "<redacted>"
    assert record.body == {"model": "primary-model", "max_tokens": 77, "system": "be precise",
                           "messages": [{"role": "user", "content": "the contract"}]}
    assert response == ModelResponse(text='{"clauses": []}', model="primary-model", input_tokens=response.input_tokens,
                                     output_tokens=3, stop_reason="end_turn", truncated=False,
                                     request_id="req_fake000001", provider="anthropic")
    assert response.input_tokens > 0


def test_openai_request_and_response(openai_server):
    response = client_for(openai_server, max_output_tokens=99).complete("be precise", "the contract")
    (record,) = openai_server.requests
    assert record.path == "/v1/chat/completions" and record.headers["authorization"] == "<redacted>"
    assert record.body == {"model": "primary-model", "max_tokens": 99, "messages": [
        {"role": "system", "content": "be precise"}, {"role": "user", "content": "the contract"}]}
    assert (response.stop_reason, response.truncated, response.request_id) == ("stop", False, "req_fake000001")
    assert response.input_tokens > 0 and response.output_tokens == 3


def test_openai_compatible_without_key_sends_no_auth_header():
    with fake_model_server("openai", api_key=None) as server:
        client_for(server, api_key=None, base_url=server.url + "/v1/").complete("s", "u")  # ".../v1" base works
        assert "authorization" not in server.requests[0].headers


def test_truncation_is_reported_not_raised(model_server):
    model_server.script(["truncated"])
    response = client_for(model_server).complete("s", "u")
    assert response.truncated and response.stop_reason in ("max_tokens", "length")


def test_fallback_model_and_endpoint(anthropic_server):
    with fake_model_server("anthropic") as backup:
        client = client_for(anthropic_server, fallback_model="backup-model", fallback_base_url=backup.url)
        assert client.complete("s", "u", use_fallback=True).model == "backup-model"
        assert anthropic_server.calls == 0 and backup.requests[0].model == "backup-model"
        assert client.complete("s", "u", use_fallback=True, model="explicit").model == "explicit"
        assert client.complete("s", "u").model == "primary-model" and anthropic_server.calls == 1


def test_session_has_no_urllib3_retries(model_server):
    client = client_for(model_server)
    assert client.session.get_adapter("http://x").max_retries.total == 0
    model_server.script(["503"])
    failure_of(lambda: client.complete("s", "u"))
    assert model_server.calls == 1


# ------------------------------------------------------------------ headers and cooldowns

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "headers, seconds",
    [
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, 30.0),
        ({"anthropic-ratelimit-requests-reset": "2025-01-01T12:00:20Z", "anthropic-ratelimit-requests-remaining": "0",
          "anthropic-ratelimit-tokens-reset": "2025-01-01T12:00:05Z", "anthropic-ratelimit-tokens-remaining": "900"},
         20.0),
        ({"anthropic-ratelimit-tokens-reset": "2025-01-01T12:00:05+00:00"}, 5.0),
        ({"x-ratelimit-reset-requests": "12ms", "x-ratelimit-remaining-requests": "0",
          "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "5"}, 0.012),
        ({"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "6m0s"}, 2.0),
        ({"x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "0"}, 360.0),
        ({"content-type": "application/json"}, None),
    ],
)
def test_retry_after_from_headers(headers, seconds):
    assert retry_after_from_headers(headers, now=NOW) == pytest.approx(seconds) if seconds else (
        retry_after_from_headers(headers, now=NOW) is None)


@pytest.mark.parametrize("text, seconds", [("6m0s", 360), ("12ms", 0.012), ("1.5s", 1.5), ("1h2m3s", 3723),
                                          ("3", 3), ("soon", None), ("5x", None)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_cooldown_registry_caps_and_isolates_endpoints():
    now = [100.0]
    registry = CooldownRegistry(max_wait=60, jitter=0.1, clock=lambda: now[0],
                                sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert 60 <= registry.note_rate_limit("http://a/v1/messages", 500) <= 66
    assert registry.remaining("http://a/v1/messages") == 60  # a wait is never longer than max_wait
    assert registry.remaining("http://b/v1/messages") == 0
    assert registry.note_rate_limit("http://b/v1/messages", None) == 0
    assert registry.wait("http://a/v1/messages") == 60 and registry.remaining("http://a/v1/messages") <= 6


# ------------------------------------------------------------------ secrets

def test_key_never_in_exceptions_reprs_or_logs(model_server, caplog):
    caplog.set_level(logging.DEBUG)
    model_server.api_key = "the-key-the-server-wants"
    client = client_for(model_server)  # sends KEY: wrong
    error = failure_of(lambda: client.complete("s", "u"))
    assert isinstance(error, AuthError) and "check the API key" in error.hint
    for text in (str(error), repr(error), error.hint, repr(client), caplog.text,
                 str(pickle.loads(pickle.dumps(error)))):
        assert KEY not in text and "SECRET" not in text
    assert "HTTP 401" in caplog.text  # the failure itself is logged


def test_mapper_scrubs_a_key_echoed_by_the_provider():
    response = requests.Response()
    response.status_code = 401
    response._content = f'{{"error": {{"message": "key {KEY} and Bearer {KEY} are not valid"}}}}'.encode()
    response.request = requests.Request("POST", "http://x/v1/chat/completions",
                                        headers={"authorization": f"Bearer {KEY}"}).prepare()
    error = error_from_response(response, provider="openai", block_name="openai-compatible-model/local")
    assert KEY not in str(error) and "<redacted>" in str(error) and "openai-compatible-model/local" in error.hint


def test_block_repr_hides_the_key():
    block = AnthropicModel(api_key=KEY)
    assert KEY not in repr(block) and KEY not in str(block.model_dump())


def test_pickled_errors_keep_their_details():
    error = RateLimited("slow down", hint="wait", provider="anthropic", status=429, request_id="r1",
                        retry_after_seconds=3.0)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.code, copy.hint, copy.status, copy.retry_after_seconds, copy.request_id) == (
        RateLimited, "CG-MODEL-RATE-LIMIT", "wait", 429, 3.0, "r1")
    assert str(copy) == str(error)


# ------------------------------------------------------------------ blocks and pricing

def test_blocks_build_matching_clients(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    anthropic = AnthropicModel(base_url="http://h", model="a", fallback_model="b", fallback_base_url="http://f",
                               api_key=KEY, connect_timeout_seconds=2, read_timeout_seconds=30, max_output_tokens=512,
                               eur_per_million_input_tokens=3, eur_per_million_output_tokens=15).get_client()
    assert isinstance(anthropic, AnthropicClient)
    assert (anthropic.model, anthropic.fallback_model, anthropic.fallback_base_url) == ("a", "b", "http://f")
    assert anthropic.timeout == (2, 30) and anthropic.max_output_tokens == 512
    assert anthropic.pricing.eur(1_000_000, 1_000_000) == 18
    assert anthropic.block_name == "anthropic-model/(unsaved)"
    local = OpenAICompatibleModel(base_url="http://127.0.0.1:1", model="llama").get_client()
    assert isinstance(local, OpenAICompatClient) and local._key() is None


def test_api_key_from_environment(monkeypatch, anthropic_server):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    client = AnthropicModel(base_url=anthropic_server.url, model="m").get_client()
    assert client.complete("s", "u").text == '{"clauses": []}'


def test_anthropic_block_without_any_key_fails_fast(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    error = failure_of(lambda: AnthropicModel().get_client())
    assert isinstance(error, AuthError) and "ANTHROPIC_API_KEY" in error.hint and "anthropic-model" in error.hint


def test_cost():
    assert cost_eur(1_000_000, 500_000, eur_per_million_input=3.0, eur_per_million_output=15.0) == 10.5
    assert cost_eur(1234, 567, eur_per_million_input=2.8, eur_per_million_output=14.0) == pytest.approx(
        0.011393, abs=1e-5)
    responses = [ModelResponse(text="", model="m", input_tokens=1000, output_tokens=200)] * 2
    cost = Pricing(eur_per_million_input_tokens=3, eur_per_million_output_tokens=15).cost(responses)
    assert (cost.calls, cost.input_tokens, cost.output_tokens, cost.eur) == (2, 2000, 400, 0.012)


# ------------------------------------------------------------------ the policy inside real Prefect retries

@pytest.fixture
def prefect_harness(prefect_server):
    """The session's one Prefect server (tests/conftest.py)."""
    return prefect_server


@task(**{**MODEL_RETRY_POLICY, "retry_delay_seconds": 0, "retry_jitter_factor": None})
def call_model(base_url: str) -> str:
    block = AnthropicModel(base_url=base_url, api_key=KEY, model="primary-model", fallback_model="fallback-model")
    return block.get_client().complete("sys", "user", max_tokens=50, use_fallback=use_fallback_now()).model


@flow
def review(base_url: str) -> str:
    return call_model(base_url)


def test_policy_defaults():
    assert RETRY_DELAYS == [1, 2, 4] and MODEL_RETRY_POLICY["retry_condition_fn"] is retry_condition
    assert use_fallback_now() is False  # outside a task run


def test_flow_retries_a_429_after_retry_after_on_the_fallback(prefect_harness, anthropic_server):
    anthropic_server.script(["429", "ok"])
    assert review(anthropic_server.url) == "fallback-model"
    first, second = anthropic_server.requests
    assert anthropic_server.calls == 2 and (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 1.0  # retry-after: 1 honoured although Prefect's delay is 0
    assert (first.model, second.model) == ("primary-model", "fallback-model")


def test_flow_does_not_retry_a_401(prefect_harness, anthropic_server, caplog):
    anthropic_server.api_key = "another-key"
    state = review(anthropic_server.url, return_state=True)
    assert state.is_failed() and anthropic_server.calls == 1
    error = state.result(raise_on_failure=False)
    assert isinstance(error, AuthError) and error.code == "CG-MODEL-AUTH"
    assert KEY not in caplog.text


def test_flow_retries_overload_until_success(prefect_harness, openai_server):
    @task(**{**MODEL_RETRY_POLICY, "retry_delay_seconds": 0, "retry_jitter_factor": None})
    def call_openai() -> int:
        client = OpenAICompatibleModel(base_url=openai_server.url, api_key=KEY, model="m").get_client()
        return client.complete("s", "u").output_tokens

    @flow
    def batch() -> int:
        return call_openai()

    openai_server.script(["529", "500", "ok"])
    assert batch() == 3 and openai_server.calls == 3


def test_saved_block_round_trips(prefect_harness):
    AnthropicModel(api_key=KEY, model="m", eur_per_million_input_tokens=3).save("cg-test", overwrite=True)
    loaded = AnthropicModel.load("cg-test")
    assert loaded.api_key.get_secret_value() == KEY
    assert loaded.get_client().block_name == "anthropic-model/cg-test"


def test_policy_works_for_async_tasks_too(prefect_harness, anthropic_server):
    @task(**{**MODEL_RETRY_POLICY, "retry_delay_seconds": 0, "retry_jitter_factor": None})
    async def call_async(base_url: str) -> str:
        return call_model.fn(base_url)

    @flow
    async def review_async(base_url: str) -> str:
        return await call_async(base_url)

    anthropic_server.script(["529", "ok"])
    assert asyncio.run(review_async(anthropic_server.url)) == "fallback-model"
    assert anthropic_server.calls == 2
    anthropic_server.script(["404"])
    assert asyncio.run(review_async(anthropic_server.url, return_state=True)).is_failed()
    assert anthropic_server.calls == 3


# ------------------------------------------------------------------ Retry-After on any status; the circuit breaker

def test_a_503_retry_after_sets_the_cooldown_like_a_429(model_server):
    slept: list[float] = []
    client = client_for(model_server, cooldowns=CooldownRegistry(sleep=slept.append))
    model_server.script(["503"])
    error = failure_of(lambda: client.complete("s", "u"))
    assert error.status == 503 and retries(error) and error.retry_after_seconds == 1.0
    client.complete("s", "u")
    assert len(slept) == 1 and 0.9 <= slept[0] <= 1.1  # what is left of the 1 s, measured after the answer


def test_reset_headers_alone_ask_for_no_wait_outside_a_429():
    with fake_model_server("anthropic", retry_after_statuses=()) as server:  # a 503 without retry-after
        slept: list[float] = []
        client = client_for(server, cooldowns=CooldownRegistry(sleep=slept.append))
        server.script(["503"])
        assert failure_of(lambda: client.complete("s", "u")).retry_after_seconds is None
        client.complete("s", "u")
        assert slept == []  # the rate-limit reset headers on every answer are no reason to wait


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_circuit_breaker_opens_after_n_transport_failures_skips_and_closes(anthropic_server):
    clock = Clock()
    breaker = CircuitBreaker(MemoryStore(), failures=3, cooldown_seconds=30, clock=clock, provider="anthropic",
                             block_name="anthropic-model/prod", outage_seconds=0)
    client = client_for(anthropic_server, read_timeout=0.3, breaker=breaker)
    anthropic_server.down("hang")
    for _ in range(3):
        assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderTimeout
    error = failure_of(lambda: client.complete("s", "u"))
    assert type(error) is ProviderCircuitOpen and error.code == "CG-MODEL-CIRCUIT-OPEN" and not retries(error)
    assert anthropic_server.calls == 3 and anthropic_server.probes == []  # nothing sent while open
    assert "after outage failures of 3 calls" in str(error) and "anthropic-model/prod" in error.hint
    clock.now += 29
    failure_of(lambda: client.complete("s", "u"))
    assert anthropic_server.calls == 3
    clock.now += 2  # cool-down over: the call sends the short probe (GET /v1/models) first; no answer: re-opened
    assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderCircuitOpen
    assert anthropic_server.calls == 3 and anthropic_server.probes == ["hang"]  # the call itself was never sent
    assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderCircuitOpen and anthropic_server.calls == 3
    clock.now += 31
    anthropic_server.up()
    assert client.complete("s", "u").text == '{"clauses": []}'  # the probe is answered, the call too: closed
    state = breaker.state(client.base_url + "/v1/messages")
    assert (state.failures, state.open_until) == (0, 0.0)


def test_half_open_lets_one_probe_through_and_the_others_wait_for_its_outcome():
    clock = Clock()
    outcome = []  # what the probe reports while a second caller waits (the fake sleep runs it)

    def sleep(seconds: float) -> None:
        clock.now += seconds
        if outcome:
            outcome.pop(0)()

    breaker = CircuitBreaker(MemoryStore(), failures=1, cooldown_seconds=10, probe_seconds=5, clock=clock,
                             sleep=sleep, outage_seconds=0)
    breaker.record_failure("u", ProviderTimeout("x"))
    with pytest.raises(ProviderCircuitOpen):
        breaker.before_call("u")
    clock.now += 10
    breaker.before_call("u")  # the probe
    with pytest.raises(ProviderCircuitOpen):  # a caller with another endpoint to go to goes there at once
        breaker.before_call("u", divert=True)
    outcome.append(lambda: breaker.record_success("u"))
    breaker.before_call("u")  # a second caller while the probe is in flight waits: the probe answered, it goes on
    assert breaker.state("u").failures == 0 and not breaker.state("u").tripped

    breaker.record_failure("u", ProviderTimeout("x"))
    clock.now += 10
    breaker.before_call("u")  # the next probe
    outcome.append(lambda: breaker.record_failure("u", ProviderTimeout("x")))
    with pytest.raises(ProviderCircuitOpen):  # it failed: the waiting caller is skipped like any other
        breaker.before_call("u")
    clock.now += 10
    breaker.before_call("u")  # a probe that never reports back (its process died) ...
    clock.now += 5
    breaker.before_call("u")  # ... lets the next call probe
    assert breaker.state("u").probe_until == clock.now + 5


def test_only_outage_failures_count_and_an_answer_resets_the_count(anthropic_server):
    breaker = CircuitBreaker(MemoryStore(), failures=3, cooldown_seconds=30, outage_seconds=0)
    client = client_for(anthropic_server, read_timeout=0.3, breaker=breaker)
    url = client.base_url + "/v1/messages"
    anthropic_server.script(["500", "429", "529", "401", "hang", "ok", "hang", "401", "hang", "503", "hang"])
    for _ in range(5):
        failure_of(lambda: client.complete("s", "u"))
    assert breaker.state(url).failures == 1  # 500 and 529 counted, each cleared by the next answer (429, 401)
    client.complete("s", "u")
    assert breaker.state(url).failures == 0
    failure_of(lambda: client.complete("s", "u"))  # hang
    failure_of(lambda: client.complete("s", "u"))  # 401: an answer
    failure_of(lambda: client.complete("s", "u"))  # hang
    failure_of(lambda: client.complete("s", "u"))  # 503
    assert breaker.state(url).failures == 2
    assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderTimeout  # the third: opens
    assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderCircuitOpen
    assert anthropic_server.calls == 11


def test_a_bare_client_outside_prefect_keeps_no_breaker_state(anthropic_server):
    client = client_for(anthropic_server, read_timeout=0.2)
    anthropic_server.down("hang")
    for _ in range(4):
        assert type(failure_of(lambda: client.complete("s", "u"))) is ProviderTimeout
    assert anthropic_server.calls == 4


@pytest.mark.parametrize("message, allowed", [
    ("max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-x", 64000),
    ("input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or "
     "`max_tokens` and try again", 2000),
    ("max_tokens is too large: 10000. This model supports at most 4096 completion tokens, whereas you provided "
     "10000.", 4096),
    ("'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 4096 tokens "
     "and your request has 100 input tokens (4096 > 4096 - 100).", 3996),
])
def test_an_output_budget_400_is_told_apart_and_says_what_fits(message, allowed):
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    response = requests.Response()
    response.status_code, response._content = 400, json.dumps(body).encode()
    error = error_from_response(response, provider="anthropic", block_name="b")
    assert type(error) is OutputLimitRejected and error.allowed_output_tokens == allowed


@pytest.mark.parametrize("headers, seconds", [
    ({"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2030-01-01T00:00:10Z"},
     10.0),
    ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 360.0),
    ({"x-ratelimit-remaining-requests": "1", "x-ratelimit-reset-requests": "12ms"}, 0.006),
    ({"x-ratelimit-remaining-requests": "49", "x-ratelimit-reset-requests": "1s",
      "x-ratelimit-remaining-tokens": "99000", "x-ratelimit-reset-tokens": "6m0s"}, 0.0),
])
def test_pacing_wait_from_the_headers_of_any_answer(headers, seconds):
    now = datetime(2030, 1, 1, tzinfo=UTC)
    assert pacing_wait(headers, now=now) == pytest.approx(seconds)
