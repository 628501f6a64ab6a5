"""Stuck runs: contract-review runs a crash or a restart left in a state nobody will move them out of.

The ``dead-letters`` deployment's schedule (prefect.yaml: every 2 minutes, so also as soon as a worker is back after
``clausegate down && up``) runs :func:`recover_stuck_runs`. It finds, by evidence only, the runs no live process
holds, and hands each to the one requeue-once / dead-letter logic (:mod:`clausegate.ops.dead_letters`):

* **Pending / Submitting** for ``CLAUSEGATE_STUCK_SECONDS`` (default 300; a worker takes a claimed run to Running
  in seconds): its worker was killed or stopped between the claim and the start → Crashed with ``CG-RUN-STUCK``.
* **Running with no heartbeat**: flow-run processes of a deployment send one every 30 s; none for the zombie window
  (``CLAUSEGATE_ZOMBIE_SECONDS``, 150) plus a minute → Crashed with ``CG-RUN-CRASHED``. The zombie automation
  normally does this; its window does not survive a Prefect server restart.
* **Late behind a stale process**: a run dead-letters requeued that stays Scheduled for ``CLAUSEGATE_STUCK_SECONDS``
  while the worker that held the crashed attempt is online, was not restarted and never reported that process
  ended: the worker still holds a slot for the run id and refuses it ("Duplicate submission") → Crashed with
  ``CG-RUN-STUCK``; dead-letters stops that process through the worker and requeues again (the requeued attempt
  never ran, so this is not its crash: ``dead_letters._requeue_kind``).
* **Cancelled in the middle of a requeue**: dead-letters set Cancelling (``CG-RUN-REQUEUING``) to stop a hung
  attempt, the Cancelled came (from the worker, or the server's "Flow run cancellation timed out"), and the
  requeue that should follow was lost (the dead-letters run died with its worker) → requeued, the interrupted
  requeue completed.
* **Crashed runs** whose Crashed state is older than a minute (the deployment trigger lost, e.g. across a server
  restart) → :func:`clausegate.ops.dead_letters.handle`.

Setting a run Crashed fires the deployment trigger, so dead-letters handles it at once; the next sweep is the
backstop. Every change is in the audit log (``clausegate.audit.run.stuck``) and a dead letter alerts as usual.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import StateType
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter
from prefect.states import Crashed
from pydantic import BaseModel

from clausegate import audit
from clausegate.config import settings
from clausegate.ops import dead_letters
from clausegate.runs.states import RUN_CRASHED

STUCK = "CG-RUN-STUCK"
CRASHED = RUN_CRASHED
ZOMBIE_SECONDS = 150  # deployments/automations.yaml's window when CLAUSEGATE_ZOMBIE_SECONDS is unset
MARGIN_SECONDS = 60.0  # past the zombie window, and how long the trigger has to handle a Crashed run
HEARTBEAT = "prefect.flow-run.heartbeat"


class Found(BaseModel):
    """One stuck run and what the sweep did with it."""

    flow_run_id: str
    state: str
    action: str  # crashed (dead-letters takes it from there), requeued (an interrupted requeue completed), skipped
    reason: str


def _runs(client, flow_name: str, types: list[StateType], tags: list[str] | None) -> list:
    return client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=types)),
                                      tags=FlowRunFilterTags(all_=tags) if tags else None), limit=200)


def _age(run, now: datetime) -> float:
    return (now - run.state.timestamp).total_seconds() if run.state and run.state.timestamp else 0.0


def _heartbeat_since(client, run_id, since: datetime) -> bool:
    page = client.read_events(EventFilter(occurred=EventOccurredFilter(since=since),
                                          event=EventNameFilter(name=[HEARTBEAT]),
                                          resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"])), limit=1)
    return bool(page.events)


def _crash(client, run, code: str, why: str) -> Found:
    """Mark the run Crashed (only if it is still in the state the evidence was read in) and audit it."""
    current = client.read_flow_run(run.id)
    if current.state is None or run.state is None or current.state.id != run.state.id:
        return Found(flow_run_id=str(run.id), state=run.state_name or "?", action="skipped",
                     reason="it moved on while the sweep looked")
    message = f"{code}: {why}. Found by the stuck-run sweep; dead-letters requeues it once (docs/runbook.md)"
    client.set_flow_run_state(run.id, Crashed(message=message), force=True)
    audit.record(audit.audit_event("run.stuck", actor=dead_letters.ACTOR, flow_run_id=str(run.id),
                                   state=run.state_name, reason=why[:500]))
    return Found(flow_run_id=str(run.id), state=run.state_name or "?", action="crashed", reason=message)


def _claimed_by(run) -> str:
    worker = (run.labels or {}).get("prefect.worker.name")
    return f"worker '{worker}'" if worker else "a worker"


def stuck_pending(client, run, now: datetime, stuck_seconds: float) -> Found | None:
    """Pending / Submitting long past any process start: the claim of a worker that never started it."""
    age = _age(run, now)
    if age < stuck_seconds:
        return None
    return _crash(client, run, STUCK, f"{run.state_name} for {age:.0f} s: claimed by {_claimed_by(run)}, which "
                                      "never started it (killed or stopped)")


def stuck_running(client, run, now: datetime, window: float) -> Found | None:
    """Running with no process: no heartbeat for ``window`` s (the zombie window + a margin; deployment runs send
    one every 30 s)."""
    if run.deployment_id is None or _age(run, now) < window:
        return None
    if _heartbeat_since(client, run.id, now - timedelta(seconds=window)):
        return None
    return _crash(client, run, CRASHED, f"Running with no heartbeat for {window:.0f} s (worker or machine died, or "
                                        "the zombie automation's window was lost across a server restart)")


def stuck_late(client, run, now: datetime, stuck_seconds: float) -> Found | None:
    """A requeued run left Scheduled/Late while the worker that held its crashed attempt still holds that process."""
    if dead_letters.REQUEUED not in run.tags or _age(run, now) < stuck_seconds:
        return None
    history = dead_letters.read_history(client, run)
    if not (run.state.message or "").startswith(dead_letters.REQUEUED_CODE) and run.state_name != "Late":
        return None
    claim = next((s.timestamp for s in reversed(history) if s.is_running() or s.is_pending()), None)
    worker = (run.labels or {}).get("prefect.worker.name")
    if claim is None or not worker or not run.work_pool_name:
        return None
    if dead_letters.executed_since(client, run.id, claim) or not dead_letters.worker_online(
            client, run.work_pool_name, worker) or dead_letters.worker_started_since(client, worker, claim):
        return None  # the old process is gone (or its worker is): another poll takes the run
    return _crash(client, run, STUCK, f"{run.state_name} for {_age(run, now):.0f} s after its requeue: its worker "
                                      f"'{worker}' still holds the crashed attempt's process and refuses the run as "
                                      "a duplicate")


def requeuing_cancel(states: list, as_of: Any = None) -> Any | None:
    """The Cancelling with ``CG-RUN-REQUEUING`` that the run's trailing Cancelled states follow (``states`` oldest
    first; ``as_of``: a state's id, the history up to it, as a view read it before the requeue was stored), else
    None. The worker's cancellation and the flow-run process may each store a Cancelled, so the state before the
    last is not always the Cancelling."""
    i = next((n for n, s in enumerate(states) if s.id == as_of), len(states) - 1) if as_of else len(states) - 1
    states = states[:i + 1]
    while i >= 0 and states[i].is_cancelled():
        i -= 1
    before = states[i] if 0 <= i < len(states) - 1 else None
    ours = before is not None and before.is_cancelling() and dead_letters.REQUEUING in (before.message or "")
    return before if ours else None


def interrupted_requeue(client, run, now: datetime, settle_seconds: float) -> Found | None:
    """Cancelled right after dead-letters' ``CG-RUN-REQUEUING`` Cancelling, and no requeue followed it within
    ``settle_seconds`` (the live handler requeues within ``CANCELLED_GRACE_SECONDS`` of the Cancelled)."""
    if dead_letters.REQUEUED not in run.tags or _age(run, now) < settle_seconds:
        return None
    before = requeuing_cancel(dead_letters.read_history(client, run))
    if before is None:
        return None
    how = f"the requeue after stopping its hung attempt was interrupted (the run stayed {run.state.message!r})"
    handled = dead_letters.requeue(client, run, f"{how}; requeue completed by the stuck-run sweep",
                                   crash=before.message or "", how=how)
    return Found(flow_run_id=str(run.id), state=run.state_name or "?", action=handled.outcome, reason=handled.reason)


def sweep(client, *, flow_name: str = "contract-review", tags: list[str] | None = None,
          stuck_seconds: float | None = None, zombie_seconds: float | None = None,
          margin_seconds: float = MARGIN_SECONDS) -> list[Found]:
    """Find the stuck runs of ``flow_name`` (``tags``: only runs with all of them) and crash or requeue each.
    ``margin_seconds``: added to the zombie window, and how long an interrupted requeue is given to finish."""
    config = settings()
    stuck_seconds = config.stuck_seconds if stuck_seconds is None else stuck_seconds
    zombie_seconds = float(zombie_seconds if zombie_seconds is not None else config.zombie_seconds or ZOMBIE_SECONDS)
    now = datetime.now(UTC)
    found: list[Found | None] = []
    for run in _runs(client, flow_name, [StateType.PENDING], tags):
        found.append(stuck_pending(client, run, now, stuck_seconds))
    for run in _runs(client, flow_name, [StateType.RUNNING], tags):
        found.append(stuck_running(client, run, now, zombie_seconds + margin_seconds))
    for run in _runs(client, flow_name, [StateType.SCHEDULED], tags):
        found.append(stuck_late(client, run, now, stuck_seconds))
    for run in _runs(client, flow_name, [StateType.CANCELLED], tags):
        found.append(interrupted_requeue(client, run, now, margin_seconds))
    return [f for f in found if f is not None]


def crashed_unhandled(client, *, flow_name: str = "contract-review", tags: list[str] | None = None,
                      settle_seconds: float = MARGIN_SECONDS) -> list[str]:
    """Crashed runs whose Crashed state is older than the trigger needs to hand them to dead-letters (so the sweep
    and a triggered handler never handle one crash at the same time)."""
    now = datetime.now(UTC)
    return [str(r.id) for r in _runs(client, flow_name, [StateType.CRASHED], tags) if _age(r, now) >= settle_seconds]


def recover_stuck_runs(slack_block: str | None = None) -> list[dict]:
    """The ``dead-letters`` flow without a run id (its schedule): sweep stuck runs, then handle crashed runs the
    trigger missed; dead letters alert."""
    logger = get_run_logger()
    with get_client(sync_client=True) as client:
        found = sweep(client)
        handled = [dead_letters.handle(client, rid) for rid in crashed_unhandled(client)]
    for item in found:
        logger.info("stuck run %s (%s): %s — %s", item.flow_run_id, item.state, item.action, item.reason)
    return [f.model_dump() for f in found] + dead_letters.report(handled, slack_block)
