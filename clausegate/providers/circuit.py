"""A circuit breaker per provider endpoint, its state shared through Prefect (a Variable), so every
worker, flow-run process and batch chunk knows at once that a provider is down.

    breaker = CircuitBreaker(PrefectVariableStore(), failures=3, cooldown_seconds=60)
    breaker.before_call(url)                      # raises ProviderCircuitOpen while the endpoint is skipped
    breaker.record_failure(url, err, call=run_id, retried_here=True)   # an outage failure (see below)
    breaker.record_success(url)                   # any other answer: the endpoint is reachable again

A breaker is for outages, not for a provider that answers most calls.  An *outage failure* is no
answer at all (timeout, refused or reset connection) or a 5xx / 529 "overloaded" answer.  The breaker
counts **calls**, not requests: a call (a Prefect task run and its retries) counts once, when a retry
on the same endpoint cannot save it (its retry failed there too, or no retry will go there: its last
attempt, or its retries go to the fallback endpoint).  A call that fails once and succeeds on retry
never counts, a call whose three attempts all fail counts once, and any answer from the endpoint
clears the count.  After ``failures`` distinct calls counted, with nothing answered for at least
``outage_seconds`` (a storm answers other calls in between), the endpoint is skipped for
``cooldown_seconds``: a call raises :class:`ProviderCircuitOpen` (``CG-MODEL-CIRCUIT-OPEN``,
permanent: no Prefect retry) without sending anything; the client sends it to the fallback endpoint
instead when the block has one, else the review keeps its offline result.  After the cool-down the
next call first sends a short **probe** outside its own request (the client's ``GET /v1/models``, at
most ``PROBE_*_TIMEOUT`` seconds; ``probe``): no answer re-opens the breaker for another cool-down and
the call is skipped like the others (it loses only the probe's seconds, never a read timeout); an
answer lets the call through as the trial (half-open): its answer closes the breaker, its failure
opens it again.  Calls arriving while the probe or the trial is in flight wait for its outcome (at
most ``probe_wait_seconds``, then they go on) rather than fail.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from prefect.context import FlowRunContext, TaskRunContext
from prefect.exceptions import ObjectAlreadyExists
from prefect.variables import Variable
from pydantic import BaseModel

from clausegate.providers.errors import (
    Overloaded,
    ProviderCircuitOpen,
    ProviderTimeout,
    ProviderUnreachable,
    ServerError,
)

__all__ = [
    "DEFAULT_COOLDOWN_SECONDS",
    "DEFAULT_FAILURES",
    "BreakerState",
    "CircuitBreaker",
    "MemoryStore",
    "NullStore",
    "PrefectVariableStore",
    "default_store",
    "is_outage_failure",
    "variable_name",
]

logger = logging.getLogger("clausegate.providers")

DEFAULT_FAILURES = 3
DEFAULT_COOLDOWN_SECONDS = 60.0
OUTAGE_SECONDS = 5.0  # the endpoint must also have answered nothing for this long (a storm answers in between)
PROBE_WAIT_SECONDS = 15.0  # how long a call waits for the half-open probe's outcome before it goes on
PROBE_POLL_SECONDS = 0.5
PROBE_CONNECT_TIMEOUT = 2.0  # the probe request's timeouts: a hanging endpoint costs the probing call <= 5 s
PROBE_READ_TIMEOUT = 3.0
CALLS_KEPT = 24  # calls remembered per endpoint (the Variable's value stays well under Prefect's 5000 chars)
VARIABLE_PREFIX = "clausegate_breaker_"


class BreakerState(BaseModel):
    endpoint: str
    failures: int = 0  # counted outage failures since the endpoint last answered
    open_until: float = 0.0  # epoch seconds; 0: closed
    probe_until: float = 0.0  # half-open: the probe call is in flight until then (epoch seconds)
    not_before: float = 0.0  # the shared rate-limit cooldown: no call before then (epoch seconds)
    since: float = 0.0  # start of the first failed request since the endpoint last answered (epoch seconds)
    last_error: str = ""
    calls: dict[str, int] = {}  # failed attempts per call (task run) since the endpoint last answered
    counted: list[str] = []  # the calls counted in ``failures`` (a call counts once)

    @property
    def tripped(self) -> bool:
        return self.open_until > 0


def is_outage_failure(error: BaseException) -> bool:
    """An outage failure: no answer at all (timeout, refused/reset connection), a 5xx, or 529 /
    "overloaded".  A 4xx (429 included) is an answer: the endpoint is there."""
    if isinstance(error, (ProviderTimeout, ProviderUnreachable)):
        return error.status is None  # no HTTP answer at all (an HTTP 408 is an answer)
    if isinstance(error, Overloaded):
        return True
    return isinstance(error, ServerError) and error.status is not None and error.status >= 500


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
        for attempt in range(2):  # two processes creating the Variable at once: the second one updates it
            try:
                Variable.set(variable_name(state.endpoint), state.model_dump(mode="json"), overwrite=True,
                             tags=["clausegate", "circuit-breaker"], _sync=True)
                return
            except ObjectAlreadyExists:
                if attempt:
                    raise


def default_store() -> Store:
    """Prefect Variables inside a Prefect flow or task run (the API is there); else nothing."""
    if TaskRunContext.get() is not None or FlowRunContext.get() is not None:
        return PrefectVariableStore()
    return NullStore()


class CircuitBreaker:
    def __init__(self, store: Store | None = None, *, failures: int = DEFAULT_FAILURES,
                 cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS, clock: Callable[[], float] = time.time,
                 provider: str = "", block_name: str = "", probe_seconds: float | None = None,
                 probe_wait_seconds: float = PROBE_WAIT_SECONDS, sleep: Callable[[float], None] = time.sleep,
                 outage_seconds: float = OUTAGE_SECONDS,
                 probe: Callable[[str], str | None] | None = None) -> None:
        self.store = store if store is not None else NullStore()
        self.failures = max(1, int(failures))
        self.cooldown_seconds = max(0.0, float(cooldown_seconds))
        self.probe_seconds = float(probe_seconds) if probe_seconds is not None else self.cooldown_seconds
        self.probe_wait_seconds = max(0.0, float(probe_wait_seconds))
        self.outage_seconds = max(0.0, float(outage_seconds))
        self.clock = clock
        self.sleep = sleep
        self.provider = provider
        self.block_name = block_name
        self.probe = probe  # probe(endpoint) -> None when it answered, else why not (see the module docstring)

    # -- the three hooks of a call ---------------------------------------------------------
    def before_call(self, endpoint: str, *, divert: bool = False) -> BreakerState | None:
        """Raise ProviderCircuitOpen while ``endpoint`` is in its cool-down; else return the state read.

        Half-open, the first caller sends the probe (``probe``; no answer: re-opened, and this call
        raises too) and goes through as the trial; a caller arriving while the probe or the trial is in
        flight waits for its outcome (``probe_wait_seconds`` at most, then it goes on), or, with ``divert``
        (it has another endpoint to go to), raises ProviderCircuitOpen at once."""
        state = self._read(endpoint)
        if state is None or not state.tripped:
            return state
        now = self.clock()
        if state.open_until > now:
            raise self._open_error(endpoint, state, state.open_until - now)
        if state.probe_until <= now:  # the cool-down is over and no probe is in flight: this call probes
            self._write(state.model_copy(update={"probe_until": now + self.probe_seconds}))
            self._probe_or_reopen(endpoint, state)
            logger.info("%s: circuit breaker half-open for %s: one trial call goes through", self.provider, endpoint)
            return state
        if divert:
            raise self._open_error(endpoint, state, state.probe_until - now, probing=True)
        return self._await_probe(endpoint, state)

    def record_failure(self, endpoint: str, error: BaseException, *, call: str | None = None,
                       retried_here: bool = False, started: float | None = None) -> bool:
        """Note an outage failure of ``call`` (a Prefect task run id; None: a call of its own that is
        never retried).  ``retried_here``: a retry of this call will be sent to this endpoint;
        ``started``: when the failed request was sent.  True when this failure opens (or re-opens)
        the breaker: ``failures`` counted and nothing answered for ``outage_seconds``."""
        if not is_outage_failure(error):
            return False
        state = self._read(endpoint) or BreakerState(endpoint=endpoint)
        calls, counted = dict(state.calls), list(state.counted)
        before = calls.pop(call, 0) if call else 0
        if call:
            calls[call] = before + 1
            while len(calls) > CALLS_KEPT:
                calls.pop(next(iter(calls)))
        # a call counts once: when its retry here failed too, or when no retry goes here
        counts = call is None or (call not in counted and (before > 0 or not retried_here))
        if counts and call:
            counted = [*counted, call][-CALLS_KEPT:]
        failures = state.failures + int(counts)
        now = self.clock()
        since = state.since or (started if started is not None else now)
        # a failed probe, or a call in flight when it opened, re-opens it
        opens = state.tripped or (failures >= self.failures and now - since >= self.outage_seconds)
        reason = getattr(error, "code", type(error).__name__)
        self._write(BreakerState(endpoint=endpoint, failures=failures, last_error=str(reason), calls=calls, since=since,
                                 counted=counted, open_until=now + self.cooldown_seconds if opens else 0.0,
                                 not_before=state.not_before if state.not_before > now else 0.0))
        if opens:
            logger.warning("%s: circuit breaker OPEN for %s after outage failures of %d calls (%s); calls skipped for "
                           "%.0f s", self.provider, endpoint, failures, reason, self.cooldown_seconds)
        return opens

    def record_success(self, endpoint: str) -> None:
        """The endpoint answered (any HTTP answer that is not an outage failure): clear the count and
        close the breaker.  Reads the state again: failures noted while this call was in flight are
        cleared by its answer too."""
        state = self._read(endpoint)
        if state is not None and (state.failures or state.tripped or state.calls):
            now = self.clock()
            self._write(BreakerState(endpoint=endpoint, not_before=state.not_before if state.not_before > now else 0.0))
            if state.tripped:
                logger.warning("%s: circuit breaker CLOSED for %s (it answered again)", self.provider, endpoint)

    # -- the shared rate-limit cooldown ---------------------------------------------------
    def note_cooldown(self, endpoint: str, seconds: float) -> None:
        """No call to ``endpoint`` before ``seconds`` from now, in any process sharing the store."""
        if seconds <= 0 or isinstance(self.store, NullStore):
            return
        state = self._read(endpoint) or BreakerState(endpoint=endpoint)
        not_before = self.clock() + seconds
        if not_before > state.not_before:
            self._write(state.model_copy(update={"not_before": not_before}))

    def cooldown_left(self, state: BreakerState | None) -> float:
        """Seconds left of the shared cooldown in ``state`` (0 when none)."""
        return max(0.0, state.not_before - self.clock()) if state is not None else 0.0

    def state(self, endpoint: str) -> BreakerState | None:
        return self._read(endpoint)

    # -- internals ---------------------------------------------------------------------------
    def _probe_or_reopen(self, endpoint: str, state: BreakerState) -> None:
        """Send the short probe (when the client gave one): no answer re-opens the breaker for another
        cool-down and raises ProviderCircuitOpen, so the call loses the probe's seconds, not a read timeout."""
        if self.probe is None:
            return
        try:
            problem = self.probe(endpoint)
        except Exception as exc:  # a broken probe must not stop the call: the trial call decides
            logger.warning("%s: the probe of %s failed to run (%s); the call goes through", self.provider, endpoint,
                           type(exc).__name__)
            return
        if problem is None:
            return
        now = self.clock()
        reopened = state.model_copy(update={"open_until": now + self.cooldown_seconds, "probe_until": 0.0,
                                            "last_error": f"probe: {problem}"})
        self._write(reopened)
        logger.warning("%s: circuit breaker stays OPEN for %s: the probe got %s; calls skipped for %.0f s",
                       self.provider, endpoint, problem, self.cooldown_seconds)
        raise self._open_error(endpoint, reopened, self.cooldown_seconds)

    def _await_probe(self, endpoint: str, state: BreakerState) -> BreakerState | None:
        deadline = self.clock() + min(self.probe_wait_seconds, state.probe_until - self.clock())
        logger.info("%s: circuit breaker half-open for %s: waiting for the probe call's outcome", self.provider,
                    endpoint)
        while self.clock() < deadline:
            self.sleep(PROBE_POLL_SECONDS)
            state = self._read(endpoint)
            now = self.clock()
            if state is None or not state.tripped:
                return state  # the probe was answered: closed
            if state.open_until > now:
                raise self._open_error(endpoint, state, state.open_until - now)  # the probe failed
            if state.probe_until <= now:
                return self.before_call(endpoint)  # the probe never reported back: probe again
        logger.info("%s: the probe of %s is still in flight; this call goes on", self.provider, endpoint)
        return state

    def _open_error(self, endpoint: str, state: BreakerState, left: float, *, probing: bool = False):
        why = "a probe call is in flight" if probing else f"skipped for another {left:.0f} s"
        return ProviderCircuitOpen(
            f"{self.provider or 'provider'} endpoint {endpoint} {why}: circuit breaker open after outage "
            f"failures of {state.failures} calls (last: {state.last_error or 'unknown'}).",
            hint=f"the call goes to the fallback endpoint when block '{self.block_name}' has one "
                 f"(fallback_base_url), else the review keeps its offline result. Check the provider's status "
                 f"and base_url; the breaker closes by itself after the cool-down "
                 f"(breaker_cooldown_seconds={self.cooldown_seconds:g}) when a call succeeds, or clear it now "
                 f"with `prefect variable unset {variable_name(endpoint)}`.",
            provider=self.provider,
            retry_after_seconds=left,
        )

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
