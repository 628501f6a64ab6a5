"""A deployed review whose model "confirms" its gated findings at a very low confidence still suspends at the gate.

With real processes and real HTTP: the session Prefect server, a warm-started process worker
running the contract-review flow as a deployment, a fake Claude (Messages API on 127.0.0.1) that quotes every gated
offline finding at confidence 0.01, and a playbook with ``min_confidence: 0.5``. The model's quote must not
replace a finding: the threshold would drop it and the run would complete with nothing gated.
"""

from __future__ import annotations

import os
import uuid

import pytest

from clausegate.demo.model_server import FakeModelServer
from clausegate.demo.slack_server import FakeSlack
from tests.support.contracts import LIABILITY_PAGES
from tests.support.gates import slack_settings, state_of, wait_for_state
from tests.support.model_flow import KEY, confirming_at, playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf
from tests.support.processes import start_served, stop_process_group

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]

GATED = "[Uncapped Liability, Liquidated Damages, Cap on Liability]"
GATES = "[{category: Uncapped Liability}, {category: Liquidated Damages}, {category: Cap on Liability}]"
THRESHOLD = ", min_confidence: 0.5"


def wait_for_log(run_id, prefix: str, timeout: float = 30.0):
    """The run's first log line starting with ``prefix``, as the Prefect API stores it (with its level)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
        found = [log for log in logs if log.message.startswith(prefix)]
        if found or time.monotonic() > deadline:
            assert found, f"no log line {prefix!r} among {[log.message[:60] for log in logs]}"
            return found[0]
        time.sleep(0.5)


def test_a_deployed_run_suspends_when_the_model_confirms_at_low_confidence(tmp_path):
    from prefect.deployments import run_deployment

    pdf = make_text_pdf(tmp_path / "msa.pdf", LIABILITY_PAGES)
    offline, _ = review(tmp_path, pdf, playbook(tmp_path, "offline", high_risk=GATED, gates=GATES, extract=THRESHOLD),
                        out="offline")
    gated = [(c.category, c.text) for c in offline.result().clauses
             if c.category in offline.result().gated_categories]
    assert gated

    name = f"lowconf-{uuid.uuid4().hex[:6]}"
    with FakeModelServer("anthropic", api_key=KEY, responder=confirming_at(0.01, gated)) as model, \
            FakeSlack(token="xoxb-lowconf") as slack:
        book = playbook(tmp_path, save_block("anthropic", model), high_risk=GATED, gates=GATES, extract=THRESHOLD)
        block = f"lowconf-{uuid.uuid4().hex[:8]}"
        slack_settings(slack).save(block, overwrite=True)
        serve = start_served(["tests.support.serve_review", name, "1"], f"contract-review/{name}",
                             tmp_path / "serve.log", {**os.environ, "CLAUSEGATE_SLACK_BLOCK": block})
        try:
            run = run_deployment(f"contract-review/{name}", timeout=0,
                                 parameters={"source": str(pdf), "playbook": book, "out_dir": str(tmp_path / "out")})
            final = wait_for_state(run.id, {"Suspended", "Completed", "Failed", "Crashed"}, timeout=240, poll=0.5)
            assert final == "Suspended", (f"the run ended {state_of(run.id)} instead of waiting for a person; "
                                          f"serve log:\n{(tmp_path / 'serve.log').read_text()[-3000:]}")
            assert model.calls >= 1
            posted = " ".join(str(m["blocks"]) for m in slack.messages.values())
            assert any(category in posted for category, _ in gated)
            # a run suspended at its gate is not an error in its log
            finished = wait_for_log(run.id, "Finished in state Suspended")
            assert finished.level == 20, f"logged at level {finished.level}"
        finally:
            stop_process_group(serve)
            from prefect.client.orchestration import get_client
            from prefect.states import Cancelled

            with get_client(sync_client=True) as client:
                client.set_flow_run_state(run.id, Cancelled(), force=True)
