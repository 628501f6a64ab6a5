"""Model providers: Anthropic Messages and OpenAI-style Chat Completions over plain ``requests``.

Public API (the retry policy for Prefect tasks lives in ``clausegate.providers.retry``)::

    client = AnthropicModel.load("default").get_client()        # blocks/models.py (with its circuit breaker)
    response = client.complete(system, user, max_tokens=1024)   # -> ModelResponse, one request
    parsed, responses = complete_json(client, system, user, Schema, max_tokens=1024)
    cost = client.pricing.cost(responses)                        # -> clausegate.review.schemas.Cost
"""

from clausegate.providers.anthropic import AnthropicClient
from clausegate.providers.base import ModelClient, ModelResponse
from clausegate.providers.circuit import CircuitBreaker, MemoryStore, PrefectVariableStore
from clausegate.providers.cooldown import COOLDOWNS, CooldownRegistry
from clausegate.providers.errors import (
    AuthError,
    BadRequest,
    ContextTooLong,
    InvalidOutput,
    NotFound,
    OutputLimitRejected,
    OutputTruncated,
    Overloaded,
    ProviderCircuitOpen,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
    QuotaExceeded,
    RateLimited,
    ServerError,
    error_from_exception,
    error_from_response,
)
from clausegate.providers.openai_compat import OpenAICompatClient
from clausegate.providers.pricing import Pricing, cost_eur
from clausegate.providers.ratelimits import retry_after_from_headers
from clausegate.providers.structured import complete_json

__all__ = [
    "COOLDOWNS",
    "AnthropicClient",
    "AuthError",
    "BadRequest",
    "CircuitBreaker",
    "ContextTooLong",
    "CooldownRegistry",
    "InvalidOutput",
    "MemoryStore",
    "ModelClient",
    "ModelResponse",
    "NotFound",
    "OpenAICompatClient",
    "OutputLimitRejected",
    "OutputTruncated",
    "Overloaded",
    "Pricing",
    "PrefectVariableStore",
    "ProviderCircuitOpen",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnreachable",
    "QuotaExceeded",
    "RateLimited",
    "ServerError",
    "complete_json",
    "cost_eur",
    "error_from_exception",
    "error_from_response",
    "retry_after_from_headers",
]
