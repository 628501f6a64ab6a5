"""Dead letters: a contract-review run that crashed (its process or machine died) is requeued once; a
second crash fails it for good, with an alert.

The chain is Prefect's: flow-run heartbeats + the ``clausegate-zombie-runs`` automation mark a run
whose heartbeat stopped as Crashed (deployments/automations.yaml; ``CLAUSEGATE_ZOMBIE_SECONDS``
sets how long, default 150 s); every Crashed contract-review run triggers the ``dead-letters``
deployment (flows/dead_letters.py: its trigger in prefect.yaml, plus a backstop schedule), which calls
:func:`handle_crashed_runs` here and that :func:`handle` for each crashed run:

* first crash  → tag ``dead-letter:requeued``, make sure the crashed attempt's process is gone
  (:func:`stop_stale_attempt`), then set the run Scheduled again (same run id, as ``prefect
  flow-run retry`` does; finished steps come from the cache, nothing is paid twice);
* second crash → Failed with ``CG-RUN-DEAD-LETTER`` (the inbox lists it under ``status=failed``
  with that code; ``POST /inbox/tasks/{id}/retry`` or ``prefect flow-run retry`` runs it again
  by hand), tag ``dead-letter:failed``, and a message to the Slack alert channel;
* a crash of a run that was waiting at a gate (Suspended: it has no process, so it cannot be a
  zombie — a stray heartbeat of a stale process made the automation fire) → the gate is put back
  as it was (same pause key, form and timeout), ``restored``; nothing else changes.

Why the crashed attempt must be stopped first: a *hung* process (SIGSTOP, a frozen VM) is crashed
by the zombie automation while its worker is alive and still holds a concurrency slot for that run
id. Set Scheduled at once, the run is refused by that worker ("Duplicate submission … will not
re-submit") and sits Late; and when the hung process wakes it carries on with a run it no longer
owns. So, unless the worker already reported the process ended (its ``prefect.worker.executed-
flow-run`` event after the attempt's Running state) or the worker is offline (the machine died:
another worker takes the run), the handler sets the run **Cancelling**: Prefect's cancellation
observer in the worker that owns the process kills it (SIGTERM, SIGKILL after 30 s — a stopped
process only dies of SIGKILL), frees the slot, stores Cancelled and reports the run executed; then the handler
requeues (20 s after the Cancelled when no executed event came; the attempt starts 75 s after the Cancelling at
the earliest, :func:`clausegate.runs.states.not_before`). If that does not happen within
``CLAUSEGATE_REQUEUE_STOP_SECONDS`` (default 120) the run is dead-lettered instead (a requeue would race the
worker's late Cancelled). A stale process that survives anyway (its worker died) is fenced by
:mod:`clausegate.runs.attempts`: it exits without touching the run.

Each step is written to the audit log (``clausegate.audit.run.requeued`` / ``run.dead-lettered`` /
``run.gate-restored``); a dead letter is posted to the alert channel (``clausegate.ops.alerts.post_alert``).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Literal
from uuid import UUID

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterExpectedStartTime,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.events.clients import get_events_subscriber
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventRelatedFilter
from prefect.settings import PREFECT_UI_URL
from prefect.states import Cancelling, Failed, Scheduled, State
from prefect.utilities.asyncutils import run_coro_as_sync
from pydantic import BaseModel

from clausegate import audit
from clausegate.config import load_slack_settings, settings
from clausegate.ops.alerts import post_alert
from clausegate.runs.states import not_before
from clausegate.slack import SlackError

REQUEUED = "dead-letter:requeued"
REQUEUED_AGAIN = "dead-letter:requeued-stale"  # once more: a crash reported before the requeued attempt ran
DEAD = "dead-letter:failed"
CODE = "CG-RUN-DEAD-LETTER"
REQUEUED_CODE = "CG-RUN-REQUEUED"  # the message of the Scheduled state of a requeue
REQUEUING = "CG-RUN-REQUEUING"  # the message of the Cancelling state that stops a hung attempt before its requeue
RESTORED = "CG-RUN-GATE-RESTORED"
ACTOR = "dead-letters"
STOP_SECONDS_ENV = "CLAUSEGATE_REQUEUE_STOP_SECONDS"
EXECUTED = "prefect.worker.executed-flow-run"
CANCELLED_GRACE_SECONDS = 20.0  # after the worker's Cancelled, how long its executed event may take (normally < 1 s)

Outcome = Literal["requeued", "dead-lettered", "restored", "skipped"]


class Handled(BaseModel):
    flow_run_id: str
    flow_run_name: str = ""
    outcome: Outcome
    reason: str


def run_id_of(value: str) -> str:
    """A flow run id from a bare UUID or an event resource id (``prefect.flow-run.<uuid>``)."""
    return str(UUID(value.rsplit(".", 1)[-1].strip()))


def handle(client, flow_run_id: str, *, stop_seconds: float | None = None) -> Handled:
    """Requeue a crashed run once (its stale process stopped first), or fail it for good (sync Prefect client)."""
    run = client.read_flow_run(UUID(flow_run_id))
    rid = str(run.id)
    if run.state_type != StateType.CRASHED:
        return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="skipped",
                       reason=f"the run is {run.state_name}, not Crashed (already handled or recovered)")
    crash = (run.state.message or "no message") if run.state else "no message"
    history = read_history(client, run)
    before = history[-2] if len(history) >= 2 else None
    if before is not None and before.is_paused() and before.state_details.pause_reschedule:
        return _restore_gate(client, run, before, crash)
    again = _requeue_kind(run, history)
    if again is not None:
        tag = REQUEUED if again == "once" else REQUEUED_AGAIN
        if tag not in run.tags:
            client.update_flow_run(run.id, tags=[*run.tags, tag])
        stopped, how = stop_stale_attempt(client, run, history, timeout=stop_seconds)
        if stopped:
            why = ("requeued once automatically" if again == "once" else "the requeued attempt had not started, so "
                   "this crash was its predecessor's; requeued again")
            return requeue(client, run, f"crashed ({crash[:300]}); {how}; {why}", crash=crash, how=how)
        crash = f"{crash}; {how}"
    message = (f"{CODE}: crashed again after one automatic requeue ({crash[:300]}). Next step: see docs/runbook.md "
               f"'worker down'; when the cause is fixed, retry it: POST /inbox/tasks/{rid}/retry or "
               f"`prefect flow-run retry {rid}`")
    if again is not None:  # (the requeue was given up above: say so, not "again")
        message = (f"{CODE}: crashed and its hung process could not be stopped, so it was not requeued "
                   f"({crash[:400]}). Next step: stop the process on the worker's machine (docs/runbook.md "
                   f"'worker down'), then retry: POST /inbox/tasks/{rid}/retry or `prefect flow-run retry {rid}`")
    tags = run.tags if REQUEUED in run.tags else [*run.tags, REQUEUED]
    client.update_flow_run(run.id, tags=[*tags, DEAD])  # tag first: whoever sees Failed sees why
    client.set_flow_run_state(run.id, Failed(message=message), force=True)
    audit.record(audit.audit_event("run.dead-lettered", actor=ACTOR, flow_run_id=rid, crash=crash[:500]))
    return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="dead-lettered", reason=message)


def _requeue_kind(run, history: list) -> Literal["once", "again"] | None:
    """Whether this crash is requeued: ``once`` (no requeue yet: the first crash, or a requeue that was interrupted
    before its Scheduled), ``again`` (requeued, but the requeued attempt never reached Running: the crash is the old
    attempt's late exit or the requeued run stuck behind it, not a failure of the contract; allowed once), None
    (the requeued attempt ran and crashed: a dead letter)."""
    requeues = [s.timestamp for s in history if s.is_scheduled() and (s.message or "").startswith(REQUEUED_CODE)]
    ran = bool(requeues) and any(s.is_running() and s.timestamp > requeues[-1] for s in history)
    if not requeues:
        return "once"
    return "again" if not ran and REQUEUED_AGAIN not in run.tags else None


def requeue(client, run, message: str, *, crash: str, how: str) -> Handled:
    """Set the run Scheduled again (``CG-RUN-REQUEUED: message``) and audit it: its stale attempt is gone. Not when
    another handler (a triggered run and a sweep, or two sweeps after a restart) requeued it meanwhile: a forced
    Scheduled would overwrite the attempt that requeue started."""
    rid = str(run.id)
    now = client.read_flow_run(run.id).state
    if now is None or not (now.is_crashed() or now.is_cancelling() or now.is_cancelled()):
        return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="skipped",
                       reason=f"requeued by another handler meanwhile (it is {now.name if now else 'gone'})")
    when = not_before(read_history(client, run))
    client.set_flow_run_state(run.id, Scheduled(message=f"{REQUEUED_CODE}: {message}", scheduled_time=when), force=True)
    audit.record(audit.audit_event("run.requeued", actor=ACTOR, flow_run_id=rid, crash=crash[:500],
                                   stale_attempt=how, attempt=run.run_count))
    return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="requeued", reason=f"{crash} ({how})")


def read_history(client, run) -> list:
    """The run's states, oldest first."""
    return sorted(client.read_flow_run_states(run.id), key=lambda s: s.timestamp)


def _restore_gate(client, run, suspended, crash: str) -> Handled:
    """Put a gate crashed while it waited back as it was: same pause key, form (run input) and timeout."""
    rid = str(run.id)
    details = suspended.state_details.model_copy(update={"transition_id": None})
    state = State(type=suspended.type, name=suspended.name, state_details=details,
                  message=f"{RESTORED}: a run waiting at a gate has no process; it was marked crashed "
                          f"({crash[:200]}), so the gate was put back as it was")
    client.set_flow_run_state(run.id, state, force=True)
    audit.record(audit.audit_event("run.gate-restored", actor=ACTOR, flow_run_id=rid, crash=crash[:500],
                                   pause_key=details.pause_key))
    return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="restored",
                   reason=f"crashed while waiting at gate {details.pause_key} ({crash}); the gate was put back")


def stop_stale_attempt(client, run, history: list | None = None, *, timeout: float | None = None,
                       poll: float = 1.0) -> tuple[bool, str]:
    """Make sure the crashed attempt's process is gone before the run is requeued: (stopped?, how).

    Gone already when the worker reported the run executed after the attempt's Running state, or
    when that worker is offline (the machine died; the run goes to another worker, and a stale
    process that survives is fenced by clausegate.runs.attempts). Otherwise the run is set Cancelling and
    the worker that owns the process kills it (Prefect's cancellation; see the module docstring).
    """
    history = history if history is not None else read_history(client, run)
    # (the attempt's Running state, or its claim by a worker when it never got that far: Pending / Submitting)
    started = next((s.timestamp for s in reversed(history) if s.is_running() or s.is_pending()), None)
    if started is None:
        return True, "the crashed attempt never started"
    if executed_since(client, run.id, started):
        return True, "its process had already ended"
    worker = (run.labels or {}).get("prefect.worker.name")
    if not worker or not run.work_pool_name:
        return True, "no worker is recorded for it (not run by a worker)"
    if not worker_online(client, run.work_pool_name, worker):
        return True, f"its worker '{worker}' is offline"
    if worker_started_since(client, worker, started):
        return True, f"its worker '{worker}' was restarted since (a new worker process holds none of its processes)"
    timeout = stop_seconds() if timeout is None else timeout
    cancelling = Cancelling(message=f"{REQUEUING}: stopping the hung attempt {run.run_count} through its worker "
                                    f"'{worker}' before requeueing it")
    return run_coro_as_sync(_cancel_and_wait(client, run, cancelling, worker, started, timeout, poll))


async def _cancel_and_wait(client, run, cancelling, worker: str, started: datetime, timeout: float,
                           poll: float) -> tuple[bool, str]:
    """Set Cancelling and wait until the worker has stopped the process: its ``executed-flow-run`` event (live,
    from Prefect's event stream: the requeue follows within a moment, so the inbox hardly ever sees the worker's
    Cancelled); the persisted events, the run's state and the worker's heartbeat are checked at least every
    ``5 * poll`` s. The worker stores Cancelled after the kill, then reports the attempt's exit (a Crashed it
    proposes) and only then emits that event: a requeue at the Cancelled would be crashed by that late report. So
    a Cancelled with no event after it requeues only ``CANCELLED_GRACE_SECONDS`` later (an event that was lost
    must not leave the run to be dead-lettered at the deadline)."""
    deadline = time.monotonic() + timeout
    watch = EventFilter(event=EventNameFilter(name=[EXECUTED]),
                        related=EventRelatedFilter(id=[f"prefect.flow-run.{run.id}"]))
    stopped = f"its hung process was stopped by its worker '{worker}'"
    sent = False
    asked = datetime.now(UTC)
    grace = _CancelledGrace(stopped)
    try:
        async with get_events_subscriber(filter=watch) as events:  # subscribed before asking: nothing is missed
            client.set_flow_run_state(run.id, cancelling, force=True)
            sent = True
            stream = events.__aiter__()
            while (left := deadline - time.monotonic()) > 0:
                try:
                    event = await asyncio.wait_for(stream.__anext__(), timeout=min(5 * poll, left))
                except TimeoutError:
                    event = None
                # (the live stream does not apply the related-resource filter: check the run id here)
                ended = event.occurred if event is not None and event.occurred >= started \
                    and _concerns(event, run.id) else _executed_at(client, run.id, started)
                if ended is not None:
                    return True, await _settled(client, run.id, ended, asked, deadline, poll, stopped)
                if grace.over(client, run.id):
                    return True, grace.how
                if not worker_online(client, run.work_pool_name, worker):
                    return True, f"its worker '{worker}' went offline"
    except Exception:  # no event stream (e.g. a proxy without websockets): poll the stored events
        if not sent:
            asked = datetime.now(UTC)
            client.set_flow_run_state(run.id, cancelling, force=True)
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(poll, left))
            if (ended := _executed_at(client, run.id, started)) is not None:
                return True, await _settled(client, run.id, ended, asked, deadline, poll, stopped)
            if grace.over(client, run.id):
                return True, grace.how
            if not worker_online(client, run.work_pool_name, worker):
                return True, f"its worker '{worker}' went offline"
    return False, (f"its worker '{worker}' did not stop the hung process within {timeout:g} s "
                   f"({STOP_SECONDS_ENV})")


async def _settled(client, run_id, ended: datetime, asked: datetime, deadline: float, poll: float,
                   stopped: str) -> str:
    """How the attempt ended, once a requeue is safe. A process that ended before the Cancelling was set (killed;
    its event was stored only after the first look) has no worker cancelling it: Prefect's runner ignores a
    Cancelling run it holds no process for, so no Cancelled will come and there is nothing to wait for. One
    stopped by its worker is waited on (:func:`_cancellation_settled`)."""
    if ended < asked:
        return "its process had already ended"
    await _cancellation_settled(client, run_id, deadline, poll)
    return stopped


async def _cancellation_settled(client, run_id, deadline: float, poll: float) -> None:
    """Wait (until ``deadline``) for the worker to end its cancellation: it reports the process ended, then runs
    the cancellation hooks and proposes Cancelled, so a requeue set in between would be overwritten by that late
    Cancelled and the contract never reviewed. Past the deadline the requeue goes ahead (force) anyway."""
    while time.monotonic() < deadline:
        state = client.read_flow_run(run_id).state
        if state is None or not state.is_cancelling():
            return
        await asyncio.sleep(poll)


def stop_seconds() -> float:
    """``CLAUSEGATE_REQUEUE_STOP_SECONDS`` (default 120: the worker's kill needs 30 s SIGTERM grace + a poll or two)."""
    return settings().requeue_stop_seconds


def _executed_at(client, run_id, since: datetime) -> datetime | None:
    """When a worker reported this run's process ended (``prefect.worker.executed-flow-run``) after ``since``."""
    page = client.read_events(EventFilter(occurred=EventOccurredFilter(since=since),
                                          event=EventNameFilter(name=[EXECUTED]),
                                          related=EventRelatedFilter(id=[f"prefect.flow-run.{run_id}"])), limit=1)
    return page.events[0].occurred if page.events else None


class _CancelledGrace:
    """The worker's Cancelled seen without its executed event: over ``CANCELLED_GRACE_SECONDS`` after it was first
    seen (see :func:`_cancel_and_wait`)."""

    def __init__(self, stopped: str) -> None:
        self.seen: float | None = None
        self.how = (f"{stopped} (it stored Cancelled; its executed event did not come within "
                    f"{CANCELLED_GRACE_SECONDS:g} s)")

    def over(self, client, run_id) -> bool:
        if self.seen is None:
            if _cancelled(client, run_id):
                self.seen = time.monotonic()
            return False
        return time.monotonic() - self.seen >= CANCELLED_GRACE_SECONDS


def _cancelled(client, run_id) -> bool:
    """The run is Cancelled. It was Crashed when the handler set it Cancelling, so this is the state the worker's
    cancellation stores after the kill: nothing of the attempt is left running (its exit report and executed event
    may still follow: :class:`_CancelledGrace`). (No timestamps compared: the server's clock need not agree.)"""
    state = client.read_flow_run(run_id).state
    return state is not None and state.is_cancelled()


def executed_since(client, run_id, since: datetime) -> bool:
    return _executed_at(client, run_id, since) is not None


def _concerns(event, run_id) -> bool:
    """The event names this flow run as a related resource."""
    wanted = f"prefect.flow-run.{run_id}"
    return any(r.id == wanted for r in event.related)


def worker_online(client, pool: str, name: str) -> bool:
    """The worker sent a heartbeat within 3 of its heartbeat intervals (Prefect's own ONLINE rule)."""
    try:
        workers = client.read_workers_for_work_pool(pool, limit=200)
    except Exception:  # the pool is gone: nobody can stop anything there
        return False
    worker = next((w for w in workers if w.name == name), None)
    if worker is None or worker.last_heartbeat_time is None:
        return False
    horizon = timedelta(seconds=(worker.heartbeat_interval_seconds or 30) * 3)
    return worker.last_heartbeat_time > datetime.now(UTC) - horizon


def worker_started_since(client, name: str, since: datetime) -> bool:
    """A worker of that name started after ``since`` (its ``prefect.worker.started`` event): it holds no older slot."""
    page = client.read_events(EventFilter(occurred=EventOccurredFilter(since=since),
                                          event=EventNameFilter(name=["prefect.worker.started"])), limit=50)
    return any(e.resource.get("prefect.resource.name") == name for e in page.events)


def unhandled_crashed(client, *, flow_name: str = "contract-review", hours: float = 24) -> list[str]:
    """Crashed runs of ``flow_name`` scheduled in the last ``hours`` (started or not; for the backstop sweep)."""
    since = datetime.now(UTC) - timedelta(hours=hours)
    runs = client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CRASHED])),
                                      expected_start_time=FlowRunFilterExpectedStartTime(after_=since)), limit=200)
    return [str(r.id) for r in runs]


def alert_text(handled: Handled, run_url: str | None) -> str:
    link = f" <{run_url}|open in Prefect>" if run_url else ""
    return (f":rotating_light: *{CODE}* `{handled.flow_run_name}` ({handled.flow_run_id}) crashed twice and was "
            f"failed for good.{link}\n{handled.reason}")


def handle_crashed_runs(flow_run_id: str | None = None, slack_block: str | None = None) -> list[dict]:
    """The ``dead-letters`` flow: handle one crashed run (``flow_run_id``: a UUID or ``prefect.flow-run.<uuid>``)
    or, without one, every crashed contract-review run of the last 24 h; alert each dead letter."""
    with get_client(sync_client=True) as client:
        ids = [run_id_of(flow_run_id)] if flow_run_id else unhandled_crashed(client)
        results = [handle(client, rid) for rid in ids]
    return report(results, slack_block)


def report(results: list[Handled], slack_block: str | None) -> list[dict]:
    """Log each outcome and alert each dead letter (the flow's result)."""
    logger = get_run_logger()
    for handled in results:
        logger.info("%s %s: %s", handled.outcome, handled.flow_run_id, handled.reason)
        if handled.outcome == "dead-lettered":
            _alert(handled, slack_block, logger)
    return [h.model_dump() for h in results]


def _alert(handled: Handled, slack_block: str | None, logger) -> None:
    """Post the dead letter to the alert channel; a missing channel or a Slack failure is logged, not raised."""
    settings = load_slack_settings(slack_block)
    ui = PREFECT_UI_URL.value()
    text = alert_text(handled, f"{ui}/runs/flow-run/{handled.flow_run_id}" if ui else None)
    try:
        if settings is None or not post_alert(text, settings):
            logger.warning("CG-ALERT-NO-CHANNEL: no SlackSettings block / alert channel; the dead letter %s is "
                           "only in the logs and the audit log. Next step: set alert_channel (docs/slack.md)",
                           handled.flow_run_id)
    except SlackError as exc:
        logger.error("%s posting the dead-letter alert for %s: %s. Next step: docs/runbook.md, Slack", exc.code,
                     handled.flow_run_id, exc)
