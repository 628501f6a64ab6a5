"""Remind a contract's owner of its renewal notice deadline (one scheduled run per contract and deadline, created
by the review: :mod:`clausegate.pipeline.deadlines`)."""

from __future__ import annotations

import asyncio

from prefect import flow

from clausegate.pipeline import deadlines
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="deadline-reminder", log_prints=False)
async def deadline_reminder(contract_id: p.ReminderContract, filename: p.ReminderFile, deadline: p.ReminderDeadline,
                            term_end: p.ReminderTermEnd = None, owner: p.ReminderOwner = None,
                            explanation: p.ReminderExplanation = "") -> dict:
    """Post the reminder of ``deadline`` (ISO date) for the contract to Slack."""
    return await run_sync_body(deadlines.remind, contract_id, filename, deadline, term_end, owner, explanation)


if __name__ == "__main__":
    asyncio.run(deadline_reminder("0" * 64, "contract.pdf", "2030-01-01"))
