"""``clausegate up`` / ``down`` / ``status``: start the local stack, stop exactly what it started, report on it.

``up`` runs the steps in order (see ``clausegate/stack/__init__.py`` for the whole picture), recording
every process in ``stack.json`` the moment it starts; when a step fails it stops what it had started.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterTags,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateName,
)
from prefect.exceptions import ObjectNotFound

from clausegate.errors import ClauseGateError
from clausegate.security import credentials
from clausegate.stack import database
from clausegate.stack.configuration import POOL, configure, set_nightly_schedule, set_pool_command
from clausegate.stack.demo_slack import setup_slack
from clausegate.stack.deploy import deploy, deployable, offer_model_blocks
from clausegate.stack.environment import (
    base_env,
    clausegate_argv,
    client_settings,
    gateway_available,
    local_timezone,
    prefect_argv,
)
from clausegate.stack.processes import (
    ProcessRecord,
    api_healthy,
    port_free,
    records,
    start_process,
    wait_healthy,
    wait_port,
)
from clausegate.stack.state import (
    ALREADY_RUNNING,
    CONFIG_FAILED,
    PORT_IN_USE,
    STATE_VERSION,
    StackError,
    StackOptions,
    StackPaths,
    read_state,
    write_state,
)
from clausegate.stack.warmstart import WARM_SOCKET_ENV, serve_argv, warm_command

Echo = Callable[[str], None]
Remember = Callable[[ProcessRecord], None]


def up(options: StackOptions, paths: StackPaths, echo: Echo = print) -> dict[str, Any]:
    """Start (or reuse) the stack; returns the state written to ``stack.json``."""
    state = read_state(paths)
    running = [r for r in records(state) if r.alive()]
    if state and running:
        raise StackError(f"a stack started from {paths.project} is already running "
                         f"({', '.join(f'{r.name} pid {r.pid}' for r in running)}).", code=ALREADY_RUNNING,
                         hint="`clausegate status` shows it; `clausegate down` stops it")
    if options.database not in database.CHOICES:
        raise StackError(f"unknown database {options.database!r}.", code=CONFIG_FAILED,
                         hint=f"`clausegate up --database {'|'.join(database.CHOICES)}`")
    paths.home.mkdir(parents=True, exist_ok=True)
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.prefect_home.mkdir(parents=True, exist_ok=True)
    tz = options.timezone or local_timezone()
    state = {"version": STATE_VERSION, "project": str(paths.project), "started_at": time.time(),
             "processes": [], "api_url": options.api_url or f"http://{options.host}:{options.port}/api",
             "ui_url": "", "gateway_url": "", "server_started": options.api_url is None}
    api_url = state["api_url"]

    def remember(record: ProcessRecord) -> None:
        state["processes"].append(asdict(record))
        write_state(paths, state)

    try:
        if options.api_url is None:
            _start_server(options, paths, state, remember, echo)
        elif not api_healthy(api_url, timeout=5):
            raise StackError(f"no healthy Prefect server at {api_url}.", hint="check --api-url")
        state["ui_url"] = api_url[: -len("/api")] if api_url.endswith("/api") else api_url
        write_state(paths, state)

        echo("configuring pool, queues, limits, variables, block types, automations …")
        try:
            state["configured"] = configure(api_url, paths, timezone_name=tz, log=echo)
        except ClauseGateError:
            raise
        except Exception as exc:  # whatever the server answered: one stack error with the log to read
            raise StackError(f"configuring the server failed: {type(exc).__name__}: {exc}", code=CONFIG_FAILED,
                             hint=f"see {paths.logs / 'server.log'}") from exc

        state["slack"] = setup_slack(options, paths, state, remember, echo)
        write_state(paths, state)

        if options.deploy:
            names, skipped = deployable(paths)
            for name, why in skipped:
                echo(f"skipping deployment {name!r}: {why}")
            echo(f"deploying {', '.join(names)} from prefect.yaml …")
            deploy(api_url, paths, names, log_file=paths.logs / "deploy.log")
            with client_settings(api_url), get_client(sync_client=True) as client:
                offered = offer_model_blocks(client)
            echo(f"the run form offers {len(offered)} saved model block(s) as extractors")
            state["deployments"] = names
            state["skipped_deployments"] = [n for n, _ in skipped]
            state["nightly_schedule"] = set_nightly_schedule(api_url, options.nightly_cron, tz)
            write_state(paths, state)

        set_pool_command(api_url, warm_command() if options.warm_start else None)
        warm_env: dict[str, str] = {}
        if options.warm_start and options.start_worker:
            sock = _start_warm_start(options, paths, api_url, remember)
            warm_env[WARM_SOCKET_ENV] = str(sock)
            state["warm_start"] = str(sock)
            echo(f"warm start: flow runs fork from a preloaded process ({sock})")

        if options.start_worker:
            _start_worker(options, paths, api_url, warm_env, remember, echo)
        if options.start_gateway:
            _start_gateway(options, paths, state, remember, echo)
        write_state(paths, state)
        if options.start_worker:
            worker_rec = next(r for r in records(state) if r.name == "worker")
            time.sleep(1.0)
            if not worker_rec.alive():
                raise StackError("the worker exited right after starting.", hint=f"see {worker_rec.log}")
        return state
    except BaseException:
        # leave nothing half-started behind
        for record in reversed(records(state)):
            database.stop(record)
        state["processes"] = []
        state["failed"] = True
        write_state(paths, state)
        raise


def _start_server(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
                  echo: Echo) -> None:
    """The database (embedded PostgreSQL unless asked otherwise), then a Prefect server on it with basic auth on
    its API and UI (PREFECT_HOME in the stack's folder)."""
    api_url = state["api_url"]
    if not port_free(options.host, options.port):
        raise StackError(f"port {options.port} on {options.host} is already in use.", code=PORT_IN_USE,
                         hint="stop what uses it, or `clausegate up --port N` (or --api-url to use that server)")
    # Basic auth on the whole API (and the UI, which asks for the string): generated once, owner-only file.
    auth = credentials.api_auth_string(create=True)
    credentials.at_rest_key(create=True)  # before any process could race to create it
    env = base_env(paths, api_url, {
        "PREFECT_SERVER_API_AUTH_STRING": auth,
        "PREFECT_SERVER_API_HOST": options.host, "PREFECT_SERVER_API_PORT": str(options.port),
        "PREFECT_UI_ENABLED": "true" if options.ui else "false", **options.extra_env})
    env.pop("PREFECT_API_URL")  # the server itself needs none
    env.update(_start_database(options, paths, state, remember, echo))
    echo(f"starting Prefect server on {options.host}:{options.port} (API credential in "
         f"{credentials.secrets_dir() / credentials.AUTH_FILE}) …")
    server = start_process("server", prefect_argv("server", "start", "--host", options.host,
                                                  "--port", str(options.port)),
                           env=env, log=paths.logs / "server.log", cwd=paths.project)
    server.url = api_url
    remember(server)
    if not wait_healthy(api_url, options.server_ready_timeout, server):
        raise StackError(f"the Prefect server did not become healthy within {options.server_ready_timeout:.0f} s.",
                         hint=f"see {paths.logs / 'server.log'}")


def _start_database(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
                    echo: Echo) -> dict[str, str]:
    """Start the stack's database (clausegate/stack/database.py); returns the server's environment for it."""
    external = database.external_url(options.extra_env)
    if external:
        state["database"] = {"kind": "external", "url": database.redact(external)}
        echo(f"database: {state['database']['url']} ({database.URL_ENV} is set; no database started)")
        return {}
    if options.database == database.SQLITE:
        state["database"] = database.sqlite_info(paths)
        echo(f"database: SQLite in {paths.prefect_home}")
        return {database.URL_ENV: state["database"]["url"]}
    began = time.monotonic()
    record, url, state["database"] = database.start_postgres(paths)
    remember(record)
    echo(f"database: embedded PostgreSQL (pid {record.pid}, data in {paths.postgres_data}) ready in "
         f"{time.monotonic() - began:.1f} s")
    return {database.URL_ENV: url}


def _start_warm_start(options: StackOptions, paths: StackPaths, api_url: str, remember: Remember) -> Path:
    """The zygote flow runs fork from (clausegate/stack/warmstart.py); returns its socket once it listens."""
    sock = paths.home / "warm.sock"
    zygote = start_process("warm-start", serve_argv(sock),
                           env=base_env(paths, api_url, {**options.extra_env,
                                                         "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}),
                           log=paths.logs / "warm-start.log", cwd=paths.project)
    remember(zygote)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and zygote.alive() and not sock.exists():
        time.sleep(0.2)
    if not sock.exists():
        raise StackError("the warm-start process did not get ready.", hint=f"see {zygote.log}")
    return sock


def _start_worker(options: StackOptions, paths: StackPaths, api_url: str, warm_env: dict[str, str],
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


def _start_gateway(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
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
        if state["slack"] in ("off", "missing"):
            state["gateway_note"] = "inbox only: no SlackSettings block, so Slack routes answer 503"
    else:
        echo(f"warning: the gateway did not open port {options.gateway_port}; see {gateway.log}")


def down(paths: StackPaths, echo: Echo = print) -> list[tuple[str, int, str]]:
    """Stop exactly the processes `up` recorded (newest first); keep the database and logs."""
    state = read_state(paths)
    if not state:
        echo(f"no stack state in {paths.state_file}: nothing to stop")
        return []
    results: list[tuple[str, int, str]] = []
    for record in reversed(records(state)):
        outcome = database.stop(record)
        results.append((record.name, record.pid, outcome))
        echo(f"{record.name} (pid {record.pid}): {outcome}")
    if state.get("warm_start") and state.get("api_url") and api_healthy(state["api_url"]):
        try:  # the zygote is gone: give the pool Prefect's own command back
            set_pool_command(state["api_url"], None)
        except Exception as exc:  # the warm-run client falls back to the engine anyway
            echo(f"could not reset the pool command ({exc})")
    state["processes"] = []
    state["stopped_at"] = time.time()
    write_state(paths, state)
    return results


def describe_schedule(deployment_schedule) -> str:
    sched = deployment_schedule.schedule
    if getattr(sched, "cron", None):
        text = f"cron {sched.cron} ({sched.timezone or 'UTC'})"
    elif getattr(sched, "interval", None):
        text = f"every {int(sched.interval.total_seconds())} s"
    else:
        text = str(sched)
    return text + ("" if deployment_schedule.active else " [inactive]")


def status(paths: StackPaths) -> dict[str, Any]:
    """Processes, server health, pool/queues/workers, deployments and runs needing attention."""
    state = read_state(paths) or {}
    info: dict[str, Any] = {
        "state_file": str(paths.state_file),
        "processes": [{**asdict(r), "alive": r.alive()} for r in records(state)],
        "api_url": state.get("api_url"), "ui_url": state.get("ui_url"), "gateway_url": state.get("gateway_url"),
        "database": state.get("database"),
        "healthy": bool(state.get("api_url")) and api_healthy(state["api_url"]),
    }
    if not info["healthy"]:
        return info
    with client_settings(state["api_url"]), get_client(sync_client=True) as client:
        try:
            client.read_work_pool(POOL)
            info["queues"] = [(q.name, q.priority, q.is_paused) for q in
                              sorted(client.read_work_queues(work_pool_name=POOL), key=lambda q: q.priority)]
            info["workers"] = [(w.name, str(getattr(w.status, "value", w.status)), str(w.last_heartbeat_time))
                               for w in client.read_workers_for_work_pool(POOL)]
        except ObjectNotFound:
            info["queues"], info["workers"] = [], []
        deps = client.read_deployments(
            deployment_filter=DeploymentFilter(tags=DeploymentFilterTags(all_=["clausegate"])))
        info["deployments"] = []
        for d in deps:
            info["deployments"].append({"name": d.name, "queue": d.work_queue_name, "paused": d.paused,
                                        "schedules": [describe_schedule(s) for s in d.schedules]})
        counts = {}
        for name in ("Late", "Suspended", "Paused", "Running", "Pending"):
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(name=FlowRunFilterStateName(any_=[name]))), limit=200)
            counts[name] = len(runs)
        info["runs"] = counts
    return info
