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

from clausegate.stack.processes import start_process, stop_process
from clausegate.stack.state import StackPaths, write_state
from clausegate.stack.warmstart import serve_argv
from tests.support.deployments import wait_for
from tests.support.hostile_playbooks import MARKER, hostile_playbooks
from tests.support.pdf_factory import make_truncated_pdf

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "healthcare-integrated-reseller-2019.pdf"
RUN_ID = re.compile(r"/runs/flow-run/([0-9a-f-]{36})")


def clausegate(*args: str, timeout: float = 240, cwd: Path = ROOT, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    env = {**(os.environ if env is None else env), "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "clausegate.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


@pytest.mark.slow
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

    # Delete the report to re-review (the runbook's advice): every step is cached, the report is
    # written again, as the command says.
    written = sorted(p.name for p in tmp_path.iterdir())
    for path in tmp_path.iterdir():
        path.unlink()
    again = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--out", str(tmp_path))
    assert again.returncode == 0 and f"Report: {tmp_path}" in again.stdout, again.stdout + again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == written


@pytest.mark.slow
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


@pytest.mark.slow
def test_review_runs_in_the_stacks_warm_start_process(prefect_server, tmp_path):
    """A stack with a warm-start process is up: `clausegate review` runs as a fork of it (Prefect, the flow and the
    model loaded already; clausegate/cli/launch.py), prints as usual and exits with the review's status;
    ``--no-warm-start`` runs it in the command's own process."""
    project = tmp_path / "project"
    sock = tmp_path / "warm.sock"
    zygote = start_process("warm-start", serve_argv(sock), env=dict(os.environ), log=tmp_path / "warm-start.log",
                           cwd=ROOT)
    try:
        wait_for(lambda: sock.exists() or not zygote.alive(), timeout=120, interval=0.2, what="the warm-start process")
        write_state(StackPaths.for_project(project), {"version": 1, "project": str(project), "processes": [],
                                                      "api_url": prefect_server.api_url, "warm_start": str(sock)})
        env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CLAUSEGATE_PROJECT_DIR")}
        done = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--out", str(tmp_path / "warm"),
                          cwd=project, env=env, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        said = " ".join(done.stdout.split())
        assert f"the local stack's Prefect server {prefect_server.api_url} (run by the stack's warm-start" in said
        assert "Cap on Liability" in done.stdout and next((tmp_path / "warm").glob("*.json"))
        assert (tmp_path / "warm-start.log").read_text().count("clausegate review -> pid") == 1
        with get_client(sync_client=True) as client:
            run = client.read_flow_run(uuid.UUID(RUN_ID.search(done.stdout).group(1)))
        assert run.state.is_completed()

        broken = clausegate("review", str(make_truncated_pdf(tmp_path / "broken.pdf")), "--out",
                            str(tmp_path / "warm"), cwd=project, env=env, timeout=120)
        assert broken.returncode == 1 and "[CG-PDF-CORRUPT]" in broken.stdout, broken.stdout + broken.stderr

        own = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--no-warm-start", "--out",
                         str(tmp_path / "own"), cwd=project, env=env, timeout=120)
        assert own.returncode == 0, own.stdout + own.stderr
        assert "warm-start" not in " ".join(own.stdout.split()) and next((tmp_path / "own").glob("*.json"))
        assert (tmp_path / "warm-start.log").read_text().count("clausegate review -> pid") == 2
    finally:
        stop_process(zygote)


@pytest.mark.slow
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


@pytest.mark.parametrize("kind", ["deep", "large", "tag"])
def test_a_hostile_playbook_is_one_coded_error_without_a_traceback_or_its_contents(tmp_path, kind):
    path = hostile_playbooks(tmp_path)[kind]
    done = clausegate("review", str(SAMPLE), "--playbook", str(path), timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-2000:]
    assert "[CG-PLAYBOOK-INVALID]" in output and "Next step" in output, output[-2000:]
    assert "Traceback" not in output and MARKER not in output and MARKER.lower() not in output, output[-2000:]
    assert len(output.splitlines()) <= 6 and len(output) < 1500, output[-2000:]


def test_playbooks_lists_builtins():
    done = clausegate("playbooks", timeout=60)
    assert done.returncode == 0 and "payment-liability" in done.stdout


@pytest.mark.slow
def test_an_unknown_category_names_the_command_that_lists_them(tmp_path):
    """The message names `clausegate playbooks --categories` (never a Python symbol), and that
    command lists the names, the suggested one among them."""
    path = tmp_path / "typo.yaml"
    path.write_text("name: typo\ncategories: [Cap On Liability, Uncaped Liability]\n")
    done = clausegate("review", str(SAMPLE), "--playbook", str(path), timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2 and "clausegate playbooks --categories" in output, output[-2000:]
    assert "did you mean 'Uncapped Liability'?" in " ".join(output.split()), output[-2000:]
    listed = clausegate("playbooks", "--categories", timeout=60)
    assert listed.returncode == 0 and "Uncapped Liability" in listed.stdout.splitlines(), listed.stdout[-2000:]


def test_review_on_the_stack_without_its_credential_is_one_coded_line(prefect_server, tmp_path):
    """A stack is up in this folder, but this shell has not its API credential (another secrets
    folder): one CG-STACK-CREDENTIAL line saying where the credential is looked for (not Prefect's 401
    traceback, 93 lines)."""
    project = tmp_path / "project"
    write_state(StackPaths.for_project(project), {"version": 1, "project": str(project), "processes": [],
                                                  "api_url": prefect_server.api_url})
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "CLAUSEGATE_PROJECT_DIR", "PREFECT_API_AUTH_STRING")}
    env["CLAUSEGATE_SECRETS_DIR"] = str(tmp_path / "other-secrets")
    done = clausegate("review", str(SAMPLE), "--no-warm-start", "--out", str(tmp_path / "reports"), cwd=project,
                      env=env, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output[-3000:]
    assert "Traceback" not in output and "401" not in output.replace("CG-", ""), output[-3000:]
    coded = [line for line in output.splitlines() if "CG-STACK-CREDENTIAL" in line]
    assert len(coded) == 1 and str(tmp_path / "other-secrets") in " ".join(output.split()), output[-3000:]
    assert len(output.strip().splitlines()) <= 6, output[-3000:]
