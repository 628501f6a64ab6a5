"""The SLA sweeper: escalate gates nobody decided within their SLA (its own deployment, on a schedule).

Past a gate's SLA (from the playbook) the run is resumed with decision ``escalate`` (reviewer and via
``sla``): the review ends ``needs_legal`` and the escalation channel hears about it. The run ends
Failed (``CG-GATE-ESCALATION-UNDELIVERED``) when an escalation notice could not be delivered.
Logic and timing (SLA vs Prefect's suspend timeout): :mod:`clausegate.ops.sla`.
"""

from __future__ import annotations

import asyncio

from prefect import flow
from prefect.states import State

from clausegate.ops import sla
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="sla-sweeper", log_prints=False)
async def sla_sweeper(dry_run: p.DryRun = False) -> list[dict] | State:
    """Escalate every waiting gate past its SLA; return what was done (one entry per overdue gate)."""
    return await run_sync_body(sla.sweep, dry_run)


if __name__ == "__main__":
    asyncio.run(sla_sweeper())
