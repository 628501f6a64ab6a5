"""Helpers for the fake model servers (``clausegate.demo.model_server``); the fixtures that start them
(``anthropic_server``, ``openai_server``, ``model_server``: one run per protocol, and the autouse
``fresh_cooldowns``) are in tests/conftest.py::

    from tests.support.fake_model import client_for, replies

    def test_x(anthropic_server):
        anthropic_server.script(["429", "ok"])
        anthropic_server.responder = replies('{"clauses": []}')
        client = client_for(anthropic_server)

What a fake charged, like a provider's invoice: ``server.billed`` (delivered 200 answers, usable or
not), ``server.billed_tokens()``, ``server.billed_eur(eur_in_per_million, eur_out_per_million)``;
``server.abandoned``: answers computed after the client had hung up (not charged).

Limits, as the real services report them: ``fake_model_server(protocol, request_limit=2, limit_window_seconds=3)``
counts requests down in the rate-limit headers of every answer and answers 429 past the limit;
``max_output_tokens=500`` refuses a larger ``max_tokens`` with the provider's own 400.

Servers bind 127.0.0.1 on a free port and expect the key ``KEY``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from clausegate.demo.model_server import FakeModelServer
from clausegate.providers.anthropic import AnthropicClient
from clausegate.providers.base import ModelClient
from clausegate.providers.cooldown import CooldownRegistry
from clausegate.providers.openai_compat import OpenAICompatClient

KEY = "sk-test-SECRET-0123456789abcdef"
CLIENTS: dict[str, type[ModelClient]] = {"anthropic": AnthropicClient, "openai": OpenAICompatClient}


@contextmanager
def fake_model_server(protocol: str = "anthropic", **options: Any) -> Iterator[FakeModelServer]:
    """A started fake server (thread) for the duration of the ``with`` block."""
    options.setdefault("api_key", KEY)
    options.setdefault("slow_seconds", 1.0)
    server = FakeModelServer(protocol, **options).start()
    try:
        yield server
    finally:
        server.stop()


def client_for(server: FakeModelServer, **overrides: Any) -> ModelClient:
    """A client of the server's protocol pointed at it, with its own cooldown registry."""
    options: dict[str, Any] = {
        "base_url": server.url,
        "model": "primary-model",
        "api_key": KEY,
        "read_timeout": 5.0,
        "cooldowns": CooldownRegistry(),
    }
    options.update(overrides)
    return CLIENTS[server.protocol](**options)


def replies(*answers: str | dict):
    """A responder giving ``answers`` in order, then repeating the last one."""
    queue = [a if isinstance(a, str) else json.dumps(a) for a in answers]

    def responder(request_json: dict) -> str:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return responder
