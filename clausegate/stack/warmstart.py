"""Warm start: flow runs fork from a preloaded process instead of starting a new Python.

Every Prefect flow run normally starts a fresh Python (`python -m prefect.engine`) that imports
Prefect, the flow and its libraries and loads the offline model: ~4 CPU-seconds before the first
line of review work, several times the work itself.  With `clausegate up --warm-start` a
*zygote* process (``warm-serve``) does that once; the work pool's command becomes the tiny client
``warm-run``, which asks the zygote to fork a child that runs `prefect.engine` for the flow run (same
environment, working directory and stdio as the client).  The client relays signals (cancellation) and
exits with the child's status, so the worker sees an ordinary process.  Without a reachable zygote the
client simply execs the normal engine.  Restart the stack after changing code: children run the
modules the zygote imported (a changed source file sends runs to the normal engine until then).

    python -m clausegate.stack.warmstart warm-run [FLOW_RUN_ID ...]   # the pool's command
    python -m clausegate.stack.warmstart warm-serve SOCKET_PATH       # the zygote

`clausegate review` uses the same zygote (clausegate/cli/launch.py): with a stack up, the command runs in a
fork of it, so a review starts with Prefect, the flow and the offline model already loaded.

The client runs once per flow run, so this module imports only the standard library at the top (and
``clausegate/stack/__init__.py`` imports nothing): Prefect and the model are the zygote's to load.
"""

from __future__ import annotations

import array
import atexit
import importlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

MODULE = "clausegate.stack.warmstart"
WARM_SOCKET_ENV = "CLAUSEGATE_WARMSTART_SOCKET"
WARM_CHILD_ENV = "CLAUSEGATE_WARM_CHILD"  # set in every child: it runs in a fork of the zygote
ENGINE = "prefect.engine"
CLI = "clausegate.cli"  # `clausegate review` with a stack up (clausegate/cli/launch.py)
RUNNABLE = (ENGINE, CLI)
WARM_PRELOAD = ("prefect.flow_engine", "prefect.flows", "prefect.deployments.steps",
                "flows.contract_review", "typer", "rich.console", "rich.table")  # no Console made: see _warm_child


def warm_command() -> str:
    """The work pool's flow-run command while warm start is on (``clausegate up`` sets it, ``down`` resets it)."""
    return f"{sys.executable} -m {MODULE} warm-run"


def is_warm_command(command: str) -> bool:
    """Whether a pool's flow-run command is :func:`warm_command` (of any Python)."""
    return command.endswith(f"-m {MODULE} warm-run")


def serve_argv(socket_path: Path | str) -> list[str]:
    """The zygote's command line: preload, then serve fork requests on ``socket_path``."""
    return [sys.executable, "-m", MODULE, "warm-serve", str(socket_path)]


def _exec_engine(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", ENGINE, *args])


def warm_run(args: list[str]) -> int:
    """The work pool's command: run this flow run in a child of the zygote (or the normal way)."""
    path = os.environ.get(WARM_SOCKET_ENV)
    code = run_in_zygote(path, ENGINE, args) if path else None
    if code is None:
        _exec_engine(args)
    return code if code is not None else 1  # (None: not reached, the engine replaced this process)


def run_in_zygote(socket_path: str, module: str, args: list[str]) -> int | None:
    """Run ``python -m MODULE ARGS`` in a child of the zygote at ``socket_path``, with this process's environment,
    working directory and stdio; relay signals to it and return its exit status.  ``None``: the zygote did not
    take it (not running, stale code, another Python), so the caller runs it the normal way."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path)
        payload = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "module": module, "args": args,
                              "installation": _installation()}).encode()
        conn.sendmsg([struct.pack("!I", len(payload))],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        conn.sendall(payload)
        reader = conn.makefile("r")
        first = reader.readline()
    except OSError:
        conn.close()
        return None
    if not first.startswith("pid "):
        conn.close()
        return None
    child = int(first.split()[1])

    def relay(signum, _frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, relay)
    while True:
        try:
            line = reader.readline()
        except InterruptedError:
            continue
        if not line:
            return 1  # the zygote died: report a failure (a flow run is then marked crashed)
        if line.startswith("exit "):
            return int(line.split()[1])


def warm_serve(socket_path: str) -> None:
    """The zygote: preload, then fork one child per request (single-threaded, no clients opened)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # no native thread pools in a process that forks
    for module in WARM_PRELOAD:
        importlib.import_module(module)
    try:
        from clausegate.review.offline.model import load_model  # local import: zygote only; keeps warm-run lean
        from clausegate.review.passages import warm_up  # local import: zygote only; keeps warm-run lean

        load_model()
        warm_up()
    except Exception as exc:  # children then load it themselves
        print(f"warm start: offline model / sentence splitter not preloaded ({exc})", flush=True)
    if threading.active_count() != 1:
        print(f"warm start: refusing to fork with threads running: {threading.enumerate()}", flush=True)
        sys.exit(3)
    watched = _loaded_source_files()
    installation = _installation()
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(64)
    zygote = os.getpid()
    children: dict[int, socket.socket] = {}
    print(f"warm start: ready on {socket_path} (pid {zygote})", flush=True)
    stop = False

    def on_term(_signum, _frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    while not stop:
        try:
            readable, _, _ = select.select([listener, *children.values()], [], [], 0.2)
        except InterruptedError:
            readable = []
        for sock in readable:
            if sock is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _read_request(conn)
                except (OSError, ValueError) as exc:
                    print(f"warm start: bad request ({exc})", flush=True)
                    conn.close()
                    continue
                changed = [f for f, mtime in watched.items() if _mtime(f) != mtime]
                if request.get("module", ENGINE) not in RUNNABLE or request.get("installation", installation) != \
                        installation:  # another command or another installation: the client runs it itself
                    for fd in fds:
                        os.close(fd)
                    conn.sendall(b"declined\n")
                    conn.close()
                    continue
                if changed:  # never run stale code: this client starts the normal engine instead
                    print(f"warm start: {changed[0]} changed since start; runs use the normal engine until "
                          "`clausegate down && clausegate up`", flush=True)
                    for fd in fds:
                        os.close(fd)
                    conn.sendall(b"stale\n")
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:  # ---- child: never returns into this loop
                    listener.close()
                    for other in children.values():
                        other.close()
                    conn.close()
                    _warm_child(request, fds)
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                conn.sendall(f"pid {pid}\n".encode())
                if request.get("module", ENGINE) == CLI:
                    what = "clausegate " + " ".join(request["args"][:1])
                else:
                    what = "flow run " + request["env"].get("PREFECT__FLOW_RUN_ID", "?")
                print(f"warm start: {what} -> pid {pid}", flush=True)
            else:  # the client went away (killed): take its child down too
                try:
                    data = sock.recv(64)
                except OSError:
                    data = b""
                if not data:
                    for pid, conn in list(children.items()):
                        if conn is sock:
                            _kill_child(pid)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"exit {os.waitstatus_to_exitcode(status) % 256}\n".encode())
                except OSError:
                    pass
                conn.close()
    if os.getpid() == zygote:
        listener.close()
        os.unlink(socket_path)


def _kill_child(pid: int) -> None:
    """A child whose client is gone: SIGKILL its process group (it called setsid; its parsers are in it). The client
    relays SIGTERM, so it went away only by SIGKILL: the worker's escalation after its 30 s grace, or its cancel of
    a hung run. A SIGTERM here would wait in a *stopped* child (SIGSTOP, a frozen VM) and, once it is continued,
    make it report a crash of a run that was requeued meanwhile."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _installation() -> list[str]:
    """Which Python environment and which ClauseGate source a process runs (a zygote serves only its own)."""
    return [sys.prefix, str(Path(__file__).resolve().parents[1])]


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _loaded_source_files() -> dict[str, float | None]:
    """The ClauseGate source files the zygote has imported (package, flows, blocks) and their mtimes."""
    roots = {str(Path(__file__).resolve().parents[2])}
    from clausegate.config import settings  # local import: only the zygote needs it; warm-run starts without Prefect

    if settings().project_dir:
        roots.add(str(settings().project_dir.resolve()))
    files = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and "site-packages" not in path and any(path.startswith(r) for r in roots):
            files[path] = _mtime(path)
    return files


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    header, ancdata, _flags, _addr = conn.recvmsg(4, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if len(header) != 4 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("expected a 4-byte header and 3 file descriptors")
    (size,) = struct.unpack("!I", header)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("truncated request")
        body += chunk
    return json.loads(body), list(fds)


def _warm_child(request: dict[str, Any], fds: list[int]) -> None:
    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        for sig in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any new Python: Ctrl-C (relayed) raises
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import prefect.context  # local import: preloaded by the zygote; keeps warm-run lean
        import prefect.logging.configuration  # local import: preloaded by the zygote; keeps warm-run lean

        os.environ[WARM_CHILD_ENV] = "1"
        prefect.context.refresh_global_settings_context()
        prefect.logging.configuration.setup_logging()
        module = request.get("module", ENGINE)
        try:
            if module == CLI:  # its rich Console is made here, so it sees this client's terminal
                sys.argv = ["clausegate", *request["args"]]
                runpy.run_module(CLI, run_name="__main__", alter_sys=False)
            else:
                sys.argv = [ENGINE, *request["args"]]
                sys.modules.pop(ENGINE, None)  # as Prefect's own runtime bootstrap does before run_module
                runpy.run_module(ENGINE, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # the child must always reach os._exit below
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # Prefect drains its log/event workers at exit
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main(argv: list[str]) -> int:
    if len(argv) >= 1 and argv[0] == "warm-run":
        return warm_run(argv[1:])
    if len(argv) == 2 and argv[0] == "warm-serve":
        warm_serve(argv[1])
        return 0
    print(f"usage: python -m {MODULE} warm-run [FLOW_RUN_ID] | warm-serve SOCKET_PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
