"""OpenAI-style Chat Completions client (``POST /v1/chat/completions``): OpenAI, vLLM, Ollama,
llama.cpp server, LM Studio... The key is optional: local servers usually need none."""

from __future__ import annotations

from typing import Any

from clausegate.providers.base import ModelClient, ModelResponse

__all__ = ["OpenAICompatClient"]


class OpenAICompatClient(ModelClient):
    """``complete(system, user, max_tokens=...)`` -> ModelResponse; one request, no retries."""

    provider = "openai"
    path = "/v1/chat/completions"

    def auth_headers(self) -> dict[str, str]:
        key = self._key()
        return {"authorization": f"Bearer {key}"} if key else {}

    def build_body(self, system: str, user: str, *, model: str, max_tokens: int) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }

    def parse_body(self, data: dict[str, Any], request_id: str | None) -> ModelResponse:
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        finish_reason = choice.get("finish_reason")
        return ModelResponse(
            text=(choice.get("message") or {}).get("content") or "",
            model=data.get("model") or "",
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            stop_reason=finish_reason,
            truncated=finish_reason == "length",
            request_id=request_id or data.get("id"),
            provider=self.provider,
        )
