"""Strict text mode at the gate (docs/security.md, *Contract text at rest*), with real processes and real HTTP.

A warm-started process worker runs the ``gate-probe`` deployment (the real ``run_gate`` on a synthetic review) with
``CLAUSEGATE_STRICT_TEXT=true``; its run suspends at the gate. Nothing Prefect stores for the run (gate record,
form description, any flow-run input) nor the Slack message holds the clause text; ``clausegate gate-text RUN``,
with the API credential and the at-rest key, prints it.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.demo.slack_server import FakeSlack
from tests.support.gate_probe import CLAUSE
from tests.support.gates import slack_settings, wait_for_state
from tests.support.processes import start_served, stop_process_group

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]
PIECE = "for which Supplier's liability shall be unlimited"


def test_a_strict_gate_keeps_the_clause_text_out_of_prefect_and_slack(tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.states import Cancelled

    name = f"strict-{uuid.uuid4().hex[:6]}"
    with FakeSlack(token="xoxb-strict") as slack:
        block = f"strict-{uuid.uuid4().hex[:8]}"
        slack_settings(slack).save(block, overwrite=True)
        env = {**os.environ, "CLAUSEGATE_SLACK_BLOCK": block, "CLAUSEGATE_STRICT_TEXT": "true"}
        serve = start_served(["tests.support.gate_probe", "serve", name], f"gate-probe/{name}", tmp_path / "serve.log",
                             env)
        try:
            run = run_deployment(f"gate-probe/{name}", timeout=0,
                                 parameters={"label": name, "out": str(tmp_path / "out.json")})
            wait_for_state(run.id, {"Suspended"}, timeout=180, poll=0.3)
            with get_client(sync_client=True) as client:
                inputs = client.filter_flow_run_input(flow_run_id=run.id, key_prefix="", limit=200,
                                                      exclude_keys=set())
            stored = json.dumps([item.value for item in inputs])
            assert "Uncapped Liability" in stored and "[text sealed" in stored  # the record is there, sealed
            assert PIECE not in stored, "clause text in Prefect's database"
            posted = json.dumps(list(slack.messages.values()))
            assert "Uncapped Liability" in posted and PIECE not in posted, "clause text in Slack"

            out = CliRunner().invoke(app, ["gate-text", str(run.id)])
            assert out.exit_code == 0, out.output
            assert PIECE in " ".join(out.output.split())
            assert CLAUSE.split(".")[0] in out.output
        finally:
            stop_process_group(serve)
            with get_client(sync_client=True) as client:
                client.set_flow_run_state(run.id, Cancelled(), force=True)
