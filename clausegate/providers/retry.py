"""The retry policy for model calls, expressed as Prefect task options. Prefect owns retries.

Wire a model-calling task like this::

    from prefect import task
    from clausegate.providers.retry import MODEL_RETRY_POLICY, use_fallback_now

    @task(**MODEL_RETRY_POLICY)     # retries=3, retry_delay_seconds=RETRY_DELAYS,
    def extract(...):               # retry_jitter_factor=0.5, retry_condition_fn=retry_condition
        client = AnthropicModel.load("default").get_client()
        result, responses = complete_json(client, system, user, Schema,
                                          max_tokens=..., use_fallback=use_fallback_now())

* ``retry_condition`` retries only transient errors (rate limit, overloaded, 5xx, timeout,
  unreachable); permanent ones (auth, not found, bad request, context too long, truncated or
  invalid output, an open circuit breaker, any non-ClauseGate exception, Prefect's step timeout)
  fail the task on the first attempt.
* A transient answer with ``retry-after`` (a 429, a 503, a 529, ...) puts the endpoint in the
  process-wide cooldown (``COOLDOWNS``); the retried call waits until ``retry-after`` has passed
  (at most ``COOLDOWNS.max_wait`` = 60 s) before sending.
* Outage failures (no answer, 5xx, 529) that a retry cannot save count towards the endpoint's
  circuit breaker (``circuit.py``, ``current_attempt``): once it is open the next attempt goes to
  the fallback endpoint, or raises ``ProviderCircuitOpen`` at once instead of waiting for a timeout.
* ``use_fallback_now()`` is True from the second attempt on: the retry uses the block's
  ``fallback_model`` / ``fallback_base_url``.
"""

from __future__ import annotations

from typing import Any

from prefect.context import TaskRunContext
from prefect.runtime import task_run
from prefect.tasks import exponential_backoff

from clausegate.errors import ClauseGateError
from clausegate.providers.cooldown import COOLDOWNS, CooldownRegistry

__all__ = [
    "COOLDOWNS",
    "CooldownRegistry",
    "MODEL_RETRY_POLICY",
    "RETRIES",
    "RETRY_DELAYS",
    "RETRY_JITTER_FACTOR",
    "is_transient",
    "current_attempt",
    "retry_condition",
    "use_fallback_now",
]

RETRIES = 3
RETRY_DELAYS: list[float] = exponential_backoff(backoff_factor=1)(RETRIES)  # [1, 2, 4] seconds
RETRY_JITTER_FACTOR = 0.5  # Prefect adds up to +50 % random delay to each


def is_transient(exc: BaseException | None) -> bool:
    """True only for ClauseGate errors flagged transient (the model errors listed above)."""
    return isinstance(exc, ClauseGateError) and bool(exc.transient)


def retry_condition(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the failure is transient."""
    return is_transient(_exception_of(state))


def _exception_of(state: Any) -> BaseException | None:
    try:
        # ``result()`` re-raises the task's exception; ``_sync`` keeps it synchronous in async tasks too
        state.result(raise_on_failure=True, _sync=True)
    except Exception as exc:
        return exc
    return None


def use_fallback_now() -> bool:
    """True from a task's second attempt on (``prefect.runtime.task_run.run_count > 1``)."""
    return (task_run.run_count or 1) > 1


def current_attempt() -> tuple[str, bool] | None:
    """(task run id, whether Prefect retries it after a transient failure) inside a task run, else None.
    The circuit breaker uses it: a call's failure counts once no retry can save it."""
    context = TaskRunContext.get()
    if context is None:
        return None
    run = context.task_run
    return str(run.id), (run.run_count or 1) <= int(context.task.retries or 0)


MODEL_RETRY_POLICY: dict[str, Any] = {
    "retries": RETRIES,
    "retry_delay_seconds": RETRY_DELAYS,
    "retry_jitter_factor": RETRY_JITTER_FACTOR,
    "retry_condition_fn": retry_condition,
}
