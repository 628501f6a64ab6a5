"""Why our flows are ``async def``: a synchronous flow run waits up to ~1 s at its end, an async one does not.

Prefect 3.9 sends a flow run's heartbeats (what zombie detection relies on: the ``clausegate-zombie-runs``
automation) from a daemon thread that sleeps in 1 s steps.  At the end of the run the *sync* engine joins that
thread (``prefect/flow_engine.py``, ``_send_heartbeats(join_on_exit=True)``), so every sync run waits for the
current 1 s sleep to end: ~0.8 s of a one-contract review.  The async engine sends the same heartbeats from the
same thread and does not join it.  So each flow in ``flows/`` is an ``async def`` whose body is the synchronous
function it always was, called with :func:`run_sync_body`:

- the body runs in the flow run's own thread (the event loop waits, as it does for a sync task called from an
  async flow): Prefect's task timeouts keep interrupting blocking calls there (in the main thread they use
  SIGALRM; in a worker thread they could only interrupt Python code), and a ``Pause`` (the human gate's
  ``suspend_flow_run``) or ``Abort`` (the attempt fence) reaches the engine unchanged;
- it runs under a copy of the run's context in which the flow is the synchronous body, so Prefect's
  sync-or-async functions (``suspend_flow_run``, ``Block.load``, artifacts, ``Variable.get``,
  ``run_deployment``...) run synchronously, as in a sync flow, instead of returning a coroutine nobody awaits.
  Threads the body starts with a copy of its context (the batch's review threads) see the same;
- it holds one synchronous API client for the body, as the sync engine does (``SyncClientContext``): without
  it every task run and API call of the body would open a new client (a new TLS context and connection each).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, wraps
from typing import Any, TypeVar

from prefect import Flow
from prefect.context import FlowRunContext, SyncClientContext

from clausegate.pipeline import log_filters
from clausegate.pipeline.tls import share_api_tls_context

R = TypeVar("R")
share_api_tls_context()  # every flow imports this module: its API clients share one verified TLS context
log_filters.install()  # and its logs: a suspend is INFO, the worker-thread timeout warning once


async def run_sync_body(body: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``body(*args, **kwargs)`` inside the current (async) flow run, as a sync flow's body would run."""
    context = FlowRunContext.get()
    if context is None or context.flow is None:
        return body(*args, **kwargs)
    with context.model_copy(update={"flow": _sync_twin(context.flow, body)}), SyncClientContext.get_or_create():
        return body(*args, **kwargs)


@cache
def _sync_twin(flow: Flow, body: Callable[..., Any]) -> Flow:
    """A synchronous flow with ``flow``'s name and version (what logs, attribution and ``prefect.runtime`` read)."""
    return Flow(body, name=flow.name, version=flow.version, validate_parameters=False)


def async_body(body: Callable[..., R]) -> Callable[..., Any]:
    """An ``async def`` flow function for the synchronous ``body``, with its signature (for ``clausegate review`` and
    ``clausegate batch``, which make their flows from library code: ``flow(**OPTIONS)(async_body(body))``)."""

    @wraps(body)
    async def run(*args: Any, **kwargs: Any) -> R:
        return await run_sync_body(body, *args, **kwargs)

    return run
