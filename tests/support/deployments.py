"""prefect.yaml deployed to the session's Prefect server and process workers on the ``clausegate`` pool,
for the tests that run contract-review (and friends) as real deployment runs.

* ``deploy_once(tmp_root)``: pool, queues and limits (``clausegate.stack.configuration``) and ``prefect deploy``
  of prefect.yaml, once per session; timed schedules switched off so they do not disturb the tests.
* ``start_worker`` / ``stop_worker``: a process worker (optionally with a warm-start process) in its own
  process group.
* ``cancel_unfinished``: cancel runs a stopped worker left behind (they would hold concurrency slots).
* ``SLACK_BLOCK``: the SlackSettings block the e2e ``fake_slack`` fixture saves (tests/e2e/conftest.py);
  pass it to workers as ``CLAUSEGATE_SLACK_BLOCK``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateName,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.states import Cancelled

from clausegate.stack.configuration import POOL, configure, set_pool_command
from clausegate.stack.deploy import deploy, deployable
from clausegate.stack.processes import start_process, stop_process
from clausegate.stack.state import StackPaths
from clausegate.stack.warmstart import WARM_SOCKET_ENV, serve_argv, warm_command
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
SLACK_BLOCK = "deploy-test-slack"
_DEPLOYED: dict | None = None


def deploy_once(tmp_root: Path) -> dict:
    """Pool + queues + limits (clausegate.stack.configuration) and `prefect deploy` of prefect.yaml, once
    per session; schedules switched off afterwards so timed runs do not disturb the tests."""
    global _DEPLOYED
    if _DEPLOYED is not None:
        return _DEPLOYED
    api_url = os.environ["PREFECT_API_URL"]
    paths = StackPaths.for_project(ROOT, home=tmp_root / "stack")
    configured = configure(api_url, paths, timezone_name="Europe/Berlin", log=lambda msg: None)
    names, skipped = deployable(paths)
    started = time.monotonic()
    deploy(api_url, paths, names, log_file=paths.logs / "deploy.log")
    deploy_seconds = time.monotonic() - started
    info: dict = {"configured": configured, "names": names, "skipped": skipped, "deploy_seconds": deploy_seconds,
                  "schedules": {}, "log": paths.logs / "deploy.log"}
    with get_client(sync_client=True) as client:
        for dep in client.read_deployments():
            info["schedules"][dep.name] = [s.schedule for s in dep.schedules]
            for sched in dep.schedules:
                client.update_deployment_schedule(dep.id, sched.id, active=False)
        scheduled = FlowRunFilter(state=FlowRunFilterState(name=FlowRunFilterStateName(any_=["Scheduled"])))
        for run in client.read_flow_runs(flow_run_filter=scheduled):
            if run.auto_scheduled:
                client.delete_flow_run(run.id)
    _DEPLOYED = info
    return info


def start_worker(log: Path, *, name: str, limit: int, extra_env: dict[str, str] | None = None,
                 warm: bool = False, queues: list[str] | None = None) -> subprocess.Popen:
    """A process worker on the `clausegate` pool; ``warm``: with a warm-start process (clausegate up --warm-start);
    ``queues``: only these work queues of the pool (default: all)."""
    env = {**os.environ, "CLAUSEGATE_PROJECT_DIR": str(ROOT), "PREFECT_WORKER_QUERY_SECONDS": "1",
           **(extra_env or {})}
    log.parent.mkdir(parents=True, exist_ok=True)
    zygote = None
    if warm:
        sock = log.parent / "warm.sock"
        zygote = start_process("warm-start", serve_argv(sock),
                               env=env, log=log.parent / "warm-start.log", cwd=ROOT)
        wait_for(lambda: sock.exists() or not zygote.alive(), timeout=120, interval=0.2, what="the warm-start process")
        assert sock.exists(), (log.parent / "warm-start.log").read_text()
        env[WARM_SOCKET_ENV] = str(sock)
    set_pool_command(os.environ["PREFECT_API_URL"], warm_command() if warm else None)
    only = [arg for queue in queues or [] for arg in ("--work-queue", queue)]
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", POOL, "--name", name,
                             "--limit", str(limit), *only], env=env, cwd=str(ROOT), stdout=open(log, "wb"),
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
        stop_process(proc.zygote)
        set_pool_command(os.environ["PREFECT_API_URL"], None)


def cancel_unfinished(flow_names: list[str]) -> int:
    """Cancel runs of these flows left Scheduled/Pending/Running by an earlier test's stopped worker.

    A stranded failure-alert run would hold that deployment's single concurrency slot, so every new
    check would be cancelled (CANCEL_NEW) until its lease expired."""
    unfinished = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED, StateType.PENDING,
                                                                      StateType.RUNNING]))
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=flow_names)),
                                     flow_run_filter=FlowRunFilter(state=unfinished), limit=200)
        for run in runs:
            cancelled = Cancelled(message="test cleanup: stranded by a stopped worker")
            client.set_flow_run_state(run.id, cancelled, force=True)
    return len(runs)


def wait_for(predicate, timeout: float, interval: float = 1.0, what: str = "condition"):
    """Until ``predicate()`` is truthy (returns it); AssertionError after ``timeout`` seconds
    (:func:`tests.support.waiting.wait_until`)."""
    return wait_until(predicate, timeout, what=what, step=interval, max_step=interval, ignore=())
