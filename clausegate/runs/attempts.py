"""Attempt fencing: a flow-run process acts on its run only while its attempt is the run's current one.

    from clausegate.runs.attempts import ensure_current
    ensure_current("gate")   # returns, or raises StaleAttempt (a prefect Abort)

Why: a review process can hang (SIGSTOP, a frozen VM, a long GC or swap stall) while its worker
lives. The zombie-run automation then marks the run Crashed and ``dead-letters`` requeues it (a new
attempt in a new process, ``run_count`` + 1). Prefect itself does not stop the old process when it
wakes up: task states travel as events, and the server accepts ``Crashed → Completed`` and
``Scheduled → Completed`` from it (``HandleFlowTerminalStateTransitions`` only guards leaving a
Completed run with a persisted result). Unchecked, the stale process finishes the review, cannot
suspend at the gate (the run is no longer Running) and completes the run it no longer owns — a
gated contract reported done with no decision.

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
clausegate/gates/step.py). The window between the last check and the engine's final state proposal
is milliseconds; the zombie window is minutes.

Exceptions are fenced too (:func:`fenced_exit`, around the whole contract-review body): Prefect's
engine turns an exception that leaves the flow body into a state of the run — a task's
``TimeoutError`` into ``Failed``/``TimedOut``, any other exception into ``Failed``, a
``BaseException`` (a termination signal) into ``Crashed`` — and the server accepts each of them even
from ``Suspended``. A process stopped inside a task wakes up with that task's timeout long passed, so
the exception comes first, before any check. So before any exception may leave the body the attempt
is read again (never from the freshness window): stale → :class:`StaleAttempt` instead (the engine
proposes nothing), current → the exception goes on as before. The check runs in the thread that
raised, before the engine sees the exception, so it cannot lose a race to it. Why here: Prefect 3.9's
server has no compare-and-set on flow-run states (a proposal cannot say "only if the run is still in
my state"), and a watchdog thread that ended the process once it found the attempt stale would race
the main thread on wake-up (a pending SIGALRM runs the task's timeout at the first bytecode after
SIGCONT; the watchdog needs a read of the server first).

Freshness window: a read costs ~20 ms on a loaded SQLite server, and a fully cached review passes
six checks in ~0.3 s.  So a check within :data:`FRESH_SECONDS` (2 s) of this attempt's last confirmation
(the moment that read was *sent*, by the clock below) reuses it instead of reading again.  Why that cannot
let a stale attempt act:

* An attempt goes stale through the zombie path: the zombie automation marks the run Crashed only after
  ``CLAUSEGATE_ZOMBIE_SECONDS`` (≥ 45 s; heartbeats come every 30 s) without a heartbeat from this
  process.  The process was stopped or hung for that long (SIGSTOP, a stall, a suspended machine), and the
  clock kept running meanwhile: ``CLOCK_BOOTTIME`` counts SIGSTOP, stalls *and* system suspend (plain
  ``CLOCK_MONOTONIC`` stops during suspend).  After such a pause the last confirmation is ≥ 45 s old, far
  outside 2 s, so the next check reads the server.  A skipped read also needs the wall clock to agree
  (0 ≤ elapsed < 2 s), so a paused VM whose clocks are stepped forward on resume also re-reads.
* Anything else that moves the run (a person crashes or reschedules it, dead-letters requeues it) while
  this process keeps running is a race the fence always had: the read and the action were never atomic,
  and a step runs between two checks.  The window widens that race from milliseconds to ≤ 2 s of the
  process's own running time, and only for checks that follow one another quickly (a long step takes
  longer than the window, so the check after it reads).
* Where a refusal by the server is the hint that the run moved on (Prefect refused to suspend at the
  gate: ``ensure_current(..., max_age=0)`` in clausegate/gates/step.py), the check always reads.  The gate
  itself cannot be skipped through the window: suspending is checked by the server, and a refusal re-reads.
* The confirmation belongs to one attempt (flow run id + the state id it started with): a new attempt,
  an in-process retry or another run in the same process never reuses it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple
from uuid import UUID

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.exceptions import Abort, PrefectSignal

STALE = "CG-RUN-STALE-ATTEMPT"
FRESH_SECONDS = 2.0  # a confirmation younger than this is reused (see "Freshness window" above); zombie window ≥ 45 s
log = logging.getLogger("clausegate.runs.attempts")


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


def clocks() -> tuple[float, float]:
    """(a clock that keeps counting while the process is stopped or the machine suspended, the wall clock)."""
    boot = getattr(time, "CLOCK_BOOTTIME", None)  # Linux; elsewhere the monotonic clock
    return (time.clock_gettime(boot) if boot is not None else time.monotonic()), time.time()


class _Confirmed(NamedTuple):
    attempt: Attempt
    at: tuple[float, float]  # clocks() when the confirming read was sent


_confirmed: _Confirmed | None = None


def confirmed_recently(attempt: Attempt, max_age: float) -> bool:
    """This attempt was confirmed current by a read sent less than ``max_age`` seconds ago (both clocks agree)."""
    last = _confirmed
    if last is None or last.attempt != attempt or max_age <= 0:
        return False
    now = clocks()
    return all(0 <= current - then < max_age for current, then in zip(now, last.at, strict=True))


def ensure_current(where: str, *, client=None, max_age: float = FRESH_SECONDS) -> None:
    """Raise :class:`StaleAttempt` when the server no longer considers this process's attempt current.

    A confirmation of this attempt younger than ``max_age`` seconds stands in for the read (``max_age=0``:
    always read); see "Freshness window" in the module docstring."""
    global _confirmed
    attempt = this_attempt()
    if attempt is None or confirmed_recently(attempt, max_age):
        return
    sent = clocks()
    if client is None:
        with get_client(sync_client=True) as own:
            server_run = own.read_flow_run(UUID(attempt.flow_run_id))
    else:
        server_run = client.read_flow_run(UUID(attempt.flow_run_id))
    reason = stale_reason(attempt, server_run)
    if reason is None:
        _confirmed = _Confirmed(attempt, sent)
        return
    _confirmed = None
    message = (f"{STALE}: stopping before '{where}' without changing flow run {attempt.flow_run_id}: {reason}. "
               "Another attempt (or a person) owns the run now; nothing to do.")
    _log(message)
    raise StaleAttempt(message)


def _log(message: str) -> None:
    try:
        get_run_logger().warning(message)
    except Exception:  # no run logger here: the module logger still says it
        log.warning(message)


@contextmanager
def fenced_exit(where: str = "the run's end") -> Iterator[None]:
    """Let an exception leave the block (and become the run's state) only while this attempt is current.

    Prefect's own signals pass unchanged (``Pause``: the gate; ``Abort``: :class:`StaleAttempt` or the
    server's own abort), and so does ``GeneratorExit``.  Any other exception, ``BaseException`` included,
    is checked with a fresh read: stale → :class:`StaleAttempt` (chained to it) instead; current, or
    the check itself failed (the server unreachable: then the engine cannot propose a state either) → the
    exception as it was."""
    try:
        yield
    except (PrefectSignal, GeneratorExit):
        raise
    except BaseException as exc:
        try:
            ensure_current(f"{where} ({type(exc).__name__}: {str(exc)[:200]})", max_age=0)
        except StaleAttempt as stale:
            raise stale from exc
        except Exception as check:  # could not check: behave as without the fence
            log.warning("could not check the attempt before %s: %r", where, check)
        raise

