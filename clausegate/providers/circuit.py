"""A circuit breaker per provider endpoint, its state shared through Prefect (a Variable), so every
worker, flow-run process and batch chunk knows at once that a provider is down.

    breaker = CircuitBreaker(PrefectVariableStore(), failures=3, cooldown_seconds=60)
    breaker.before_call(url)          # raises ProviderCircuitOpen while the endpoint is skipped
    breaker.record_failure(url, err)  # a transport failure (timeout, refused, 502/503/504)
    breaker.record_success(url)       # any other answer: the endpoint is reachable again

After ``failures`` consecutive transport failures the endpoint is skipped for ``cooldown_seconds``:
a call raises :class:`ProviderCircuitOpen` (``CG-MODEL-CIRCUIT-OPEN``, permanent: no Prefect retry)
without sending anything, and the review keeps its offline result.  After the cool-down the next
call goes through as the one probe (half-open; the others keep skipping for ``probe_seconds``, the
client's connect + read timeout): its success closes the breaker, its failure opens it again.

State: one Prefect Variable per endpoint, ``clausegate_breaker_<sha1(url)[:12]>``, value
``{"endpoint", "failures", "open_until" (epoch s), "last_error"}``.  Reads and writes are a plain
read-modify-write (no lock): concurrent calls can under-count a failure or two, which only delays
the opening by as many calls.  A Prefect API problem never blocks a model call: the breaker then
lets the call through (fails open) and logs why.  Outside a Prefect run (a bare client in a script
or a unit test) the default store keeps nothing: pass a :class:`MemoryStore` to get a breaker there.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from prefect.context import FlowRunContext, TaskRunContext
from prefect.variables import Variable
from pydantic import BaseModel

from clausegate.providers.errors import ProviderCircuitOpen, ProviderTimeout, ProviderUnreachable, ServerError

__all__ = [
    "DEFAULT_COOLDOWN_SECONDS",
    "DEFAULT_FAILURES",
    "BreakerState",
    "CircuitBreaker",
    "MemoryStore",
    "NullStore",
    "PrefectVariableStore",
    "default_store",
    "is_transport_failure",
    "variable_name",
]

logger = logging.getLogger("clausegate.providers")

DEFAULT_FAILURES = 3
DEFAULT_COOLDOWN_SECONDS = 60.0
GATEWAY_STATUSES = frozenset({502, 503, 504})
VARIABLE_PREFIX = "clausegate_breaker_"


_UNREAD = object()


class BreakerState(BaseModel):
    endpoint: str
    failures: int = 0
    open_until: float = 0.0  # epoch seconds; 0: closed
    last_error: str = ""


def is_transport_failure(error: BaseException) -> bool:
    """Counts towards opening the breaker: no answer (timeout, refused/reset connection) or a
    gateway saying the service behind it is unavailable (502/503/504)."""
    if isinstance(error, (ProviderTimeout, ProviderUnreachable)):
        return error.status is None  # no HTTP answer at all (an HTTP 408 is an answer)
    return isinstance(error, ServerError) and error.status in GATEWAY_STATUSES


def variable_name(endpoint: str) -> str:
    return VARIABLE_PREFIX + hashlib.sha1(endpoint.encode()).hexdigest()[:12]


class Store(Protocol):
    def read(self, endpoint: str) -> BreakerState | None: ...

    def write(self, state: BreakerState) -> None: ...


class NullStore:
    """Remembers nothing: the breaker never opens (a bare client outside Prefect)."""

    def read(self, endpoint: str) -> BreakerState | None:
        return None

    def write(self, state: BreakerState) -> None:
        return None


class MemoryStore:
    """Process memory (tests, scripts). Not shared between processes: use PrefectVariableStore."""

    def __init__(self) -> None:
        self._states: dict[str, BreakerState] = {}
        self._lock = threading.Lock()

    def read(self, endpoint: str) -> BreakerState | None:
        with self._lock:
            return self._states.get(endpoint)

    def write(self, state: BreakerState) -> None:
        with self._lock:
            self._states[state.endpoint] = state

    def clear(self) -> None:
        with self._lock:
            self._states.clear()


class PrefectVariableStore:
    """One Prefect Variable per endpoint (shared by every process that talks to the same server)."""

    def read(self, endpoint: str) -> BreakerState | None:
        value = Variable.get(variable_name(endpoint), default=None, _sync=True)  # sync in async tasks too
        if not isinstance(value, dict):
            return None
        try:
            return BreakerState.model_validate({**value, "endpoint": endpoint})
        except ValueError:
            return None

    def write(self, state: BreakerState) -> None:
        Variable.set(variable_name(state.endpoint), state.model_dump(mode="json"), overwrite=True,
                     tags=["clausegate", "circuit-breaker"], _sync=True)


def default_store() -> Store:
    """Prefect Variables inside a Prefect flow or task run (the API is there); else nothing."""
    if TaskRunContext.get() is not None or FlowRunContext.get() is not None:
        return PrefectVariableStore()
    return NullStore()


class CircuitBreaker:
    def __init__(self, store: Store | None = None, *, failures: int = DEFAULT_FAILURES,
                 cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS, clock: Callable[[], float] = time.time,
                 provider: str = "", block_name: str = "", probe_seconds: float | None = None) -> None:
        self.store = store if store is not None else NullStore()
        self.failures = max(1, int(failures))
        self.cooldown_seconds = max(0.0, float(cooldown_seconds))
        self.probe_seconds = float(probe_seconds) if probe_seconds is not None else self.cooldown_seconds
        self.clock = clock
        self.provider = provider
        self.block_name = block_name

    # -- the three hooks of a call ---------------------------------------------------------
    def before_call(self, endpoint: str) -> BreakerState | None:
        """Raise ProviderCircuitOpen while ``endpoint`` is in its cool-down; else return the state read
        (hand it to ``record_success`` so a healthy endpoint costs one read per call, no write)."""
        state = self._read(endpoint)
        if state is None or state.failures < self.failures:
            return state
        now = self.clock()
        left = state.open_until - now
        if left <= 0:
            # half-open: this call is the probe. The others keep skipping while it is in flight (at most
            # probe_seconds: the client's connect + read timeout), so an outage costs one probe per cool-down.
            self._write(state.model_copy(update={"open_until": now + self.probe_seconds}))
            logger.info("%s: circuit breaker half-open for %s: one probe call goes through", self.provider, endpoint)
            return state
        raise ProviderCircuitOpen(
            f"{self.provider or 'provider'} endpoint {endpoint} skipped for another {left:.0f} s: "
            f"{state.failures} consecutive transport failures (last: {state.last_error or 'unknown'}).",
            hint=f"the review keeps its offline result. Check the provider's status and base_url in block "
                 f"'{self.block_name}'; the breaker closes by itself after the cool-down "
                 f"(breaker_cooldown_seconds={self.cooldown_seconds:g}) when a call succeeds, or clear it now "
                 f"with `prefect variable unset {variable_name(endpoint)}`.",
            provider=self.provider,
            retry_after_seconds=left,
        )

    def record_failure(self, endpoint: str, error: BaseException) -> bool:
        """Count a transport failure; True when this one opens (or re-opens) the breaker."""
        if not is_transport_failure(error):
            return False
        state = self._read(endpoint) or BreakerState(endpoint=endpoint)
        failures = state.failures + 1
        opens = failures >= self.failures
        reason = getattr(error, "code", type(error).__name__)
        updated = BreakerState(endpoint=endpoint, failures=failures, last_error=str(reason),
                               open_until=self.clock() + self.cooldown_seconds if opens else 0.0)
        self._write(updated)
        if opens:
            logger.warning("%s: circuit breaker OPEN for %s after %d consecutive transport failures (%s); calls "
                           "skipped for %.0f s", self.provider, endpoint, failures, reason, self.cooldown_seconds)
        return opens

    def record_success(self, endpoint: str, seen: BreakerState | None | object = _UNREAD) -> None:
        """The endpoint answered (any HTTP answer that is not a gateway failure): close the breaker.
        ``seen``: the state ``before_call`` read for this call (saves a read when it was clean)."""
        state = self._read(endpoint) if seen is _UNREAD else seen
        if state is not None and (state.failures or state.open_until):
            self._write(BreakerState(endpoint=endpoint))
            if state.failures >= self.failures:
                logger.warning("%s: circuit breaker CLOSED for %s (it answered again)", self.provider, endpoint)

    def state(self, endpoint: str) -> BreakerState | None:
        return self._read(endpoint)

    # -- the store never breaks a call ------------------------------------------------------
    def _read(self, endpoint: str) -> BreakerState | None:
        try:
            return self.store.read(endpoint)
        except Exception as exc:  # a Prefect API problem must not stop the model call
            logger.warning("circuit breaker state for %s unreadable (%s); the call goes through", endpoint,
                           type(exc).__name__)
            return None

    def _write(self, state: BreakerState) -> None:
        try:
            self.store.write(state)
        except Exception as exc:  # likewise: a state not saved must not stop the model call
            logger.warning("circuit breaker state for %s not saved (%s)", state.endpoint, type(exc).__name__)
