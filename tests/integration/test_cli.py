"""`clausegate` as a person runs it (a real subprocess against the session's Prefect server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

from clausegate.stack.state import StackPaths, write_state
from tests.support.pdf_factory import make_truncated_pdf

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "healthcare-integrated-reseller-2019.pdf"
RUN_ID = re.compile(r"/runs/flow-run/([0-9a-f-]{36})")


def clausegate(*args: str, timeout: float = 240, cwd: Path = ROOT, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    env = {**(os.environ if env is None else env), "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "clausegate.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


def test_review_sample_prints_findings_and_writes_report(prefect_server, tmp_path):
    done = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Cap on Liability" in done.stdout
    assert prefect_server.api_url in done.stdout  # it used the configured server, not a temporary one
    report = json.loads(next(tmp_path.glob("*.json")).read_text())
    # Cap on Liability is gated in this playbook; a plain CLI run cannot suspend, so the gate stays pending
    assert report["status"] == "pending_decision" and report["playbook"] == "payment-liability"
    assert "Cap on Liability" in report["gated_categories"]
    assert any(c["category"] == "Cap on Liability" for c in report["clauses"])


def test_review_uses_the_running_local_stack(prefect_server, tmp_path):
    """No PREFECT_API_URL, but a `clausegate up` stack of this project folder is up: the review runs on its server
    (found like `clausegate status` finds it: the state file + health check; the API credential), no temporary one."""
    project = tmp_path / "project"
    write_state(StackPaths.for_project(project), {"version": 1, "project": str(project), "processes": [],
                                                  "api_url": prefect_server.api_url})
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CLAUSEGATE_PROJECT_DIR")}
    done = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--out", str(tmp_path / "reports"),
                      cwd=project, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"the local stack's Prefect server {prefect_server.api_url}" in done.stdout
    assert "temporary" not in done.stdout + done.stderr
    with get_client(sync_client=True) as client:  # the run is on the stack's server, for its UI
        run = client.read_flow_run(uuid.UUID(RUN_ID.search(done.stdout).group(1)))
    assert run.state.is_completed() and run.name == f"review-{SAMPLE.name}"


def test_expected_failure_prints_code_and_next_step_and_keeps_the_traceback_in_the_run_logs(prefect_server, tmp_path):
    pdf = make_truncated_pdf(tmp_path / "broken.pdf")
    done = clausegate("review", str(pdf), "--out", str(tmp_path / "reports"), timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "[CG-PDF-CORRUPT]" in done.stdout and "Next step: download or export the file again" in done.stdout
    assert "Traceback" not in output and "Task run failed" not in output
    assert output.count("damaged or truncated") == 1  # the message once, not in every Prefect error line
    with get_client(sync_client=True) as client:
        flow_run_id = uuid.UUID(RUN_ID.search(done.stdout).group(1))
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    assert any("Traceback" in log.message and "CG-PDF-CORRUPT" in log.message for log in logs)


@pytest.mark.parametrize("args, message", [
    (["review", str(SAMPLE), "--playbook", "nope"], "CG-PLAYBOOK-INVALID"),
    (["review", "no/such/file.pdf"], "CG-PDF-NOT-FOUND"),
])
def test_bad_input_fails_fast_with_a_code(args, message):
    done = clausegate(*args, timeout=60)
    assert done.returncode == 2
    assert message in done.stdout + done.stderr


def test_playbooks_lists_builtins():
    done = clausegate("playbooks", timeout=60)
    assert done.returncode == 0 and "payment-liability" in done.stdout
