"""The circuit breaker counts calls, not requests, and probes a hanging endpoint briefly.

A call's retries failing one after the other (529, 500, a hang) are one bad call of an endpoint that
answers most others; only failures of distinct calls open the breaker.  Once open, the call that meets
the end of the cool-down loses a short probe's seconds, never the whole read timeout."""

from __future__ import annotations

import time

import pytest

from clausegate.providers import CircuitBreaker, MemoryStore, ProviderCircuitOpen, ProviderTimeout
from clausegate.providers.circuit import PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT
from clausegate.providers.errors import Overloaded, ServerError
from tests.support.fake_model import client_for

URL = "http://127.0.0.1:9/v1/messages"


def outage(kind: str):
    return {"529": Overloaded("overloaded", status=529), "500": ServerError("internal", status=500),
            "hang": ProviderTimeout("no answer")}[kind]


def test_the_failed_retries_of_one_call_never_open_the_breaker():
    breaker = CircuitBreaker(MemoryStore(), failures=3, outage_seconds=0)
    # one task run: 529, then its retry 500, then its retry hangs, each retry going to the same endpoint
    for kind in ("529", "500", "hang"):
        assert not breaker.record_failure(URL, outage(kind), call="task-run-1", retried_here=True)
    assert breaker.record_failure(URL, outage("hang"), call="task-run-1", retried_here=False) is False
    state = breaker.state(URL)
    assert not state.tripped and state.failures == 1 and state.counted == ["task-run-1"]
    breaker.before_call(URL)  # the endpoint is not skipped


def test_failures_of_distinct_calls_open_it_and_any_answer_clears_the_count():
    breaker = CircuitBreaker(MemoryStore(), failures=3, outage_seconds=0)
    for call in ("a", "b"):
        breaker.record_failure(URL, outage("529"), call=call, retried_here=True)  # waits for its retry
        breaker.record_failure(URL, outage("hang"), call=call, retried_here=True)  # the retry failed: counts once
    assert breaker.state(URL).failures == 2 and not breaker.state(URL).tripped
    breaker.record_success(URL)  # another call was answered: not an outage
    assert breaker.state(URL).failures == 0
    opened = [breaker.record_failure(URL, outage("500"), call=c, retried_here=False) for c in ("c", "d", "e")]
    assert opened == [False, False, True]
    with pytest.raises(ProviderCircuitOpen, match="failures of 3 calls"):
        breaker.before_call(URL)


def test_after_the_cooldown_a_hanging_endpoint_costs_the_call_a_short_probe_not_the_read_timeout(anthropic_server):
    read_timeout = 20.0
    breaker = CircuitBreaker(MemoryStore(), failures=1, cooldown_seconds=0.5, outage_seconds=0)
    client = client_for(anthropic_server, read_timeout=read_timeout, breaker=breaker)
    url = client.base_url + "/v1/messages"
    anthropic_server.down("hang")
    breaker.record_failure(url, ProviderTimeout("no answer"))  # open
    time.sleep(0.6)  # the cool-down is over: the next call meets the half-open breaker
    started = time.monotonic()
    with pytest.raises(ProviderCircuitOpen) as caught:
        client.complete("s", "u")
    lost = time.monotonic() - started
    assert anthropic_server.calls == 0, "the call's own request must not be sent to a hanging endpoint"
    assert anthropic_server.probes == ["hang"] and "probe" in caught.value.message
    assert lost < read_timeout / 2, f"the call waited {lost:.1f} s (probe: at most " \
                                    f"{PROBE_CONNECT_TIMEOUT + PROBE_READ_TIMEOUT:g} s)"
    assert breaker.state(url).tripped and breaker.state(url).open_until > time.time()  # open for another cool-down

    anthropic_server.up()
    time.sleep(0.6)
    assert client.complete("s", "u").text == '{"clauses": []}'  # the probe answered: the call goes, and closes it
    assert anthropic_server.calls == 1 and len(anthropic_server.probes) == 2
    assert not breaker.state(url).tripped


def test_a_probe_answered_with_an_outage_status_keeps_it_open(openai_server):
    breaker = CircuitBreaker(MemoryStore(), failures=1, cooldown_seconds=0.3, outage_seconds=0)
    client = client_for(openai_server, breaker=breaker)
    url = client.base_url + "/v1/chat/completions"
    openai_server.down("500")
    breaker.record_failure(url, ProviderTimeout("no answer"))
    time.sleep(0.4)
    with pytest.raises(ProviderCircuitOpen, match="CG-MODEL-SERVER"):
        client.complete("s", "u")
    assert openai_server.calls == 0 and openai_server.probes == ["server_error"]
