"""Warm start (clausegate/stack/warmstart.py): a child whose client was killed dies with it, even while it is stopped.

The scenario: a flow-run child of the warm-start process is SIGSTOPped (a hung run), the worker's
cancellation kills its ``warm-run`` client (SIGKILL after the 30 s grace; the SIGTERM it relayed waits in the stopped
child), the run is requeued. The warm-start process sends the child's process group SIGKILL, which a stopped process
cannot hold off. A SIGTERM would wait in the stopped child too; once continued, the child would run Prefect's
SIGTERM handling and book a crash on the requeued run (then a dead letter).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from clausegate.stack.processes import start_process, stop_process
from clausegate.stack.warmstart import serve_argv
from tests.support.deployments import wait_for

CLIENT = ("import sys; from clausegate.stack.warmstart import run_in_zygote; "
          "sys.exit(run_in_zygote(sys.argv[1], 'clausegate.cli', ['gateway', '--port', sys.argv[2]]))")
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _catches_sigterm(pid: int) -> bool:
    """The process has a SIGTERM handler (as a flow run's engine does): a SIGTERM waits while it is stopped."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & SIGTERM_BIT)
    return False


def _state(pid: int) -> str | None:
    """The process's state letter (R, S, T, Z, …) or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_a_stopped_child_dies_when_its_client_is_killed(prefect_server, tmp_path):
    sock = tmp_path / "warm.sock"
    zygote = start_process("warm-start", serve_argv(sock), env=dict(os.environ), log=tmp_path / "warm-start.log",
                           cwd=tmp_path)
    client = child = None
    try:
        wait_for(lambda: sock.exists() or not zygote.alive(), timeout=180, interval=0.2, what="the warm-start process")
        assert sock.exists(), (tmp_path / "warm-start.log").read_text()
        # a child that serves (the gateway under uvicorn) and, like a flow run's engine, handles SIGTERM itself
        port = _free_port()
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(sock), str(port)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
        log = tmp_path / "warm-start.log"
        found = wait_for(lambda: re.search(r"clausegate gateway -> pid (\d+)", log.read_text()), timeout=60,
                         interval=0.2, what="the forked child")
        child = int(found.group(1))
        wait_for(lambda: _answers(port), timeout=120, interval=0.5, what="the child's gateway to answer")
        assert _catches_sigterm(child)
        os.kill(child, signal.SIGSTOP)  # hung
        wait_for(lambda: _state(child) == "T", timeout=30, interval=0.1, what="the child to stop")
        client.kill()  # the worker's SIGKILL of the warm-run client
        client.wait(30)
        # reaped by the warm-start process once dead (a zombie for a moment before that)
        wait_for(lambda: _state(child) in (None, "Z"), timeout=60, interval=0.2,
                 what="the stopped child to die with its client (it stayed stopped, its SIGTERM pending)")
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        if child is not None and _state(child) not in (None, "Z"):
            os.kill(child, signal.SIGKILL)
        stop_process(zygote)
