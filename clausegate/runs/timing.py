"""Where a review's time goes, step by step, without touching the review's result.

A caller that wants the times (the batch's :class:`~clausegate.batch.dispatch.TaskDispatcher`) wraps the
review in :func:`collect_step_times`; the review's tasks (:mod:`clausegate.pipeline.tasks`) time their
bodies with :func:`timed_step`.  The times ride a context variable, so they are never part of the review
(nor of any cache key) and cost nothing when nobody collects them.  A step's time is its work only:
a task served from the cache adds nothing, and Prefect's task-run work around the body (cache lookup,
result persistence, state changes) is left for the caller to count as the rest.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_STEP_TIMES: ContextVar[dict[str, float] | None] = ContextVar("clausegate_step_times", default=None)

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def collect_step_times() -> Iterator[dict[str, float]]:
    """A dict that the review steps run inside this block fill with ``step -> seconds``."""
    times: dict[str, float] = {}
    token = _STEP_TIMES.set(times)
    try:
        yield times
    finally:
        _STEP_TIMES.reset(token)


def timed_step(step: str) -> Callable[[F], F]:
    """Add the wall time of each call of the decorated function to ``step`` (when someone collects)."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            times = _STEP_TIMES.get()
            if times is None:
                return fn(*args, **kwargs)
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[step] = times.get(step, 0.0) + (time.perf_counter() - started)

        return timed  # type: ignore[return-value]

    return decorate
