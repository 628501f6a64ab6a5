"""What both protocol clients share: the response model, the session, the call path.

A client makes exactly ONE HTTP request per ``complete()``: the session has no urllib3 retries
and the client has no retry loop. Retrying is the Prefect task's job (see ``retry.py``). Around
that one request a client does three things:

* it asks the endpoint's circuit breaker (``circuit.py``) whether the endpoint is being skipped; an
  open primary sends the call to the block's fallback endpoint (and model) when it has another one;
* it waits out the endpoint's cooldown: a ``retry-after`` on an earlier transient answer (429, 503,
  529, ...) or the rate-limit headers of an earlier answer, 200s included, saying a limit is used up
  (``ratelimits.pacing_wait``).  The cooldown is kept in this process and, inside a Prefect run, in
  the endpoint's shared state (the breaker's Prefect Variable), so parallel flow runs honour it too;
* it tells the breaker how the request went, and gives it the probe it sends when an open breaker's
  cool-down is over (``probe``: ``GET /v1/models`` with a 5 s budget, free on both protocols).
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

import requests
from pydantic import BaseModel, SecretStr
from requests.adapters import HTTPAdapter

from clausegate.providers.circuit import (
    DEFAULT_COOLDOWN_SECONDS,
    DEFAULT_FAILURES,
    OUTAGE_SECONDS,
    PROBE_CONNECT_TIMEOUT,
    PROBE_READ_TIMEOUT,
    BreakerState,
    CircuitBreaker,
    default_store,
    is_outage_failure,
)
from clausegate.providers.cooldown import COOLDOWNS, CooldownRegistry
from clausegate.providers.errors import (
    ProviderCircuitOpen,
    ProviderError,
    ServerError,
    error_from_exception,
    error_from_response,
)
from clausegate.providers.pricing import Pricing
from clausegate.providers.ratelimits import pacing_wait
from clausegate.providers.retry import current_attempt

__all__ = ["ModelClient", "ModelResponse", "endpoint_url", "make_session"]

logger = logging.getLogger("clausegate.providers")


class ModelResponse(BaseModel):
    """One model call's answer and usage (kept for token and cost accounting)."""

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    truncated: bool = False
    request_id: str | None = None
    provider: str = ""


def make_session() -> requests.Session:
    """A session that never retries (``max_retries=0``): one call, one request."""
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def endpoint_url(base_url: str, path: str) -> str:
    """``base_url`` + ``path``, accepting base URLs given with or without a trailing ``/v1``."""
    base = base_url.rstrip("/")
    if base.endswith("/v1") and path.startswith("/v1/"):
        base = base[: -len("/v1")]
    return base + path


class ModelClient:
    """Base of the protocol clients: subclasses set ``provider``/``path`` and build/parse bodies."""

    provider: ClassVar[str] = ""
    path: ClassVar[str] = ""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr | str | None = None,
        fallback_model: str | None = None,
        fallback_base_url: str | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 120.0,
        max_output_tokens: int = 4096,
        pricing: Pricing | None = None,
        block_name: str = "(unsaved block)",
        cooldowns: CooldownRegistry | None = None,
        session: requests.Session | None = None,
        breaker: CircuitBreaker | None = None,
        breaker_failures: int = DEFAULT_FAILURES,
        breaker_cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.fallback_model = fallback_model or model
        self.fallback_base_url = fallback_base_url or base_url
        self._api_key = api_key if isinstance(api_key, SecretStr) or api_key is None else SecretStr(api_key)
        self.timeout = (connect_timeout, read_timeout)
        self.max_output_tokens = max_output_tokens
        self.pricing = pricing or Pricing()
        self.block_name = block_name
        self.cooldowns = cooldowns or COOLDOWNS
        self.session = session or make_session()
        # Shared through Prefect inside a flow/task run (``circuit.default_store``).
        if breaker is not None and breaker.probe is None:
            breaker.probe = self.probe  # a breaker given without a probe sends this client's
        self.breaker = breaker or CircuitBreaker(default_store(), failures=breaker_failures,
                                                 cooldown_seconds=breaker_cooldown_seconds,
                                                 probe_seconds=connect_timeout + read_timeout,
                                                 outage_seconds=min(OUTAGE_SECONDS, 2 * read_timeout),
                                                 provider=self.provider, block_name=block_name,
                                                 probe=self.probe)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, block={self.block_name!r})"

    def complete(
        self,
        system: str,
        user: str,
        *,
        max_tokens: int | None = None,
        model: str | None = None,
        base_url: str | None = None,
        use_fallback: bool = False,
    ) -> ModelResponse:
        """One request; raises a ProviderError subclass on any failure. ``use_fallback`` switches
        to ``fallback_model``/``fallback_base_url``; explicit ``model``/``base_url`` win over both.
        An open breaker on the chosen endpoint sends the call to the fallback endpoint instead (with
        the fallback model), when there is another one and no explicit ``base_url``."""
        target_model = model or (self.fallback_model if use_fallback else self.model)
        url = endpoint_url(base_url or (self.fallback_base_url if use_fallback else self.base_url), self.path)
        fallback_url = endpoint_url(self.fallback_base_url, self.path)
        divert = base_url is None and url != fallback_url
        try:
            seen = self.breaker.before_call(url, divert=divert)
        except ProviderCircuitOpen as error:
            if not divert:
                raise
            logger.warning("%s: %s; this call goes to the fallback endpoint %s", self.provider, error.message,
                           fallback_url)
            url, target_model = fallback_url, model or self.fallback_model
            seen = self.breaker.before_call(url)
        body = self.build_body(system, user, model=target_model, max_tokens=max_tokens or self.max_output_tokens)
        response = self._post(url, body, seen, retried_here=fallback_url == url)
        return self._parsed(response, url)

    def probe(self, url: str) -> str | None:
        """Is the endpoint ``url`` there?  ``GET /v1/models`` next to it (free; both protocols have it) with
        short timeouts: None when it answered (any HTTP answer that is not an outage failure), else what
        went wrong.  The breaker sends it after a cool-down instead of risking a call's whole read timeout."""
        models = url.removesuffix(self.path) + "/v1/models"
        try:
            response = self.session.get(models, headers=self.auth_headers(),
                                        timeout=(PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT))
        except requests.RequestException as exc:
            error = error_from_exception(exc, provider=self.provider, block_name=self.block_name, url=models)
            return f"{error.code} (no answer within {PROBE_CONNECT_TIMEOUT + PROBE_READ_TIMEOUT:g} s)"
        if response.ok:
            return None
        error = error_from_response(response, provider=self.provider, block_name=self.block_name)
        return f"{error.code} (HTTP {response.status_code})" if is_outage_failure(error) else None

    # -- subclass hooks ------------------------------------------------------------------
    def auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def build_body(self, system: str, user: str, *, model: str, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def parse_body(self, data: dict[str, Any], request_id: str | None) -> ModelResponse:
        raise NotImplementedError

    # -- the single request ----------------------------------------------------------------
    def _key(self) -> str | None:
        return self._api_key.get_secret_value() if self._api_key is not None else None

    def _post(self, url: str, body: dict[str, Any], seen: BreakerState | None, *,
              retried_here: bool) -> requests.Response:
        """The one request. ``retried_here``: a retry of this call would go to ``url`` (retries use the
        fallback endpoint), so its failure counts for the breaker only if the retry fails too."""
        waited = self.cooldowns.wait(url, at_least=self.breaker.cooldown_left(seen))
        if waited:
            logger.info("%s: waited %.2fs for the rate-limit cooldown of %s", self.provider, waited, url)
        headers = {"content-type": "application/json", **self.auth_headers()}
        attempt = current_attempt()  # (task run id, Prefect retries it) inside a task run
        call, retried = (attempt[0], attempt[1] and retried_here) if attempt else (None, False)
        started, sent = time.monotonic(), self.breaker.clock()
        try:
            response = self.session.post(url, json=body, headers=headers, timeout=self.timeout)
        except requests.RequestException as exc:
            error = error_from_exception(exc, provider=self.provider, block_name=self.block_name, url=url)
            logger.warning("%s", error)
            self.breaker.record_failure(url, error, call=call, retried_here=retried, started=sent)
            raise error from None
        logger.info(
            "%s %s model=%s -> HTTP %s in %.2fs",
            self.provider, url, body.get("model"), response.status_code, time.monotonic() - started,
        )
        self._note_limits(url, response)
        if response.ok:
            self.breaker.record_success(url)
        else:
            error = error_from_response(response, provider=self.provider, block_name=self.block_name)
            if is_outage_failure(error):
                self.breaker.record_failure(url, error, call=call, retried_here=retried, started=sent)
            else:  # an answer (4xx, 429 included): the endpoint is there
                self.breaker.record_success(url)
        return response

    def _note_limits(self, url: str, response: requests.Response) -> None:
        """Every answer's rate-limit headers: a limit used up holds the next calls until its reset."""
        wait = pacing_wait(response.headers)
        if wait > 0:
            delay = self.cooldowns.note_rate_limit(url, wait)
            self.breaker.note_cooldown(url, delay)
            logger.info("%s: %s says a rate limit is (nearly) used up; next call in %.2fs", self.provider, url, delay)

    def _parsed(self, response: requests.Response, url: str) -> ModelResponse:
        if not response.ok:
            error: ProviderError = error_from_response(response, provider=self.provider, block_name=self.block_name)
            if error.transient and error.retry_after_seconds is not None:
                # 429, 503, 529, ...: the retry (in this process or any other) waits what the provider asked for
                delay = self.cooldowns.note_rate_limit(url, error.retry_after_seconds)
                self.breaker.note_cooldown(url, delay)
            logger.warning("%s", error)
            raise error
        request_id = response.headers.get("request-id") or response.headers.get("x-request-id")
        try:
            return self.parse_body(response.json(), request_id)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ServerError(
                f"{self.provider} answered HTTP {response.status_code} with a body that is not a valid "
                f"response ({type(exc).__name__}); request id {request_id or 'none'}.",
                hint=f"check that base_url in block '{self.block_name}' points at a {self.provider} API.",
                provider=self.provider,
                status=response.status_code,
                request_id=request_id,
            ) from None
