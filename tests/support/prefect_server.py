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
            # The server checks no CSRF token (Prefect's default): clients ask for none, as the stack's do
            # (clausegate/stack/environment.py csrf_client_env), instead of a refused GET /csrf-token per new client.
            "PREFECT_CLIENT_CSRF_SUPPORT_ENABLED": "false",
            # Plain HTTP on loopback everywhere: a CA bundle of one certificate keeps TLS verification on, cheaply.
            "PREFECT_API_SSL_CERT_FILE": str(self._one_certificate_bundle()),
            "SSL_CERT_FILE": str(self._one_certificate_bundle()),
        }

    def _one_certificate_bundle(self) -> Path:
        """A CA bundle of one certificate (certifi's first), for ``PREFECT_API_SSL_CERT_FILE`` and ``SSL_CERT_FILE``.

        Every verifying TLS context built from certifi's ~150 certificates costs ~70 ms of CPU on this machine, 2 ms
        from one: each new ``httpx.Client`` (each ``httpx.get``/``post``, in the tests' polls and the product's calls;
        httpx reads ``SSL_CERT_FILE``), and each process's first Prefect API client (Prefect reads
        ``PREFECT_API_SSL_CERT_FILE``).  The suite's servers (Prefect, the gateway, the fake Slack, model and SMTP
        servers) speak plain HTTP on loopback, and a test that checks TLS against its own self-signed server passes
        its own context; nothing reaches a public host, so the one root trusted is never used, and verification stays
        on (a certificate outside the bundle is still refused)."""
        import certifi  # noqa: PLC0415 (httpx's dependency; only here)

        path = self.home / "one-ca.pem"
        if not path.exists():
            bundle = Path(certifi.where()).read_text(encoding="ascii")
            end = "-----END CERTIFICATE-----\n"
            self.home.mkdir(parents=True, exist_ok=True)
            path.write_text(bundle[bundle.index("-----BEGIN CERTIFICATE-----"):bundle.index(end) + len(end)],
                            encoding="ascii")
        return path

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
        with httpx.Client(timeout=1) as probe:  # one client: each new one loads a CA bundle (~25 ms of CPU)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"prefect server exited early; see {self.log_path}")
                try:
                    if probe.get(f"{self.api_url}/health").status_code == 200:
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
