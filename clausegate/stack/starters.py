"""How each process of the stack starts, by its name in ``stack.json``: ``up`` starts them all in :data:`ORDER`,
the supervisor (clausegate/stack/supervise.py) restarts one that died, ``up`` on a partly running stack starts
the missing ones.  Each starter hands the new record to ``remember`` as soon as the process exists, then waits
until it is ready (raising :class:`StackError` when it does not get there)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from clausegate.security import credentials
from clausegate.stack import database
from clausegate.stack.configuration import POOL
from clausegate.stack.demo_slack import start_fake_slack
from clausegate.stack.environment import base_env, clausegate_argv, gateway_available, prefect_argv
from clausegate.stack.processes import ProcessRecord, port_free, start_process, wait_healthy, wait_port
from clausegate.stack.state import PORT_IN_USE, StackError, StackOptions, StackPaths
from clausegate.stack.warmstart import WARM_SOCKET_ENV, serve_argv

Echo = Callable[[str], None]
Remember = Callable[[ProcessRecord], None]

SUPERVISOR = "supervisor"
ORDER = (database.POSTGRES, "server", "fake-slack", "warm-start", "worker", "gateway", SUPERVISOR)
SUPERVISOR_MODULE = "clausegate.stack.supervise"
EXTRA_ENV = "CLAUSEGATE_STACK_EXTRA_ENV"  # the options' extra_env, handed to the supervisor
READY_FILE = "supervisor.ready"  # the supervisor's pid, once it can restart processes


def server_env(options: StackOptions, paths: StackPaths, state: dict[str, Any]) -> dict[str, str]:
    """The Prefect server's environment: basic auth on its API and UI, its database (from ``state``)."""
    env = base_env(paths, state["api_url"], {
        "PREFECT_SERVER_API_AUTH_STRING": credentials.api_auth_string(create=True),
        "PREFECT_SERVER_API_HOST": options.host, "PREFECT_SERVER_API_PORT": str(options.port),
        "PREFECT_UI_ENABLED": "true" if options.ui else "false", **options.extra_env})
    env.pop("PREFECT_API_URL")  # the server itself needs none
    db = state.get("database") or {}
    if db.get("kind") in (database.POSTGRES, database.SQLITE):
        env[database.URL_ENV] = db["url"]  # an external URL stays the environment's (its password never in state)
    return env


def start_server(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember) -> None:
    """``prefect server start`` on the stack's database; waits until its API is healthy."""
    if not port_free(options.host, options.port):
        raise StackError(f"port {options.port} on {options.host} is already in use.", code=PORT_IN_USE,
                         hint="stop what uses it, or `clausegate up --port N` (or --api-url to use that server)")
    server = start_process("server", prefect_argv("server", "start", "--host", options.host,
                                                  "--port", str(options.port)),
                           env=server_env(options, paths, state), log=paths.logs / "server.log", cwd=paths.project)
    server.url = state["api_url"]
    remember(server)
    if not wait_healthy(state["api_url"], options.server_ready_timeout, server):
        raise StackError(f"the Prefect server did not become healthy within {options.server_ready_timeout:.0f} s.",
                         hint=f"see {paths.logs / 'server.log'}")


def start_warm_start(options: StackOptions, paths: StackPaths, api_url: str, remember: Remember) -> Path:
    """The zygote flow runs fork from (clausegate/stack/warmstart.py); returns its socket once it listens."""
    sock = paths.home / "warm.sock"
    sock.unlink(missing_ok=True)  # a killed zygote leaves its socket: wait for the new one's
    zygote = start_process("warm-start", serve_argv(sock),
                           env=base_env(paths, api_url, {**options.extra_env,
                                                         "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}),
                           log=paths.logs / "warm-start.log", cwd=paths.project)
    remember(zygote)
    if not _wait(lambda: sock.exists(), 120, zygote):
        raise StackError("the warm-start process did not get ready.", hint=f"see {zygote.log}")
    return sock


def start_worker(options: StackOptions, paths: StackPaths, api_url: str, warm_env: dict[str, str],
                 remember: Remember, echo: Echo) -> None:
    env = base_env(paths, api_url, {"PREFECT_WORKER_QUERY_SECONDS": str(options.worker_query_seconds),
                                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                                    **warm_env, **options.extra_env})
    worker = start_process("worker", prefect_argv("worker", "start", "--pool", POOL, "--name",
                                                  options.worker_name, "--limit", str(options.worker_limit)),
                           env=env, log=paths.logs / "worker.log", cwd=paths.project)
    remember(worker)
    echo(f"started worker {options.worker_name!r} (limit {options.worker_limit}, polls every "
         f"{options.worker_query_seconds:g} s)")


def start_gateway(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
                  echo: Echo) -> None:
    """``clausegate gateway`` (Slack interactivity and the inbox API), when this build has it."""
    if not gateway_available():
        state["gateway_note"] = "gateway not available in this build (clausegate.gateway is missing)"
        echo("gateway: not available in this build (clausegate.gateway is missing) — skipped")
        return
    if not port_free(options.host, options.gateway_port):
        raise StackError(f"gateway port {options.gateway_port} is already in use.", code=PORT_IN_USE,
                         hint="`clausegate up --gateway-port N`")
    gateway = start_process("gateway", clausegate_argv("gateway", "--host", options.host,
                                                       "--port", str(options.gateway_port)),
                            env=base_env(paths, state["api_url"], {
                                "CLAUSEGATE_INBOX_DATA_DIR": str(paths.home / "inbox"),
                                "PREFECT_UI_URL": state.get("ui_url") or "", **options.extra_env}),
                            log=paths.logs / "gateway.log", cwd=paths.project)
    gateway.url = f"http://{options.host}:{options.gateway_port}"
    remember(gateway)
    if wait_port(options.host, options.gateway_port, 60, gateway):
        state["gateway_url"] = gateway.url
        if state.get("slack") in ("off", "missing"):
            state["gateway_note"] = "inbox only: no SlackSettings block, so Slack routes answer 503"
    else:
        echo(f"warning: the gateway did not open port {options.gateway_port}; see {gateway.log}")


def start_supervisor(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
                     echo: Echo) -> None:
    """The supervisor (clausegate/stack/supervise.py), waited for until it has loaded what a restart needs (it
    writes its pid to ``supervisor.ready``).  It gets ``extra_env`` in its environment, never on disk."""
    ready = paths.home / READY_FILE
    ready.unlink(missing_ok=True)
    env = base_env(paths, state["api_url"], {EXTRA_ENV: json.dumps(options.extra_env)})
    record = start_process(SUPERVISOR, [sys.executable, "-m", SUPERVISOR_MODULE, str(paths.home), str(paths.project)],
                           env=env, log=paths.logs / "supervisor.log", cwd=paths.project)
    remember(record)
    if not _wait(lambda: ready.exists() and ready.read_text().strip() == str(record.pid), 120, record):
        echo(f"warning: the supervisor is not ready; see {record.log}")


def start_one(name: str, options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
              echo: Echo) -> None:
    """(Re)start the process ``name`` of a stack that is up, with the options it was started with."""
    if name == database.POSTGRES:
        record, _, _ = database.start_postgres(paths)
        remember(record)
    elif name == "server":
        start_server(options, paths, state, remember)
    elif name == "fake-slack":
        start_fake_slack(options, paths, state["api_url"], remember)
    elif name == "warm-start":
        start_warm_start(options, paths, state["api_url"], remember)
    elif name == "worker":
        warm = {WARM_SOCKET_ENV: state["warm_start"]} if state.get("warm_start") else {}
        start_worker(options, paths, state["api_url"], warm, remember, echo)
    elif name == "gateway":
        start_gateway(options, paths, state, remember, echo)
    elif name == SUPERVISOR:
        start_supervisor(options, paths, state, remember, echo)
    else:
        raise StackError(f"stack.json names a process {name!r} this version does not know how to start.",
                         hint="`clausegate down && clausegate up`")


def saved_options(state: dict[str, Any], extra_env: dict[str, str] | None = None,
                  fallback: StackOptions | None = None) -> StackOptions:
    """The options the stack was started with (``stack.json``; ``extra_env`` is never written there); a state
    written before they were saved there gives ``fallback`` (the options of the `up` that asks)."""
    if "options" not in state and fallback is not None:
        return fallback
    fields = {k: v for k, v in (state.get("options") or {}).items() if k in StackOptions.__dataclass_fields__}
    return StackOptions(**{**fields, "extra_env": dict(extra_env or {})})


def options_to_save(options: StackOptions) -> dict[str, Any]:
    return {k: v for k, v in asdict(options).items() if k != "extra_env"}


def _wait(ready: Callable[[], bool], timeout: float, record: ProcessRecord) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and record.alive():
        if ready():
            return True
        time.sleep(0.2)
    return ready()
