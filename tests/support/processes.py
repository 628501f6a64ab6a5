"""Real processes in the end-to-end tests: start and wait for them, find a flow run's process, stop them.

Every process a test starts gets its own session (``start_new_session=True``), so stopping its process
group also stops the flow-run processes it started, and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from prefect.client.orchestration import get_client

ROOT = Path(__file__).resolve().parents[2]


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process's group, SIGKILL it if it is not gone within 15 s."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    """Until ``url`` answers 200; fails early (with the log's tail) when ``proc`` exits."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1) as probe:  # one client: each new one loads a CA bundle (~25 ms of CPU)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"process exited early:\n{log.read_text()[-3000:]}")
            try:
                if probe.get(url).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"{url} not up after {timeout}s:\n{log.read_text()[-3000:]}")


def wait_for_deployment(name: str, proc: subprocess.Popen, log: Path, timeout: float = 90,
                        api_url: str | None = None) -> None:
    """Until the deployment ``flow/name`` exists on the session server (or the one at ``api_url``, asked over
    HTTP); fails early when ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if api_url:
                httpx.get(f"{api_url}/deployments/name/{name}", timeout=5).raise_for_status()
            else:
                with get_client(sync_client=True) as client:
                    client.read_deployment_by_name(name)
            return
        except Exception as error:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"serve did not register the deployment {name}:\n{log.read_text()[-3000:]}") from error
            time.sleep(0.3)


def start_served(module_args: list[str], deployment: str, log: Path, env: dict[str, str], *,
                 api_url: str | None = None) -> subprocess.Popen:
    """``python -m <module_args>`` (tests/support/serve_review.py's warm-started worker of ``deployment``) in its
    own session, once the deployment is registered (on the server at ``api_url`` when given, else the session's).
    Stop it with :func:`stop_process_group`."""
    env = {"PREFECT_WORKER_QUERY_SECONDS": "1", **env, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", *module_args], cwd=ROOT, env=env, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_deployment(deployment, proc, log, api_url=api_url)
    except BaseException:
        stop_process_group(proc)
        raise
    return proc


def flow_process(run_id) -> int | None:
    """The pid of the process running flow run ``run_id`` (found by its PREFECT__FLOW_RUN_ID), if any."""
    needle = f"PREFECT__FLOW_RUN_ID={run_id}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    return int(pid)
        except OSError:
            continue
    return None


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (an exited child its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (children first found through ``/proc/<pid>/task/*/children``)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for tid in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{tid}/children") as fh:
                    todo.extend(int(child) for child in fh.read().split())
        except OSError:
            continue
    return found


def signal_tree(pids: list[int], sig: int) -> None:
    """Send ``sig`` to each of ``pids`` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                parents[int(pid)] = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return parents


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def run_watching_children(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 120
                          ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``argv`` to the end like ``subprocess.run`` (text output captured), looking at /proc every 20 ms for
    the processes it starts (children and theirs); returns the result and their command lines (a Prefect server
    lives for seconds: it cannot slip between two looks)."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[int, str] = {}
    reader = threading.Thread(target=lambda: outputs.extend(proc.communicate(timeout=timeout)), daemon=True)
    outputs: list[str] = []
    reader.start()
    while reader.is_alive():
        parents = _parents()
        family = {proc.pid}
        for _ in range(4):  # a few generations deep
            family |= {pid for pid, parent in parents.items() if parent in family}
        for pid in family - {proc.pid} - set(seen):
            seen[pid] = _cmdline(pid)
        time.sleep(0.02)
    reader.join()
    if proc.returncode is None:
        proc.kill()
        proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, *(outputs or ["", ""])), list(seen.values())
