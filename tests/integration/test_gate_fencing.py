"""A gate cannot be skipped: the fast checks, against the session Prefect server.

* Why the fence exists: Prefect accepts ``Crashed → Completed`` and ``Scheduled → Completed`` from a
  process that no longer owns the run.
* ``clausegate.runs.attempts``: a flow whose run was crashed or requeued under it exits with Prefect's
  Abort and leaves the run exactly as the server has it; a current attempt (or one being cancelled)
  carries on.
* A deployed contract-review run whose gate Prefect refuses to suspend (it was started as a
  subflow) fails with ``CG-GATE-CANNOT-SUSPEND`` instead of completing ``pending_decision``.
* dead-letters puts back a gate that was marked crashed while it waited (a stray heartbeat), and
  requeues a crashed run whose worker is gone without waiting for it.
* The inbox status follows the review: a Completed run whose review waits for a decision is never
  ``done``; a run being requeued stays ``pending``; no Prefect API URL in a response.

The SIGSTOP/SIGCONT end-to-end scenarios are in tests/support/gate_skip_scenarios.py (run by
tests/e2e/test_hung_runs.py).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC

import pytest

from clausegate.config import InboxSettings
from clausegate.inbox.service import Inbox
from tests.support.contracts import GATED_PAGES
from tests.support.gates import open_synthetic_gate
from tests.support.pdf_factory import make_text_pdf
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _state(run_id):
    with _client() as client:
        return client.read_flow_run(uuid.UUID(str(run_id))).state


def _names(run_id) -> list[str]:
    with _client() as client:
        return [s.name for s in sorted(client.read_flow_run_states(uuid.UUID(str(run_id))), key=lambda s: s.timestamp)]


# --------------------------------------------------------------------------- Prefect's own rules


def test_prefect_lets_a_process_complete_a_run_it_no_longer_owns():
    """The reason for clausegate.runs.attempts: the server does not reject these (if it ever does, good)."""
    from prefect import flow
    from prefect.states import Completed, Crashed, Running, Scheduled

    @flow(name="clausegate-fencing-probe")
    def probe():
        return None

    with _client() as client:
        for stale_view in (Crashed(message="zombie"), Scheduled(message="requeued")):
            run = client.create_flow_run(probe)
            client.set_flow_run_state(run.id, Running(), force=True)
            client.set_flow_run_state(run.id, stale_view, force=True)
            result = client.set_flow_run_state(run.id, Completed())  # what a stale engine proposes, not forced
            assert result.status.value == "ACCEPT", (stale_view.name, result)


# --------------------------------------------------------------------------- clausegate.runs.attempts


def _flow_that_is_overtaken(change):
    """An in-process flow: ``change(client, run_id)`` moves the run on the server, then the fence is asked."""
    from prefect import flow
    from prefect.context import FlowRunContext

    from clausegate.runs.attempts import ensure_current

    @flow(name="clausegate-fencing-probe", persist_result=False)
    def overtaken():
        run_id = FlowRunContext.get().flow_run.id
        with _client() as client:
            change(client, run_id)
        ensure_current("the test")
        return "completed by the stale process"

    return overtaken


@pytest.mark.parametrize("moved_to", ["crashed", "requeued", "newer-attempt-running", "newer-attempt-suspended"])
def test_a_stale_attempt_exits_without_changing_the_run(moved_to):
    from prefect.states import Crashed, Running, Scheduled, Suspended

    from clausegate.runs.attempts import STALE, StaleAttempt

    seen = {}

    def change(client, run_id):
        seen["run_id"] = run_id
        client.set_flow_run_state(run_id, Crashed(message="zombie: no heartbeat"), force=True)
        if moved_to != "crashed":
            client.set_flow_run_state(run_id, Scheduled(message="CG-RUN-REQUEUED"), force=True)
        if moved_to.startswith("newer-attempt"):
            client.set_flow_run_state(run_id, Running(), force=True)
        if moved_to == "newer-attempt-suspended":
            client.set_flow_run_state(run_id, Suspended(timeout_seconds=3600, pause_key="gate-r2-x"), force=True)
        seen["state_id"] = client.read_flow_run(run_id).state_id

    with pytest.raises(StaleAttempt, match=STALE):
        _flow_that_is_overtaken(change)()
    state = _state(seen["run_id"])
    assert state.id == seen["state_id"], "the stale process changed the run's state"
    assert "Completed" not in _names(seen["run_id"]) and "Failed" not in _names(seen["run_id"])


def test_the_current_attempt_and_one_being_cancelled_carry_on():
    from prefect.client.schemas.objects import StateType
    from prefect.states import State

    assert _flow_that_is_overtaken(lambda client, run_id: None)() == "completed by the stale process"

    def cancelling(client, run_id):  # Prefect's cancellation stops this process: the fence leaves it to it
        client.set_flow_run_state(run_id, State(type=StateType.CANCELLING, message="user cancel"), force=True)

    state = _flow_that_is_overtaken(cancelling)(return_state=True)  # the fence did not raise: the flow returned
    assert state.type == StateType.CANCELLING, state  # and Prefect refused its Completed: Cancelling → Cancelled only


def test_outside_a_flow_run_there_is_nothing_to_fence():
    from clausegate.runs.attempts import ensure_current

    assert ensure_current("anywhere") is None


def test_a_recent_confirmation_stands_in_for_the_read_only_within_the_window(monkeypatch):
    """Checks in quick succession share one read; after the window (or a pause the clocks saw) and
    with ``max_age=0`` the server is read again, and the crash made meanwhile is seen."""
    from prefect import flow
    from prefect.context import FlowRunContext
    from prefect.states import Crashed

    from clausegate.runs import attempts

    now = [1000.0, 1_700_000_000.0]  # the boot clock, the wall clock
    monkeypatch.setattr(attempts, "clocks", lambda: tuple(now))

    def tick(boot, wall):
        now[0] += boot
        now[1] += wall

    reads = []

    class Counting:
        def __init__(self, client):
            self.client = client

        def read_flow_run(self, run_id):
            reads.append(run_id)
            return self.client.read_flow_run(run_id)

    def check(client, where, **options):
        try:
            attempts.ensure_current(where, client=client, **options)
            return "current"
        except attempts.StaleAttempt:
            return "stale"

    @flow(name="clausegate-fencing-probe", persist_result=False)
    def probe():
        run_id = FlowRunContext.get().flow_run.id
        seen = []
        with _client() as own:
            client = Counting(own)
            seen.append((check(client, "parse"), len(reads)))  # the first check reads
            tick(0.5, 0.5)
            seen.append((check(client, "prefilter"), len(reads)))  # 0.5 s later: no read
            tick(0, 120)  # the wall clock jumped (a paused VM whose clock is stepped on resume): read
            seen.append((check(client, "extract"), len(reads)))
            tick(0.1, 0.1)
            own.set_flow_run_state(run_id, Crashed(message="zombie: no heartbeat"), force=True)
            seen.append((check(client, "generate"), len(reads)))  # within the window: no read (the race it allows)
            tick(45, 45)  # stopped for the zombie window: the boot clock ran on, so the next check reads
            seen.append((check(client, "report"), len(reads)))
            seen.append((check(client, "failing the gate", max_age=0), len(reads)))  # max_age=0: always reads
        return seen

    assert probe() == [("current", 1), ("current", 1), ("current", 2), ("current", 2), ("stale", 3), ("stale", 4)]
    now[0] += 0.1  # a new run in this process does not reuse another attempt's confirmation
    assert probe()[0] == ("current", 5)


# --------------------------------------------------------------------------- the gate cannot be skipped


def test_a_deployed_run_that_cannot_suspend_fails_instead_of_completing(tmp_path, monkeypatch):
    """A contract-review deployment run started as a subflow (Prefect refuses to suspend subflows)."""
    from prefect import flow
    from prefect.deployments import run_deployment
    from prefect.flow_engine import run_flow

    from flows.contract_review import contract_review

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    pdf = make_text_pdf(tmp_path / "gated.pdf", GATED_PAGES)
    with _client() as client:
        flow_id = client.create_flow_from_name("contract-review")
        client.create_deployment(flow_id=flow_id, name="fencing-subflow")  # served by nobody: run in-process below

    @flow(name="clausegate-fencing-parent")
    def parent():
        return run_deployment("contract-review/fencing-subflow", timeout=0, as_subflow=True, parameters={
            "source": str(pdf), "playbook": "payment-liability", "out_dir": str(tmp_path / "out")})

    child = parent()
    assert child.parent_task_run_id is not None
    state = asyncio.run(run_flow(contract_review, flow_run=child, return_type="state"))
    assert state.is_failed(), (state.type, state.message)
    assert state.message.startswith("CG-GATE-CANNOT-SUSPEND at step 'gate'"), state.message
    report = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert report["status"] == "partial_failure" and report["decisions"] == []
    assert report["failure"]["code"] == "CG-GATE-CANNOT-SUSPEND" and "subflow" in report["failure"]["message"]
    assert "Completed" not in _names(child.id)


def test_a_plain_review_without_deployment_still_ends_pending_decision_but_is_not_done(tmp_path, monkeypatch):
    """Documented behaviour kept (a local review cannot wait); the inbox would never call it done."""
    from clausegate.inbox.status import status_of
    from flows.contract_review import contract_review

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    pdf = make_text_pdf(tmp_path / "gated.pdf", GATED_PAGES)
    state = asyncio.run(contract_review(str(pdf), playbook="payment-liability", out_dir=str(tmp_path / "out"),
                                        return_state=True))
    review = state.result()
    assert state.is_completed() and review.status == "pending_decision" and review.decisions == []
    assert status_of("COMPLETED", review) == "failed"


# --------------------------------------------------------------------------- dead-letters


def test_a_gate_marked_crashed_while_it_waited_is_put_back():
    """A Suspended run has no process: a zombie verdict on it comes from a stray heartbeat of a stale process."""
    from prefect.states import Crashed

    from clausegate.gates import waiting_gates
    from clausegate.ops import dead_letters

    gate = open_synthetic_gate(None, filename="restored.pdf")
    before = _state(gate.flow_run_id)
    with _client() as client:  # as the zombie automation does it: not forced, and Prefect accepts it
        result = client.set_flow_run_state(uuid.UUID(gate.flow_run_id), Crashed(message="CG-RUN-CRASHED: no heartbeat"))
        assert result.status.value == "ACCEPT"
        handled = dead_letters.handle(client, gate.flow_run_id)
    assert handled.outcome == "restored", handled
    after = _state(gate.flow_run_id)
    assert after.name == "Suspended" and after.message.startswith(dead_letters.RESTORED)
    assert after.state_details.pause_key == before.state_details.pause_key == gate.key
    assert after.state_details.run_input_keyset == before.state_details.run_input_keyset
    listed = next(g for g in waiting_gates() if g.flow_run_id == gate.flow_run_id)
    assert listed.record.key == gate.key
    with _client() as client:  # the form (schema + description) is still there for the UI
        schema = client.read_flow_run_input(uuid.UUID(gate.flow_run_id), after.state_details.run_input_keyset["schema"])
    assert "decision" in schema


def test_a_crashed_run_whose_worker_is_gone_is_requeued_at_once():
    from prefect.states import Crashed, Running

    from clausegate.ops import dead_letters

    with _client() as client:
        deployment_id = client.create_deployment(flow_id=client.create_flow_from_name("contract-review"),
                                                 name="fencing-requeue", work_pool_name=_fencing_pool(client))
        run = client.create_flow_run_from_deployment(deployment_id, tags=["fencing-test"])
        client.set_flow_run_state(run.id, Running(), force=True)
        client.update_flow_run_labels(run.id, {"prefect.worker.name": "a-worker-that-died"})
        client.set_flow_run_state(run.id, Crashed(message="CG-RUN-CRASHED: no heartbeat"), force=True)
        handled = dead_letters.handle(client, str(run.id), stop_seconds=60)
        assert handled.outcome == "requeued", handled
        assert "worker 'a-worker-that-died' is offline" in handled.reason, handled
        assert client.read_flow_run(run.id).state_type.value == "SCHEDULED"
        assert "Cancelling" not in _names(run.id)
        from prefect.states import Cancelled

        client.set_flow_run_state(run.id, Cancelled(message="test cleanup"), force=True)


def _fencing_pool(client) -> str:
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    try:
        client.create_work_pool(WorkPoolCreate(name="fencing-pool", type="process"))
    except ObjectAlreadyExists:
        pass
    return "fencing-pool"


def _post_executed(client, run_id, occurred=None) -> None:
    """What a worker emits once a flow-run process it started has ended."""
    from datetime import datetime

    from prefect.events import Event

    event = Event(occurred=occurred or datetime.now(UTC), event="prefect.worker.executed-flow-run",
                  resource={"prefect.resource.id": "prefect.worker.process.fencing-worker"},
                  related=[{"prefect.resource.id": f"prefect.flow-run.{run_id}", "prefect.resource.role": "flow-run"}])
    client.request("POST", "/events", json=[event.model_dump(mode="json")]).raise_for_status()


def _crashed_on_a_live_worker(client, deployment: str, why: str):
    """A contract-review run that was Running on the online worker ``fencing-worker`` and is now Crashed."""
    from prefect.states import Crashed, Running

    pool = _fencing_pool(client)
    client.send_worker_heartbeat(pool, "fencing-worker", heartbeat_interval_seconds=30)
    deployment_id = client.create_deployment(flow_id=client.create_flow_from_name("contract-review"),
                                             name=deployment, work_pool_name=pool)
    run = client.create_flow_run_from_deployment(deployment_id, tags=["fencing-test"])
    client.set_flow_run_state(run.id, Running(), force=True)
    client.update_flow_run_labels(run.id, {"prefect.worker.name": "fencing-worker"})
    client.set_flow_run_state(run.id, Crashed(message=f"CG-RUN-CRASHED: {why}"), force=True)
    return run, deployment_id


def _handle_in_background(run_id):
    """``dead_letters.handle`` of the run in a thread: (the thread, a dict that gets ``handled``)."""
    import threading

    result: dict = {}
    handler = threading.Thread(target=lambda: result.update(handled=_handle(run_id)), daemon=True)
    handler.start()
    return handler, result


def _wait_until_cancelling(client, run_id, timeout: float = 30) -> None:
    wait_until(lambda: client.read_flow_run(run_id).state_type.value == "CANCELLING", timeout,
               what="the run set Cancelling", step=0.1)


def _post_executed_and_see_it(client, run_id, timeout: float = 30) -> None:
    """:func:`_post_executed`, then wait until Prefect's live event stream (the one dead-letters' handler listens
    to) has delivered it to a subscriber of our own: the handler has it too."""
    from prefect.events.clients import get_events_subscriber
    from prefect.events.filters import EventFilter, EventNameFilter

    async def post_and_see() -> None:
        watch = EventFilter(event=EventNameFilter(name=["prefect.worker.executed-flow-run"]))
        async with get_events_subscriber(filter=watch) as events:
            _post_executed(client, run_id)
            async for event in events:
                if any(r.id == f"prefect.flow-run.{run_id}" for r in event.related):
                    return

    asyncio.run(asyncio.wait_for(post_and_see(), timeout))


def test_a_hung_attempt_is_stopped_through_its_live_worker_before_the_requeue(tmp_path):
    """The worker is online and has not reported the process ended: Cancelling, then wait for *this* run's
    executed event (another run's does not count), then requeue."""
    from prefect.states import Cancelled

    from clausegate.ops import dead_letters

    with _client() as client:
        run, deployment_id = _crashed_on_a_live_worker(client, "fencing-live-worker", "no heartbeat")
        other = client.create_flow_run_from_deployment(deployment_id, tags=["fencing-test"])

    handler, result = _handle_in_background(run.id)
    with _client() as client:
        _wait_until_cancelling(client, run.id)
        assert dead_letters.REQUEUING in client.read_flow_run(run.id).state.message
        _post_executed_and_see_it(client, other.id)  # another run's process ended: not ours
        # The live stream delivered it to the handler too, which reacts at once (a look at the stored events and
        # the run's state, well under a second): it must not have finished on it.
        handler.join(1.0)
        assert handler.is_alive() and client.read_flow_run(run.id).state_type.value == "CANCELLING"
        client.set_flow_run_state(run.id, Cancelled(message="Flow run was cancelled successfully."), force=True)
        # The worker's Cancelled replaced dead-letters' Cancelling for a moment: to a client it is still a requeue,
        # in work (a final state is never "pending") and not finished.
        inbox = Inbox(InboxSettings(data_dir=tmp_path / "inbox"), ui_url="http://127.0.0.1:4200")
        view = asyncio.run(inbox.view(client.read_flow_run(run.id)))
        assert view.status == "processing" and view.finished is None and view.error is None, view
        _post_executed(client, run.id)  # as the worker does after killing the process
        handler.join(30)
        assert not handler.is_alive()
        handled = result["handled"]
        assert handled.outcome == "requeued" and "stopped by its worker 'fencing-worker'" in handled.reason, handled
        assert client.read_flow_run(run.id).state_type.value == "SCHEDULED"
        for rid in (run.id, other.id):
            client.set_flow_run_state(rid, Cancelled(message="test cleanup"), force=True)


@pytest.mark.slow
def test_the_worker_s_cancelled_requeues_after_a_grace_when_its_executed_event_never_comes():
    """The worker killed the hung process and stored Cancelled, but its executed event is lost (CI: the run sat
    Cancelled until the stop timeout, then would have been dead-lettered). Not at once: the worker reports the
    attempt's exit (a Crashed) between its Cancelled and that event, and a requeue in between is crashed by it (CI,
    when this requeued at the Cancelled). So CANCELLED_GRACE_SECONDS after the Cancelled, well before the stop
    timeout."""
    from prefect.states import Cancelled

    from clausegate.ops import dead_letters

    with _client() as client:
        run, _ = _crashed_on_a_live_worker(client, "fencing-lost-event", "no heartbeat")

    handler, result = _handle_in_background(run.id)  # (stop_seconds=60)
    with _client() as client:
        _wait_until_cancelling(client, run.id)
        cancelled = Cancelled(message="Flow run was cancelled successfully.")
        client.set_flow_run_state(run.id, cancelled, force=True)
        handler.join(45)  # (within its stop_seconds of 60: before, it waited them out, then dead-lettered)
        assert not handler.is_alive(), "still waiting for an executed event long after the worker's Cancelled"
        handled = result["handled"]
        assert handled.outcome == "requeued" and "executed event did not come" in handled.reason, handled
        assert client.read_flow_run(run.id).state_type.value == "SCHEDULED"
        # not at once: the requeue (its Scheduled) is stored the grace after the worker's Cancelled
        requeued = max(s.timestamp for s in client.read_flow_run_states(run.id) if s.is_scheduled())
        waited = (requeued - cancelled.timestamp).total_seconds()
        assert waited >= dead_letters.CANCELLED_GRACE_SECONDS - 0.5, waited
        client.set_flow_run_state(run.id, Cancelled(message="test cleanup"), force=True)


def test_a_process_that_ended_before_the_cancelling_is_requeued_without_waiting_for_a_cancelled():
    """Killed, not hung: the worker reported the process ended, but its event was stored only after the handler
    first looked, so the handler set Cancelling. No worker holds that process, so no Cancelled will come (Prefect's
    runner ignores a Cancelling run it has no process for): requeue at once instead of waiting out the stop
    timeout (CI: the run sat Cancelling for the whole 120 s)."""
    from datetime import timedelta

    from prefect.states import Cancelled

    with _client() as client:
        run, _ = _crashed_on_a_live_worker(client, "fencing-killed", "process killed")
        started = next(s.timestamp for s in client.read_flow_run_states(run.id) if s.is_running())

    handler, result = _handle_in_background(run.id)
    with _client() as client:
        _wait_until_cancelling(client, run.id)
        _post_executed(client, run.id, occurred=started + timedelta(milliseconds=50))  # ended before the ask
        handler.join(90)
        assert not handler.is_alive()
        handled = result["handled"]
        assert handled.outcome == "requeued" and "its process had already ended" in handled.reason, handled
        assert client.read_flow_run(run.id).state_type.value == "SCHEDULED"
        client.set_flow_run_state(run.id, Cancelled(message="test cleanup"), force=True)


def _handle(run_id):
    from clausegate.ops import dead_letters

    with _client() as client:
        return dead_letters.handle(client, str(run_id), stop_seconds=60)


# --------------------------------------------------------------------------- inbox status


def _review(**update):
    from clausegate.review.schemas import GateDecision, Review

    base = Review(contract_id="a" * 64, filename="x.pdf", playbook="payment-liability", status="complete",
                  extractor="offline", gated_categories=["Uncapped Liability"])
    decision = GateDecision(gate="gate-r1-x", categories=["Uncapped Liability"], decision="approve", reviewer="rita",
                            via="cli", decided_at="2026-01-01T00:00:00Z")
    return base.model_copy(update={"decisions": [decision], **update})


def test_inbox_status_follows_the_review():
    from clausegate.inbox.status import status_of

    assert status_of("COMPLETED", _review()) == "done"
    assert status_of("COMPLETED", _review(status="needs_legal")) == "escalated"
    assert status_of("COMPLETED", _review(status="pending_decision", decisions=[])) == "failed"
    assert status_of("COMPLETED", _review(decisions=[])) == "failed"  # gated, no decision: completed by a stale process
    assert status_of("COMPLETED", _review(gated_categories=[], decisions=[])) == "done"
    assert status_of("PAUSED") == "waiting_for_human"


def _view(**fields):
    from clausegate.inbox.status import TaskView

    values = dict(task_id=str(uuid.uuid4()), status="done", state="Completed", sender="acme", priority="normal",
                  playbook="payment-liability", contract={}, attempts=1)
    values.update(fields)
    return TaskView(**values)


def test_task_view_never_says_done_without_a_decision_and_names_no_api_url(monkeypatch):
    from clausegate.inbox.status import NO_DECISION, REQUEUING, TaskError, error_code
    from clausegate.review.schemas import Notice

    undecided = _view(review=_review(status="pending_decision", decisions=[]))
    assert undecided.status == "failed" and undecided.error.code == NO_DECISION
    assert "Uncapped Liability" in undecided.error.message

    code = error_code(f"{REQUEUING}: stopping the hung attempt 1", "CANCELLING")
    requeuing = _view(status="cancelled", state="Cancelling", error=TaskError(code=code, message="x"))
    assert requeuing.status == "pending" and requeuing.error is None

    api = "http://127.0.0.1:4200/api"
    monkeypatch.setenv("PREFECT_API_URL", api)
    failed = _view(status="failed", state="Failed", error=TaskError(
        code="CG-RUN-FAILED", message=f"Client error '409 Conflict' for url '{api}/flow_runs/1/set_state'"),
        review=_review(status="partial_failure", warnings=[Notice(code="CG-X", message=f"see {api}/variables")]),
        links={"self": "/inbox/tasks/1", "ui": "http://127.0.0.1:4200/runs/flow-run/1", "api": f"{api}/flow_runs/1"})
    text = failed.model_dump_json()
    assert "/api" not in text.replace("/inbox/", "/"), text
    assert failed.links == {"self": "/inbox/tasks/1", "ui": "http://127.0.0.1:4200/runs/flow-run/1"}
    assert "[API URL removed]" in failed.error.message
