"""prefect.yaml deployed (`prefect deploy --no-prompt`) to the session's real Prefect server, a real
process worker, and the nightly batch fanned out as contract-review deployment runs.

Also shows the failure alert end to end: a failed contract-review run fires the failure-alert
deployment's trigger (a Prefect automation), whose run posts to the Slack alert channel (a fake
Slack on loopback).

The helpers here (``deploy_once``, ``start_worker``, ``stop_worker``) are reused by
tests/e2e/test_priority_queues.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clausegate import batch, stack
from tests.support.pdf_factory import make_encrypted_pdf, make_text_pdf

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]

NO_GATES_PLAYBOOK = """\
name: deploy-test
description: test playbook without human gates (runs complete instead of waiting for a person)
categories: [Governing Law, Cap on Liability, Uncapped Liability, Anti-Assignment]
"""
PAGES = [
    "SERVICES AGREEMENT between Acme Corp. and Widget Ltd.",
    "Governing Law. This Agreement shall be governed by the laws of the State of New York.",
    "Limitation of Liability. In no event shall either party's aggregate liability exceed the fees paid "
    "by Customer in the twelve months preceding the claim.",
]
SLACK_BLOCK = "deploy-test-slack"
_DEPLOYED: dict | None = None


def deploy_once(tmp_root: Path) -> dict:
    """Pool + queues + limits (clausegate.stack.configure) and `prefect deploy` of prefect.yaml, once
    per session; schedules switched off afterwards so timed runs do not disturb the tests."""
    global _DEPLOYED
    if _DEPLOYED is not None:
        return _DEPLOYED
    from prefect.client.orchestration import get_client

    api_url = os.environ["PREFECT_API_URL"]
    paths = stack.StackPaths.for_project(ROOT, home=tmp_root / "stack")
    configured = stack.configure(api_url, paths, timezone_name="Europe/Berlin", log=lambda msg: None)
    names, skipped = stack.deployable(paths)
    started = time.monotonic()
    stack.deploy(api_url, paths, names, log_file=paths.logs / "deploy.log")
    deploy_seconds = time.monotonic() - started
    info: dict = {"configured": configured, "names": names, "skipped": skipped, "deploy_seconds": deploy_seconds,
                  "schedules": {}, "log": paths.logs / "deploy.log"}
    with get_client(sync_client=True) as client:
        for dep in client.read_deployments():
            info["schedules"][dep.name] = [s.schedule for s in dep.schedules]
            for sched in dep.schedules:
                client.update_deployment_schedule(dep.id, sched.id, active=False)
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateName

        scheduled = FlowRunFilter(state=FlowRunFilterState(name=FlowRunFilterStateName(any_=["Scheduled"])))
        for run in client.read_flow_runs(flow_run_filter=scheduled):
            if run.auto_scheduled:
                client.delete_flow_run(run.id)
    _DEPLOYED = info
    return info


def start_worker(log: Path, *, name: str, limit: int, extra_env: dict[str, str] | None = None,
                 warm: bool = False) -> subprocess.Popen:
    """A process worker on the `clausegate` pool; ``warm``: with a warm-start process (clausegate up --warm-start)."""
    env = {**os.environ, "CLAUSEGATE_PROJECT_DIR": str(ROOT), "PREFECT_WORKER_QUERY_SECONDS": "1",
           **(extra_env or {})}
    log.parent.mkdir(parents=True, exist_ok=True)
    zygote = None
    if warm:
        sock = log.parent / "warm.sock"
        zygote = stack.start_process("warm-start", [sys.executable, "-m", "clausegate.stack", "warm-serve", str(sock)],
                                     env=env, log=log.parent / "warm-start.log", cwd=ROOT)
        wait_for(lambda: sock.exists() or not zygote.alive(), timeout=120, interval=0.2, what="the warm-start process")
        assert sock.exists(), (log.parent / "warm-start.log").read_text()
        env[stack.WARM_SOCKET_ENV] = str(sock)
    stack.set_pool_command(os.environ["PREFECT_API_URL"], stack.warm_command() if warm else None)
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", stack.POOL, "--name", name,
                             "--limit", str(limit)], env=env, cwd=str(ROOT), stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    proc.zygote = zygote  # type: ignore[attr-defined]
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    if getattr(proc, "zygote", None) is not None:
        stack.stop_process(proc.zygote)
        stack.set_pool_command(os.environ["PREFECT_API_URL"], None)


def cancel_unfinished(flow_names: list[str]) -> int:
    """Cancel runs of these flows left Scheduled/Pending/Running by an earlier test's stopped worker.

    A stranded failure-alert run would hold that deployment's single concurrency slot, so every new
    check would be cancelled (CANCEL_NEW) until its lease expired."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=flow_names)), flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED, StateType.PENDING,
                                                                       StateType.RUNNING]))), limit=200)
        for run in runs:
            client.set_flow_run_state(run.id, Cancelled(message="test cleanup: stranded by a stopped worker"), force=True)
    return len(runs)


def wait_for(predicate, timeout: float, interval: float = 1.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> dict:
    return deploy_once(tmp_path_factory.mktemp("deployments"))


@pytest.fixture(scope="module")
def fake_slack():
    from blocks.slack import SlackSettings
    from clausegate.demo.slack_server import FakeSlack

    slack = FakeSlack(token="xoxb-deploy-test").start()
    SlackSettings(bot_token="xoxb-deploy-test", signing_secret="s" * 32, channel="C0GATES", alert_channel="C0ALERTS",
                  api_base_url=slack.api_url).save(SLACK_BLOCK, overwrite=True)
    yield slack
    slack.stop()


@pytest.fixture(scope="module")
def worker(deployed, fake_slack, tmp_path_factory):
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    proc = start_worker(log, name="deploy-test-worker", limit=4, extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK})
    yield proc
    stop_worker(proc)


def test_prefect_yaml_deploys_everything_non_interactively(deployed):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule

    assert set(deployed["names"]) == {"contract-review", "nightly-batch", "sla-sweeper", "failure-alert", "dead-letters",
                                      "retention"}, deployed
    assert deployed["configured"]["queues"][:3] == [("high", 1), ("normal", 2), ("low", 3)]
    nightly = deployed["schedules"]["nightly-batch"][0]
    assert isinstance(nightly, CronSchedule) and nightly.cron == "0 2 * * *" and nightly.timezone == "Europe/Berlin"
    assert isinstance(deployed["schedules"]["sla-sweeper"][0], IntervalSchedule)
    retention = deployed["schedules"]["retention"][0]
    assert isinstance(retention, CronSchedule) and retention.cron == "30 3 * * *" and retention.timezone == "Europe/Berlin"
    with get_client(sync_client=True) as client:
        review = client.read_deployment_by_name("contract-review/contract-review")
        schema = review.parameter_openapi_schema
        assert schema["required"] == ["source"]
        assert {"source", "playbook", "extractor", "out_dir"} <= set(schema["properties"])
        assert schema["properties"]["source"]["type"] == "string"
        assert (review.work_pool_name, review.work_queue_name) == ("clausegate", "normal")
        assert review.pull_steps == [{"prefect.deployments.steps.set_working_directory":
                                      {"directory": "{{ $CLAUSEGATE_PROJECT_DIR }}"}}]
        assert review.job_variables["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30"
        nightly_dep = client.read_deployment_by_name("nightly-batch/nightly-batch")
        props = nightly_dep.parameter_openapi_schema["properties"]
        assert props["work_queue"]["enum"] == ["high", "normal", "low"] and props["max_in_flight"]["type"] == "integer"
        alert = client.read_deployment_by_name("failure-alert/failure-alert")
        assert alert.global_concurrency_limit.limit == 1 and alert.work_queue_name == "high"
        assert alert.concurrency_options.collision_strategy.value == "CANCEL_NEW"
        automations = client.read_automations_by_name("contract-review failed -> failure-alert check")
        assert len(automations) == 1 and automations[0].enabled
        assert client.read_automations_by_name("clausegate-zombie-runs")
        limit = client.read_global_concurrency_limit_by_name("clausegate-model-calls")
        assert limit.limit == 10 and limit.slot_decay_per_second == pytest.approx(0.8)


def test_nightly_batch_fans_out_to_deployment_runs_and_alerts_on_failures(deployed, worker, fake_slack, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        FlowRunFilterTags,
    )
    from prefect.deployments import run_deployment

    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    for i in range(3):
        make_text_pdf(inbox / f"contract-{i}.pdf", [f"Contract {i}.", *PAGES])
    make_encrypted_pdf(inbox / "locked.pdf", PAGES)
    book = tmp_path / "deploy-test.yaml"
    book.write_text(NO_GATES_PLAYBOOK)
    params = {"source": str(inbox), "playbook": str(book), "out_dir": str(out), "max_in_flight": 3, "poll_seconds": 1.0}

    # Failures of earlier test modules trigger failure-alert runs too (one may run right now, as this
    # worker starts) and would hold this test's alert back in the 10-minute cooldown: no cooldown here,
    # and no run stranded by an earlier module's stopped worker holding the deployment's only slot.
    from prefect.client.schemas.actions import DeploymentUpdate

    cancel_unfinished(["failure-alert", "dead-letters"])

    with get_client(sync_client=True) as client:
        alert_deployment = client.read_deployment_by_name("failure-alert/failure-alert")
        client.update_deployment(alert_deployment.id, DeploymentUpdate(
            parameters={**alert_deployment.parameters, "cooldown_minutes": 0}))

    started = time.monotonic()
    parent = run_deployment("nightly-batch/nightly-batch", parameters=params, timeout=400, poll_interval=2)
    elapsed = time.monotonic() - started
    assert parent.state.is_completed(), parent.state
    print(f"nightly batch of 4 contracts on a worker: {elapsed:.1f} s")

    with get_client(sync_client=True) as client:
        # Top-level runs (a subflow cannot suspend at a gate), found by the batch's tag.
        children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=[batch.batch_tag(str(parent.id))])))
        assert all(r.parent_task_run_id is None for r in children)
        reviews = [r for r in children if r.name.startswith("review-")]
        assert len(reviews) == 4
        assert {r.work_queue_name for r in reviews} == {"low"}
        assert all(r.labels.get("prefect.worker.name") == "deploy-test-worker" for r in reviews)
        assert all(any(t.startswith("contract:") for t in r.tags) for r in reviews)
        states = sorted(r.state_name for r in reviews)
        assert states == ["Completed", "Completed", "Completed", "Failed"]
        table = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent.id])))
        keys = {a.key for a in table}
        assert {"nightly-batch-contracts", "nightly-batch-summary"} <= keys
        contracts_table = next(a for a in table if a.key == "nightly-batch-contracts")
        rows = json.loads(contracts_table.data) if isinstance(contracts_table.data, str) else contracts_table.data
        assert {r["contract"] for r in rows} == {"contract-0.pdf", "contract-1.pdf", "contract-2.pdf", "locked.pdf"}
        assert next(r for r in rows if r["contract"] == "locked.pdf")["error code"] == "CG-PDF-ENCRYPTED"

    summary = json.loads(next((out / "batches").glob("*.json")).read_text())
    assert summary["mode"] == "deployments"
    assert (summary["totals"]["reviewed"], summary["totals"]["failed"]) == (3, 1)
    assert all(r["clauses"] >= 1 for r in summary["rows"] if r["status"] == "reviewed")
    assert next((out / "batches").glob("*.csv")).read_text().count("\n") == 6  # header + 4 rows + TOTAL

    # The failed review (1 of 3 finished = 33 % > 5 %) fired the failure-alert automation; its run
    # posted the failing run and its error code to the alert channel.
    def alert_posted():
        return [c for c in fake_slack.calls("chat.postMessage", ok_only=True)
                if c.args.get("channel") == "C0ALERTS" and "review-locked.pdf" in c.args.get("text", "")]

    posted = wait_for(alert_posted, timeout=120, interval=2, what="the failure alert in the Slack alert channel")
    text = posted[0].args["text"]
    assert "CG-PDF-ENCRYPTED" in text and "review-locked.pdf" in text and "contract-review runs failed" in text
    def alert_run_completed():  # the message is posted before the run reports its final state
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["failure-alert"])))
        return [r for r in runs if r.state_name == "Completed"]

    wait_for(alert_run_completed, timeout=60, interval=1, what="the failure-alert run to complete")

    # Second night: two new contracts and the old ones.  Reviewed contracts are skipped by content hash
    # (the failed one would be retried; here that is off).  This time the batch runs in `chunks` mode:
    # the new contracts are reviewed as tasks of nightly-batch chunk runs (no process, no run per contract).
    for i in (3, 4):
        make_text_pdf(inbox / f"contract-{i}.pdf", [f"Contract {i}.", *PAGES])
    second = run_deployment("nightly-batch/nightly-batch", timeout=300, poll_interval=2,
                            parameters={**params, "retry_failed": False, "dispatch": "chunks", "chunks": 2,
                                        "inline_threads": 1})
    assert second.state.is_completed(), second.state
    with get_client(sync_client=True) as client:
        again = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[second.id])))
        assert sorted(r.name.rsplit("-", 1)[0] for r in again) == [f"{second.name}-chunk"] * 2
        grandchildren = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[r.id for r in again])))
        assert not [r.name for r in grandchildren if r.name.startswith("review-")]  # no run per contract
        steps = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[r.id for r in again])))
        parsed = [t for t in steps if t.name.startswith("parse-pdf")]
        assert len(parsed) == 2 and all(t.state_name == "Completed" for t in parsed)
    latest = max((out / "batches").glob(f"batch-*-{str(second.id)[:8]}.json"), key=lambda p: p.stat().st_mtime)
    statuses = {r["file"]: r["status"] for r in json.loads(latest.read_text())["rows"]}
    assert statuses == {"contract-0.pdf": "skipped", "contract-1.pdf": "skipped", "contract-2.pdf": "skipped",
                        "locked.pdf": "skipped", "contract-3.pdf": "reviewed", "contract-4.pdf": "reviewed"}
