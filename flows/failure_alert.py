"""The failure-alert check: too many failed contract reviews in the last hour -> Slack alert channel.

Counts contract-review runs and the reviews done inside nightly-batch runs (``clausegate.review.*``
events).  Runs as the ``failure-alert`` deployment, started by Prefect automations on every
Failed/Crashed contract-review run and every ``clausegate.review.failed`` event (the deployment's
``triggers:`` in prefect.yaml) and by a 15-minute backstop
schedule; one check at a time (deployment concurrency limit 1, CANCEL_NEW).  The logic and the
posting (retries on transient Slack errors only) are :mod:`clausegate.ops.alerts`.
"""

from __future__ import annotations

from prefect import flow
from prefect.states import State

from clausegate.ops import alerts
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="failure-alert", validate_parameters=True)
async def failure_alert(
    threshold_pct: p.ThresholdPct = 5.0,
    window_minutes: p.WindowMinutes = 60,
    min_runs: p.MinRuns = 1,
    cooldown_minutes: p.CooldownMinutes = 10,
    slack_block: p.SlackBlock = None,
    flow_name: p.FlowName = "contract-review",
) -> dict | State:
    """Alert when more than ``threshold_pct`` % of the contract reviews (``flow_name`` runs and batch
    reviews) that finished in the last ``window_minutes`` failed.  ``slack_block``: SlackSettings block name (default
    ``$CLAUSEGATE_SLACK_BLOCK`` or ``clausegate``); the message goes to its ``alert_channel``."""
    return await run_sync_body(alerts.check_failure_rate, threshold_pct=threshold_pct, window_minutes=window_minutes,
                               min_runs=min_runs, cooldown_minutes=cooldown_minutes, slack_block=slack_block,
                               flow_name=flow_name)
