"""The wire protocol facts the fake model server imitates: fault kinds and their real error bodies,
request recording, and how prompts and tokens are read from a request (Anthropic Messages / OpenAI chat)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Responder = Callable[[dict], "str | dict"]


DEFAULT_API_KEY = "fake-model-key"
RANDOM_FAULTS = ("rate_limit", "overloaded", "server_error", "unavailable", "slow", "not_json", "truncated")
FAULTS = {  # kind -> aliases usable in script() and --kinds
    "ok": ("ok", "200"), "rate_limit": ("429",), "quota": (), "overloaded": ("529",), "server_error": ("500",),
    "unavailable": ("503",), "slow": ("timeout",), "hang": ("hung",), "not_json": ("non_json", "bad_json"),
    "truncated": (),
    "context_too_long": ("context", "400"), "too_large": ("413",), "unauthorized": ("401",),
    "forbidden": ("403",), "not_found": ("404",), "bad_request": (), "unprocessable": ("422",),
}
ALIASES = {alias: kind for kind, aliases in FAULTS.items() for alias in (kind, *aliases)}
SECRET_HEADERS = ("x-api-key", "authorization")

# kind -> (status, anthropic error type, anthropic message, openai type, openai code, openai message)
ERRORS: dict[str, tuple[int, str, str, str, str | None, str]] = {
    "rate_limit": (429, "rate_limit_error", "This request would exceed the rate limit for your organization of "
                   "50 requests per minute. Please try again later.", "requests", "rate_limit_exceeded",
                   "Rate limit reached for {model} on requests per min (RPM): Limit 50, Used 50, Requested 1. "
                   "Please try again in {retry_after:g}s."),
    "quota": (429, "rate_limit_error", "Your credit balance is too low to access the Anthropic API.",
              "insufficient_quota", "insufficient_quota",
              "You exceeded your current quota, please check your plan and billing details."),
    "overloaded": (529, "overloaded_error", "Overloaded", "server_error", None,
                   "The engine is currently overloaded, please try again later."),
    "server_error": (500, "api_error", "Internal server error", "server_error", None,
                     "The server had an error while processing your request. Sorry about that!"),
    "unavailable": (503, "api_error", "Service unavailable", "server_error", None, "Service Unavailable."),
    "context_too_long": (400, "invalid_request_error", "prompt is too long: {tokens} tokens > {window} maximum",
                         "invalid_request_error", "context_length_exceeded",
                         "This model's maximum context length is {window} tokens. However, your messages resulted "
                         "in {tokens} tokens. Please reduce the length of the messages."),
    "too_large": (413, "request_too_large", "Request exceeds the maximum allowed number of bytes.",
                  "invalid_request_error", None, "Request too large."),
    "unauthorized": (401, "authentication_error", "invalid x-api-key", "invalid_request_error", "invalid_api_key",
                     "Incorrect API key provided: {masked}. You can find your API key at "
                     "https://platform.openai.com/account/api-keys."),
    "missing_key": (401, "authentication_error", "x-api-key header is required", "invalid_request_error", None,
                    "You didn't provide an API key. You need to provide your API key in an Authorization header "
                    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."),
    "forbidden": (403, "permission_error", "Your API key does not have permission to use the specified resource.",
                  "request_forbidden", "unsupported_country_region_territory",
                  "Country, region, or territory not supported"),
    "not_found": (404, "not_found_error", "model: {model}", "invalid_request_error", "model_not_found",
                  "The model `{model}` does not exist or you do not have access to it."),
    "bad_request": (400, "invalid_request_error", "max_tokens: Field required", "invalid_request_error", None,
                    "'messages' is a required property"),
    "output_too_large": (400, "invalid_request_error", "max_tokens: {requested} > {output_limit}, which is the "
                         "maximum allowed number of output tokens for {model}", "invalid_request_error", None,
                         "max_tokens is too large: {requested}. This model supports at most {output_limit} "
                         "completion tokens, whereas you provided {requested}."),
    "no_version": (400, "invalid_request_error", "anthropic-version: header is required", "", None, ""),
}

STATUS_OVERRIDES = {"anthropic": {"quota": 400}, "openai": {"overloaded": 503}}


def default_responder(request_json: dict) -> str:
    """Answers every request with an empty clause list."""
    return '{"clauses": []}'


def prompts_of(request_json: dict) -> tuple[str, str]:
    """(system, last user message) of a request of either protocol, for writing responders."""
    messages = request_json.get("messages") or []
    system = request_json.get("system") or next(
        (m.get("content", "") for m in messages if m.get("role") == "system"), "")
    user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    return text_of(system), text_of(user)


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class RecordedRequest:
    """One request as the fake saw it; secret header values are replaced by ``<redacted>``."""

    path: str
    headers: dict[str, str]
    body: Any
    fault: str = "ok"
    status: int = 0
    at: float = field(default_factory=time.monotonic)
    usage: dict[str, int] | None = None  # input/output tokens of a 200 answer (what it charges)
    delivered: bool | None = None  # None until sent; False: the client had hung up (not charged)

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def billed(self) -> bool:
        """True when this request was charged: a 200 answer that reached the client."""
        return self.usage is not None and bool(self.delivered)


def fault_kind(name: str) -> str:
    try:
        return ALIASES[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown fault {name!r}; use one of {sorted(ALIASES)}") from None


class RequestWindow:
    """A provider's requests-per-window limit: ``take()`` -> (allowed, remaining, seconds to the reset)."""

    def __init__(self, limit: int, window_seconds: float) -> None:
        self.limit, self.window_seconds = limit, window_seconds
        self._start, self._used = 0.0, 0
        self._lock = threading.Lock()

    def take(self) -> tuple[bool, int, float]:
        with self._lock:
            now = time.monotonic()
            if now >= self._start + self.window_seconds:
                self._start, self._used = now, 0
            allowed = self._used < self.limit
            self._used += allowed
            return allowed, self.limit - self._used, self._start + self.window_seconds - now


def rate_limit_headers(protocol: str, request_id: str, *, limit: int, remaining: int, reset_seconds: float) -> dict:
    """The request-limit headers each protocol sends on every answer (tokens: never used up here)."""
    if protocol == "anthropic":
        reset = (datetime.now(UTC) + timedelta(seconds=reset_seconds)).isoformat(timespec="milliseconds")
        reset = reset.replace("+00:00", "Z")
        headers = {"request-id": request_id}
        for kind, kind_limit in (("requests", limit), ("tokens", 100000), ("input-tokens", 80000),
                                 ("output-tokens", 20000)):
            headers |= {f"anthropic-ratelimit-{kind}-limit": str(kind_limit),
                        f"anthropic-ratelimit-{kind}-remaining": str(remaining if kind == "requests" else kind_limit),
                        f"anthropic-ratelimit-{kind}-reset": reset}
        return headers
    return {
        "x-request-id": request_id,
        "x-ratelimit-limit-requests": str(limit), "x-ratelimit-remaining-requests": str(remaining),
        "x-ratelimit-reset-requests": _duration(reset_seconds),
        "x-ratelimit-limit-tokens": "100000", "x-ratelimit-remaining-tokens": "99000",
        "x-ratelimit-reset-tokens": "6m0s",
    }


def _duration(seconds: float) -> str:
    """A reset as OpenAI writes it: ``12ms``, ``1s``, ``1.2s``."""
    seconds = max(seconds, 0.0)
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else f"{round(seconds, 3):g}s"


def models_body(protocol: str, models: list[str]) -> dict:
    """The answer of ``GET /v1/models`` in ``protocol``'s shape."""
    if protocol == "anthropic":
        return {"data": [{"type": "model", "id": m, "display_name": m} for m in models], "has_more": False}
    return {"object": "list", "data": [{"object": "model", "id": m, "owned_by": "fake"} for m in models]}


def json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


def peer_gone(connection: socket.socket) -> bool:
    """True when the client has closed its end (readable with EOF): it will never read an answer."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def redacted(headers: dict[str, str]) -> dict[str, str]:
    return {k: ("<redacted>" if k in SECRET_HEADERS else v) for k, v in headers.items()}
