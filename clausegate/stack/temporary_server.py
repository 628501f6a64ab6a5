"""The temporary Prefect server of a one-off command, started as the command starts.

`clausegate review` / `clausegate batch` with no ``PREFECT_API_URL`` and no stack up run their flow on a
temporary server.  Left to itself, Prefect starts that server (``SubprocessASGIServer``) when the flow first
needs the API: after the command has imported Prefect and the pipeline, and after importing Prefect's whole
server app into the command's own process just to start it; the two start-ups then run one after the other.
ClauseGate's launcher (clausegate/cli/launch.py) starts the same server instead (the uvicorn command and server
environment Prefect uses, analytics off, its log in a file) before it imports anything heavy, so the server boots on the
other core while the command loads; the command waits for its health check right before the first flow run
(:func:`wait_until_ready`) and stops it at exit.  Its log goes to ``PREFECT_HOME/temporary-server.log``.

Any Prefect API URL configured elsewhere (a profile, ``prefect.toml``, ``.env``, ``[tool.prefect]``) makes
:func:`start` stand back, so Prefect's own rules decide as before; the command double-checks Prefect's resolved
setting too (:func:`claimed_by_prefect_settings`).  Standard library only: this runs before every command.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from clausegate.stack.state import START_FAILED, StackError

URL_ENV = "CLAUSEGATE_TEMPORARY_API_URL"  # set by start(): this command's API is its temporary server
STARTUP_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"  # Prefect's own setting, honoured here
DEFAULT_STARTUP_TIMEOUT = 60.0  # a first start on a new PREFECT_HOME runs the database migrations
STOP_GRACE_SECONDS = 3.0
SERVER_ENV = {  # as prefect.server.api.server.SubprocessASGIServer runs it, analytics off
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
}

_server: subprocess.Popen | None = None
_answered = False  # the server has answered: a flow may have used it, so it gets a graceful stop


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def log_path() -> Path:
    return prefect_home() / "temporary-server.log"


def api_url_configured_elsewhere(cwd: Path | None = None) -> bool:
    """Whether a Prefect API URL may come from somewhere other than the environment: the active profile, or a
    settings file in the working folder.  Conservative: a file that might set one counts."""
    cwd = cwd or Path.cwd()
    for name, marker in (("prefect.toml", "url"), (".env", "PREFECT_API_URL"), ("pyproject.toml", "[tool.prefect")):
        try:
            if marker in (cwd / name).read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or prefect_home() / "profiles.toml").expanduser()
    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    return bool(data.get("profiles", {}).get(active, {}).get("PREFECT_API_URL"))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start() -> str | None:
    """Start the temporary server for this command unless an API URL is configured; returns its API URL (also
    put in ``PREFECT_API_URL`` and :data:`URL_ENV`), or ``None`` when it stood back."""
    global _server
    if os.environ.get("PREFECT_API_URL") or api_url_configured_elsewhere():
        return None
    env = {**os.environ, **SERVER_ENV}  # its log goes to log_path(), not the console
    try:
        port = _free_port()
        argv = [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
                "--host", "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"]
        prefect_home().mkdir(parents=True, exist_ok=True)
        with open(log_path(), "ab") as log:
            _server = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    except OSError:  # e.g. PREFECT_HOME not writable: Prefect's own start-up then reports it in its terms
        return None
    atexit.register(stop)  # registered before Prefect's: runs after its log and event workers have drained
    url = f"http://127.0.0.1:{port}/api"
    os.environ["PREFECT_API_URL"] = url
    os.environ[URL_ENV] = url
    return url


def started_url() -> str | None:
    """This command's temporary server's API URL, if :func:`start` started one in this process."""
    return os.environ.get(URL_ENV) if _server is not None else None


def claimed_by_prefect_settings(resolved_api_url: str | None) -> bool:
    """After Prefect is imported: whether its resolved API URL is still this temporary server's, or none at all
    (Prefect loaded its settings before :func:`start` set the URL).  If another one (a settings source
    :func:`api_url_configured_elsewhere` did not see), the server is stopped and Prefect's choice stands."""
    url = started_url()
    if url is None:
        return False
    if resolved_api_url in (url, None):  # None: Prefect read its settings before the launcher set the URL
        return True  # (`python -m clausegate.cli` imports the commands first); the caller hands it the URL
    stop()
    return False


def answers() -> bool:
    """Whether this command's temporary server answers its health check now (called once Prefect is loaded)."""
    from clausegate.stack.processes import api_healthy  # local import: httpx; this module runs before every command

    global _answered
    url = started_url()
    _answered = _answered or (url is not None and api_healthy(url))
    return _answered


def wait_until_ready(timeout: float | None = None) -> None:
    """Block until the temporary server answers its health check; a clear error if it exits or times out."""
    url = started_url()
    if url is None:
        return
    limit = timeout if timeout is not None else float(os.environ.get(STARTUP_TIMEOUT_ENV) or DEFAULT_STARTUP_TIMEOUT)
    deadline = time.monotonic() + limit
    while True:
        if _server is None or _server.poll() is not None:
            code = None if _server is None else _server.returncode
            raise StackError(f"the temporary Prefect server exited during start-up (exit code {code}).",
                             code=START_FAILED, hint=f"see {log_path()}; or start a stack: `clausegate up`")
        if answers():
            return
        if time.monotonic() > deadline:
            stop()
            raise StackError(f"the temporary Prefect server did not answer within {limit:g} s.", code=START_FAILED,
                             hint=f"see {log_path()}; a first start migrates its database: raise "
                                  f"{STARTUP_TIMEOUT_ENV}, or start a stack: `clausegate up`")
        time.sleep(0.05)


def stop() -> None:
    """Stop the temporary server (at exit): terminate, then kill after a short grace period; one that never
    answered (the command stopped early, e.g. on bad input) is killed right away."""
    global _server
    server, _server = _server, None
    if server is None or server.poll() is not None:
        return
    if not _answered:
        server.kill()
        server.wait()
        return
    server.terminate()
    try:
        server.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
