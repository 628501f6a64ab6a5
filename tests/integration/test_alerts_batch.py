"""The failure-rate alert sees contracts that fail inside a batch run.

A batch reviews its contracts as tasks of its own run (no contract-review run per contract); each review
emits a ``clausegate.review.*`` event (clausegate/batch/review_events.py) and the ``failure-alert`` check
(clausegate/ops/alerts.py) counts those events next to contract-review runs. Here the real batch job runs
in-process (as `clausegate batch` runs it) over a good sample contract and a truncated PDF, against the
session Prefect server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventRelatedFilter
from prefect.variables import Variable

from clausegate.batch import review_events
from clausegate.ops import alerts
from clausegate.pipeline.batch import review_batch
from clausegate.pipeline.sync_body import async_body
from clausegate.review.document.sandbox import fingerprint
from flows.failure_alert import failure_alert
from tests.support import waiting
from tests.support.pdf_factory import make_truncated_pdf

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "healthcare-integrated-reseller-2019.pdf"
PLAYBOOK = """\
name: alert-batch-test
description: test playbook without human gates
categories: [Governing Law, Cap on Liability, Anti-Assignment]
"""


def wait_until(fetch, until, timeout: float = 60.0, what: str = "condition"):
    """``fetch()`` once ``until`` holds for it (tests/support/waiting.py's loop), failing with ``what``."""
    return waiting.wait_until(lambda: (value,) if until(value := fetch()) else None, timeout, what=what, step=0.1,
                              max_step=0.5, ignore=())[0]


@pytest.fixture
def alert_state_restored():
    """The check below records what it alerted in a Prefect Variable: put back what was there."""
    before = Variable.get(alerts.STATE_VARIABLE, default=None)
    yield
    if before is None:
        Variable.unset(alerts.STATE_VARIABLE)
    else:
        Variable.set(alerts.STATE_VARIABLE, before, overwrite=True)


def test_a_contract_failing_inside_a_batch_run_counts_for_the_failure_alert(tmp_path, alert_state_restored):
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    inbox.mkdir()
    shutil.copy(SAMPLE, inbox / SAMPLE.name)
    broken = make_truncated_pdf(inbox / "broken.pdf")
    book = tmp_path / "alert-batch-test.yaml"
    book.write_text(PLAYBOOK)

    batch = flow(name="nightly-batch", validate_parameters=True)(async_body(review_batch))  # as flows/nightly_batch.py
    state = asyncio.run(batch(str(inbox), str(book), str(out), max_in_flight=2, poll_seconds=0.2, deployment=None,
                              return_state=True))
    assert state.is_completed(), state.message
    batch_run_id = str(state.state_details.flow_run_id)
    with get_client(sync_client=True) as client:
        batch_run_name = client.read_flow_run(batch_run_id).name
    rows = {r["file"]: r for r in json.loads(Path(state.result()["summary_files"][1]).read_text())["rows"]}
    assert rows["broken.pdf"]["status"] == "failed" and rows["broken.pdf"]["error_code"] == "CG-PDF-CORRUPT"
    assert rows[SAMPLE.name]["status"] == "reviewed"

    # One event per reviewed contract, about the contract, related to the batch run, with the error code.
    def failed_events():
        with get_client(sync_client=True) as client:
            return client.read_events(EventFilter(
                event=EventNameFilter(name=[review_events.FAILED]),
                related=EventRelatedFilter(id=[f"prefect.flow-run.{batch_run_id}"])), limit=50).events

    event = wait_until(failed_events, bool, what="the batch's clausegate.review.failed event")[0]
    assert event.resource.id == f"clausegate.contract.{fingerprint(broken).contract_id}"
    assert event.payload["error_code"] == "CG-PDF-CORRUPT" and event.payload["file"] == "broken.pdf"
    assert event.payload["status"] == "failed" and event.payload["playbook"] == "alert-batch-test"
    runs = [(r.id, r.name) for r in event.related if r.role == "flow-run"]  # (Prefect adds the flow, tags, ...)
    assert runs == [(f"prefect.flow-run.{batch_run_id}", batch_run_name)]

    # The failure check's reviews: both batch contracts, once each, named by the batch run.
    outcomes = wait_until(lambda: alerts.read_outcomes(60), lambda found: len(
        [o for o in found if o.batch_run_id == batch_run_id]) == 2, what="both batch reviews in read_outcomes")
    assert len({o.id for o in outcomes}) == len(outcomes) and batch_run_id not in {o.id for o in outcomes}
    mine = {o.contract: o for o in outcomes if o.batch_run_id == batch_run_id}
    assert mine["broken.pdf"].failed and mine["broken.pdf"].error_code == "CG-PDF-CORRUPT"
    assert mine["broken.pdf"].name == batch_run_name
    assert mine[SAMPLE.name].state_type == "COMPLETED" and not mine[SAMPLE.name].failed

    check = alerts.evaluate(outcomes, window_minutes=60, threshold_pct=0)
    assert mine["broken.pdf"].id in {r.id for r in check.failing} and check.failed_in_batches >= 1
    text = alerts.render_alert(check, run_url=lambda run_id: f"http://ui/runs/{run_id}")
    assert f"• broken.pdf — `CG-PDF-CORRUPT` — in batch run <http://ui/runs/{batch_run_id}|{batch_run_name}>" in text

    # The failure-alert flow itself counts it (no Slack block here: CG-ALERT-NO-CHANNEL, not sent).
    result = asyncio.run(failure_alert(threshold_pct=0, window_minutes=60, min_runs=1, cooldown_minutes=0,
                                       slack_block="no-such-slack-block"))
    assert result["alerted"] and result["failed"] >= 1 and result["codes"].get("CG-PDF-CORRUPT", 0) >= 1
    assert result["delivered"] is False and result["code"] == alerts.NO_CHANNEL
