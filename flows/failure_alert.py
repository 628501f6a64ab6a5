"""The failure-alert check: too many failed contract-review runs in the last hour -> Slack alert channel.

Runs as the ``failure-alert`` deployment, started by a Prefect automation on every Failed/Crashed
contract-review run (the deployment's ``triggers:`` in prefect.yaml) and by a 15-minute backstop
schedule; one check at a time (deployment concurrency limit 1, CANCEL_NEW).  The logic is in
:mod:`clausegate.ops.alerts`; posting reuses the gates' Slack task (retries on transient errors only).
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Failed

from clausegate.ops import alerts


@flow(name="failure-alert", validate_parameters=True)
def failure_alert(
    threshold_pct: float = 5.0,
    window_minutes: float = 60,
    min_runs: int = 1,
    cooldown_minutes: float = 10,
    slack_block: str | None = None,
    flow_name: str = "contract-review",
) -> dict:
    """Alert when more than ``threshold_pct`` % of the ``flow_name`` runs that finished in the last
    ``window_minutes`` failed.  ``slack_block``: SlackSettings block name (default
    ``$CLAUSEGATE_SLACK_BLOCK`` or ``clausegate``); the message goes to its ``alert_channel``."""
    from clausegate.gates import load_slack_settings
    from clausegate.gates.notify import SlackError, post_alert

    logger = get_run_logger()
    runs = alerts.read_runs(window_minutes, flow_name)
    previous = alerts.load_state()
    check = alerts.evaluate(runs, window_minutes=window_minutes, threshold_pct=threshold_pct, min_runs=min_runs,
                            state=previous, cooldown_minutes=cooldown_minutes)
    logger.info("%s: %s", "ALERT" if check.should_alert else "no alert", check.reason)
    if not check.should_alert:
        return alerts.summary(check)

    settings = load_slack_settings(slack_block)
    text = alerts.render_alert(check, settings.run_url if settings is not None else (lambda run_id: ""))
    create_markdown_artifact(key="failure-alert", markdown=text.replace(":rotating_light: ", ""),
                             description="contract-review failure-rate alert")
    if settings is None or not settings.alert_channel:
        logger.warning("[%s] %s — not sent: %s. Next step: set `alert_channel` in the SlackSettings block.",
                       alerts.NO_CHANNEL, check.reason,
                       "no SlackSettings block" if settings is None else "the block has no alert_channel")
        alerts.save_state(check, previous)
        return {**alerts.summary(check), "delivered": False, "code": alerts.NO_CHANNEL}
    state = post_alert(text, settings, return_state=True)
    if not state.is_completed():
        try:
            state.result()
        except SlackError as error:
            logger.error("alert not delivered: %s", error)
            return Failed(message=f"{error.code}: alert not delivered to {settings.alert_channel}: {error.message}")
        except Exception as error:  # noqa: BLE001
            return Failed(message=f"alert not delivered: {error}")
    alerts.save_state(check, previous)
    logger.info("alert posted to %s (%d failing runs, %d new)", settings.alert_channel, check.failed,
                len(check.new_failing))
    return {**alerts.summary(check), "delivered": True}
