"""Attempt fencing: a flow-run process acts on its run only while its attempt is the run's current one.

    from clausegate.pipeline.attempts import ensure_current
    ensure_current("gate")   # returns, or raises StaleAttempt (a prefect Abort)

Why: a review process can hang (SIGSTOP, a frozen VM, a long GC or swap stall) while its worker
lives. The zombie-run automation then marks the run Crashed and ``dead-letters`` requeues it (a new
attempt in a new process, ``run_count`` + 1). Prefect itself does not stop the old process when it
wakes up: task states travel as events, and the server accepts ``Crashed → Completed`` and
``Scheduled → Completed`` from it (``HandleFlowTerminalStateTransitions`` only guards leaving a
Completed run with a persisted result). Unchecked, the stale process finishes the review, cannot
suspend at the gate (the run is no longer Running) and completes the run it no longer owns — a
gated contract reported done with no decision (issue 9, class 3).

How: Prefect re-reads the flow run when the run context starts, so ``FlowRunContext.flow_run.state``
is the state this process's attempt started with (its Running state, by id). ``ensure_current``
reads the run again and compares: the same state id → current. Cancelling (someone cancelled this
attempt) is left to Prefect's cancellation, which stops the process; anything else — Crashed,
Scheduled/Late (requeued), Pending/Running/Suspended of a newer attempt, any final state — means
this attempt is stale, and it raises :class:`StaleAttempt`.

``StaleAttempt`` is a ``prefect.exceptions.Abort``: Prefect's own "orchestration aborted this
attempt". The engine proposes no state for it, tells its worker the attempt was handled (so the
worker reports no crash either) and the process exits 0. The run stays exactly as the server has
it. Nothing may catch it (it is a BaseException; ClauseGate code catches only Exception subclasses).

Called by the contract-review flow before each step, before the gate opens or suspends, before the
report and before the run's result is returned (clausegate/pipeline/review.py,
clausegate/gates/step.py). A check costs one API read (~5 ms). The window between the last check
and the engine's final state proposal is milliseconds; the zombie window is minutes.
"""

from __future__ import annotations

import logging
from typing import NamedTuple
from uuid import UUID

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.exceptions import Abort

STALE = "CG-RUN-STALE-ATTEMPT"
log = logging.getLogger("clausegate.pipeline.attempts")


class StaleAttempt(Abort):
    """This process's attempt is no longer the run's current one: exit without touching the run."""

    code = STALE


class Attempt(NamedTuple):
    """This process's attempt: the state it started with and Prefect's attempt number."""

    flow_run_id: str
    state_id: str
    run_count: int


def this_attempt() -> Attempt | None:
    """The current flow run's attempt, or None outside a flow run (nothing to fence)."""
    context = FlowRunContext.get()
    run = context.flow_run if context is not None else None
    if run is None or run.state is None or run.state.id is None:
        return None
    return Attempt(str(run.id), str(run.state.id), int(run.run_count or 0))


def stale_reason(attempt: Attempt, server_run) -> str | None:
    """Why ``attempt`` is no longer current on the server (``server_run``: the run read just now), or None."""
    state = server_run.state
    if state is None:
        return "the run has no state on the server"
    if str(state.id) == attempt.state_id:
        return None
    if state.is_cancelling() and int(server_run.run_count or 0) == attempt.run_count:
        return None  # this attempt is being cancelled: Prefect's cancellation stops the process and finishes it
    return (f"the run is now {state.name} (attempt {server_run.run_count}); this process started attempt "
            f"{attempt.run_count}")


def ensure_current(where: str, *, client=None) -> None:
    """Raise :class:`StaleAttempt` when the server no longer considers this process's attempt current."""
    attempt = this_attempt()
    if attempt is None:
        return
    if client is None:
        with get_client(sync_client=True) as own:
            server_run = own.read_flow_run(UUID(attempt.flow_run_id))
    else:
        server_run = client.read_flow_run(UUID(attempt.flow_run_id))
    reason = stale_reason(attempt, server_run)
    if reason is None:
        return
    message = (f"{STALE}: stopping before '{where}' without changing flow run {attempt.flow_run_id}: {reason}. "
               "Another attempt (or a person) owns the run now; nothing to do.")
    _log(message)
    raise StaleAttempt(message)


def _log(message: str) -> None:
    try:
        get_run_logger().warning(message)
    except Exception:  # no run logger here: the module logger still says it
        log.warning(message)
