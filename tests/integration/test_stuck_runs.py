"""Runs a crash or a restart leaves stuck: found by evidence and requeued once, or failed with a code, by
the stuck-run sweep (clausegate/ops/stuck_runs.py) and dead-letters (clausegate/ops/dead_letters.py); and the inbox
never shows a final Prefect state as ``pending``.

Against the session Prefect server: each test puts contract-review runs of a deployment into the state a crash
leaves (with the client, as a worker or the server would) and runs the sweep on its own runs only (a unique tag).
The end-to-end crash scenario with real processes is bench/crash_recovery.py.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from clausegate.config import InboxSettings
from clausegate.inbox.service import Inbox
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")

POOL = "stuck-runs-pool"


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _pool(client) -> str:
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    try:
        client.create_work_pool(WorkPoolCreate(name=POOL, type="process"))
    except ObjectAlreadyExists:
        pass
    return POOL


def _tag() -> str:
    return f"stuck-test-{uuid.uuid4().hex[:8]}"


def _run(client, tag: str, *, worker: str | None = None):
    """A contract-review run of a deployment on the test pool (Scheduled), tagged ``tag``; claimed by ``worker``."""
    deployment_id = client.create_deployment(flow_id=client.create_flow_from_name("contract-review"),
                                             name="stuck-runs", work_pool_name=_pool(client))
    run = client.create_flow_run_from_deployment(deployment_id, tags=[tag])
    if worker:
        client.update_flow_run_labels(run.id, {"prefect.worker.name": worker})
    return run


def _set(client, run_id, *states) -> None:
    for state in states:
        client.set_flow_run_state(run_id, state, force=True)


def _live_worker(client, name: str) -> None:
    client.send_worker_heartbeat(_pool(client), name, heartbeat_interval_seconds=30)


def _emit(client, name: str, resource: dict, related: list | None = None) -> None:
    from prefect.events import Event

    event = Event(occurred=datetime.now(UTC), event=name, resource=resource, related=related or [])
    client.request("POST", "/events", json=[event.model_dump(mode="json")]).raise_for_status()


def _executed(client, run_id) -> None:
    """What a worker emits once a flow-run process it started has ended."""
    _emit(client, "prefect.worker.executed-flow-run", {"prefect.resource.id": "prefect.worker.process.stuck-worker"},
          [{"prefect.resource.id": f"prefect.flow-run.{run_id}", "prefect.resource.role": "flow-run"}])


def _wait_visible(client, run_id, name: str, timeout: float = 30) -> None:
    """Until the events API returns the event ``name`` about the run (events are stored asynchronously)."""
    from prefect.events.filters import EventFilter, EventNameFilter, EventRelatedFilter, EventResourceFilter

    deadline = time.monotonic() + timeout
    while True:
        related = EventFilter(event=EventNameFilter(name=[name]),
                              related=EventRelatedFilter(id=[f"prefect.flow-run.{run_id}"]))
        own = EventFilter(event=EventNameFilter(name=[name]),
                          resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"]))
        if client.read_events(related, limit=1).events or client.read_events(own, limit=1).events:
            return
        assert time.monotonic() < deadline, f"event {name} of {run_id} never became visible"
        time.sleep(0.3)


def _sweep(client, tag: str, **kwargs):
    from clausegate.ops import stuck_runs

    return {f.flow_run_id: f for f in stuck_runs.sweep(client, tags=[tag], **kwargs)}


def _cleanup(client, *runs) -> None:
    from prefect.states import Cancelled

    for run in runs:
        client.set_flow_run_state(run.id, Cancelled(message="test cleanup"), force=True)


def _view(client, run_id, tmp_path):
    inbox = Inbox(InboxSettings(data_dir=tmp_path / "inbox"), ui_url="http://127.0.0.1:4200")
    return asyncio.run(inbox.view(client.read_flow_run(run_id)))


# --------------------------------------------------------------------------- Pending / Submitting


def test_a_run_claimed_by_a_worker_that_died_is_crashed_then_requeued_once():
    """Pending and Submitting (the claim of a worker killed before it started the process): crashed with
    CG-RUN-STUCK past the threshold, then requeued by dead-letters (the worker is offline); a fresh claim is left
    alone. A sweep of Crashed runs only would leave them Pending for good."""
    from prefect.states import Pending, Submitting

    from clausegate.ops import dead_letters, stuck_runs

    tag = _tag()
    with _client() as client:
        pending, submitting = _run(client, tag, worker="killed-worker"), _run(client, tag, worker="killed-worker")
        _set(client, pending.id, Pending())
        _set(client, submitting.id, Pending(), Submitting())
        assert _sweep(client, tag, stuck_seconds=3600) == {}  # a claim younger than the threshold is live
        time.sleep(1.5)
        found = _sweep(client, tag, stuck_seconds=1)
        try:
            assert set(found) == {str(pending.id), str(submitting.id)}, found
            for run in (pending, submitting):
                state = client.read_flow_run(run.id).state
                assert state.is_crashed() and state.message.startswith(stuck_runs.STUCK), state
                assert "killed-worker" in state.message
                handled = dead_letters.handle(client, str(run.id), stop_seconds=30)
                assert handled.outcome == "requeued", handled
                assert client.read_flow_run(run.id).state.is_scheduled()
        finally:
            _cleanup(client, pending, submitting)


# --------------------------------------------------------------------------- Running with no heartbeat


def test_a_running_run_without_heartbeats_is_crashed_but_a_live_one_is_not():
    """Running with no process after a server restart lost the zombie automation's window: crashed by the sweep.
    A run that sent a heartbeat within the window is live and left alone."""
    from prefect.states import Pending, Running

    from clausegate.ops import stuck_runs

    tag = _tag()
    with _client() as client:
        dead, live = _run(client, tag, worker="w"), _run(client, tag, worker="w")
        for run in (dead, live):
            _set(client, run.id, Pending(), Running())
        started = max(client.read_flow_run(r.id).state.timestamp for r in (dead, live))
        # the heartbeat comes 3 s after both Running states: a window ending 1 s after them holds it with 2 s to spare
        wait_until(lambda: datetime.now(UTC) > started + timedelta(seconds=3), 10, what="3 s past the Running states")
        _emit(client, "prefect.flow-run.heartbeat", {"prefect.resource.id": f"prefect.flow-run.{live.id}"})
        _wait_visible(client, live.id, "prefect.flow-run.heartbeat")
        # a window both Running states are older than, which still holds the heartbeat (sent 3 s after them)
        window = (datetime.now(UTC) - started).total_seconds() - 1
        found = _sweep(client, tag, zombie_seconds=window, margin_seconds=0)
        try:
            assert set(found) == {str(dead.id)}, found
            state = client.read_flow_run(dead.id).state
            assert state.is_crashed() and state.message.startswith(stuck_runs.CRASHED), state
            assert client.read_flow_run(live.id).state.is_running()
        finally:
            _cleanup(client, dead, live)


# --------------------------------------------------------------------------- Late behind a stale process


def _requeued(client, tag: str, worker: str):
    """A run whose attempt 1 ran on ``worker``, crashed, and was requeued by dead-letters (tag + Scheduled)."""
    from prefect.states import Crashed, Pending, Running, Scheduled

    from clausegate.ops import dead_letters

    run = _run(client, tag, worker=worker)
    _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat for 150 s"))
    client.update_flow_run(run.id, tags=[tag, dead_letters.REQUEUED])
    _set(client, run.id, Scheduled(message=f"{dead_letters.REQUEUED_CODE}: crashed; requeued once automatically"))
    return run


def test_a_requeued_run_late_behind_its_stale_process_is_stopped_and_requeued_again():
    """The worker still holds the crashed attempt's process (no executed event, online, not restarted): the requeued
    run would sit Late for good ("Duplicate submission"). The sweep crashes it (CG-RUN-STUCK) and dead-letters stops
    the process through that worker and requeues it again, since the requeued attempt never ran: not a dead letter.
    A requeued run whose old process did end (the worker said so) is only waiting for a slot: left alone."""
    import threading

    from clausegate.ops import dead_letters, stuck_runs

    tag = _tag()
    with _client() as client:
        _live_worker(client, "stuck-worker")
        stale, waiting = _requeued(client, tag, "stuck-worker"), _requeued(client, tag, "stuck-worker")
        _executed(client, waiting.id)
        _wait_visible(client, waiting.id, "prefect.worker.executed-flow-run")
        time.sleep(1.5)
        found = _sweep(client, tag, stuck_seconds=1)
        try:
            assert set(found) == {str(stale.id)}, found
            state = client.read_flow_run(stale.id).state
            assert state.is_crashed() and state.message.startswith(stuck_runs.STUCK) and "duplicate" in state.message
            result: dict = {}

            def handle() -> None:
                with _client() as own:
                    result["handled"] = dead_letters.handle(own, str(stale.id), stop_seconds=60)

            handler = threading.Thread(target=handle, daemon=True)
            handler.start()
            deadline = time.monotonic() + 30
            while not client.read_flow_run(stale.id).state.is_cancelling():  # asks the worker to stop it
                assert time.monotonic() < deadline, "dead-letters did not ask the worker to stop the stale process"
                time.sleep(0.2)
            # the worker killed it: it stores Cancelled, then reports the process ended (Prefect 3.9's order)
            from prefect.states import Cancelled

            _set(client, stale.id, Cancelled(message="Flow run was cancelled"))
            _executed(client, stale.id)
            handler.join(120)
            assert not handler.is_alive(), "dead-letters did not finish within 120 s of the worker's executed event"
            handled = result["handled"]
            assert handled.outcome == "requeued", handled
            after = client.read_flow_run(stale.id)
            assert after.state.is_scheduled() and dead_letters.REQUEUED_AGAIN in after.tags
            assert client.read_flow_run(waiting.id).state.is_scheduled()
        finally:
            _cleanup(client, stale, waiting)


# --------------------------------------------------------------------------- a stale attempt's crash after the requeue


def test_a_crash_booked_before_the_requeued_attempt_ran_is_not_a_dead_letter():
    """Warm start: the stale fork of attempt 1 is continued after the requeue and its exit is booked as a crash of
    the run, still Late. It is requeued again (once), not failed with CG-RUN-DEAD-LETTER with the contract never
    reviewed; a crash of the requeued attempt after it ran is a dead letter."""
    from prefect.states import Crashed, Pending, Running

    from clausegate.ops import dead_letters

    tag = _tag()
    with _client() as client:
        run = _requeued(client, tag, "gone-worker")
        _set(client, run.id, Crashed(message="Flow run infrastructure exited with non-zero status code -15"))
        try:
            again = dead_letters.handle(client, str(run.id), stop_seconds=30)
            assert again.outcome == "requeued", again
            assert client.read_flow_run(run.id).state.is_scheduled()
            _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: process killed"))
            dead = dead_letters.handle(client, str(run.id), stop_seconds=30)
            assert dead.outcome == "dead-lettered", dead
            assert client.read_flow_run(run.id).state.message.startswith(dead_letters.CODE)
        finally:
            _cleanup(client, run)


def test_a_crash_whose_worker_was_restarted_since_is_requeued_without_waiting_for_it():
    """`clausegate down && up` after a worker was killed: a worker of the same name is online again but holds none
    of the old processes. dead-letters must not ask it to stop the process (Cancelling): nobody would, and the run
    would be dead-lettered at the stop timeout."""
    from prefect.states import Crashed, Pending, Running

    from clausegate.ops import dead_letters

    tag = _tag()
    with _client() as client:
        run = _run(client, tag, worker="restarted-worker")
        _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"))
        _live_worker(client, "restarted-worker")
        _emit(client, "prefect.worker.started", {"prefect.resource.id": "prefect.worker.process.restarted-worker",
                                                 "prefect.resource.name": "restarted-worker"})
        deadline, started = time.monotonic() + 30, client.read_flow_run(run.id).start_time
        while not dead_letters.worker_started_since(client, "restarted-worker", started):
            assert time.monotonic() < deadline, "the worker's started event never became visible"
            time.sleep(0.3)
        try:
            handled = dead_letters.handle(client, str(run.id), stop_seconds=5)
            assert handled.outcome == "requeued" and "restarted" in handled.reason, handled
            names = [s.name for s in client.read_flow_run_states(run.id)]
            assert "Cancelling" not in names
        finally:
            _cleanup(client, run)


# --------------------------------------------------------------------------- Cancelled in the middle of a requeue


def test_a_requeue_interrupted_after_the_cancelled_is_completed_and_the_inbox_never_says_pending(tmp_path):
    """dead-letters set Cancelling (CG-RUN-REQUEUING) and died with its worker; the server's cancellation timeout
    stored Cancelled. The inbox says ``processing`` (no ``finished``), never ``pending`` with ``finished`` set, and
    the sweep completes the requeue."""
    from prefect.states import Cancelled, Cancelling, Crashed, Pending, Running

    from clausegate.ops import dead_letters

    tag = _tag()
    with _client() as client:
        run = _run(client, tag, worker="w")
        _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"))
        client.update_flow_run(run.id, tags=[tag, dead_letters.REQUEUED])
        _set(client, run.id, Cancelling(message=f"{dead_letters.REQUEUING}: stopping the hung attempt 1"),
             Cancelled(message="Flow run cancellation timed out; marked this flow run as Cancelled."))
        try:
            view = _view(client, run.id, tmp_path)
            assert view.status == "processing" and view.finished is None and view.error is None, view
            assert _sweep(client, tag, margin_seconds=3600) == {}  # the live handler still has time
            time.sleep(1.5)
            found = _sweep(client, tag, margin_seconds=1)
            assert found[str(run.id)].action == "requeued", found
            state = client.read_flow_run(run.id).state
            assert state.is_scheduled() and state.message.startswith(dead_letters.REQUEUED_CODE)
            assert _view(client, run.id, tmp_path).status == "pending"
        finally:
            _cleanup(client, run)


def test_a_requeue_after_a_cancelling_waits_out_prefects_event_replay_and_one_without_starts_at_once():
    """A worker's new cancellation watch is replayed the last minute of events: an attempt requeued within that
    minute of the Cancelling that stopped its predecessor would be killed by it. The requeue is scheduled
    REPLAY_SECONDS after that Cancelling (the server's timestamps); a run never cancelled is scheduled at once."""
    from prefect.states import Cancelled, Cancelling, Crashed, Pending, Running

    from clausegate.ops import dead_letters
    from clausegate.runs import states

    tag = _tag()
    with _client() as client:
        stopped, crashed = _run(client, tag, worker="w"), _run(client, tag, worker="w")
        _set(client, stopped.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"),
             Cancelling(message=f"{dead_letters.REQUEUING}: stopping the hung attempt 1"), Cancelled())
        _set(client, crashed.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"))
        try:
            for run in (stopped, crashed):
                assert dead_letters.requeue(client, client.read_flow_run(run.id), "test", crash="c",
                                            how="h").outcome == "requeued"
            history = dead_letters.read_history(client, client.read_flow_run(stopped.id))
            cancelling = [s for s in history if s.is_cancelling()][-1]
            requeued = client.read_flow_run(stopped.id).state
            assert requeued.is_scheduled() and requeued.state_details.scheduled_time == (
                cancelling.timestamp + timedelta(seconds=states.REPLAY_SECONDS))
            at_once = client.read_flow_run(crashed.id).state
            assert at_once.is_scheduled() and at_once.state_details.scheduled_time <= at_once.timestamp + timedelta(
                seconds=1)
        finally:
            _cleanup(client, stopped, crashed)


def test_a_cancelled_run_after_an_earlier_requeue_is_cancelled_not_pending(tmp_path):
    """A run requeued once (its history has dead-letters' CG-RUN-REQUEUING Cancelling), then cancelled ("Flow run
    cancellation timed out") in its second attempt: the inbox must not show ``pending`` with ``finished`` set.
    A final state is never ``pending``; the sweep leaves a real cancel alone."""
    from prefect.states import Cancelled, Cancelling, Crashed, Pending, Running, Scheduled

    from clausegate.ops import dead_letters

    tag = _tag()
    with _client() as client:
        run = _run(client, tag, worker="w")
        _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"),
             Cancelling(message=f"{dead_letters.REQUEUING}: stopping the hung attempt 1"),
             Cancelled(message="Flow run was cancelled successfully."),
             Scheduled(message=f"{dead_letters.REQUEUED_CODE}: requeued once automatically"),
             Pending(), Running(), Cancelling(message="cancelled by the sender"),
             Cancelled(message="Flow run cancellation timed out; marked this flow run as Cancelled."))
        client.update_flow_run(run.id, tags=[tag, dead_letters.REQUEUED])
        try:
            view = _view(client, run.id, tmp_path)
            assert view.status == "cancelled" and view.finished is not None, view
            time.sleep(1.5)
            assert _sweep(client, tag, margin_seconds=1) == {}
            assert client.read_flow_run(run.id).state.is_cancelled()
        finally:
            _cleanup(client, run)


def test_crashed_runs_the_trigger_missed_are_handled_only_once_settled():
    """The sweep hands a Crashed run to dead-letters only when its Crashed state is older than the trigger needs
    (so a triggered handler and the sweep never requeue one crash twice)."""
    from prefect.states import Crashed, Pending, Running

    from clausegate.ops import stuck_runs

    tag = _tag()
    with _client() as client:
        run = _run(client, tag, worker="w")
        _set(client, run.id, Pending(), Running(), Crashed(message="CG-RUN-CRASHED: no heartbeat"))
        try:
            assert stuck_runs.crashed_unhandled(client, tags=[tag], settle_seconds=3600) == []
            time.sleep(1.5)
            assert stuck_runs.crashed_unhandled(client, tags=[tag], settle_seconds=1) == [str(run.id)]
        finally:
            _cleanup(client, run)
