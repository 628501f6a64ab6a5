"""Model-provider errors and the ONE mapper from an HTTP response (or a transport failure) to them.

Every class has a stable ``code`` (runbook) and a ``transient`` flag read by
:func:`clausegate.providers.retry.retry_condition`. Messages carry the HTTP status, the provider's
error type, message and request id, never an API key or an auth header: the request's own key
values and anything shaped like a key are scrubbed from the provider's text.
"""

from __future__ import annotations

import re
from typing import Any

import requests

from clausegate.errors import ClauseGateError
from clausegate.providers.ratelimits import explicit_retry_after, retry_after_from_headers

__all__ = [
    "AuthError",
    "BadRequest",
    "ContextTooLong",
    "InvalidOutput",
    "NotFound",
    "Overloaded",
    "OutputLimitRejected",
    "OutputTruncated",
    "ProviderCircuitOpen",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnreachable",
    "QuotaExceeded",
    "RateLimited",
    "ServerError",
    "error_from_exception",
    "error_from_response",
]

_MAX_PROVIDER_TEXT = 400
_SECRET_HEADERS = ("x-api-key", "authorization")
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{3,}|Bearer\s+\S+|\S*\*{4,}\S*", re.IGNORECASE)
_CONTEXT_TOO_LONG = re.compile(
    r"prompt is too long|context_length_exceeded|maximum context length|context window"
    r"|(input|prompt|context)[^.]{0,40}(too long|too large|exceeds?)",
    re.IGNORECASE,
)
# a 400 about the output budget: max_tokens above the model's output limit, or input + max_tokens past the window
_OUTPUT_LIMIT = re.compile(
    r"(max_tokens|max_completion_tokens|max_output_tokens|output tokens)[^.]{0,80}"
    r"(too large|too big|exceed|greater than|>|at most|maximum allowed|must be less|less than or equal)",
    re.IGNORECASE,
)
_ALLOWED_OUTPUT = (  # (pattern, how the allowed max_tokens follows from its numbers)
    (re.compile(r"(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)"), lambda n: n[2] - n[0]),  # input + max_tokens > window
    (re.compile(r"max_tokens[`'\"]?:?\s*(\d+)\s*>\s*(\d+)", re.I), lambda n: n[1]),  # max_tokens: 9000 > 8192
    (re.compile(r"at most (\d+) (?:completion|output) tokens", re.I), lambda n: n[0]),
    (re.compile(r"maximum context length is (\d+) tokens and your request has (\d+) input tokens", re.I),
     lambda n: n[0] - n[1]),
)


class ProviderError(ClauseGateError):
    """A model call failed. ``provider``/``status``/``request_id`` say where; ``responses`` holds
    the ModelResponses already paid for (token accounting), when there were any.
    ``retry_after_seconds``: the wait the provider asked for (``retry-after``/``retry-after-ms``,
    on any status that sends it; for a 429 also the rate-limit reset headers), else None."""

    code = "CG-MODEL"

    def __init__(
        self,
        message: str,
        *,
        hint: str = "",
        code: str | None = None,
        provider: str = "",
        status: int | None = None,
        request_id: str | None = None,
        responses: list[Any] | None = None,
        retry_after_seconds: float | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.request_id = request_id
        self.responses = list(responses or [])
        self.retry_after_seconds = retry_after_seconds
        super().__init__(message, hint=hint, code=code)

    def __reduce__(self):  # keep provider/status/retry_after/... when pickled into Prefect results
        rebuild, args = super().__reduce__()
        return (rebuild, args, dict(self.__dict__))


class RateLimited(ProviderError):
    """429: too many requests or tokens. ``retry_after_seconds`` comes from the provider's headers."""

    code = "CG-MODEL-RATE-LIMIT"
    transient = True


class QuotaExceeded(ProviderError):
    """Out of credit (OpenAI 429 ``insufficient_quota``, Anthropic 400 "credit balance is too low"):
    waiting does not help."""

    code = "CG-MODEL-QUOTA"


class Overloaded(ProviderError):
    """529 ``overloaded_error`` (or an OpenAI-style 503 saying "overloaded")."""

    code = "CG-MODEL-OVERLOADED"
    transient = True


class ServerError(ProviderError):
    """500/502/503/504 or an unreadable response envelope."""

    code = "CG-MODEL-SERVER"
    transient = True


class ProviderTimeout(ProviderError):
    """No answer within the block's connect/read timeout (or HTTP 408)."""

    code = "CG-MODEL-TIMEOUT"
    transient = True


class ProviderUnreachable(ProviderError):
    """The endpoint refused or dropped the connection (DNS, refused, reset)."""

    code = "CG-MODEL-UNREACHABLE"
    transient = True


class ProviderCircuitOpen(ProviderError):
    """The endpoint's circuit breaker is open (outage failures no retry could save, within the
    cool-down): nothing was sent. Permanent for this task run: the call goes to the fallback endpoint
    when the block has another one, else the review keeps its offline result."""

    code = "CG-MODEL-CIRCUIT-OPEN"


class ContextTooLong(ProviderError):
    """The prompt exceeds the model's context window: permanent for the same request."""

    code = "CG-MODEL-CONTEXT-TOO-LONG"


class AuthError(ProviderError):
    """401/403: missing, wrong or unauthorised API key."""

    code = "CG-MODEL-AUTH"


class NotFound(ProviderError):
    """404: usually a wrong model name or base URL."""

    code = "CG-MODEL-NOT-FOUND"


class BadRequest(ProviderError):
    """Another 4xx: the request itself is invalid."""

    code = "CG-MODEL-BAD-REQUEST"


class OutputLimitRejected(ProviderError):
    """A 400 saying the requested output budget does not fit (max_tokens above the model's output limit,
    or prompt + max_tokens past its context window).  Permanent for the same request: the cascade asks
    again with ``allowed_output_tokens`` (when the message names it) or half the budget."""

    code = "CG-MODEL-OUTPUT-LIMIT"

    def __init__(self, message: str, *, allowed_output_tokens: int | None = None, **kwargs: Any) -> None:
        self.allowed_output_tokens = allowed_output_tokens
        super().__init__(message, **kwargs)


class OutputTruncated(ProviderError):
    """The model stopped at max_tokens (stop_reason ``max_tokens`` / finish_reason ``length``)."""

    code = "CG-MODEL-TRUNCATED"


class InvalidOutput(ProviderError):
    """The answer is not JSON or does not match the schema, even after one repair call."""

    code = "CG-MODEL-BAD-OUTPUT"


# ---------------------------------------------------------------- the mapper


def error_from_response(response: requests.Response, *, provider: str, block_name: str) -> ProviderError:
    """Map a non-2xx response of either protocol to one ProviderError subclass."""
    status = response.status_code
    error_type, error_code, text = _provider_error_fields(response)
    text = _scrub(text, _request_secrets(response))
    request_id = _request_id(response)
    cls = _classify(status, error_type, error_code, text)
    described = f"{error_type or error_code}: " if (error_type or error_code) else ""
    message = (
        f"{provider} returned HTTP {status} ({described}{text or response.reason or 'no message'}); "
        f"request id {request_id or 'none'}."
    )
    kwargs: dict[str, Any] = {
        "hint": _hint(cls, provider=provider, block_name=block_name),
        "provider": provider,
        "status": status,
        "request_id": request_id,
    }
    # Honour a wait on every status that sends one (a 503's Retry-After as much as a 429's); the
    # rate-limit reset headers mean "wait" only on a 429 (they come with every answer).
    kwargs["retry_after_seconds"] = (retry_after_from_headers(response.headers) if cls is RateLimited
                                     else explicit_retry_after(response.headers))
    if cls is OutputLimitRejected:
        kwargs["allowed_output_tokens"] = allowed_output_tokens(text)
    return cls(message, **kwargs)


def allowed_output_tokens(text: str) -> int | None:
    """The largest max_tokens an output-limit 400 says would fit, when its message gives the numbers."""
    for pattern, allowed in _ALLOWED_OUTPUT:
        found = pattern.search(text)
        if found:
            value = allowed([int(n) for n in found.groups()])
            return value if value > 0 else None
    return None


def error_from_exception(
    exc: requests.RequestException, *, provider: str, block_name: str, url: str
) -> ProviderError:
    """Map a transport failure (timeout, refused connection) to ProviderTimeout / ProviderUnreachable."""
    if isinstance(exc, requests.ConnectTimeout):
        cls, message = ProviderTimeout, f"{provider}: timed out connecting to {url}."
    elif isinstance(exc, requests.Timeout):
        cls, message = ProviderTimeout, f"{provider}: timed out waiting for an answer from {url}."
    else:
        cls, message = ProviderUnreachable, f"{provider}: could not reach {url} ({type(exc).__name__})."
    return cls(message, hint=_hint(cls, provider=provider, block_name=block_name), provider=provider)


def _classify(status: int, error_type: str, error_code: str, text: str) -> type[ProviderError]:
    if status in (400, 422) and _OUTPUT_LIMIT.search(text):
        return OutputLimitRejected
    if status == 413 or (status in (400, 422) and _CONTEXT_TOO_LONG.search(f"{error_code} {text}")):
        return ContextTooLong
    if "insufficient_quota" in (error_code, error_type) or "credit balance is too low" in text:
        return QuotaExceeded
    if status == 429:
        return RateLimited
    if status == 529 or error_type == "overloaded_error" or (status == 503 and "overloaded" in text.lower()):
        return Overloaded
    return _BY_STATUS.get(status) or (ServerError if status >= 500 else BadRequest)


_BY_STATUS: dict[int, type[ProviderError]] = {401: AuthError, 403: AuthError, 404: NotFound, 408: ProviderTimeout}


def _provider_error_fields(response: requests.Response) -> tuple[str, str, str]:
    """(error type, error code, message) from ``{"error": {...}}`` bodies of both protocols."""
    try:
        body = response.json()
    except ValueError:
        return "", "", " ".join(response.text.split())[:_MAX_PROVIDER_TEXT]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, str):
        return "", "", error[:_MAX_PROVIDER_TEXT]
    if not isinstance(error, dict):
        return "", "", str(body)[:_MAX_PROVIDER_TEXT]
    code = error.get("code")
    return (
        str(error.get("type") or ""),
        str(code) if code is not None else "",
        str(error.get("message") or "")[:_MAX_PROVIDER_TEXT],
    )


def _request_id(response: requests.Response) -> str | None:
    header = response.headers.get("request-id") or response.headers.get("x-request-id")
    if header:
        return header
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("request_id") if isinstance(body, dict) else None


def _request_secrets(response: requests.Response) -> list[str]:
    request = getattr(response, "request", None)
    headers = getattr(request, "headers", None) or {}
    values = [str(headers.get(name, "")) for name in _SECRET_HEADERS]
    values += [value.split(" ", 1)[1] for value in values if " " in value]
    return [value for value in values if len(value) >= 4]


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "<redacted>")
    return _KEY_SHAPED.sub("<redacted>", text)


_ENV_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def _hint(cls: type[ProviderError], *, provider: str, block_name: str) -> str:
    block = f"block '{block_name}'"
    env = _ENV_VARS.get(provider, "the provider's API-key variable")
    hints = {
        RateLimited: "wait and retry (the task retries honour retry-after); "
                     "lower concurrency or raise the account's limits.",
        QuotaExceeded: f"the account behind {block} is out of credit; top it up or switch the block's key.",
        Overloaded: f"the provider is overloaded; retries switch to the fallback model of {block}.",
        ServerError: "provider-side failure; the task retries it. If it persists check the provider's status page.",
        ProviderTimeout: f"the task retries it; timeouts its retries do not cure open the circuit breaker of "
                         f"{block} (the fallback endpoint or the offline result takes over). If answers are merely "
                         "slow, lower max_output_tokens; raising read_timeout_seconds also needs a longer "
                         "steps.<step>.timeout_seconds (checked at load).",
        ProviderUnreachable: f"check base_url in {block} and that the model server is running and reachable.",
        ContextTooLong: "shorten the prompt: keep fewer passages in the pre-filter or split the contract.",
        AuthError: f"check the API key in {block} (field api_key, or env {env}); the key was not printed.",
        NotFound: f"check model, fallback_model and base_url in {block}.",
        BadRequest: "the request was rejected as invalid; check the prompt and max_output_tokens.",
        OutputLimitRejected: f"the review asks again with an output budget that fits; set max_output_tokens of "
                             f"the step (playbook steps.<step>.max_output_tokens) or of {block} to what the model "
                             "allows.",
    }
    return hints.get(cls, "")
