"""What a stack is: where it lives (:class:`StackPaths`), what it is asked for (:class:`StackOptions`), what it
recorded (the state file ``.clausegate/stack.json``), and the error every stack step raises
(:class:`StackError`, ``CG-STACK-*``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clausegate.errors import ClauseGateError

PORT_IN_USE = "CG-STACK-PORT-IN-USE"
START_FAILED = "CG-STACK-START"
DEPLOY_FAILED = "CG-STACK-DEPLOY"
CONFIG_FAILED = "CG-STACK-CONFIG"
ALREADY_RUNNING = "CG-STACK-RUNNING"
DATABASE_FAILED = "CG-STACK-DATABASE"
NO_SERVER = "CG-STACK-NO-SERVER"  # a command that needs a real Prefect server found none (clausegate/cli/server.py)

STATE_VERSION = 1


class StackError(ClauseGateError):
    code = START_FAILED


@dataclass(frozen=True)
class StackPaths:
    project: Path
    home: Path

    @classmethod
    def for_project(cls, project: Path, home: Path | None = None) -> StackPaths:
        project = Path(project).resolve()
        return cls(project=project, home=(home or project / ".clausegate").resolve())

    @property
    def prefect_home(self) -> Path:
        return self.home / "prefect"

    @property
    def postgres_data(self) -> Path:
        return self.home / "postgres"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def state_file(self) -> Path:
        return self.home / "stack.json"

    @property
    def lock_file(self) -> Path:
        return self.home / "stack.lock"

    @property
    def prefect_yaml(self) -> Path:
        return self.project / "prefect.yaml"

    @property
    def automations_file(self) -> Path:
        return self.project / "deployments" / "automations.yaml"


@dataclass
class StackOptions:
    host: str = "127.0.0.1"
    port: int = 4200
    gateway_port: int = 8787
    worker_limit: int = 4
    worker_query_seconds: float = 2.0
    worker_name: str = "clausegate-local"
    nightly_cron: str | None = None
    timezone: str | None = None
    api_url: str | None = None      # use this server instead of starting one
    start_worker: bool = True
    start_gateway: bool = True
    deploy: bool = True
    ui: bool = True
    slack: str = "auto"             # auto: demo unless a SlackSettings block exists; demo; off
    warm_start: bool = True         # fork flow runs from a preloaded zygote (clausegate/stack/warmstart.py)
    fake_slack_port: int = 8902
    server_ready_timeout: float = 180.0
    database: str = "postgres"      # postgres: embedded PostgreSQL (clausegate/stack/database.py); sqlite
    supervise: bool = True          # a supervisor process restarts the others (clausegate/stack/supervise.py)
    extra_env: dict[str, str] = field(default_factory=dict)


def read_state(paths: StackPaths) -> dict[str, Any] | None:
    try:
        return json.loads(paths.state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_state(paths: StackPaths, state: dict[str, Any]) -> None:
    paths.home.mkdir(parents=True, exist_ok=True)
    ignore = paths.home / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by `clausegate up`: local Prefect database, logs, state\n*\n", encoding="utf-8")
    tmp = paths.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, paths.state_file)


@contextlib.contextmanager
def stack_lock(paths: StackPaths, timeout: float | None = None) -> Iterator[bool]:
    """Hold the stack's lock (``stack.lock``, an OS file lock: a killed holder releases it) while starting or
    stopping its processes: ``up``, ``down`` and the supervisor never start or stop the same process at once.
    Yields whether it was taken (False only when ``timeout`` passed first)."""
    paths.home.mkdir(parents=True, exist_ok=True)
    with open(paths.lock_file, "a+") as handle:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                taken = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    taken = False
                    break
                time.sleep(0.1)
        try:
            yield taken
        finally:
            if taken:
                fcntl.flock(handle, fcntl.LOCK_UN)
