"""The server configuration the flows rely on, each step idempotent: the ``clausegate`` process work pool
with queues ``high``/``normal``/``low`` (priorities 1/2/3), the global concurrency and rate limits the
flows use, the ``clausegate_timezone`` variable (local IANA zone for the 02:00 schedule), ClauseGate's
block types (so the UI can create blocks) and the automations; plus the pool's flow-run command (warm
start) and the nightly batch's schedule, which ``up`` sets after deploying."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect.blocks.core import InvalidBlockRegistration
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, WorkPoolCreate, WorkPoolUpdate
from prefect.client.schemas.schedules import CronSchedule
from prefect.exceptions import ObjectNotFound
from prefect.variables import Variable
from prefect.workers.process import ProcessWorker

from clausegate.config import BLOCK_CLASSES
from clausegate.stack.automations import apply_automations
from clausegate.stack.environment import client_settings
from clausegate.stack.state import StackPaths
from clausegate.stack.warmstart import is_warm_command

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


# Names used by the code (clausegate/pipeline/model_calls.py, clausegate/ops/budget.py).  Created only when
# missing, so a limit tuned in the UI (Concurrency > Global) survives `clausegate up`.
LIMITS: tuple[GlobalLimit, ...] = (
    GlobalLimit("clausegate-model-calls", limit=10, slot_decay_per_second=0.8,
                purpose="rate limit of model API calls: bursts of 10, ~48 calls/minute sustained"),
    GlobalLimit("clausegate-budget-ledger", limit=1,
                purpose="one writer at a time for the spend ledger variable"),
)
TIMEZONE_VARIABLE = "clausegate_timezone"
NIGHTLY_DEPLOYMENT = "nightly-batch/nightly-batch"


def configure(api_url: str, paths: StackPaths, *, timezone_name: str, log: Callable[[str], None]) -> dict[str, Any]:
    """Pool, queues, limits, variables, block types, automations.  Safe to run again."""
    done: dict[str, Any] = {}
    with client_settings(api_url), get_client(sync_client=True) as client:
        try:
            client.read_work_pool(POOL)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(
                name=POOL, type="process", base_job_template=_process_template(),
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

    with client_settings(api_url):
        Variable.set(TIMEZONE_VARIABLE, timezone_name, overwrite=True)
        done["timezone"] = timezone_name
        done["block_types"] = register_block_types()
        done["automations"] = apply_automations(paths.automations_file, log)
    return done


def register_block_types() -> list[str]:
    """Register ClauseGate's block types (``clausegate.config.BLOCK_CLASSES``) so the UI offers them under
    Blocks > Add."""
    registered: list[str] = []
    for cls in BLOCK_CLASSES:
        try:
            cls.register_type_and_schema()
            registered.append(cls.get_block_type_slug())
        except InvalidBlockRegistration:
            pass
    return registered


def _process_template() -> dict[str, Any]:
    return ProcessWorker.get_default_base_job_template()


def set_pool_command(api_url: str, command: str | None) -> None:
    """Default flow-run command of the pool (None: Prefect's `python -m prefect.engine`)."""
    with client_settings(api_url), get_client(sync_client=True) as client:
        pool = client.read_work_pool(POOL)
        template = json.loads(json.dumps(pool.base_job_template or {})) or _process_template()
        prop = template.get("variables", {}).get("properties", {}).get("command")
        if prop is None:
            return
        current = prop.get("default")
        if command is None and not is_warm_command(current or ""):
            return  # leave someone else's command alone
        if current == command:
            return
        prop["default"] = command
        client.update_work_pool(POOL, WorkPoolUpdate(base_job_template=template))


def set_nightly_schedule(api_url: str, cron: str | None, timezone_name: str) -> str | None:
    """Point the nightly-batch deployment's cron schedule at ``cron`` (keeping it if None) in ``timezone_name``."""
    with client_settings(api_url), get_client(sync_client=True) as client:
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
