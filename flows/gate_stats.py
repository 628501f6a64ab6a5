"""The weekly gate report: time to acknowledge and decide per category, role and reviewer, SLA breaches and
reminders, as the Markdown artifact ``gate-stats`` (its own deployment, weekly).
Logic: :mod:`clausegate.ops.gate_stats`."""

from __future__ import annotations

from prefect import flow

from clausegate.ops import gate_stats as ops_gate_stats
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="gate-stats", validate_parameters=True)
async def gate_stats(days: p.StatsDays = 7) -> dict:
    """Publish the stats of the gates opened in the last ``days`` days (artifact ``gate-stats``)."""
    return await run_sync_body(ops_gate_stats.publish, days=days)
