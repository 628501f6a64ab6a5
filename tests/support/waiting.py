"""Wait on the event a test needs instead of sleeping a fixed time: one poll loop for the whole suite.

    run = wait_until(lambda: state_of(run_id)[1] == "Completed" and run_id, timeout=scaled(30), what="run completed")

:func:`wait_until` returns the predicate's first truthy value as soon as it appears and raises ``TimeoutError``
naming ``what`` (and the last value or error seen) when the bound passes (:class:`WaitTimeout`: both a
``TimeoutError`` and an ``AssertionError``); :func:`poll` is the same but returns ``None`` (for callers that assert
themselves).  Polling backs off from ``step`` to ``max_step`` so a long wait does
not hammer a busy server.  A bound should scale with the work (``n`` runs x the loop interval, ...); for work
whose length is unknown (a flow run on a loaded machine) give ``progress``: a callable whose value changes while the
work advances (the run's state, its finished task runs); then ``timeout`` is how long it may go *without* progress
and ``limit`` caps the whole wait.  :func:`scaled` multiplies a bound by ``CLAUSEGATE_TEST_TIME_SCALE`` (default 1)
for a slow or loaded machine.

To show that something does NOT happen, wait for a positive event proving the system has moved past the point
where it would have happened (a later request recorded, a later sweep finished), then assert it did not happen."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

_UNSET = object()


class WaitTimeout(AssertionError, TimeoutError):
    """The awaited event did not come within its bound (a test failure, and a ``TimeoutError``)."""


def scaled(seconds: float) -> float:
    """``seconds`` times ``CLAUSEGATE_TEST_TIME_SCALE`` (default 1; e.g. 2 on a loaded 2-core machine)."""
    try:
        factor = float(os.environ.get("CLAUSEGATE_TEST_TIME_SCALE", "1") or 1)
    except ValueError:
        factor = 1.0
    return seconds * max(factor, 1.0)


def poll(predicate: Callable[[], Any], timeout: float = 20.0, step: float = 0.05, *, max_step: float = 0.2,
         ignore: tuple[type[BaseException], ...] = (Exception,)) -> Any:
    """The first truthy value of ``predicate()`` within ``timeout`` seconds, else ``None``; exceptions of the
    ``ignore`` types count as "not yet" (a server still starting, a page still changing)."""
    found, _, _ = _poll(predicate, timeout, step, max_step, ignore, None, None)
    return found


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, *, what: str = "condition",
               step: float = 0.05, max_step: float = 0.2,
               ignore: tuple[type[BaseException], ...] = (Exception,),
               progress: Callable[[], Any] | None = None, limit: float | None = None) -> Any:
    """The first truthy value of ``predicate()`` within ``timeout`` seconds (with ``progress``: within ``timeout``
    seconds of the last change of ``progress()``, and ``limit`` seconds in all); :class:`WaitTimeout` (saying
    ``what``, the last value or error and, with ``progress``, its last value) otherwise."""
    found, last, seen = _poll(predicate, timeout, step, max_step, ignore, progress, limit)
    if found is None:
        how = (f"no progress for {timeout:.1f} s (last progress: {seen!r})" if progress
               else f"not within {timeout:.1f} s")
        raise WaitTimeout(f"{what}: {how} (last: {last!r})")
    return found


def _poll(predicate, timeout, step, max_step, ignore, progress, limit) -> tuple[Any, Any, Any]:
    start = time.monotonic()
    deadline = start + timeout
    last: Any = _UNSET
    seen: Any = _UNSET
    pause = step
    while True:
        try:
            value = predicate()
        except ignore as exc:  # not yet: look again
            value, last = None, exc
        else:
            last = value
        if value:
            return value, value, seen
        now = time.monotonic()
        if progress is not None:
            try:
                moved = progress()
            except ignore:
                moved = seen
            if moved != seen:  # the work advanced: the idle bound starts again
                seen, deadline = moved, now + timeout
            if limit is not None:
                deadline = min(deadline, start + limit)
        left = deadline - now
        if left <= 0:
            return None, None if last is _UNSET else last, None if seen is _UNSET else seen
        time.sleep(min(pause, left))
        pause = min(pause * 1.5, max_step)
