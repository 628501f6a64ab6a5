"""One Prefect event per contract a batch reviews as tasks of its run (``clausegate.review.*``).

A contract reviewed inside a batch run (:class:`clausegate.batch.dispatch.TaskDispatcher`) has no flow run
of its own, so the failure-rate alert (:mod:`clausegate.ops.alerts`) and its automation (prefect.yaml,
``failure-alert``) learn about it from this event instead:

- ``clausegate.review.completed`` — the review ended (its ``review_status`` may be ``pending_decision``:
  a person must decide; the alert counts that contract when its decision run ends, not here);
- ``clausegate.review.failed`` — the review failed (``error_code`` says why).

Resource ``clausegate.contract.<contract_id>`` (name: the file name); related resource: the batch flow run
(role ``flow-run``); payload: ``file``, ``contract_id``, ``status``, ``review_status``, ``error_code``,
``detail``, ``playbook``, ``flow_run_id``, ``flow_run_name``, ``seconds``.

Cheap: :func:`prefect.events.emit_event` hands the event to Prefect's events worker, which sends it in the
background with the run's own events; no synchronous API call.  Outside a flow run nothing is emitted
(there is no batch run to relate it to).  A contract-review run never emits one: its final state is
already a flow-run event, so nothing is counted twice.
"""

from __future__ import annotations

import logging

from prefect.events import Event, emit_event
from prefect.runtime import flow_run

from clausegate.batch.plan import ContractOutcome

PREFIX = "clausegate.review."
COMPLETED = PREFIX + "completed"
FAILED = PREFIX + "failed"
RESOURCE_PREFIX = "clausegate.contract."

log = logging.getLogger("clausegate.batch.review_events")


def emit_review_event(row: ContractOutcome, *, contract_id: str, playbook: str = "") -> Event | None:
    """Emit the event for one contract's finished review (``row``: its batch summary row); never raises.

    Returns the event, or None when nothing was emitted (no flow run, or events are off)."""
    run_id = str(flow_run.id or "")
    if not run_id:
        return None
    run_name = flow_run.name or ""
    try:
        return emit_event(
            FAILED if row.status == "failed" else COMPLETED,
            resource={"prefect.resource.id": RESOURCE_PREFIX + contract_id, "prefect.resource.name": row.file},
            related=[{"prefect.resource.id": f"prefect.flow-run.{run_id}", "prefect.resource.role": "flow-run",
                      "prefect.resource.name": run_name}],
            payload={"file": row.file, "contract_id": contract_id, "status": row.status,
                     "review_status": row.review_status, "error_code": row.error_code, "detail": row.detail[:300],
                     "playbook": playbook, "flow_run_id": run_id, "flow_run_name": run_name, "seconds": row.seconds},
        )
    except Exception as exc:  # an event never stops the batch
        log.warning("could not emit the review event of %s: %s", row.file, exc)
        return None
