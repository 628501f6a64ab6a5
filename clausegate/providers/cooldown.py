"""A process-wide cooldown per endpoint URL, so a Prefect retry honours ``retry-after`` precisely.
(Inside a Prefect run the client also shares it with other processes through the endpoint's breaker
state: ``CircuitBreaker.note_cooldown``.)

Prefect's ``retry_delay_seconds`` is fixed when the task is defined. When a provider answers 429
(or 503, 529, any transient status) with ``retry-after: 7``, the client records
``not_before = now + min(7, max_wait) + jitter`` for that endpoint; every call to the endpoint
first sleeps until ``not_before``. The next Prefect
attempt therefore starts no earlier than the provider asked, whatever the static delay was.
Clients never retry themselves: this only delays the call a retry makes.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

__all__ = ["COOLDOWNS", "CooldownRegistry"]


class CooldownRegistry:
    """Thread-safe ``endpoint URL -> not_before`` (monotonic clock) map."""

    def __init__(
        self,
        *,
        max_wait: float = 60.0,
        jitter: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.max_wait = max_wait
        self.jitter = jitter
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._not_before: dict[str, float] = {}
        self._lock = threading.Lock()

    def note_rate_limit(self, endpoint: str, retry_after: float | None) -> float:
        """Record a 429 for ``endpoint``; returns the seconds callers will now wait (0 if unknown)."""
        if retry_after is None:
            return 0.0
        delay = min(max(retry_after, 0.0), self.max_wait)
        delay += self._rng.uniform(0, self.jitter * delay)
        with self._lock:
            not_before = self._clock() + delay
            self._not_before[endpoint] = max(not_before, self._not_before.get(endpoint, 0.0))
        return delay

    def remaining(self, endpoint: str) -> float:
        """Seconds until ``endpoint`` may be called again (0 when free), capped at ``max_wait``."""
        with self._lock:
            not_before = self._not_before.get(endpoint, 0.0)
        return min(max(not_before - self._clock(), 0.0), self.max_wait)

    def wait(self, endpoint: str, *, at_least: float = 0.0) -> float:
        """Sleep until ``endpoint`` may be called (and ``at_least`` seconds: a cooldown another process
        noted, capped at ``max_wait`` too); returns the seconds slept."""
        delay = max(self.remaining(endpoint), min(max(at_least, 0.0), self.max_wait))
        if delay > 0:
            self._sleep(delay)
        return delay

    def clear(self) -> None:
        with self._lock:
            self._not_before.clear()


COOLDOWNS = CooldownRegistry()
"""The registry every client uses unless given its own (tests pass a fresh one)."""
