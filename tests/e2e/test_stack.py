"""`clausegate up` / `status` / `down` (clausegate/stack/lifecycle.py and the modules it drives).

The process bookkeeping is tested with harmless `sleep` processes.  The full `up` runs against the
session's Prefect server (`--api-url`, so no second server is started): it configures the pool,
deploys prefect.yaml and starts a worker, a fake Slack and the gateway; `down` must stop exactly
those and leave the server alone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.security import credentials
from clausegate.stack.configuration import POOL
from clausegate.stack.lifecycle import down, status, up
from clausegate.stack.processes import ProcessRecord, api_healthy, port_free, start_process, stop_process
from clausegate.stack.state import (
    DATABASE_FAILED,
    PORT_IN_USE,
    StackError,
    StackOptions,
    StackPaths,
    read_state,
    write_state,
)
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port
from tests.support.waiting import poll

ROOT = Path(__file__).resolve().parents[2]


def sleeper(tmp_path: Path, name: str) -> ProcessRecord:
    return start_process(name, [sys.executable, "-c", "import time; time.sleep(300)"], env=dict(os.environ),
                         log=tmp_path / f"{name}.log", cwd=tmp_path)


def test_process_records_survive_pid_reuse_checks(tmp_path):
    record = sleeper(tmp_path, "a")
    assert record.alive() and record.started
    impostor = ProcessRecord(**{**record.__dict__, "started": "12345"})  # same pid, other start time
    assert not impostor.alive()
    assert stop_process(impostor) == "not running"
    assert record.alive(), "a record whose start time does not match must never be signalled"
    assert stop_process(record) == "stopped"
    assert not record.alive()


def test_down_stops_exactly_what_up_recorded(tmp_path):
    paths = StackPaths.for_project(ROOT, home=tmp_path / "home")
    ours = [sleeper(tmp_path, "server"), sleeper(tmp_path, "worker")]
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    try:
        write_state(paths, {"api_url": "http://127.0.0.1:1/api", "processes": [r.__dict__ for r in ours]})
        assert (paths.home / ".gitignore").read_text().strip().endswith("*")
        lines: list[str] = []
        results = down(paths, echo=lines.append)
        assert [(name, outcome) for name, _, outcome in results] == [("worker", "stopped"), ("server", "stopped")]
        assert not any(r.alive() for r in ours)
        assert unrelated.poll() is None, "down must not touch processes it did not start"
        assert read_state(paths)["processes"] == []
        assert down(paths, echo=lines.append) == []  # second down: nothing left to stop
    finally:
        unrelated.kill()
        unrelated.wait()


def test_up_refuses_a_busy_port(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        paths = StackPaths.for_project(ROOT, home=tmp_path / "home")
        with pytest.raises(StackError) as info:
            up(StackOptions(port=port), paths, echo=lambda m: None)
    assert info.value.code == PORT_IN_USE and "--port" in str(info.value)
    assert read_state(paths)["processes"] == []


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_up_status_down_against_a_running_server(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "stack-test-slack")  # never touch other tests' blocks
    api_url = os.environ["PREFECT_API_URL"]
    home = tmp_path / "stack"
    ports = [port_free("127.0.0.1", p) for p in (18787, 18902)]
    assert all(ports), "test ports busy"
    runner = CliRunner()
    result = runner.invoke(app, ["up", "--api-url", api_url, "--home", str(home), "--project", str(ROOT),
                                 "--gateway-port", "18787", "--fake-slack-port", "18902", "--worker-limit", "2",
                                 "--nightly-cron", "30 1 * * *", "--timezone", "America/New_York", "--warm-start"])
    try:
        assert result.exit_code == 0, result.output
        assert "ClauseGate is up" in result.output and "Gateway:  http://127.0.0.1:18787" in result.output
        state = json.loads((home / "stack.json").read_text())
        assert [p["name"] for p in state["processes"]] == ["fake-slack", "warm-start", "worker", "gateway",
                                                           "supervisor"]  # no server
        assert state["server_started"] is False and state["slack"] == "demo"
        assert state["nightly_schedule"] == "30 1 * * * (America/New_York)"
        assert httpx.get("http://127.0.0.1:18787/healthz", timeout=5).json() == {"status": "ok"}

        def worker_online():
            info = status(StackPaths.for_project(ROOT, home=home))
            online = any(w[0] == "clausegate-local" and w[1] == "ONLINE" for w in info.get("workers", []))
            return info if online else None

        info = poll(worker_online, 60, step=0.5, max_step=1.0, ignore=())
        assert info, "the worker never reported ONLINE"
        assert info["healthy"] and [q[:2] for q in info["queues"]][:3] == [("high", 1), ("normal", 2), ("low", 3)]
        # A flow run on this worker goes through the warm start: forked from the preloaded process.
        book = tmp_path / "stack-test.yaml"
        book.write_text("name: stack-test\ncategories: [Governing Law]\n")
        pdf = make_text_pdf(tmp_path / "warm.pdf", ["Governing Law. The laws of the State of New York govern."])
        run = run_deployment("contract-review/contract-review", timeout=240, poll_interval=1, parameters={
            "source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / "reports")})
        assert run.state.is_completed(), run.state
        assert f"flow run {run.id} -> pid" in (home / "logs" / "warm-start.log").read_text()
        assert json.loads(next((tmp_path / "reports").glob("*.json")).read_text())["clauses"]

        # The stack heals itself: the supervisor restarts a killed worker, and nothing else.
        before = _pids(home)
        killed_at = datetime.now().astimezone()
        os.kill(before["worker"], signal.SIGKILL)
        assert _poll(lambda: _replaced(home, "worker", before["worker"]), 120), \
            (home / "logs" / "supervisor.log").read_text()
        assert _others(_pids(home), "worker") == _others(before, "worker"), "only the killed process is restarted"
        assert _poll(lambda: _heartbeat_after(home, killed_at), 120), "the restarted worker never sent a heartbeat"
        assert f"worker (pid {before['worker']}) is not running" in (home / "logs" / "supervisor.log").read_text()
        book = status(StackPaths.for_project(ROOT, home=home))["supervisor"]["processes"]["worker"]
        assert book["restarts"] == 1 and not book["next_attempt"], book  # what `clausegate status` shows

        # Without a supervisor (killed too), `up` starts only what is missing.
        before = _pids(home)
        for name in ("supervisor", "gateway"):
            os.kill(before[name], signal.SIGKILL)
            assert _poll(lambda name=name: not _record(home, name).alive(), 30)
        shown = runner.invoke(app, ["status", "--home", str(home), "--project", str(ROOT)])
        assert "No supervisor is running" in " ".join(shown.output.split()), shown.output
        healed = runner.invoke(app, ["up", "--api-url", api_url, "--home", str(home), "--project", str(ROOT)])
        assert healed.exit_code == 0, healed.output
        assert "starting only gateway, supervisor" in " ".join(healed.output.split()), healed.output
        now = _pids(home)
        assert _others(now, "gateway", "supervisor") == _others(before, "gateway", "supervisor")
        assert now["gateway"] != before["gateway"] and _record(home, "gateway").alive()
        assert now["supervisor"] != before["supervisor"] and _record(home, "supervisor").alive()
        assert httpx.get("http://127.0.0.1:18787/healthz", timeout=5).json() == {"status": "ok"}

        shown = runner.invoke(app, ["status", "--home", str(home), "--project", str(ROOT)])
        assert shown.exit_code == 0 and "healthy" in shown.output and "clausegate-local" in shown.output

        again = runner.invoke(app, ["up", "--api-url", api_url, "--home", str(home), "--project", str(ROOT)])
        assert again.exit_code == 1 and "CG-STACK-RUNNING" in again.output
    finally:
        stopped = runner.invoke(app, ["down", "--home", str(home), "--project", str(ROOT)])
        _deactivate_schedules()
    assert stopped.exit_code == 0, stopped.output
    for line in ("supervisor", "gateway", "worker", "warm-start", "fake-slack"):
        assert f"{line} (pid" in stopped.output
    assert stopped.output.index("supervisor (pid") < stopped.output.index("gateway (pid"), "the supervisor first"
    assert (home / "logs" / "supervisor.log").read_text().rstrip().endswith("supervisor exits: stopped")
    with get_client(sync_client=True) as client:  # down gave the pool Prefect's own command back
        template = client.read_work_pool(POOL).base_job_template
    assert template["variables"]["properties"]["command"]["default"] is None
    state = json.loads((home / "stack.json").read_text())
    assert state["processes"] == []
    assert api_healthy(api_url), "down must not stop a server that up did not start"


def _poll(check, timeout: float):
    """``check()``'s first true value within ``timeout`` seconds (None if none)."""
    return poll(check, timeout, step=0.2, max_step=0.5, ignore=())


def _record(home: Path, name: str) -> ProcessRecord:
    return next(ProcessRecord(**p) for p in json.loads((home / "stack.json").read_text())["processes"]
                if p["name"] == name)


def _pids(home: Path) -> dict[str, int]:
    return {p["name"]: p["pid"] for p in json.loads((home / "stack.json").read_text())["processes"]}


def _others(pids: dict[str, int], *names: str) -> dict[str, int]:
    return {n: p for n, p in pids.items() if n not in names}


def _replaced(home: Path, name: str, old_pid: int) -> bool:
    record = _record(home, name)
    return record.pid != old_pid and record.alive()


def _heartbeat_after(home: Path, moment: datetime) -> bool:
    workers = status(StackPaths.for_project(ROOT, home=home)).get("workers", [])
    return any(n == "clausegate-local" and t not in ("None", "") and datetime.fromisoformat(t) > moment
               for n, _, t in workers)


def _deactivate_schedules() -> None:
    """Redeploying re-activated the timed schedules; switch them off again for the rest of the session."""
    with get_client(sync_client=True) as client:
        for dep in client.read_deployments():
            for sched in dep.schedules:
                if sched.active:
                    client.update_deployment_schedule(dep.id, sched.id, active=False)


@pytest.mark.slow
def test_review_without_a_stack_starts_a_quiet_temporary_server(tmp_path):
    """No PREFECT_API_URL and no stack up: `clausegate review` says so and runs on a temporary server, which runs
    without analytics (no "Failed to send telemetry" on a machine without internet)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_SERVER_ANALYTICS_ENABLED", "CLAUSEGATE_PROJECT_DIR",
                        "PREFECT_SERVER_API_AUTH_STRING", "PREFECT_API_AUTH_STRING")}
    # a fresh database: migrations on a loaded machine can outlast Prefect's 20 s start-up wait
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",
               COLUMNS="160")
    pdf = make_text_pdf(tmp_path / "alone.pdf", ["Governing Law. The laws of the State of New York govern."])
    done = subprocess.run([sys.executable, "-m", "clausegate.cli", "review", str(pdf), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on a temporary Prefect server (no local stack is up" in done.stdout
    assert "telemetry" not in (done.stdout + done.stderr).lower()
    # the launcher started that server as the command started (clausegate/stack/temporary_server.py), and the
    # run used it, also via `python -m clausegate.cli` (which loads Prefect first): Prefect started none of its own
    assert (tmp_path / "prefect" / "temporary-server.log").exists()
    assert "Starting temporary server" not in done.stdout + done.stderr


@pytest.mark.slow
def test_batch_without_a_stack_ends_without_server_tracebacks(tmp_path):
    """`clausegate batch` on a temporary server: when Prefect stops that server at exit, its task-run recorder
    still holds the last events and logged a traceback per event ("Error flushing ... events"); the temporary
    server of a one-off command keeps its log off the console (clausegate.stack.environment)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_SERVER_ANALYTICS_ENABLED", "CLAUSEGATE_PROJECT_DIR",
                        "PREFECT_SERVER_API_AUTH_STRING", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_LOGGING_LEVEL")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",
               COLUMNS="160")
    folder = tmp_path / "contracts"
    folder.mkdir()
    for i in range(12):
        make_text_pdf(folder / f"c{i:02d}.pdf", [f"Contract {i}. Governing Law. The laws of the State of New "
                                                 "York govern this Agreement. Either party may terminate on notice."])
    command = [sys.executable, "-m", "clausegate.cli", "batch", str(folder), "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "12 reviewed" in output, output[-2000:]
    assert "Traceback" not in output and "Error flushing" not in output, output[-4000:]
    assert (tmp_path / "prefect" / "temporary-server.log").exists()  # the launcher's, started with the command
    assert "Starting temporary server" not in output  # ... and the run used it: Prefect started none of its own


def _minimal(port: int, **kw) -> StackOptions:
    """A stack with only its database and server (configured; no deploy, worker, gateway or UI)."""
    return StackOptions(port=port, start_worker=False, start_gateway=False, deploy=False, ui=False, slack="off",
                        warm_start=False, **kw)


def _pools(api_url: str) -> bool:
    """Whether the API answers a query of its database (the work pools)."""
    user, _, password = credentials.api_auth_string().partition(":")
    try:
        return httpx.post(f"{api_url}/work_pools/filter", json={}, auth=(user, password), timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _processes_on(folder: Path) -> list[int]:
    """Pids of processes whose command line names ``folder`` (a PostgreSQL started on that data folder)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.slow
def test_up_runs_the_server_on_an_embedded_postgres_and_down_stops_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("PREFECT_API_AUTH_STRING", raising=False)
    monkeypatch.delenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", raising=False)
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    runner = CliRunner()
    try:
        state = up(_minimal(free_port()), paths, echo=lambda m: None)
        db = state["database"]
        assert db["kind"] == "postgres" and db["data_dir"] == str(paths.postgres_data)
        socket_dir = db["url"].split("host=", 1)[1]
        assert db["url"] == f"postgresql+asyncpg://postgres@/prefect?host={socket_dir}"  # no password in it
        names = [p["name"] for p in state["processes"]]
        assert names == ["postgres", "server", "supervisor"], names  # the database first: down stops it last
        pg = next(r for r in (ProcessRecord(**p) for p in state["processes"]) if r.name == "postgres")
        assert pg.alive()
        # the server really writes there: the pool `up` configured is a row of Prefect's table in PostgreSQL
        pools = subprocess.run([str(Path(pg.argv[0]).with_name("psql")), "-X", "-tA", "-c",
                                "SELECT name FROM work_pool", f"postgresql://postgres@/prefect?host={socket_dir}"],
                               capture_output=True, text=True, timeout=60)
        assert pools.returncode == 0 and POOL in pools.stdout.split(), pools.stdout + pools.stderr
        assert not (paths.prefect_home / "prefect.db").exists(), "the server must not have used SQLite"
        shown = runner.invoke(app, ["status", "--home", str(paths.home), "--project", str(ROOT)])
        assert shown.exit_code == 0, shown.output
        assert "Database: PostgreSQL (embedded)" in " ".join(shown.output.split())  # (rich wraps long lines)
        assert "postgresql+asyncpg://postgres@/prefect?host=" in "".join(shown.output.split())
        # kill -9 of the database: the supervisor starts it again (its stale socket lock removed) and the server,
        # left running, answers from it again
        server = next(r for r in (ProcessRecord(**p) for p in state["processes"]) if r.name == "server")
        os.kill(pg.pid, signal.SIGKILL)
        assert _poll(lambda: _replaced(paths.home, "postgres", pg.pid) and _pools(state["api_url"]), 120), \
            (paths.logs / "supervisor.log").read_text()
        assert server.alive() and _record(paths.home, "server").pid == server.pid, "only the database restarted"
    finally:
        results = down(paths, echo=lambda m: None)
    assert [(name, outcome) for name, _, outcome in results] == [("supervisor", "stopped"), ("server", "stopped"),
                                                                  ("postgres", "stopped")]
    assert not pg.alive() and _processes_on(paths.postgres_data) == [], "down must leave no postgres process"
    assert (paths.postgres_data / "PG_VERSION").exists(), "down keeps the data"


@pytest.mark.slow
def test_up_database_sqlite_keeps_prefects_default(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUSEGATE_SECRETS_DIR", str(tmp_path / "secrets"))
    monkeypatch.delenv("PREFECT_API_AUTH_STRING", raising=False)
    monkeypatch.delenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", raising=False)
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    try:
        state = up(_minimal(free_port(), database="sqlite"), paths, echo=lambda m: None)
        assert state["database"]["kind"] == "sqlite"
        assert [p["name"] for p in state["processes"]] == ["server", "supervisor"]
        assert (paths.prefect_home / "prefect.db").exists() and not paths.postgres_data.exists()
    finally:
        down(paths, echo=lambda m: None)


def test_a_database_that_does_not_start_is_a_clear_error_and_leaves_nothing(tmp_path, monkeypatch):
    """A data folder PostgreSQL cannot use (here: written by an unknown PostgreSQL version)."""
    monkeypatch.delenv("PREFECT_SERVER_DATABASE_CONNECTION_URL", raising=False)
    paths = StackPaths.for_project(ROOT, home=tmp_path / "stack")
    paths.postgres_data.mkdir(parents=True)
    (paths.postgres_data / "PG_VERSION").write_text("9\n")
    with pytest.raises(StackError) as info:
        up(_minimal(free_port()), paths, echo=lambda m: None)
    error = info.value
    assert error.code == DATABASE_FAILED and str(paths.postgres_data) in error.message
    assert "--database sqlite" in error.hint and str(paths.postgres_data / "log") in error.hint
    assert read_state(paths)["processes"] == [] and _processes_on(paths.postgres_data) == []
    result = CliRunner().invoke(app, ["up", "--database", "mysql", "--home", str(tmp_path / "other"),
                                      "--project", str(ROOT), "--port", str(free_port())])
    assert result.exit_code == 1 and "CG-STACK-CONFIG" in result.output
    assert "--database postgres|sqlite" in " ".join(result.output.split())
