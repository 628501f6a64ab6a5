"""`clausegate up` / `status` / `down` (clausegate/stack/__init__.py).

The process bookkeeping is tested with harmless `sleep` processes.  The full `up` runs against the
session's Prefect server (`--api-url`, so no second server is started): it configures the pool,
deploys prefect.yaml and starts a worker, a fake Slack and the gateway; `down` must stop exactly
those and leave the server alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clausegate import stack

ROOT = Path(__file__).resolve().parents[2]


def sleeper(tmp_path: Path, name: str) -> stack.ProcessRecord:
    return stack.start_process(name, [sys.executable, "-c", "import time; time.sleep(300)"], env=dict(os.environ),
                               log=tmp_path / f"{name}.log", cwd=tmp_path)


def test_process_records_survive_pid_reuse_checks(tmp_path):
    record = sleeper(tmp_path, "a")
    assert record.alive() and record.started
    impostor = stack.ProcessRecord(**{**record.__dict__, "started": "12345"})  # same pid, other start time
    assert not impostor.alive()
    assert stack.stop_process(impostor) == "not running"
    assert record.alive(), "a record whose start time does not match must never be signalled"
    assert stack.stop_process(record) == "stopped"
    assert not record.alive()


def test_down_stops_exactly_what_up_recorded(tmp_path):
    paths = stack.StackPaths.for_project(ROOT, home=tmp_path / "home")
    ours = [sleeper(tmp_path, "server"), sleeper(tmp_path, "worker")]
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    try:
        stack.write_state(paths, {"api_url": "http://127.0.0.1:1/api", "processes": [r.__dict__ for r in ours]})
        assert (paths.home / ".gitignore").read_text().strip().endswith("*")
        lines: list[str] = []
        results = stack.down(paths, echo=lines.append)
        assert [(name, outcome) for name, _, outcome in results] == [("worker", "stopped"), ("server", "stopped")]
        assert not any(r.alive() for r in ours)
        assert unrelated.poll() is None, "down must not touch processes it did not start"
        assert stack.read_state(paths)["processes"] == []
        assert stack.down(paths, echo=lines.append) == []  # second down: nothing left to stop
    finally:
        unrelated.kill()
        unrelated.wait()


def test_up_refuses_a_busy_port(tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        paths = stack.StackPaths.for_project(ROOT, home=tmp_path / "home")
        with pytest.raises(stack.StackError) as info:
            stack.up(stack.StackOptions(port=port), paths, echo=lambda m: None)
    assert info.value.code == stack.PORT_IN_USE and "--port" in str(info.value)
    assert stack.read_state(paths)["processes"] == []


def test_local_timezone_is_an_iana_name():
    from zoneinfo import ZoneInfo

    ZoneInfo(stack.local_timezone())


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_up_status_down_against_a_running_server(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from clausegate.cli import app

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "stack-test-slack")  # never touch other tests' blocks
    api_url = os.environ["PREFECT_API_URL"]
    home = tmp_path / "stack"
    ports = [stack.port_free("127.0.0.1", p) for p in (18787, 18902)]
    assert all(ports), "test ports busy"
    runner = CliRunner()
    result = runner.invoke(app, ["up", "--api-url", api_url, "--home", str(home), "--project", str(ROOT),
                                 "--gateway-port", "18787", "--fake-slack-port", "18902", "--worker-limit", "2",
                                 "--nightly-cron", "30 1 * * *", "--timezone", "America/New_York", "--warm-start"])
    try:
        assert result.exit_code == 0, result.output
        assert "ClauseGate is up" in result.output and "Gateway:  http://127.0.0.1:18787" in result.output
        state = json.loads((home / "stack.json").read_text())
        assert [p["name"] for p in state["processes"]] == ["fake-slack", "warm-start", "worker", "gateway"]  # no server
        assert state["server_started"] is False and state["slack"] == "demo"
        assert state["nightly_schedule"] == "30 1 * * * (America/New_York)"
        import httpx

        assert httpx.get("http://127.0.0.1:18787/healthz", timeout=5).json() == {"status": "ok"}

        def worker_online():
            info = stack.status(stack.StackPaths.for_project(ROOT, home=home))
            return info if any(w[0] == "clausegate-local" and w[1] == "ONLINE" for w in info.get("workers", [])) else None

        deadline = time.monotonic() + 60
        info = None
        while time.monotonic() < deadline and not (info := worker_online()):
            time.sleep(1)
        assert info, "the worker never reported ONLINE"
        assert info["healthy"] and [q[:2] for q in info["queues"]][:3] == [("high", 1), ("normal", 2), ("low", 3)]
        # A flow run on this worker goes through the warm start: forked from the preloaded process.
        from prefect.deployments import run_deployment

        from tests.support.pdf_factory import make_text_pdf

        book = tmp_path / "stack-test.yaml"
        book.write_text("name: stack-test\ncategories: [Governing Law]\n")
        pdf = make_text_pdf(tmp_path / "warm.pdf", ["Governing Law. The laws of the State of New York govern."])
        run = run_deployment("contract-review/contract-review", timeout=240, poll_interval=1, parameters={
            "source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / "reports")})
        assert run.state.is_completed(), run.state
        assert f"flow run {run.id} -> pid" in (home / "logs" / "warm-start.log").read_text()
        assert json.loads(next((tmp_path / "reports").glob("*.json")).read_text())["clauses"]

        status = runner.invoke(app, ["status", "--home", str(home), "--project", str(ROOT)])
        assert status.exit_code == 0 and "healthy" in status.output and "clausegate-local" in status.output

        again = runner.invoke(app, ["up", "--api-url", api_url, "--home", str(home), "--project", str(ROOT)])
        assert again.exit_code == 1 and "CG-STACK-RUNNING" in again.output
    finally:
        down = runner.invoke(app, ["down", "--home", str(home), "--project", str(ROOT)])
        _deactivate_schedules()
    assert down.exit_code == 0, down.output
    for line in ("gateway", "worker", "warm-start", "fake-slack"):
        assert f"{line} (pid" in down.output
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:  # down gave the pool Prefect's own command back
        template = client.read_work_pool(stack.POOL).base_job_template
    assert template["variables"]["properties"]["command"]["default"] is None
    state = json.loads((home / "stack.json").read_text())
    assert state["processes"] == []
    assert stack.api_healthy(api_url), "down must not stop a server that up did not start"


def _deactivate_schedules() -> None:
    """Redeploying re-activated the timed schedules; switch them off again for the rest of the session."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for dep in client.read_deployments():
            for sched in dep.schedules:
                if sched.active:
                    client.update_deployment_schedule(dep.id, sched.id, active=False)
