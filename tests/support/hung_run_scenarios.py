"""Two scenarios of a hung flow-run process, run by tests/e2e/test_hung_runs.py
(real workers and signals, a real Prefect server, the zombie window at 45 s, an ops worker on ``high`` that runs
``dead-letters``):

* :func:`a_run_that_hangs_before_its_first_heartbeat_is_crashed_and_requeued`: the flow-run process is
  stopped (SIGSTOP) the moment its run is Running, before the server has a heartbeat from it; its worker stays
  up.  The zombie automation must crash it (it arms on the Running state too), dead-letters stops the hung
  process through the worker (the test sends the SIGKILL that ends the worker's 30 s grace at once) and requeues
  the run, and the second attempt completes.  The failure it catches:
  the run stays Running (inbox ``processing``) with nothing watching it.
* :func:`a_stale_process_cannot_end_the_gate_its_successor_waits_at`: the flow-run process (and its PDF parser)
  is stopped inside its parse task and its worker is killed (SIGKILL); another worker runs the requeued attempt,
  which waits at its gate.  Then the stale process is continued (SIGCONT): its parse task's timeout has long
  passed, so Prefect raises ``TimeoutError`` in it at once.  It must exit without touching the run (the exception
  is fenced: clausegate/runs/attempts.py, ``fenced_exit``); the gate stays answerable.  The failure it
  catches: the engine proposes ``Failed``/``TimedOut`` and the server moves the waiting run Suspended -> Failed.

Each runs on its own work queue (``queue``) with workers that poll only that queue.  Measured timings are
printed (``-s``).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from clausegate.ops import dead_letters
from clausegate.runs.attempts import STALE
from tests.support.contracts import GATED_PAGES, NO_GATES_PLAYBOOK, SUPPLY_PAGES
from tests.support.deployments import SLACK_BLOCK, start_worker, stop_worker
from tests.support.gate_skip_scenarios import ZOMBIE_SECONDS
from tests.support.inbox_support import poll
from tests.support.pdf_factory import make_slow_pdf, make_text_pdf
from tests.support.processes import alive, flow_process, process_tree, signal_tree

# The gated contract with a parse time cap well below the time the stale process stays stopped (so its timeout has
# passed when it wakes) and well above the ~5 s the requeued attempt needs to parse the slow page.
PROGRESS_SECONDS = 120  # the longest a flow run may go without a new state or finished task run (a process start)
RUN_LIMIT = 600  # the whole requeued attempt, at most

GATED_PLAYBOOK = """\
name: hung-runs-test
description: payment-liability gates, parse capped at 40 s without retries (tests/support/hung_run_scenarios.py)
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability,
             Liquidated Damages]
gates:
  - {category: Uncapped Liability, sla_hours: 8, reason: Liability without a cap needs legal sign-off.}
steps:
  parse: {timeout_seconds: 40, retries: 0, max_chars: 5000000}
"""


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _read(run_id):
    with _client() as client:
        return client.read_flow_run(uuid.UUID(str(run_id)))


def _history(run_id) -> list:
    with _client() as client:
        return sorted(client.read_flow_run_states(uuid.UUID(str(run_id))), key=lambda s: s.timestamp)


def _names(run_id) -> list[str]:
    return [s.name for s in _history(run_id)]


def _heartbeats(run_id) -> int:
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    with _client() as client:
        page = client.read_events(EventFilter(event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                                              resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"])),
                                  limit=10)
    return len(page.events)


def _progress(run_id) -> tuple:
    """What changes while a run advances: its state and attempt, and how many of its task runs have finished."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with _client() as client:
        run = client.read_flow_run(uuid.UUID(str(run_id)))
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
    return run.state_id, run.run_count, sum(1 for t in tasks if t.state and t.state.is_final())


def _server_caught_up(timeout: float = 60) -> None:
    """Post a marker event and wait until the server has stored it: what reached the server before it (events,
    logs, heartbeats) is stored too (they go through the same in-order pipeline)."""
    from datetime import UTC, datetime

    from prefect.events import Event
    from prefect.events.filters import EventFilter, EventResourceFilter

    marker = f"clausegate.test.marker.{uuid.uuid4().hex}"
    event = Event(occurred=datetime.now(UTC), event="clausegate.test.marker", resource={"prefect.resource.id": marker})
    with _client() as client:
        client.request("POST", "/events", json=[event.model_dump(mode="json")]).raise_for_status()
        poll(lambda: client.read_events(EventFilter(resource=EventResourceFilter(id=[marker])), limit=1).events, bool,
             timeout=timeout, interval=0.2, what="the server to store a marker event")


def _submit(tmp_path: Path, pdf: Path, playbook: str, queue: str):
    from prefect.deployments import run_deployment

    book = tmp_path / "playbook.yaml"
    book.write_text(playbook)
    return run_deployment("contract-review/contract-review", timeout=0, work_queue_name=queue, tags=["hung-runs-test"],
                          parameters={"source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / "out")})


def _stop_at_running(run_id) -> int:
    """SIGSTOP the run's process the moment the server has it Running (it is found while Pending)."""
    pid = poll(lambda: flow_process(run_id), bool, timeout=120, interval=0.2, what="the flow-run process")
    with _client() as client:
        poll(lambda: client.read_flow_run(uuid.UUID(str(run_id))).state_type.value,
             lambda kind: kind not in ("SCHEDULED", "PENDING"), timeout=60, interval=0.02,
             what="the run to be Running")
    os.kill(pid, signal.SIGSTOP)
    return pid


def a_run_that_hangs_before_its_first_heartbeat_is_crashed_and_requeued(tmp_path: Path, queue: str) -> None:
    worker = start_worker(tmp_path / "worker.log", name="hung-before-heartbeat", limit=3, queues=[queue],
                          extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
    pdf = make_text_pdf(tmp_path / f"supply-{uuid.uuid4().hex[:8]}.pdf",
                        [*SUPPLY_PAGES[:-1], SUPPLY_PAGES[-1] + f"\nReference {uuid.uuid4().hex}."])
    run = _submit(tmp_path, pdf, NO_GATES_PLAYBOOK, queue)
    pid = None
    try:
        pid = _stop_at_running(run.id)
        stopped = time.monotonic()
        assert _read(run.id).state_name == "Running"
        _server_caught_up()  # a heartbeat sent before the stop is stored by now
        assert _heartbeats(run.id) == 0, "the process sent a heartbeat before it was stopped: not the case under test"
        crashed = poll(lambda: _history(run.id), lambda h: any(s.name == "Crashed" for s in h),
                       timeout=ZOMBIE_SECONDS + 60, interval=1, what="the zombie automation to crash the hung run")
        crashed_after = time.monotonic() - stopped
        crash = next(s for s in crashed if s.name == "Crashed")
        assert crash.message.startswith("CG-RUN-CRASHED"), crash.message
        # dead-letters asks the worker to stop the hung process before the requeue (Cancelling, CG-RUN-REQUEUING);
        # the worker sends SIGTERM, which a stopped process cannot act on, and SIGKILL after its 30 s grace.  That
        # wait is tested in tests/support/gate_skip_scenarios.py: here the SIGKILL comes at once.
        poll(lambda: _read(run.id), lambda r: r.state_type.value == "CANCELLING"
             and r.state.message.startswith(dead_letters.REQUEUING), timeout=60, interval=0.5,
             what="dead-letters to stop the hung attempt")
        os.kill(pid, signal.SIGKILL)
        # Two waits, each on its event: dead-letters requeues (or dead-letters) within its stop timeout, so that a
        # requeue or dead letter at its deadline is seen; then the second attempt runs as long as it makes progress
        # (a new state or task run within PROGRESS_SECONDS: a loaded machine is slow, not stuck), at most RUN_LIMIT.
        try:
            poll(lambda: _read(run.id), lambda r: r.state_type.value not in ("CANCELLING", "CANCELLED"),
                 timeout=dead_letters.stop_seconds() + 60, interval=0.5, what="dead-letters to requeue the run")
            done = poll(lambda: _read(run.id), lambda r: r.state_type.value in ("COMPLETED", "FAILED")
                        or (r.state_type.value == "CRASHED" and r.run_count >= 2),
                        timeout=PROGRESS_SECONDS, interval=1, what="the requeued attempt to finish",
                        progress=lambda: _progress(run.id), limit=RUN_LIMIT)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; states {_names(run.id)}") from None
        print(f"\nhung before its first heartbeat: crashed {crashed_after:.0f} s after SIGSTOP, finished "
              f"{time.monotonic() - stopped:.0f} s after it; states {_names(run.id)}")
        assert done.state_name == "Completed" and done.run_count == 2, _names(run.id)
        assert dead_letters.REQUEUED in done.tags and dead_letters.DEAD not in done.tags
        assert not alive(pid), "the hung process was not stopped"
    finally:
        if pid is not None:
            signal_tree([pid], signal.SIGKILL)
        stop_worker(worker)


def _gated_slow_pdf(folder: Path) -> Path:
    """The gated contract (uncapped liability) plus one page that takes ~5 s to parse."""
    from pypdf import PdfWriter

    pages = [GATED_PAGES[0] + f"\nReference: CG-{uuid.uuid4().hex[:10].upper()}.", *GATED_PAGES[1:]]
    writer = PdfWriter()
    writer.append(str(make_text_pdf(folder / "gated-text.pdf", pages)))
    writer.append(str(make_slow_pdf(folder / "gated-slow.pdf", operations=400_000)))
    out = folder / "gated.pdf"
    with open(out, "wb") as fh:
        writer.write(fh)
    return out


def _parsing(run_id) -> bool:
    """The run's parse task is running (as the server has it)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with _client() as client:
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[uuid.UUID(str(run_id))])))
    return any(t.name.startswith("parse-pdf") and t.state_name == "Running" for t in tasks)


def _stale_logs(run_id) -> list[str]:
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with _client() as client:
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[uuid.UUID(str(run_id))])))
    return [log.message for log in logs if STALE in log.message]


def a_stale_process_cannot_end_the_gate_its_successor_waits_at(tmp_path: Path, queue: str) -> None:
    from clausegate.gates.resolve import resolve_gate

    # The first worker reports its heartbeat every 5 s: the server sees it offline ~15 s after it is killed.
    first = start_worker(tmp_path / "worker-1.log", name="stale-killed", limit=3, queues=[queue],
                         extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK, "PREFECT_WORKER_HEARTBEAT_SECONDS": "5"})
    second = None
    run = _submit(tmp_path, _gated_slow_pdf(tmp_path), GATED_PLAYBOOK, queue)
    tree: list[int] = []
    try:
        pid = poll(lambda: flow_process(run.id), bool, timeout=120, interval=0.2, what="the flow-run process")
        poll(lambda: _parsing(run.id), bool, timeout=120, interval=0.2, what="the parse task to run")
        tree = process_tree(pid)  # the flow-run process and its PDF parser: the machine freezes
        signal_tree(tree, signal.SIGSTOP)
        stopped = time.monotonic()
        os.kill(first.pid, signal.SIGKILL)  # its worker dies
        first.wait(10)
        second = start_worker(tmp_path / "worker-2.log", name="stale-takes-over", limit=3, queues=[queue],
                              extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
        waiting = poll(lambda: _read(run.id), lambda r: r.run_count >= 2 and r.state_type.value not in
                       ("SCHEDULED", "PENDING", "RUNNING", "CRASHED"), timeout=ZOMBIE_SECONDS + 180, interval=1,
                       what="the requeued attempt to wait at its gate")
        assert waiting.state_name == "Suspended", _names(run.id)
        assert waiting.state.state_details.pause_key.startswith("gate-r2-")
        gate_after = time.monotonic() - stopped
        assert alive(pid)
        signal_tree(tree, signal.SIGCONT)  # the machine wakes up: the parse task's 40 s have long passed
        woke = time.monotonic()
        poll(lambda: not alive(pid), bool, timeout=90, interval=0.5, what="the stale process to exit")
        exited_after = time.monotonic() - woke
        # It has exited: every state it proposed was answered (a proposal is a synchronous API call), and its logs
        # (sent in the background, flushed at exit) are stored once the server has caught up.
        _server_caught_up()
        after = _read(run.id)
        print(f"\nstale process: requeued attempt at its gate {gate_after:.0f} s after SIGSTOP; the stale one exited "
              f"{exited_after:.1f} s after SIGCONT; states {_names(run.id)}")
        assert after.state_id == waiting.state_id, f"the waiting gate was changed: {_names(run.id)}"
        assert poll(lambda: _stale_logs(run.id), bool, timeout=30, interval=1, what="the stale process's warning")
        outcome = resolve_gate(str(run.id), "approve", reviewer="rita", via="cli", comment="checked after the hang")
        assert outcome.kind == "resumed", outcome
        done = poll(lambda: _read(run.id), lambda r: r.state_type.value in ("COMPLETED", "FAILED", "CRASHED",
                                                                            "CANCELLED"),
                    timeout=120, interval=1, what="the answered run to finish")
        assert done.state_name == "Completed", _names(run.id)
    finally:
        signal_tree(tree, signal.SIGKILL)
        signal_tree(tree, signal.SIGCONT)
        if first.poll() is None:
            stop_worker(first)
        if second is not None:
            stop_worker(second)
