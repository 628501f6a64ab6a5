"""Dead letters: a crashed contract-review run is requeued once, then failed with CG-RUN-DEAD-LETTER
and an alert — by the `dead-letters` deployment that Prefect triggers on every Crashed run.

The end-to-end test kills the flow-run process for real (SIGKILL) while it parses a slow PDF; the
worker reports the run Crashed, the deployment trigger starts `dead-letters`, which requeues the
run; the second kill ends it Failed, listed as such with its code, and posts to the alert channel.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from clausegate.ops import dead_letters
from tests.support.contracts import NO_GATES_PLAYBOOK
from tests.support.deployments import SLACK_BLOCK, cancel_unfinished, deploy_once, start_worker, stop_worker
from tests.support.inbox_support import poll
from tests.support.pdf_factory import make_slow_pdf
from tests.support.processes import flow_process

pytestmark = [pytest.mark.usefixtures("prefect_server")]


def _read(run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id)


def _scheduled_review(tmp_path: Path, name: str):
    from prefect.deployments import run_deployment

    book = tmp_path / "deploy-test.yaml"
    book.write_text(NO_GATES_PLAYBOOK)
    pdf = make_slow_pdf(tmp_path / name, operations=150_000)
    return run_deployment("contract-review/contract-review", timeout=0, work_queue_name="low",
                          tags=["dead-letter-test"],
                          parameters={"source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / "out")})


def _set(run_id, state) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.set_flow_run_state(run_id, state, force=True)


@pytest.mark.slow
def test_handle_requeues_once_then_fails_for_good(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelled, Crashed, Running

    deploy_once(tmp_path)
    run = _scheduled_review(tmp_path, "handled.pdf")
    try:
        with get_client(sync_client=True) as client:
            assert dead_letters.handle(client, str(run.id)).outcome == "skipped"  # not crashed: left alone
            _set(run.id, Crashed(message="process killed"))
            first = dead_letters.handle(client, dead_letters.run_id_of(f"prefect.flow-run.{run.id}"))
            assert first.outcome == "requeued"
            requeued = _read(run.id)
            assert requeued.state_type.value == "SCHEDULED" and dead_letters.REQUEUED in requeued.tags
            _set(run.id, Running())  # the requeued attempt ran (a crash before it ran is not its own: requeued again)
            _set(run.id, Crashed(message="process killed again"))
            second = dead_letters.handle(client, str(run.id))
            assert second.outcome == "dead-lettered"
            dead = _read(run.id)
            assert dead.state_type.value == "FAILED" and dead.state.message.startswith(dead_letters.CODE)
            assert dead_letters.DEAD in dead.tags and "process killed again" in dead.state.message
            assert f"/inbox/tasks/{run.id}/retry" in dead.state.message  # the next step is in the message
    finally:
        _set(run.id, Cancelled(message="test cleanup"))


@pytest.mark.slow
def test_a_run_killed_twice_is_requeued_once_then_dead_lettered_with_an_alert(tmp_path, fake_slack):
    deploy_once(tmp_path)
    worker = start_worker(tmp_path / "worker.log", name="dead-letter-worker", limit=3,
                          extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
    run = _scheduled_review(tmp_path, "killed.pdf")
    try:
        for attempt in (1, 2):
            pid = poll(lambda: flow_process(run.id) if _read(run.id).state_name == "Running" else None, bool,
                       timeout=120, interval=0.3, what=f"attempt {attempt} of the run to be running")
            os.kill(pid, signal.SIGKILL)
            if attempt == 1:  # the worker reports Crashed; the trigger's dead-letters run requeues it
                poll(lambda: _read(run.id), lambda r: dead_letters.REQUEUED in r.tags, timeout=120, interval=1,
                     what="the requeue")
        dead = poll(lambda: _read(run.id), lambda r: r.state_type.value == "FAILED", timeout=120, interval=1,
                    what="the dead letter")
        # The dead-letters run posts its alert after it failed the run: keep its worker until then.
        alerts = poll(lambda: [c for c in fake_slack.calls("chat.postMessage", ok_only=True)
                               if c.args.get("channel") == "C0ALERTS" and dead_letters.CODE in c.args.get("text", "")],
                      bool, timeout=60, what="the dead-letter alert")
    finally:
        stop_worker(worker)
        cancel_unfinished(["failure-alert", "dead-letters"])  # none left for later modules' workers
    assert dead.state.message.startswith(dead_letters.CODE) and dead.run_count == 2, dead.state.message
    assert dead_letters.DEAD in dead.tags
    assert str(run.id) in alerts[0].args["text"]
