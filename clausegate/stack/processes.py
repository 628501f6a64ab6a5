"""The processes a stack starts: each in its own session (process group), recorded with its pid and
start time the moment it starts, stopped only while that start time still matches (a reused pid is
not ours); plus the port and health waits that tell when a process is ready."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from clausegate.stack.state import StackError


@dataclass
class ProcessRecord:
    name: str
    pid: int
    started: str          # process start time as the OS reports it (pid reuse check)
    argv: list[str]
    log: str
    url: str = ""

    def alive(self) -> bool:
        return process_start_time(self.pid) == self.started


def records(state: dict[str, Any] | None) -> list[ProcessRecord]:
    """The processes a state file (``stack.json``) recorded, oldest first."""
    return [ProcessRecord(**p) for p in (state or {}).get("processes", [])]


def process_start_time(pid: int) -> str | None:
    """An opaque start-time token for ``pid`` (None if no such process)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            text = stat.read_text()
        except OSError:
            return None
        fields = text[text.rfind(")") + 2:].split()
        if fields and fields[0] == "Z":  # zombie: exited, not yet reaped
            return None
        return fields[19] if len(fields) > 19 else None
    try:  # macOS / BSD
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def start_process(name: str, argv: list[str], *, env: dict[str, str], log: Path, cwd: Path) -> ProcessRecord:
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = open(log, "ab")
    try:
        proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        raise StackError(f"cannot start the {name}: {exc}", hint=f"check `{argv[0]}` exists") from None
    finally:
        handle.close()
    started = None
    for _ in range(50):
        started = process_start_time(proc.pid)
        if started:
            break
        time.sleep(0.02)
    return ProcessRecord(name=name, pid=proc.pid, started=started or "", argv=argv, log=str(log))


def stop_process(record: ProcessRecord, timeout: float = 20.0) -> str:
    """SIGTERM the record's process group, wait, then SIGKILL.  Never touches a reused pid."""
    if not record.alive():
        return "not running"
    try:
        pgid = os.getpgid(record.pid)
    except ProcessLookupError:
        return "not running"
    use_group = pgid == record.pid  # started with start_new_session: the group is ours
    sender = (lambda sig: os.killpg(pgid, sig)) if use_group else (lambda sig: os.kill(record.pid, sig))
    try:
        sender(signal.SIGTERM)
    except ProcessLookupError:
        return "not running"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not record.alive():
            _reap(record.pid)  # it may have turned zombie after the first reap
            return "stopped"
        time.sleep(0.2)
    try:
        sender(signal.SIGKILL)
    except ProcessLookupError:
        pass
    for _ in range(50):
        _reap(record.pid)
        if not record.alive():
            break
        time.sleep(0.1)
    return "killed"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_port(host: str, port: int, timeout: float, record: ProcessRecord | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record is not None and not record.alive():
            return False
        try:
            with socket.create_connection((host, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.3)
    return False


def api_healthy(api_url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(api_url: str, timeout: float, record: ProcessRecord | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record is not None and not record.alive():
            return False
        if api_healthy(api_url):
            return True
        time.sleep(0.5)
    return False
