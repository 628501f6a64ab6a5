"""The fake model servers speak the real protocols: paths, auth, bodies, headers, faults."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
import requests

from clausegate.demo.model_server import FakeModelServer, prompts_of
from tests.support.fake_model import KEY, fake_model_server, replies

ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}
OPENAI_HEADERS = {"authorization": f"Bearer {KEY}"}


def anthropic_body(**extra):
    return {"model": "m", "max_tokens": 100, "system": "sys", "messages": [{"role": "user", "content": "hi"}], **extra}


def openai_body(**extra):
    return {"model": "m", "max_tokens": 100,
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}], **extra}


def post_anthropic(server, headers=ANTHROPIC_HEADERS, body=None):
    return requests.post(server.url + "/v1/messages", json=body or anthropic_body(), headers=headers, timeout=5)


def post_openai(server, headers=OPENAI_HEADERS, body=None):
    return requests.post(server.url + "/v1/chat/completions", json=body or openai_body(), headers=headers, timeout=5)


def test_binds_loopback_only(anthropic_server):
    assert anthropic_server._httpd.server_address[0] == "127.0.0.1"
    assert anthropic_server.url.startswith("http://127.0.0.1:")


def test_anthropic_success_has_real_shape(anthropic_server):
    response = post_anthropic(anthropic_server)
    assert response.status_code == 200
    data = response.json()
    assert data["type"] == "message" and data["role"] == "assistant" and data["model"] == "m"
    assert data["content"] == [{"type": "text", "text": '{"clauses": []}'}]
    assert data["stop_reason"] == "end_turn"
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
    assert response.headers["request-id"].startswith("req_")
    for kind in ("requests", "tokens", "input-tokens", "output-tokens"):
        for part in ("limit", "remaining", "reset"):
            assert f"anthropic-ratelimit-{kind}-{part}" in response.headers


def test_openai_success_has_real_shape(openai_server):
    response = post_openai(openai_server)
    data = response.json()
    assert response.status_code == 200 and data["object"] == "chat.completion"
    assert data["choices"][0]["message"] == {"role": "assistant", "content": '{"clauses": []}'}
    assert data["choices"][0]["finish_reason"] == "stop"
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert response.headers["x-request-id"].startswith("req_")
    assert response.headers["x-ratelimit-reset-tokens"] == "6m0s"
    assert response.headers["x-ratelimit-remaining-requests"] == "49"


@pytest.mark.parametrize(
    "headers, message",
    [
        ({"anthropic-version": "2023-06-01"}, "x-api-key header is required"),
        ({**ANTHROPIC_HEADERS, "x-api-key": "wrong"}, "invalid x-api-key"),
    ],
)
def test_anthropic_auth_like_the_real_service(anthropic_server, headers, message):
    response = post_anthropic(anthropic_server, headers=headers)
    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": message},
        "request_id": response.headers["request-id"],
    }


def test_anthropic_requires_version_header(anthropic_server):
    response = post_anthropic(anthropic_server, headers={"x-api-key": KEY})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "anthropic-version: header is required"


def test_openai_auth_like_the_real_service(openai_server):
    missing = post_openai(openai_server, headers={})
    assert missing.status_code == 401 and "You didn't provide an API key" in missing.json()["error"]["message"]
    wrong = post_openai(openai_server, headers={"authorization": "Bearer sk-wrong-0000000000"})
    error = wrong.json()["error"]
    assert wrong.status_code == 401 and error["code"] == "invalid_api_key"
    assert "sk-wrong-0000000000" not in error["message"]  # masked like OpenAI does


def test_openai_without_key_accepts_anonymous_requests():
    with fake_model_server("openai", api_key=None) as server:
        assert post_openai(server, headers={}).status_code == 200


def test_records_requests_without_secret_values(anthropic_server):
    post_anthropic(anthropic_server)
    (record,) = anthropic_server.requests
    assert record.path == "/v1/messages" and record.model == "m" and record.status == 200 and record.fault == "ok"
    assert record.headers["x-api-key"] == "<redacted>"
    assert KEY not in repr(record)
    assert anthropic_server.calls == 1


def test_script_is_consumed_in_order_then_ok(openai_server):
    openai_server.script(["429", "529", "500", "ok"])
    statuses = [post_openai(openai_server).status_code for _ in range(5)]
    assert statuses == [429, 503, 500, 200, 200]  # OpenAI-style overloaded is a 503
    assert [r.fault for r in openai_server.requests] == ["rate_limit", "overloaded", "server_error", "ok", "ok"]


def test_rate_limit_headers_on_429(anthropic_server, openai_server):
    anthropic_server.script(["429"])
    limited = post_anthropic(anthropic_server)
    assert limited.headers["retry-after"] == "1"
    assert limited.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    openai_server.script(["429"])
    limited = post_openai(openai_server)
    assert limited.headers["retry-after"] == "1" and limited.headers["x-ratelimit-reset-requests"] == "1s"
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"


def test_context_too_long_messages_are_the_real_ones(anthropic_server, openai_server):
    anthropic_server.script(["context_too_long"])
    message = post_anthropic(anthropic_server).json()["error"]["message"]
    assert message == "prompt is too long: 250000 tokens > 200000 maximum"
    openai_server.script(["context_too_long"])
    error = post_openai(openai_server).json()["error"]
    assert error["code"] == "context_length_exceeded" and "maximum context length is 128000" in error["message"]


def test_real_prompt_over_the_window_is_refused():
    with fake_model_server("anthropic", context_window=50) as server:
        response = post_anthropic(server, body=anthropic_body(messages=[{"role": "user", "content": "x" * 1000}]))
        assert response.status_code == 400 and "prompt is too long" in response.text


def test_truncated_and_not_json_faults(anthropic_server, openai_server):
    anthropic_server.responder = replies({"clauses": [{"category": "Governing Law"}]})
    anthropic_server.script(["truncated", "not_json"])
    truncated = post_anthropic(anthropic_server).json()
    assert truncated["stop_reason"] == "max_tokens"
    text = truncated["content"][0]["text"]
    assert text == '{"clauses": [{"category": "Governing Law"}]}'[: len(text)] and 0 < len(text) < 30
    assert "{" not in post_anthropic(anthropic_server).json()["content"][0]["text"]
    openai_server.script(["truncated"])
    assert post_openai(openai_server).json()["choices"][0]["finish_reason"] == "length"


def test_max_tokens_truncates_naturally(openai_server):
    openai_server.responder = replies("y" * 400)
    data = post_openai(openai_server, body=openai_body(max_tokens=10)).json()
    assert data["choices"][0]["finish_reason"] == "length"
    assert len(data["choices"][0]["message"]["content"]) == 40


def test_unknown_model_is_404():
    with fake_model_server("openai", known_models={"gpt-good"}) as server:
        response = post_openai(server)
        assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"


def test_slow_fault_sleeps(anthropic_server):
    anthropic_server.slow_seconds = 0.3
    anthropic_server.script(["slow"])
    started = time.monotonic()
    assert post_anthropic(anthropic_server).status_code == 200
    assert time.monotonic() - started >= 0.3


def test_random_faults_are_reproducible_with_a_seed():
    def faults(seed):
        server = FakeModelServer("openai", api_key=None, fault_rate=0.5, seed=seed, fault_kinds=["429", "500"])
        with server:
            for _ in range(12):
                post_openai(server, headers={})
            return [r.fault for r in server.requests]

    first = faults(7)
    assert first == faults(7)
    assert {"ok", "rate_limit", "server_error"} <= set(first)


def test_responder_sees_the_request_and_prompts_of_reads_both_protocols(anthropic_server, openai_server):
    seen = []
    for server, post in ((anthropic_server, post_anthropic), (openai_server, post_openai)):
        server.responder = lambda request: seen.append(prompts_of(request)) or "{}"
        post(server)
    assert seen == [("sys", "hi"), ("sys", "hi")]


def test_broken_responder_is_a_500(anthropic_server):
    anthropic_server.responder = lambda request: 1 / 0
    response = post_anthropic(anthropic_server)
    assert response.status_code == 500 and "ZeroDivisionError" in response.json()["error"]["message"]


def test_unknown_fault_name_is_refused(anthropic_server):
    with pytest.raises(ValueError, match="unknown fault"):
        anthropic_server.script(["418"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_runs_as_a_process():
    port = _free_port()
    command = [sys.executable, "-m", "clausegate.demo.model_server", "--protocol", "openai", "--port", str(port),
               "--fault-rate", "0.3", "--seed", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert f"127.0.0.1:{port}" in process.stdout.readline()
        statuses = [post_openai(_Url(port), headers={"authorization": "Bearer fake-model-key"}).status_code
                    for _ in range(3)]
        assert all(status in (200, 429, 500, 503) for status in statuses)
    finally:
        process.terminate()
        process.wait(timeout=10)


class _Url:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
