"""prefect.yaml deployed (`prefect deploy --no-prompt`) to the session's real Prefect server, a real
process worker, and the nightly batch (reviews as tasks of its runs, a chunk run, a gate run).

Also shows the failure alert end to end: a failed contract-review run fires the failure-alert
deployment's trigger (a Prefect automation), whose run posts to the Slack alert channel (a fake
Slack on loopback). The deploy and worker helpers are in tests/support/deployments.py.
"""

from __future__ import annotations

import json
import time

import pytest

from clausegate.runs.tags import batch_tag
from tests.support.contracts import NO_GATES_PLAYBOOK
from tests.support.deployments import SLACK_BLOCK, cancel_unfinished, deploy_once, start_worker, stop_worker, wait_for
from tests.support.pdf_factory import make_encrypted_pdf, make_text_pdf

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server")]

PAGES = [
    "SERVICES AGREEMENT between Acme Corp. and Widget Ltd.",
    "Governing Law. This Agreement shall be governed by the laws of the State of New York.",
    "Limitation of Liability. In no event shall either party's aggregate liability exceed the fees paid "
    "by Customer in the twelve months preceding the claim.",
]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> dict:
    return deploy_once(tmp_path_factory.mktemp("deployments"))


@pytest.fixture(scope="module")
def worker(deployed, fake_slack, tmp_path_factory):
    """A process worker with a warm-start process, as `clausegate up` starts it by default: its flow runs fork
    from a preloaded Python instead of starting a new one each (the nightly batch's chunk runs, the alerts)."""
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    proc = start_worker(log, name="deploy-test-worker", limit=4, extra_env={"CLAUSEGATE_SLACK_BLOCK": SLACK_BLOCK},
                        warm=True)
    yield proc
    stop_worker(proc)


def test_prefect_yaml_deploys_everything_non_interactively(deployed):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.schedules import CronSchedule, IntervalSchedule

    assert set(deployed["names"]) == {"contract-review", "nightly-batch", "sla-sweeper", "failure-alert",
                                      "dead-letters", "retention", "gate-stats", "deadline-reminder"}, deployed
    assert deployed["configured"]["queues"][:3] == [("high", 1), ("normal", 2), ("low", 3)]
    nightly = deployed["schedules"]["nightly-batch"][0]
    assert isinstance(nightly, CronSchedule) and nightly.cron == "0 2 * * *" and nightly.timezone == "Europe/Berlin"
    assert isinstance(deployed["schedules"]["sla-sweeper"][0], IntervalSchedule)
    retention = deployed["schedules"]["retention"][0]
    assert isinstance(retention, CronSchedule) and retention.cron == "30 3 * * *"
    assert retention.timezone == "Europe/Berlin"
    weekly = deployed["schedules"]["gate-stats"][0]
    assert isinstance(weekly, CronSchedule) and weekly.cron == "0 7 * * 1" and weekly.timezone == "Europe/Berlin"
    with get_client(sync_client=True) as client:
        review = client.read_deployment_by_name("contract-review/contract-review")
        schema = review.parameter_openapi_schema
        assert schema["required"] == ["source"]
        assert {"source", "playbook", "extractor", "out_dir"} <= set(schema["properties"])
        assert schema["properties"]["source"]["type"] == "string"
        assert "worker's machine" in schema["properties"]["source"]["description"]  # the UI form explains it
        assert "payment-liability" in schema["properties"]["playbook"]["anyOf"][0]["properties"]["name"]["enum"]
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


GATED_PLAYBOOK = """\
name: deploy-gated
description: a gate on governing law (every test contract has one)
categories: [Governing Law]
gates:
  - {category: Governing Law, sla_hours: 24, reason: test gate}
"""


def test_nightly_batch_reviews_as_tasks_spreads_over_chunk_runs_and_asks_people(deployed, worker, fake_slack,
                                                                                  tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
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
    # 4 contracts, 3 at a time per run, up to 2 runs: this run and one chunk run share the list.
    params = {"source": str(inbox), "playbook": str(book), "out_dir": str(out), "max_in_flight": 3,
              "max_parallel_runs": 2, "poll_seconds": 1.0}

    started = time.monotonic()
    parent = run_deployment("nightly-batch/nightly-batch", parameters=params, timeout=400, poll_interval=2)
    elapsed = time.monotonic() - started
    assert parent.state.is_completed(), parent.state
    print(f"nightly batch of 4 contracts on a worker: {elapsed:.1f} s")

    with get_client(sync_client=True) as client:
        chunks = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent.id])))
        assert [r.name for r in chunks] == [f"{parent.name}-chunk-1"]
        chunk = chunks[0]
        assert chunk.state_name == "Completed" and chunk.work_queue_name == "low"
        assert chunk.labels.get("prefect.worker.name") == "deploy-test-worker"
        # no run per contract: no gate here, so no contract-review run at all
        assert not client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=[batch_tag(str(parent.id))])))
        steps = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent.id, chunk.id])))
        parsed = [t for t in steps if t.name.startswith("parse-pdf")]
        # each contract reviewed once, by whichever run claimed it first (clausegate/batch/claims.py)
        assert len(parsed) == 4 and {t.flow_run_id for t in parsed} <= {parent.id, chunk.id}
        table = client.read_artifacts(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent.id])))
        assert {"nightly-batch-contracts", "nightly-batch-summary"} <= {a.key for a in table}
        contracts_table = next(a for a in table if a.key == "nightly-batch-contracts")
        rows = json.loads(contracts_table.data) if isinstance(contracts_table.data, str) else contracts_table.data
        assert {r["contract"] for r in rows} == {"contract-0.pdf", "contract-1.pdf", "contract-2.pdf", "locked.pdf"}
        assert next(r for r in rows if r["contract"] == "locked.pdf")["error code"] == "CG-PDF-ENCRYPTED"
        assert {r["worker"] for r in rows} == {"deploy-test-worker"}

    summary = json.loads((out / "batches").glob(f"batch-*-{str(parent.id)[:8]}.json").__next__().read_text())
    assert summary["mode"] == "tasks of this run and 1 chunk run(s)"
    assert (summary["totals"]["reviewed"], summary["totals"]["failed"]) == (3, 1)
    assert all(r["clauses"] >= 1 for r in summary["rows"] if r["status"] == "reviewed")
    assert {r["flow_run_id"] for r in summary["rows"]} <= {str(parent.id), str(chunk.id)}  # who claimed each
    assert not list((out / "batches").glob("claims-*"))  # dropped once every run was final
    csv_file = next((out / "batches").glob(f"batch-*-{str(parent.id)[:8]}.csv"))
    assert csv_file.read_text().count("\n") == 6  # header + 4 rows + TOTAL

    # Second night: two new contracts and the old ones.  Reviewed contracts are skipped by content hash
    # (the failed one would be retried; here that is off); two contracts fit one run: no chunk run.
    for i in (3, 4):
        make_text_pdf(inbox / f"contract-{i}.pdf", [f"Contract {i}.", *PAGES])
    second = run_deployment("nightly-batch/nightly-batch", timeout=300, poll_interval=2,
                            parameters={**params, "retry_failed": False})
    assert second.state.is_completed(), second.state
    with get_client(sync_client=True) as client:
        assert not client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[second.id])))
    latest = next((out / "batches").glob(f"batch-*-{str(second.id)[:8]}.json"))
    statuses = {r["file"]: r["status"] for r in json.loads(latest.read_text())["rows"]}
    assert statuses == {"contract-0.pdf": "skipped", "contract-1.pdf": "skipped", "contract-2.pdf": "skipped",
                        "locked.pdf": "skipped", "contract-3.pdf": "reviewed", "contract-4.pdf": "reviewed"}

    # A contract that needs a person: reviewed as tasks, then sent as its own contract-review run (tagged
    # with the batch), which suspends at the gate with every finished step from the cache.
    gated = tmp_path / "deploy-gated.yaml"
    gated.write_text(GATED_PLAYBOOK)
    third = run_deployment("nightly-batch/nightly-batch", timeout=300, poll_interval=2, parameters={
        **params, "playbook": str(gated), "limit": 1,
        "work_queue": "normal"})
    assert third.state.is_completed(), third.state
    with get_client(sync_client=True) as client:
        asked = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            tags=FlowRunFilterTags(all_=[batch_tag(str(third.id))])))
        assert len(asked) == 1 and asked[0].state_name == "Suspended" and asked[0].parent_task_run_id is None
        assert asked[0].work_queue_name == "normal"
        steps = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[asked[0].id])))
        assert {t.state_name for t in steps if t.name.startswith(("parse-pdf", "extract"))} == {"Cached"}
    row = next(r for r in json.loads(next((out / "batches").glob(f"batch-*-{str(third.id)[:8]}.json")).read_text())
               ["rows"] if r["status"] not in ("skipped", "duplicate"))
    assert row["status"] == "waiting" and row["gates_waiting"] == 1 and row["flow_run_id"] == str(asked[0].id)
    cancel_unfinished(["contract-review"])


def test_a_failed_contract_review_run_alerts_the_alert_channel(deployed, worker, fake_slack, tmp_path):
    """A failed contract-review run (an ad-hoc review; batch reviews are tasks of the batch run and show in
    its summary) fires the failure-alert automation, whose run posts to the alert channel."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import DeploymentUpdate
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.deployments import run_deployment

    locked = make_encrypted_pdf(tmp_path / "locked.pdf", PAGES)
    book = tmp_path / "deploy-test.yaml"
    book.write_text(NO_GATES_PLAYBOOK)
    # Failures of earlier test modules trigger failure-alert runs too (one may run right now, as this
    # worker starts) and would hold this test's alert back in the 10-minute cooldown: no cooldown here,
    # and no run stranded by an earlier module's stopped worker holding the deployment's only slot.
    cancel_unfinished(["failure-alert", "dead-letters"])
    with get_client(sync_client=True) as client:
        alert_deployment = client.read_deployment_by_name("failure-alert/failure-alert")
        client.update_deployment(alert_deployment.id, DeploymentUpdate(
            parameters={**alert_deployment.parameters, "cooldown_minutes": 0}))

    review = run_deployment("contract-review/contract-review", timeout=300, poll_interval=2,
                            parameters={"source": str(locked), "playbook": str(book), "out_dir": str(tmp_path / "r")})
    assert review.state.is_failed(), review.state

    def alert_posted():
        return [c for c in fake_slack.calls("chat.postMessage", ok_only=True)
                if c.args.get("channel") == "C0ALERTS" and review.name in c.args.get("text", "")]

    posted = wait_for(alert_posted, timeout=120, interval=2, what="the failure alert in the Slack alert channel")
    text = posted[0].args["text"]
    assert "CG-PDF-ENCRYPTED" in text and review.name in text and "contract-review runs failed" in text

    def alert_run_completed():  # the message is posted before the run reports its final state
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["failure-alert"])))
        return [r for r in runs if r.state_name == "Completed"]

    wait_for(alert_run_completed, timeout=60, interval=1, what="the failure-alert run to complete")
