"""Anthropic Messages API client (``POST /v1/messages``) over plain ``requests``."""

from __future__ import annotations

from typing import Any

from clausegate.providers.base import ModelClient, ModelResponse

__all__ = ["ANTHROPIC_VERSION", "AnthropicClient"]

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicClient(ModelClient):
    """``complete(system, user, max_tokens=...)`` -> ModelResponse; one request, no retries."""

    provider = "anthropic"
    path = "/v1/messages"

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        key = self._key()
        if key:
            headers["x-api-key"] = key
        return headers

    def build_body(self, system: str, user: str, *, model: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }

    def parse_body(self, data: dict[str, Any], request_id: str | None) -> ModelResponse:
        text = "".join(block.get("text", "") for block in data["content"] if block.get("type") == "text")
        usage = data.get("usage") or {}
        stop_reason = data.get("stop_reason")
        return ModelResponse(
            text=text,
            model=data.get("model") or "",
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            stop_reason=stop_reason,
            truncated=stop_reason == "max_tokens",
            request_id=request_id,
            provider=self.provider,
        )
