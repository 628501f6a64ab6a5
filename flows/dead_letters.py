"""The dead-letter handler: requeue a crashed contract-review run once, then fail it with an alert.

Runs as the ``dead-letters`` deployment: triggered by every Crashed contract-review run (prefect.yaml
``triggers:``; the run id comes from the event), and every 2 minutes (its schedule, so also as soon as a worker is
back after a restart) as the stuck-run sweep: runs left Pending, Running without a heartbeat, Late behind a stale
process, Cancelled in the middle of a requeue, or Crashed with the trigger missed (:mod:`clausegate.ops.stuck_runs`).
Logic: :mod:`clausegate.ops.dead_letters`. Before a requeue the crashed attempt's process must be gone: when its
worker is alive and still runs it (a hung process), the run is set Cancelling so that worker kills
it; this run waits for that (up to ``CLAUSEGATE_REQUEUE_STOP_SECONDS``, default 120 s). A gate that
was marked crashed while it waited is put back (``restored``).
"""

from __future__ import annotations

from prefect import flow

from clausegate.ops import dead_letters, stuck_runs
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="dead-letters", validate_parameters=True)
async def handle_dead_letters(flow_run_id: p.CrashedRunId = None, slack_block: p.SlackBlock = None) -> list[dict]:
    """``flow_run_id``: the crashed run (a UUID or ``prefect.flow-run.<uuid>``); none = the stuck-run sweep."""
    if flow_run_id:
        return await run_sync_body(dead_letters.handle_crashed_runs, flow_run_id, slack_block)
    return await run_sync_body(stuck_runs.recover_stuck_runs, slack_block)
