"""Hung flow-run processes, end to end with real workers and signals.

The session Prefect server, `prefect deploy` of prefect.yaml, process workers, the zombie-run automation
(window 45 s, the shortest allowed), a fake Slack and an ops worker on ``high`` that runs ``dead-letters`` (and
the failure alerts) for all of them.  Four scenarios, each a function in tests/support (its docstring says
what it stops, how, and the failure it catches):

* gate_skip_scenarios.hung_process_is_stopped_and_the_requeued_attempt_reaches_the_gate: a process hung after
  its first heartbeat, its worker up: stopped through Prefect's cancellation, requeued, waits at its gate.
* gate_skip_scenarios.a_stale_process_that_wakes_up_later_changes_nothing: the whole machine frozen, another
  worker takes over; the stale process wakes up and leaves the run to the requeued attempt's gate.
* hung_run_scenarios.a_run_that_hangs_before_its_first_heartbeat_is_crashed_and_requeued: hung before any
  heartbeat: the zombie automation still crashes it, dead-letters requeues it, the second attempt completes.
* hung_run_scenarios.a_stale_process_cannot_end_the_gate_its_successor_waits_at: a stale process woken after
  its parse timeout passed must not fail the gate its successor waits at (``fenced_exit``).

Each waits out the zombie window, dead-letters and new worker processes (1.5 to 3 minutes), so all four run at
the same time, in one test, each on its own work queue with workers that poll only that queue: ``normal`` and
``low`` of the pool plus two queues this module adds to the pool (and deletes afterwards).
Measured on a loaded 2-core machine: the one test 164 s, where the same scenarios as three tests took 284 s
(`python -m pytest -q -n 0 -s tests/e2e/test_hung_runs.py -p no:cacheprovider --durations=10`).  Timings are printed.
"""

from __future__ import annotations

import os
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from clausegate.stack.automations import apply_automations
from clausegate.stack.configuration import POOL
from tests.support import gate_skip_scenarios, hung_run_scenarios
from tests.support.deployments import ROOT, SLACK_BLOCK, cancel_unfinished, deploy_once, start_worker, stop_worker
from tests.support.gate_skip_scenarios import ZOMBIE_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


@pytest.fixture(scope="module")
def zombie_window(tmp_path_factory):
    """prefect.yaml deployed; the zombie automation at 45 s for this module, the default again afterwards."""
    deploy_once(tmp_path_factory.mktemp("deploy"))
    automations = ROOT / "deployments" / "automations.yaml"
    os.environ["CLAUSEGATE_ZOMBIE_SECONDS"] = str(ZOMBIE_SECONDS)
    try:
        apply_automations(automations, lambda msg: None)
    finally:
        os.environ.pop("CLAUSEGATE_ZOMBIE_SECONDS", None)
    yield
    apply_automations(automations, lambda msg: None)


@pytest.fixture
def extra_queues():
    """Two more work queues on the pool (after its own, by priority), deleted afterwards."""
    names = [f"hung-test-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    with _client() as client:
        last = max(q.priority for q in client.read_work_queues(work_pool_name=POOL))
        for offset, name in enumerate(names, start=1):
            client.create_work_queue(name=name, work_pool_name=POOL, priority=last + offset,
                                     description="tests/e2e/test_hung_runs.py (deleted after the test)")
    yield names
    with _client() as client:
        for queue in client.read_work_queues(work_pool_name=POOL):
            if queue.name in names:
                client.delete_work_queue_by_id(queue.id)


def test_hung_processes_are_recovered_and_cannot_end_a_gate(zombie_window, extra_queues, fake_slack, tmp_path):
    """All four scenarios at once (see the module docstring); each failure is reported with its scenario's name."""
    folders = {name: tmp_path / name for name in ("gate-hung", "gate-stale", "before-heartbeat", "stale-gate")}
    for folder in folders.values():
        folder.mkdir()
    ops = start_worker(tmp_path / "ops-worker.log", name=f"hung-ops-{uuid.uuid4().hex[:6]}", limit=6,
                       queues=["high"], extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
    scenarios = {
        "hung process, worker up (gate not skipped)": lambda: (
            gate_skip_scenarios.hung_process_is_stopped_and_the_requeued_attempt_reaches_the_gate(
                folders["gate-hung"], "normal")),
        "machine frozen, another worker takes over (gate not skipped)": lambda: (
            gate_skip_scenarios.a_stale_process_that_wakes_up_later_changes_nothing(
                folders["gate-stale"], "low", fake_slack)),
        "hung before its first heartbeat (crashed and requeued)": lambda: (
            hung_run_scenarios.a_run_that_hangs_before_its_first_heartbeat_is_crashed_and_requeued(
                folders["before-heartbeat"], extra_queues[0])),
        "stale process woken after its successor waits at a gate": lambda: (
            hung_run_scenarios.a_stale_process_cannot_end_the_gate_its_successor_waits_at(
                folders["stale-gate"], extra_queues[1])),
    }
    try:
        with ThreadPoolExecutor(max_workers=len(scenarios)) as pool:
            futures = {name: pool.submit(run) for name, run in scenarios.items()}
            failures = {name: future.exception() for name, future in futures.items()}
    finally:
        stop_worker(ops)
        cancel_unfinished(["contract-review", "failure-alert", "dead-letters"])
    failed = {name: exc for name, exc in failures.items() if exc is not None}
    if failed:
        for name, exc in failed.items():
            print(f"\n--- {name} ---\n" + "".join(traceback.format_exception(exc)))
        raise AssertionError("; ".join(f"{name}: {exc!r}"[:800] for name, exc in failed.items()))
