"""Dead letters: a contract-review run that crashed (its process or machine died) is requeued once; a
second crash fails it for good, with an alert.

The chain is Prefect's: flow-run heartbeats + the ``clausegate-zombie-runs`` automation mark a run
whose heartbeat stopped as Crashed (deployments/automations.yaml; ``CLAUSEGATE_ZOMBIE_SECONDS``
sets how long, default 150 s); every Crashed contract-review run triggers the ``dead-letters``
deployment (its trigger in prefect.yaml, plus a backstop schedule), which calls ``handle`` here:

* first crash  → tag ``dead-letter:requeued`` and set the run Scheduled again (same run id, as
  ``prefect flow-run retry`` does; finished steps come from the cache, nothing is paid twice);
* second crash → Failed with ``CG-RUN-DEAD-LETTER`` (the inbox lists it under ``status=failed``
  with that code; ``POST /inbox/tasks/{id}/retry`` or ``prefect flow-run retry`` runs it again
  by hand), tag ``dead-letter:failed``, and a message to the Slack alert channel.

Each step is written to the audit log (``clausegate.audit.run.requeued`` / ``run.dead-lettered``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal
from uuid import UUID

from pydantic import BaseModel

from clausegate import audit

REQUEUED = "dead-letter:requeued"
DEAD = "dead-letter:failed"
CODE = "CG-RUN-DEAD-LETTER"
ACTOR = "dead-letters"

Outcome = Literal["requeued", "dead-lettered", "skipped"]


class Handled(BaseModel):
    flow_run_id: str
    flow_run_name: str = ""
    outcome: Outcome
    reason: str


def run_id_of(value: str) -> str:
    """A flow run id from a bare UUID or an event resource id (``prefect.flow-run.<uuid>``)."""
    return str(UUID(value.rsplit(".", 1)[-1].strip()))


def handle(client, flow_run_id: str) -> Handled:
    """Requeue a crashed run once, or fail it for good (sync Prefect client)."""
    from prefect.client.schemas.objects import StateType
    from prefect.states import Failed, Scheduled

    run = client.read_flow_run(UUID(flow_run_id))
    rid = str(run.id)
    if run.state_type != StateType.CRASHED:
        return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="skipped",
                       reason=f"the run is {run.state_name}, not Crashed (already handled or recovered)")
    crash = (run.state.message or "no message") if run.state else "no message"
    if REQUEUED not in run.tags:
        client.update_flow_run(run.id, tags=[*run.tags, REQUEUED])
        client.set_flow_run_state(run.id, Scheduled(message=f"CG-RUN-REQUEUED: crashed ({crash[:300]}); requeued once "
                                                            "automatically"), force=True)
        audit.record(audit.audit_event("run.requeued", actor=ACTOR, flow_run_id=rid, crash=crash[:500]))
        return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="requeued", reason=crash)
    message = (f"{CODE}: crashed again after one automatic requeue ({crash[:300]}). Next step: see docs/runbook.md "
               f"'worker down'; when the cause is fixed, retry it: POST /inbox/tasks/{rid}/retry or "
               f"`prefect flow-run retry {rid}`")
    client.update_flow_run(run.id, tags=[*run.tags, DEAD])  # tag first: whoever sees Failed sees why
    client.set_flow_run_state(run.id, Failed(message=message), force=True)
    audit.record(audit.audit_event("run.dead-lettered", actor=ACTOR, flow_run_id=rid, crash=crash[:500]))
    return Handled(flow_run_id=rid, flow_run_name=run.name, outcome="dead-lettered", reason=message)


def unhandled_crashed(client, *, flow_name: str = "contract-review", hours: float = 24) -> list[str]:
    """Crashed runs of ``flow_name`` that ended in the last ``hours`` (for the backstop sweep)."""
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterStartTime,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    since = datetime.now(timezone.utc) - timedelta(hours=hours)
    runs = client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CRASHED])),
                                      start_time=FlowRunFilterStartTime(after_=since)), limit=200)
    return [str(r.id) for r in runs]


def alert_text(handled: Handled, run_url: str | None) -> str:
    link = f" <{run_url}|open in Prefect>" if run_url else ""
    return (f":rotating_light: *{CODE}* `{handled.flow_run_name}` ({handled.flow_run_id}) crashed twice and was "
            f"failed for good.{link}\n{handled.reason}")
