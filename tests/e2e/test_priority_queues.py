"""Work-queue priorities on the `clausegate` pool: a worker with one slot starts queued contract-review runs
high, high, normal, normal, low, low — whatever order they were queued in."""

from __future__ import annotations

import time

import pytest

from tests.support.contracts import NO_GATES_PLAYBOOK
from tests.support.deployments import deploy_once, start_worker, stop_worker, wait_for
from tests.support.pdf_factory import make_text_pdf

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]


def test_queued_runs_start_in_priority_order_on_a_one_slot_worker(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.deployments import run_deployment

    deploy_once(tmp_path)
    book = tmp_path / "deploy-test.yaml"
    book.write_text(NO_GATES_PLAYBOOK)
    out = tmp_path / "reports"

    def submit(name: str, queue: str):
        pdf = make_text_pdf(tmp_path / "inbox" / f"{name}.pdf", [f"Agreement {name}. Governing law: New York."])
        return run_deployment("contract-review/contract-review", timeout=0, work_queue_name=queue,
                              tags=["priority-test"],
                              parameters={"source": str(pdf), "playbook": str(book), "out_dir": str(out)})

    def read(ids):
        with get_client(sync_client=True) as client:
            return client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(ids))))

    # All six are queued before any worker polls the pool (deliberately lowest priority first), so the order
    # they start in is the pool's priority order alone, not how fast this machine is: a worker with one slot
    # takes one run per poll, the highest-priority queue's oldest first.
    order = [("low-1", "low"), ("normal-1", "normal"), ("high-1", "high"),
             ("low-2", "low"), ("normal-2", "normal"), ("high-2", "high")]
    queued = {}
    for name, queue in order:
        queued[submit(name, queue).id] = name
        time.sleep(0.2)  # distinct scheduled times: first in, first out within a queue
    assert all(r.state_name in ("Scheduled", "Late") for r in read(queued)), [r.state_name for r in read(queued)]
    # Warm start (runs forked from a preloaded process) only to keep this test short; the plain process
    # worker path is exercised by tests/e2e/test_deployments.py.
    worker = start_worker(tmp_path / "worker.log", name="priority-test-worker", limit=1, warm=True)
    try:
        runs = wait_for(lambda: (lambda rs: rs if all(r.state and r.state.is_final() for r in rs) else None)(
            read(queued)), timeout=360, interval=2, what="the six queued runs to finish")
    finally:
        stop_worker(worker)

    assert all(r.state_name == "Completed" for r in runs), [(r.name, r.state_name) for r in runs]
    started = [queued[r.id] for r in sorted(runs, key=lambda r: r.start_time)]
    print("start order:", started)
    assert [name.split("-")[0] for name in started] == ["high", "high", "normal", "normal", "low", "low"]
    # Within a queue, first in, first out.
    assert started == ["high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"]
    assert {r.work_queue_name for r in runs} == {"high", "normal", "low"}
