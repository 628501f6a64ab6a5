"""A Prefect server with its UI, for the browser tests (tests/e2e/test_ui_form.py, test_resume_form.py).

Not the session server (tests/support/prefect_server.py: no UI, an API credential): its own process, SQLite in
the given folder, no API credential (the browser tests check what the UI renders, not the login). Clients in the
test process talk to it over HTTP (its URL + ``/api``); subprocesses get :func:`client_env`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.browser import wait_until
from tests.support.prefect_server import free_port
from tests.support.processes import stop_process_group


def client_env(home: Path, url: str) -> dict[str, str]:
    """The environment of a process talking to the UI server at ``url`` (none of the session's PREFECT_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CLAUSEGATE_"))}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_API_URL=f"{url}/api",
               CLAUSEGATE_SECRETS_DIR=str(home / "secrets"))
    return env


def api_call(method: str, url: str, **kwargs) -> dict:
    """The JSON of an API request to the UI server; retried on 503 (SQLite's "database is locked", frequent on
    a fresh server whose background services are writing), raising with the body on any other error."""
    for _ in range(20):
        response = httpx.request(method, url, timeout=30, **kwargs)
        if response.status_code != 503:
            assert response.is_success, f"{method} {url}: {response.status_code} {response.text[:1000]}"
            return response.json()
        time.sleep(1.0)
    raise AssertionError(f"{method} {url}: {response.status_code} {response.text[:1000]}")


@contextmanager
def prefect_ui_server(home: Path, timeout: float = 180) -> Iterator[str]:
    """Start the server (log: ``home/server.log``); yields its URL (API at URL/api); stops it on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = client_env(home, url)
    env.update(PREFECT_UI_ENABLED="true", PREFECT_SERVER_API_HOST="127.0.0.1", PREFECT_SERVER_API_PORT=str(port),
               PREFECT_UI_API_URL=f"{url}/api")
    with open(home / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                                 "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        healthy = wait_until(lambda: proc.poll() is None and httpx.get(f"{url}/api/health", timeout=2).json(),
                             timeout)
        assert healthy, (home / "server.log").read_text()[-3000:]
        yield url
    finally:
        stop_process_group(proc)
