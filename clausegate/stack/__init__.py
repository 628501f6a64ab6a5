"""The local stack behind `clausegate up` / `down` / `status`.

``up`` starts, in the project folder's ``.clausegate/`` (its own PREFECT_HOME, SQLite database,
logs and a state file):

1. a Prefect server on SQLite (``prefect server start``; UI on the same port),
2. configuration, each step idempotent: the ``clausegate`` process work pool with queues
   ``high``/``normal``/``low`` (priorities 1/2/3), the global concurrency and rate limits the flows
   use, the ``clausegate_timezone`` variable (local IANA zone for the 02:00 schedule), the block
   types (so the UI can create blocks), the automations in ``deployments/automations.yaml``,
3. ``prefect deploy --no-prompt`` of every deployment in ``prefect.yaml`` whose entrypoint exists,
4. the warm-start process (flow runs fork from it instead of starting a new Python; see "warm start"
   at the end of this module), a process worker on the pool, and the gateway (``clausegate gateway``)
   when a SlackSettings block exists (a local fake Slack + demo block is created when none does).

Every process is started in its own session (process group); its pid, process start time and
command are written to ``.clausegate/stack.json`` *as soon as it starts*.  ``down`` stops exactly
those processes (a pid whose start time no longer matches is left alone: it is not ours any more).
``up --api-url URL`` uses an existing server instead of starting one (then ``down`` leaves it).

Error codes: ``CG-STACK-PORT-IN-USE``, ``CG-STACK-START``, ``CG-STACK-DEPLOY``,
``CG-STACK-CONFIG``, ``CG-STACK-RUNNING`` (runbook: docs/runbook.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clausegate.security import credentials
from clausegate.errors import ClauseGateError

PORT_IN_USE = "CG-STACK-PORT-IN-USE"
START_FAILED = "CG-STACK-START"
DEPLOY_FAILED = "CG-STACK-DEPLOY"
CONFIG_FAILED = "CG-STACK-CONFIG"
ALREADY_RUNNING = "CG-STACK-RUNNING"

POOL = "clausegate"
QUEUES: tuple[tuple[str, int, str], ...] = (
    ("high", 1, "Alerts, SLA sweeps, urgent reviews: served first."),
    ("normal", 2, "Ad-hoc reviews from the UI or CLI."),
    ("low", 3, "Nightly batch fan-out: runs when nothing else waits."),
)


@dataclass(frozen=True)
class GlobalLimit:
    name: str
    limit: int
    slot_decay_per_second: float = 0.0
    purpose: str = ""


# Names used by the code (clausegate/pipeline/model_tasks.py, clausegate/ops/budget.py).  Created only when
# missing, so a limit tuned in the UI (Concurrency > Global) survives `clausegate up`.
LIMITS: tuple[GlobalLimit, ...] = (
    GlobalLimit("clausegate-model-calls", limit=10, slot_decay_per_second=0.8,
                purpose="rate limit of model API calls: bursts of 10, ~48 calls/minute sustained"),
    GlobalLimit("clausegate-budget-ledger", limit=1,
                purpose="one writer at a time for the spend ledger variable"),
)
TIMEZONE_VARIABLE = "clausegate_timezone"
NIGHTLY_DEPLOYMENT = "nightly-batch/nightly-batch"
STATE_VERSION = 1


class StackError(ClauseGateError):
    code = START_FAILED


# ------------------------------------------------------------------------------------ paths / options
@dataclass(frozen=True)
class StackPaths:
    project: Path
    home: Path

    @classmethod
    def for_project(cls, project: Path, home: Path | None = None) -> "StackPaths":
        project = Path(project).resolve()
        return cls(project=project, home=(home or project / ".clausegate").resolve())

    @property
    def prefect_home(self) -> Path:
        return self.home / "prefect"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def state_file(self) -> Path:
        return self.home / "stack.json"

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
    warm_start: bool = True         # fork flow runs from a preloaded zygote (see "warm start" below)
    fake_slack_port: int = 8902
    server_ready_timeout: float = 180.0
    extra_env: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------------ processes
@dataclass
class ProcessRecord:
    name: str
    pid: int
    started: str          # process start time as the OS reports it (pid reuse check)
    argv: list[str]
    log: str
    url: str = ""

    def alive(self) -> bool:
        return process_start_time(self.pid) == self.started


def process_start_time(pid: int) -> str | None:
    """An opaque start-time token for ``pid`` (None if no such process)."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            text = stat.read_text()
        except OSError:
            return None
        fields = text[text.rfind(")") + 2:].split()
        if fields and fields[0] == "Z":  # zombie: exited, not yet reaped
            return None
        return fields[19] if len(fields) > 19 else None
    try:  # macOS / BSD
        out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def start_process(name: str, argv: list[str], *, env: dict[str, str], log: Path, cwd: Path) -> ProcessRecord:
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = open(log, "ab")
    try:
        proc = subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        raise StackError(f"cannot start the {name}: {exc}", hint=f"check `{argv[0]}` exists") from None
    finally:
        handle.close()
    started = None
    for _ in range(50):
        started = process_start_time(proc.pid)
        if started:
            break
        time.sleep(0.02)
    return ProcessRecord(name=name, pid=proc.pid, started=started or "", argv=argv, log=str(log))


def stop_process(record: ProcessRecord, timeout: float = 20.0) -> str:
    """SIGTERM the record's process group, wait, then SIGKILL.  Never touches a reused pid."""
    if not record.alive():
        return "not running"
    try:
        pgid = os.getpgid(record.pid)
    except ProcessLookupError:
        return "not running"
    use_group = pgid == record.pid  # started with start_new_session: the group is ours
    sender = (lambda sig: os.killpg(pgid, sig)) if use_group else (lambda sig: os.kill(record.pid, sig))
    try:
        sender(signal.SIGTERM)
    except ProcessLookupError:
        return "not running"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not record.alive():
            _reap(record.pid)  # it may have turned zombie after the first reap
            return "stopped"
        time.sleep(0.2)
    try:
        sender(signal.SIGKILL)
    except ProcessLookupError:
        pass
    for _ in range(50):
        _reap(record.pid)
        if not record.alive():
            break
        time.sleep(0.1)
    return "killed"


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def port_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_port(host: str, port: int, timeout: float, record: ProcessRecord | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record is not None and not record.alive():
            return False
        try:
            with socket.create_connection((host, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.3)
    return False


def api_healthy(api_url: str, timeout: float = 2.0) -> bool:
    import httpx

    try:
        return httpx.get(f"{api_url.rstrip('/')}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(api_url: str, timeout: float, record: ProcessRecord | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record is not None and not record.alive():
            return False
        if api_healthy(api_url):
            return True
        time.sleep(0.5)
    return False


# ------------------------------------------------------------------------------------ state file
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


def records(state: dict[str, Any] | None) -> list[ProcessRecord]:
    return [ProcessRecord(**p) for p in (state or {}).get("processes", [])]


# ------------------------------------------------------------------------------------ environment
def local_timezone() -> str:
    """The machine's IANA time zone (for "02:00 local time"); UTC if it cannot be told."""
    if os.environ.get("TZ", "").count("/"):
        return os.environ["TZ"].lstrip(":")
    try:
        import tzlocal

        name = tzlocal.get_localzone_name()
        if name:
            return name
    except Exception:  # noqa: BLE001 - tzlocal missing or confused
        pass
    try:
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


def base_env(paths: StackPaths, api_url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process the stack starts: its Prefect home, API URL and API credential."""
    env = dict(os.environ)
    env.pop("PREFECT_API_KEY", None)  # would take precedence over the basic-auth string and fail (401)
    auth = credentials.api_auth_string()
    if auth:
        env["PREFECT_API_AUTH_STRING"] = auth
    env.update({
        "PREFECT_HOME": str(paths.prefect_home),
        "PREFECT_API_URL": api_url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "CLAUSEGATE_PROJECT_DIR": str(paths.project),
        "PYTHONUNBUFFERED": "1",
    })
    env.update(extra or {})
    return env


def prefect_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefect", *args]


def clausegate_argv(*args: str) -> list[str]:
    script = Path(sys.executable).with_name("clausegate")
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; sys.argv[0] = 'clausegate'; from clausegate.cli import app; app()", *args]


def gateway_available() -> bool:
    return importlib.util.find_spec("clausegate.gateway") is not None


# ------------------------------------------------------------------------------------ configuration
def _settings(api_url: str):
    """Prefect client settings for the stack's server: its URL and, when there is one, the API credential."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    updates: dict[Any, Any] = {PREFECT_API_URL: api_url}
    auth = credentials.api_auth_string()
    if auth:
        updates[PREFECT_API_AUTH_STRING] = auth
    return temporary_settings(updates=updates)


def configure(api_url: str, paths: StackPaths, *, timezone_name: str, log: Callable[[str], None]) -> dict[str, Any]:
    """Pool, queues, limits, variables, block types, automations.  Safe to run again."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.variables import Variable

    done: dict[str, Any] = {}
    with _settings(api_url), get_client(sync_client=True) as client:
        try:
            client.read_work_pool(POOL)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=POOL, type="process", base_job_template=_process_template(),
                                                   description="ClauseGate: contract reviews on this machine's checkout"))
            log(f"created work pool {POOL!r} (process)")
        existing = {q.name: q for q in client.read_work_queues(work_pool_name=POOL)}
        for name, priority, description in QUEUES:
            queue = existing.get(name)
            if queue is None:
                client.create_work_queue(name=name, work_pool_name=POOL, priority=priority, description=description)
            elif queue.priority != priority:
                client.update_work_queue(queue.id, priority=priority)
        queues = sorted(client.read_work_queues(work_pool_name=POOL), key=lambda q: q.priority)
        done["queues"] = [(q.name, q.priority) for q in queues]
        log("work queues: " + ", ".join(f"{q.name}={q.priority}" for q in queues))

        for limit in LIMITS:
            try:
                client.read_global_concurrency_limit_by_name(limit.name)
            except ObjectNotFound:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(
                    name=limit.name, limit=limit.limit, slot_decay_per_second=limit.slot_decay_per_second))
                log(f"created global limit {limit.name!r}: {limit.purpose}")
        done["limits"] = [limit.name for limit in LIMITS]

    with _settings(api_url):
        Variable.set(TIMEZONE_VARIABLE, timezone_name, overwrite=True)
        done["timezone"] = timezone_name
        done["block_types"] = register_block_types()
        done["automations"] = apply_automations(paths.automations_file, log)
    return done


def register_block_types(modules: tuple[str, ...] = ("blocks.models", "blocks.slack")) -> list[str]:
    """Register ClauseGate's block types so the UI offers them under Blocks > Add."""
    import inspect

    from prefect.blocks.core import Block, InvalidBlockRegistration

    registered: list[str] = []
    for module_name in modules:
        if importlib.util.find_spec(module_name) is None:
            continue
        module = importlib.import_module(module_name)
        for _, cls in inspect.getmembers(module):
            if cls is not None and Block.is_block_class(cls) and cls.__module__ == module.__name__:
                try:
                    cls.register_type_and_schema()
                    registered.append(cls.get_block_type_slug())
                except InvalidBlockRegistration:
                    pass
    return registered


def load_automations(path: Path) -> list[dict[str, Any]]:
    import yaml

    if not path.is_file():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = data.get("automations", []) if isinstance(data, dict) else data
    return list(items or [])


ZOMBIE_AUTOMATION = "clausegate-zombie-runs"


def zombie_window(spec: dict[str, Any]) -> dict[str, Any]:
    """``CLAUSEGATE_ZOMBIE_SECONDS`` (>= 45: heartbeats come every 30 s) replaces the zombie automation's 150 s."""
    raw = os.environ.get("CLAUSEGATE_ZOMBIE_SECONDS")
    if spec.get("name") != ZOMBIE_AUTOMATION or not raw:
        return spec
    try:
        seconds = int(raw)
    except ValueError:
        raise StackError(f"CLAUSEGATE_ZOMBIE_SECONDS={raw!r} is not a number of seconds.", code=CONFIG_FAILED,
                         hint="use e.g. 150 (at least 45: flow runs send a heartbeat every 30 s)") from None
    if seconds < 45:
        raise StackError(f"CLAUSEGATE_ZOMBIE_SECONDS={seconds} is too short: healthy runs would be crashed.",
                         code=CONFIG_FAILED, hint="use at least 45 (flow runs send a heartbeat every 30 s)")
    spec = {**spec, "trigger": {**spec["trigger"], "within": seconds}}
    spec["actions"] = [{**a, "message": str(a.get("message", "")).replace("150 s", f"{seconds} s")} for a in spec["actions"]]
    return spec


def apply_automations(path: Path, log: Callable[[str], None]) -> list[str]:
    """Create or update (by name) every automation in ``path`` (same format as
    ``prefect automation create --from-file``)."""
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    names: list[str] = []
    with get_client(sync_client=True) as client:
        for spec in load_automations(path):
            automation = AutomationCore.model_validate(zombie_window(spec))
            existing = client.read_automations_by_name(automation.name)
            if existing:
                client.update_automation(existing[0].id, automation)
                for extra in existing[1:]:
                    client.delete_automation(extra.id)
            else:
                client.create_automation(automation)
                log(f"created automation {automation.name!r}")
            names.append(automation.name)
    return names


def deployable(paths: StackPaths) -> tuple[list[str], list[tuple[str, str]]]:
    """Deployment names in prefect.yaml whose entrypoint file exists, and the skipped ones (+ why)."""
    import yaml

    config = yaml.safe_load(paths.prefect_yaml.read_text(encoding="utf-8"))
    ok: list[str] = []
    skipped: list[tuple[str, str]] = []
    for dep in config.get("deployments", []):
        entry = str(dep.get("entrypoint", ""))
        file = entry.split(":", 1)[0]
        if file and (paths.project / file).is_file():
            ok.append(dep["name"])
        else:
            skipped.append((dep.get("name", "?"), f"{file} not found"))
    return ok, skipped


def deploy(api_url: str, paths: StackPaths, names: list[str], *, log_file: Path, timeout: float = 600) -> None:
    """``prefect deploy --no-prompt -n NAME ...`` from the project folder (the documented command)."""
    argv = prefect_argv("deploy", "--no-prompt")
    for name in names:
        argv += ["--name", name]
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as handle:
        handle.write(f"\n$ {' '.join(argv)}\n".encode())
        handle.flush()
        try:
            env = base_env(paths, api_url)
            # Left unresolved on purpose: each worker's flow-run process resolves it to its own checkout.
            env.pop("CLAUSEGATE_PROJECT_DIR", None)
            result = subprocess.run(argv, cwd=str(paths.project), env=env, stdout=handle,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StackError(f"`prefect deploy` did not finish within {timeout:.0f} s.", code=DEPLOY_FAILED,
                             hint=f"see {log_file}") from None
    if result.returncode != 0:
        tail = log_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
        raise StackError(f"`prefect deploy` failed (exit {result.returncode}): " + " | ".join(tail), code=DEPLOY_FAILED,
                         hint=f"see {log_file}; fix prefect.yaml or the flow it names, then run `clausegate up` again")


def _process_template() -> dict[str, Any]:
    from prefect.workers.process import ProcessWorker

    return ProcessWorker.get_default_base_job_template()


def set_pool_command(api_url: str, command: str | None) -> None:
    """Default flow-run command of the pool (None: Prefect's `python -m prefect.engine`)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolUpdate

    with _settings(api_url), get_client(sync_client=True) as client:
        pool = client.read_work_pool(POOL)
        template = json.loads(json.dumps(pool.base_job_template or {})) or _process_template()
        prop = template.get("variables", {}).get("properties", {}).get("command")
        if prop is None:
            return
        current = prop.get("default")
        if command is None and not (current or "").endswith("-m clausegate.stack warm-run"):
            return  # leave someone else's command alone
        if current == command:
            return
        prop["default"] = command
        client.update_work_pool(POOL, WorkPoolUpdate(base_job_template=template))


def set_nightly_schedule(api_url: str, cron: str | None, timezone_name: str) -> str | None:
    """Point the nightly-batch deployment's cron schedule at ``cron`` (keeping it if None) in ``timezone_name``."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.exceptions import ObjectNotFound

    with _settings(api_url), get_client(sync_client=True) as client:
        try:
            dep = client.read_deployment_by_name(NIGHTLY_DEPLOYMENT)
        except ObjectNotFound:
            return None
        for sched in dep.schedules:
            if isinstance(sched.schedule, CronSchedule):
                new = CronSchedule(cron=cron or sched.schedule.cron, timezone=timezone_name)
                if new.cron != sched.schedule.cron or new.timezone != sched.schedule.timezone:
                    client.update_deployment_schedule(dep.id, sched.id, schedule=new)
                return f"{new.cron} ({new.timezone})"
    return None


# ------------------------------------------------------------------------------------ Slack (safe defaults)
DEMO_CHANNELS = {"channel": "C0CLAUSEGATE", "escalation_channel": "C0LEGAL", "alert_channel": "C0ALERTS"}


def slack_block_state(api_url: str) -> tuple[str, Any]:
    """('missing' | 'demo' | 'real', block) for the SlackSettings block the flows and gateway use."""
    if importlib.util.find_spec("blocks.slack") is None:
        return "unavailable", None
    from clausegate.gates import load_slack_settings

    with _settings(api_url):
        block = load_slack_settings()
    if block is None:
        return "missing", None
    host = block.api_base_url.split("//", 1)[-1]
    return ("demo" if host.startswith(("127.0.0.1", "localhost")) else "real"), block


def create_demo_slack_block(api_url: str, fake_api_url: str, ui_url: str) -> str:
    """A SlackSettings block that talks to the local fake Slack: nothing leaves the machine.
    Replace it in the UI (Blocks > ClauseGate Slack) with the real app's token/secret/channels."""
    import secrets

    from blocks.slack import SlackSettings
    from clausegate.demo.slack_server import DEFAULT_TOKEN
    from clausegate.gates import slack_block_name

    name = slack_block_name()
    with _settings(api_url):
        SlackSettings(bot_token=DEFAULT_TOKEN, signing_secret=secrets.token_hex(16), api_base_url=fake_api_url,
                      prefect_ui_url=ui_url, **DEMO_CHANNELS).save(name, overwrite=True)
    return name


# ------------------------------------------------------------------------------------ up / down / status
def up(options: StackOptions, paths: StackPaths, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Start (or reuse) the stack; returns the state written to ``stack.json``."""
    state = read_state(paths)
    running = [r for r in records(state) if r.alive()]
    if state and running:
        raise StackError(f"a stack started from {paths.project} is already running "
                         f"({', '.join(f'{r.name} pid {r.pid}' for r in running)}).", code=ALREADY_RUNNING,
                         hint="`clausegate status` shows it; `clausegate down` stops it")
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
            echo(f"starting Prefect server on {options.host}:{options.port} (SQLite in {paths.prefect_home}; API "
                 f"credential in {credentials.secrets_dir() / credentials.AUTH_FILE}) …")
            server = start_process("server", prefect_argv("server", "start", "--host", options.host,
                                                          "--port", str(options.port)),
                                   env=env, log=paths.logs / "server.log", cwd=paths.project)
            server.url = api_url
            remember(server)
            if not wait_healthy(api_url, options.server_ready_timeout, server):
                raise StackError(f"the Prefect server did not become healthy within {options.server_ready_timeout:.0f} s.",
                                 hint=f"see {paths.logs / 'server.log'}")
        elif not api_healthy(api_url, timeout=5):
            raise StackError(f"no healthy Prefect server at {api_url}.", hint="check --api-url")
        state["ui_url"] = api_url[: -len("/api")] if api_url.endswith("/api") else api_url
        write_state(paths, state)

        echo("configuring pool, queues, limits, variables, block types, automations …")
        try:
            state["configured"] = configure(api_url, paths, timezone_name=tz, log=echo)
        except ClauseGateError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise StackError(f"configuring the server failed: {type(exc).__name__}: {exc}", code=CONFIG_FAILED,
                             hint=f"see {paths.logs / 'server.log'}") from exc

        state["slack"] = _setup_slack(options, paths, state, remember, echo)
        write_state(paths, state)

        if options.deploy:
            names, skipped = deployable(paths)
            for name, why in skipped:
                echo(f"skipping deployment {name!r}: {why}")
            echo(f"deploying {', '.join(names)} from prefect.yaml …")
            deploy(api_url, paths, names, log_file=paths.logs / "deploy.log")
            state["deployments"] = names
            state["skipped_deployments"] = [n for n, _ in skipped]
            state["nightly_schedule"] = set_nightly_schedule(api_url, options.nightly_cron, tz)
            write_state(paths, state)

        set_pool_command(api_url, warm_command() if options.warm_start else None)
        warm_env: dict[str, str] = {}
        if options.warm_start and options.start_worker:
            sock = paths.home / "warm.sock"
            zygote = start_process("warm-start", [sys.executable, "-m", "clausegate.stack", "warm-serve", str(sock)],
                                   env=base_env(paths, api_url, {**options.extra_env,
                                                                 "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}),
                                   log=paths.logs / "warm-start.log", cwd=paths.project)
            remember(zygote)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and zygote.alive() and not sock.exists():
                time.sleep(0.2)
            if not sock.exists():
                raise StackError("the warm-start process did not get ready.", hint=f"see {zygote.log}")
            warm_env[WARM_SOCKET_ENV] = str(sock)
            state["warm_start"] = str(sock)
            echo(f"warm start: flow runs fork from a preloaded process ({sock})")

        if options.start_worker:
            env = base_env(paths, api_url, {"PREFECT_WORKER_QUERY_SECONDS": str(options.worker_query_seconds),
                                            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                                            **warm_env, **options.extra_env})
            worker = start_process("worker", prefect_argv("worker", "start", "--pool", POOL, "--name",
                                                          options.worker_name, "--limit", str(options.worker_limit)),
                                   env=env, log=paths.logs / "worker.log", cwd=paths.project)
            remember(worker)
            echo(f"started worker {options.worker_name!r} (limit {options.worker_limit}, polls every "
                 f"{options.worker_query_seconds:g} s)")

        if options.start_gateway:
            if gateway_available():
                if not port_free(options.host, options.gateway_port):
                    raise StackError(f"gateway port {options.gateway_port} is already in use.", code=PORT_IN_USE,
                                     hint="`clausegate up --gateway-port N`")
                gateway = start_process("gateway", clausegate_argv("gateway", "--host", options.host,
                                                                   "--port", str(options.gateway_port)),
                                        env=base_env(paths, api_url, {
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
            else:
                state["gateway_note"] = "gateway not available in this build (clausegate.gateway is missing)"
                echo("gateway: not available in this build (clausegate.gateway is missing) — skipped")
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
            stop_process(record)
        state["processes"] = []
        state["failed"] = True
        write_state(paths, state)
        raise


def _setup_slack(options: StackOptions, paths: StackPaths, state: dict[str, Any],
                 remember: Callable[[ProcessRecord], None], echo: Callable[[str], None]) -> str:
    """Safe default: without a real SlackSettings block, run the local fake Slack and a demo block."""
    api_url = state["api_url"]
    if options.slack == "off":
        return "off"
    kind, block = slack_block_state(api_url)
    if kind == "unavailable":
        return "unavailable"
    if kind == "real" or (kind == "missing" and options.slack not in ("auto", "demo")):
        return kind
    fake_url = f"http://{options.host}:{options.fake_slack_port}/api/"
    if kind == "demo" and block is not None and block.api_base_url.rstrip("/") != fake_url.rstrip("/"):
        return "demo (external)"  # points at some other local fake; not ours to start
    if not port_free(options.host, options.fake_slack_port):
        raise StackError(f"fake Slack port {options.fake_slack_port} is already in use.", code=PORT_IN_USE,
                         hint="`clausegate up --fake-slack-port N`, or --slack off")
    from clausegate.demo.slack_server import DEFAULT_TOKEN

    fake = start_process("fake-slack", [sys.executable, "-m", "clausegate.demo.slack_server", "--host", options.host,
                                        "--port", str(options.fake_slack_port), "--token", DEFAULT_TOKEN],
                         env=base_env(paths, api_url), log=paths.logs / "fake-slack.log", cwd=paths.project)
    fake.url = fake_url
    remember(fake)
    if not wait_port(options.host, options.fake_slack_port, 30, fake):
        raise StackError("the fake Slack server did not start.", hint=f"see {fake.log}")
    if kind == "missing":
        name = create_demo_slack_block(api_url, fake_url, state["ui_url"])
        echo(f"created SlackSettings block {name!r} -> local fake Slack {fake_url} (demo; replace with your app's)")
    else:
        echo(f"started the local fake Slack {fake_url} for the demo SlackSettings block")
    return "demo"


def down(paths: StackPaths, echo: Callable[[str], None] = print) -> list[tuple[str, int, str]]:
    """Stop exactly the processes `up` recorded (newest first); keep the database and logs."""
    state = read_state(paths)
    if not state:
        echo(f"no stack state in {paths.state_file}: nothing to stop")
        return []
    results: list[tuple[str, int, str]] = []
    for record in reversed(records(state)):
        outcome = stop_process(record)
        results.append((record.name, record.pid, outcome))
        echo(f"{record.name} (pid {record.pid}): {outcome}")
    if state.get("warm_start") and state.get("api_url") and api_healthy(state["api_url"]):
        try:  # the zygote is gone: give the pool Prefect's own command back
            set_pool_command(state["api_url"], None)
        except Exception as exc:  # noqa: BLE001 - the client falls back to the engine anyway
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
        "healthy": bool(state.get("api_url")) and api_healthy(state["api_url"]),
    }
    if not info["healthy"]:
        return info
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterTags, FlowRunFilter, FlowRunFilterState, FlowRunFilterStateName
    from prefect.exceptions import ObjectNotFound

    with _settings(state["api_url"]), get_client(sync_client=True) as client:
        try:
            client.read_work_pool(POOL)
            info["queues"] = [(q.name, q.priority, q.is_paused) for q in
                              sorted(client.read_work_queues(work_pool_name=POOL), key=lambda q: q.priority)]
            info["workers"] = [(w.name, str(getattr(w.status, "value", w.status)), str(w.last_heartbeat_time))
                               for w in client.read_workers_for_work_pool(POOL)]
        except ObjectNotFound:
            info["queues"], info["workers"] = [], []
        deps = client.read_deployments(deployment_filter=DeploymentFilter(tags=DeploymentFilterTags(all_=["clausegate"])))
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


# ------------------------------------------------------------------------------------ warm start
# Every Prefect flow run normally starts a fresh Python (`python -m prefect.engine`) that imports
# Prefect, the flow and its libraries and loads the offline model: ~4 CPU-seconds before the first
# line of review work, several times the work itself.  With `clausegate up --warm-start` a
# *zygote* process does that once; the work pool's command becomes the tiny client below, which
# asks the zygote to fork a child that runs `prefect.engine` for the flow run (same environment,
# working directory and stdio as the client).  The client relays signals (cancellation) and exits
# with the child's status, so the worker sees an ordinary process.  Without a reachable zygote the
# client simply execs the normal engine.  Restart the stack after changing code: children run the
# modules the zygote imported.
WARM_SOCKET_ENV = "CLAUSEGATE_WARMSTART_SOCKET"
WARM_PRELOAD = ("prefect.flow_engine", "prefect.flows", "prefect.deployments.steps",
                "flows.contract_review")


def warm_command() -> str:
    return f"{sys.executable} -m clausegate.stack warm-run"


def _exec_engine(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "prefect.engine", *args])


def warm_run(args: list[str]) -> int:
    """The work pool's command: run this flow run in a child of the zygote (or the normal way)."""
    import array
    import struct

    path = os.environ.get(WARM_SOCKET_ENV)
    if not path:
        _exec_engine(args)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        payload = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "args": args}).encode()
        conn.sendmsg([struct.pack("!I", len(payload))],
                     [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
        conn.sendall(payload)
        reader = conn.makefile("r")
        first = reader.readline()
    except OSError:
        conn.close()
        _exec_engine(args)
        return 1  # not reached
    if not first.startswith("pid "):
        _exec_engine(args)
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
            return 1  # the zygote died: report a failure, the run is then marked crashed
        if line.startswith("exit "):
            return int(line.split()[1])


def warm_serve(socket_path: str) -> None:
    """The zygote: preload, then fork one child per request (single-threaded, no clients opened)."""
    import array
    import importlib
    import select
    import struct

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # no native thread pools in a process that forks
    for module in WARM_PRELOAD:
        importlib.import_module(module)
    try:
        from clausegate.review.offline.model import load_model

        load_model()
    except Exception as exc:  # noqa: BLE001 - children then load it themselves
        print(f"warm start: offline model not preloaded ({exc})", flush=True)
    import threading

    if threading.active_count() != 1:
        print(f"warm start: refusing to fork with threads running: {threading.enumerate()}", flush=True)
        sys.exit(3)
    watched = _loaded_source_files()
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
                    request, fds = _read_request(conn, array, struct)
                except (OSError, ValueError) as exc:
                    print(f"warm start: bad request ({exc})", flush=True)
                    conn.close()
                    continue
                changed = [f for f, mtime in watched.items() if _mtime(f) != mtime]
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
                print(f"warm start: flow run {request['env'].get('PREFECT__FLOW_RUN_ID', '?')} -> pid {pid}", flush=True)
            else:  # the client went away (killed): take its child down too
                try:
                    data = sock.recv(64)
                except OSError:
                    data = b""
                if not data:
                    for pid, conn in list(children.items()):
                        if conn is sock:
                            try:
                                os.kill(pid, signal.SIGTERM)
                            except ProcessLookupError:
                                pass
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


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _loaded_source_files() -> dict[str, float | None]:
    """The ClauseGate source files the zygote has imported (package, flows, blocks) and their mtimes."""
    roots = {str(Path(__file__).resolve().parents[2])}
    if os.environ.get("CLAUSEGATE_PROJECT_DIR"):
        roots.add(str(Path(os.environ["CLAUSEGATE_PROJECT_DIR"]).resolve()))
    files = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.endswith(".py") and "site-packages" not in path and any(path.startswith(r) for r in roots):
            files[path] = _mtime(path)
    return files


def _read_request(conn: socket.socket, array, struct) -> tuple[dict[str, Any], list[int]]:
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
    import runpy

    code = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import prefect.context
        import prefect.logging.configuration

        prefect.context.refresh_global_settings_context()
        prefect.logging.configuration.setup_logging()
        sys.argv = ["prefect.engine", *request["args"]]
        sys.modules.pop("prefect.engine", None)  # as Prefect's own runtime bootstrap does before run_module
        try:
            runpy.run_module("prefect.engine", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()  # Prefect drains its log/event workers at exit
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "warm-run":
        sys.exit(warm_run(sys.argv[2:]))
    if len(sys.argv) == 3 and sys.argv[1] == "warm-serve":
        warm_serve(sys.argv[2])
        sys.exit(0)
    sys.exit("usage: python -m clausegate.stack warm-run [FLOW_RUN_ID] | warm-serve SOCKET_PATH")
