"""``clausegate up`` / ``down`` / ``status``: start the local stack, stop exactly what it started, report on it.

``up`` runs the steps in order (see ``clausegate/stack/__init__.py`` for the whole picture), recording
every process in ``stack.json`` the moment it starts; when a step fails it stops what it had started.  On a
partly running stack it starts only what is missing; the supervisor it starts last restarts what exits
(clausegate/stack/supervise.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
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
from clausegate.stack import database, starters
from clausegate.stack.configuration import POOL, configure, set_nightly_schedule, set_pool_command
from clausegate.stack.demo_slack import setup_slack
from clausegate.stack.deploy import deploy, deployable, offer_model_blocks
from clausegate.stack.environment import client_settings, local_timezone
from clausegate.stack.processes import ProcessRecord, api_healthy, port_free, records
from clausegate.stack.state import (
    ALREADY_RUNNING,
    CONFIG_FAILED,
    PORT_IN_USE,
    STATE_VERSION,
    StackError,
    StackOptions,
    StackPaths,
    read_state,
    stack_lock,
    write_state,
)
from clausegate.stack.supervise import SUPERVISOR, plan_up, replace_record
from clausegate.stack.warmstart import WARM_SOCKET_ENV, warm_command

Echo = Callable[[str], None]
Remember = Callable[[ProcessRecord], None]


def up(options: StackOptions, paths: StackPaths, echo: Echo = print) -> dict[str, Any]:
    """Start the stack, or only what is missing from a partly running one; returns the state in ``stack.json``."""
    with stack_lock(paths):
        state = read_state(paths)
        plan = plan_up(state)
        if plan.action == "running":
            raise StackError(f"a stack started from {paths.project} is already running "
                             f"({', '.join(f'{r.name} pid {r.pid}' for r in records(state))}).",
                             code=ALREADY_RUNNING, hint="`clausegate status` shows it; `clausegate down` stops it")
        if plan.action == "missing":
            return _start_missing(state, plan.missing, options, paths, echo)
        return _up(options, paths, echo)


def _start_missing(state: dict[str, Any], missing: tuple[str, ...], options: StackOptions, paths: StackPaths,
                   echo: Echo) -> dict[str, Any]:
    """Start the processes of a partly running stack that are not running, with the options it was started
    with; the running ones are left alone."""
    saved = starters.saved_options(state, options.extra_env, fallback=options)
    kept = [f"{r.name} pid {r.pid}" for r in records(state) if r.alive()]
    echo(f"the stack is partly running ({', '.join(kept)}): starting only {', '.join(missing)}, with the options "
         "it was started with")

    def remember(record: ProcessRecord) -> None:
        replace_record(state, record)
        write_state(paths, state)

    for name in missing:
        starters.start_one(name, saved, paths, state, remember, echo)
        new = next(r for r in records(state) if r.name == name)
        echo(f"started {name} (pid {new.pid})")
    state.pop("stopping", None)
    write_state(paths, state)
    return state


def _up(options: StackOptions, paths: StackPaths, echo: Echo) -> dict[str, Any]:
    if options.database not in database.CHOICES:
        raise StackError(f"unknown database {options.database!r}.", code=CONFIG_FAILED,
                         hint=f"`clausegate up --database {'|'.join(database.CHOICES)}`")
    paths.home.mkdir(parents=True, exist_ok=True)
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.prefect_home.mkdir(parents=True, exist_ok=True)
    tz = options.timezone or local_timezone()
    state = {"version": STATE_VERSION, "project": str(paths.project), "started_at": time.time(),
             "processes": [], "api_url": options.api_url or f"http://{options.host}:{options.port}/api",
             "ui_url": "", "gateway_url": "", "server_started": options.api_url is None,
             "options": starters.options_to_save(options)}
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
            sock = starters.start_warm_start(options, paths, api_url, remember)
            warm_env[WARM_SOCKET_ENV] = str(sock)
            state["warm_start"] = str(sock)
            echo(f"warm start: flow runs fork from a preloaded process ({sock})")

        if options.start_worker:
            starters.start_worker(options, paths, api_url, warm_env, remember, echo)
        if options.start_gateway:
            starters.start_gateway(options, paths, state, remember, echo)
        write_state(paths, state)
        if options.start_worker:
            worker_rec = next(r for r in records(state) if r.name == "worker")
            time.sleep(1.0)
            if not worker_rec.alive():
                raise StackError("the worker exited right after starting.", hint=f"see {worker_rec.log}")
        if options.supervise:
            starters.start_supervisor(options, paths, state, remember, echo)
            echo("supervisor: restarts a process of the stack that exits (back-off 0, 1, 2 … 60 s; log: "
                 f"{paths.logs / 'supervisor.log'})")
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
    if not port_free(options.host, options.port):
        raise StackError(f"port {options.port} on {options.host} is already in use.", code=PORT_IN_USE,
                         hint="stop what uses it, or `clausegate up --port N` (or --api-url to use that server)")
    # Basic auth on the whole API (and the UI, which asks for the string): generated once, owner-only file.
    credentials.api_auth_string(create=True)
    credentials.at_rest_key(create=True)  # before any process could race to create it
    _start_database(options, paths, state, remember, echo)
    echo(f"starting Prefect server on {options.host}:{options.port} (API credential in "
         f"{credentials.secrets_dir() / credentials.AUTH_FILE}) …")
    starters.start_server(options, paths, state, remember)


def _start_database(options: StackOptions, paths: StackPaths, state: dict[str, Any], remember: Remember,
                    echo: Echo) -> None:
    """Start the stack's database (clausegate/stack/database.py); its URL goes to ``state['database']``."""
    external = database.external_url(options.extra_env)
    if external:
        state["database"] = {"kind": "external", "url": database.redact(external)}
        echo(f"database: {state['database']['url']} ({database.URL_ENV} is set; no database started)")
        return
    if options.database == database.SQLITE:
        state["database"] = database.sqlite_info(paths)
        echo(f"database: SQLite in {paths.prefect_home}")
        return
    began = time.monotonic()
    record, _, state["database"] = database.start_postgres(paths)
    remember(record)
    echo(f"database: embedded PostgreSQL (pid {record.pid}, data in {paths.postgres_data}) ready in "
         f"{time.monotonic() - began:.1f} s")


def down(paths: StackPaths, echo: Echo = print) -> list[tuple[str, int, str]]:
    """Stop exactly the processes `up` recorded: the supervisor first (so nothing is restarted), then the
    others newest first; keep the database and logs."""
    state = read_state(paths)
    if not state:
        echo(f"no stack state in {paths.state_file}: nothing to stop")
        return []
    results: list[tuple[str, int, str]] = []
    for record in records(state):
        if record.name == SUPERVISOR:
            outcome = database.stop(record)
            results.append((record.name, record.pid, outcome))
            echo(f"{record.name} (pid {record.pid}): {outcome}")
    with stack_lock(paths, timeout=300) as taken:  # a restart or an `up` under way finishes first
        if not taken:
            echo("another `clausegate up` still holds the stack's lock after 5 minutes: stopping anyway")
        state = read_state(paths) or state  # what the supervisor or an `up` recorded until now
        state["stopping"] = True
        write_state(paths, state)
        for record in reversed(records(state)):
            if record.name == SUPERVISOR and any(r[:2] == (record.name, record.pid) for r in results):
                continue
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
        state.pop("stopping", None)
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
        "database": state.get("database"), "supervisor": state.get("supervisor") or {},
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
