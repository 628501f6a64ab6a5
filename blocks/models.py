"""Prefect Blocks for model providers: one block per credential/endpoint, ``get_client()`` for use.

    from blocks.models import AnthropicModel
    AnthropicModel(api_key="...", eur_per_million_input_tokens=2.8, ...).save("default")
    client = AnthropicModel.load("default").get_client()

The API key is a ``SecretStr``: masked in ``repr``, the UI and logs. When the field is empty the
key comes from ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` (read in ``get_client()`` only).
"""

from __future__ import annotations

import os
from typing import ClassVar

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from clausegate.providers.anthropic import AnthropicClient
from clausegate.providers.base import ModelClient
from clausegate.providers.circuit import DEFAULT_COOLDOWN_SECONDS, DEFAULT_FAILURES
from clausegate.providers.errors import AuthError
from clausegate.providers.openai_compat import OpenAICompatClient
from clausegate.providers.pricing import Pricing

__all__ = ["AnthropicModel", "OpenAICompatibleModel"]


class _ModelBlock(Block):
    """Fields and ``get_client()`` shared by both provider blocks (not registered itself)."""

    _client_class: ClassVar[type[ModelClient]]
    _env_key: ClassVar[str]
    _key_required: ClassVar[bool] = False

    base_url: str = Field(description="Base URL of the API, without the /v1/... path.")
    model: str = Field(description="Model name sent with every request.")
    fallback_model: str | None = Field(
        default=None, description="Model used from a task's second attempt on (empty: same model)."
    )
    fallback_base_url: str | None = Field(
        default=None, description="Endpoint used with the fallback model (empty: same base_url)."
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="API key. Empty: read from the environment variable named in the block's description.",
    )
    connect_timeout_seconds: float = Field(default=5.0, gt=0, description="Seconds to establish the connection.")
    read_timeout_seconds: float = Field(
        default=120.0, gt=0, description="Seconds to wait for the answer (a long answer takes a while)."
    )
    max_output_tokens: int = Field(default=4096, gt=0, description="Default max_tokens of a call.")
    eur_per_million_input_tokens: float = Field(default=0.0, ge=0, description="Price in EUR per 1M input tokens.")
    eur_per_million_output_tokens: float = Field(default=0.0, ge=0, description="Price in EUR per 1M output tokens.")
    breaker_failures: int = Field(
        default=DEFAULT_FAILURES, ge=1, le=100,
        description="Circuit breaker: outage failures (no answer, 5xx, 529) that open it, counted once a retry "
                    "cannot save the call; any answer clears the count.",
    )
    breaker_cooldown_seconds: float = Field(
        default=DEFAULT_COOLDOWN_SECONDS, ge=0, le=3600,
        description="Circuit breaker: seconds the endpoint is skipped once open (calls go to fallback_base_url "
                    "when set, else reviews keep their offline result).",
    )

    def get_client(self) -> ModelClient:
        """A client for this endpoint; errors name this block in their hints (never the key)."""
        api_key = self._api_key()
        if api_key is None and self._key_required:
            raise AuthError(
                f"no API key configured for {self._client_class.provider}.",
                hint=f"set api_key in block '{self.block_name}' or the environment variable {self._env_key}.",
                provider=self._client_class.provider,
            )
        return self._client_class(
            base_url=self.base_url,
            model=self.model,
            api_key=api_key,
            fallback_model=self.fallback_model,
            fallback_base_url=self.fallback_base_url,
            connect_timeout=self.connect_timeout_seconds,
            read_timeout=self.read_timeout_seconds,
            max_output_tokens=self.max_output_tokens,
            pricing=self.pricing,
            block_name=self.block_name,
            breaker_failures=self.breaker_failures,
            breaker_cooldown_seconds=self.breaker_cooldown_seconds,
        )

    @property
    def pricing(self) -> Pricing:
        return Pricing(
            eur_per_million_input_tokens=self.eur_per_million_input_tokens,
            eur_per_million_output_tokens=self.eur_per_million_output_tokens,
        )

    @property
    def block_name(self) -> str:
        return f"{self.get_block_type_slug()}/{self._block_document_name or '(unsaved)'}"

    def _api_key(self) -> SecretStr | None:
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key
        from_env = os.environ.get(self._env_key, "")
        return SecretStr(from_env) if from_env else None


class AnthropicModel(_ModelBlock):
    """Anthropic Messages API (``/v1/messages``). Key: ``api_key`` or env ``ANTHROPIC_API_KEY``."""

    _block_type_name = "Anthropic Model"
    _documentation_url = "https://docs.anthropic.com/en/api/messages"
    _client_class = AnthropicClient
    _env_key = "ANTHROPIC_API_KEY"
    _key_required = True

    base_url: str = Field(default="https://api.anthropic.com", description="Base URL of the Anthropic API.")
    model: str = Field(default="claude-sonnet-4-5", description="Model name, e.g. claude-sonnet-4-5.")
    fallback_model: str | None = Field(
        default="claude-haiku-4-5", description="Model used from a task's second attempt on (empty: same model)."
    )


class OpenAICompatibleModel(_ModelBlock):
    """OpenAI-style ``/v1/chat/completions`` (OpenAI, vLLM, Ollama, llama.cpp). Key optional:
    ``api_key`` or env ``OPENAI_API_KEY``; local servers usually need none."""

    _block_type_name = "OpenAI Compatible Model"
    _documentation_url = "https://platform.openai.com/docs/api-reference/chat"
    _client_class = OpenAICompatClient
    _env_key = "OPENAI_API_KEY"

    base_url: str = Field(
        default="http://127.0.0.1:8000", description="Base URL, e.g. https://api.openai.com or a local vLLM server."
    )
    model: str = Field(default="gpt-4o-mini", description="Model name as the server knows it.")
