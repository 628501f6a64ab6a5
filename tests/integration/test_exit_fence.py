"""``fenced_exit`` (clausegate/runs/attempts.py), in-process against the session Prefect server: an exception
that leaves a stale attempt's body becomes ``StaleAttempt`` (Prefect's engine proposes nothing), one that leaves
the current attempt's body becomes the run's state as before.  The SIGSTOP/SIGCONT end-to-end scenario is in
tests/support/hung_run_scenarios.py (run by tests/e2e/test_hung_runs.py)."""

from __future__ import annotations

import uuid

import pytest

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _probe(overtake: bool, error: BaseException):
    """An in-process flow whose body raises ``error`` under ``fenced_exit`` (after a newer attempt took the run
    and waits at its gate, when ``overtake``)."""
    from prefect import flow
    from prefect.context import FlowRunContext
    from prefect.states import Crashed, Running, Scheduled, Suspended

    from clausegate.runs.attempts import ensure_current, fenced_exit

    seen: dict = {}

    @flow(name="clausegate-exit-fence-probe", persist_result=False)
    def probe():
        run_id = FlowRunContext.get().flow_run.id
        seen["run_id"] = run_id
        with fenced_exit():
            ensure_current("the step")  # confirmed current: the exit check must read again all the same
            if overtake:
                with _client() as client:
                    for state in (Crashed(message="CG-RUN-CRASHED: no heartbeat"), Scheduled(message="CG-RUN-REQUEUED"),
                                  Running(), Suspended(timeout_seconds=3600, pause_key="gate-r2-probe")):
                        client.set_flow_run_state(run_id, state, force=True)
                    seen["state_id"] = client.read_flow_run(run_id).state_id
            raise error

    return probe, seen


@pytest.mark.parametrize("error", [TimeoutError("Scope timed out after 40.0 second(s)."), RuntimeError("boom")],
                         ids=["task-timeout", "task-failure"])
def test_an_error_in_a_stale_attempt_leaves_the_waiting_gate_alone(error):
    from clausegate.runs.attempts import STALE, StaleAttempt

    probe, seen = _probe(True, error)
    with pytest.raises(StaleAttempt, match=STALE) as raised:
        probe()
    assert raised.value.__cause__ is error and type(error).__name__ in str(raised.value)
    with _client() as client:
        run = client.read_flow_run(uuid.UUID(str(seen["run_id"])))
    assert run.state_id == seen["state_id"] and run.state_name == "Suspended", run.state


def test_an_error_in_the_current_attempt_still_fails_the_run():
    probe, seen = _probe(False, TimeoutError("Scope timed out after 40.0 second(s)."))
    state = probe(return_state=True)
    assert state.is_failed() and state.name == "TimedOut", state
