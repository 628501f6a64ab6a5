"""One real Prefect server per test session, shared by in-process flows and subprocesses.

Its database: ``CLAUSEGATE_TEST_DATABASE`` = ``postgres`` (default: the embedded PostgreSQL `clausegate up` uses,
clausegate/stack/database.py, in the session's folder; stopped after the server) or ``sqlite`` (Prefect's file in
the session's PREFECT_HOME).  PostgreSQL measured faster here: tests/integration/test_flow.py, test_batch.py and
test_inbox_races.py took 102 s and 85 s on it vs 140 s and 101 s on SQLite (2 loaded cores, alternating)."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrefectServer:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.process: subprocess.Popen | None = None
        self.log_path = home / "server.log"
        # Like `clausegate up`: the API answers only to clients holding the basic-auth credential.
        self.auth_string = f"clausegate:{secrets.token_urlsafe(24)}"
        self.database = os.environ.get("CLAUSEGATE_TEST_DATABASE", "postgres")
        self.postgres = None  # the embedded PostgreSQL's ProcessRecord, when the server runs on one

    def env(self) -> dict[str, str]:
        return {
            "PREFECT_HOME": str(self.home),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_API_PORT": str(self.port),
            "PREFECT_SERVER_API_HOST": "127.0.0.1",
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "PREFECT_SERVER_API_AUTH_STRING": self.auth_string,
            "PREFECT_API_AUTH_STRING": self.auth_string,
            "CLAUSEGATE_SECRETS_DIR": str(self.home / "secrets"),
        }

    def start(self, timeout: float = 90) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env()}
        if self.database == "postgres":
            from clausegate.stack import database  # local import: only when the session runs on PostgreSQL
            from clausegate.stack.state import StackPaths  # local import: as above

            self.postgres, url, _ = database.start_postgres(StackPaths(project=self.home, home=self.home))
            env[database.URL_ENV] = url
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"prefect server exited early; see {self.log_path}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"prefect server not healthy after {timeout}s; see {self.log_path}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.postgres is not None:
            from clausegate.stack import database  # local import: as in start()

            database.stop(self.postgres)
            self.postgres = None
