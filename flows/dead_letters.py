"""The dead-letter handler: requeue a crashed contract-review run once, then fail it with an alert.

Runs as the ``dead-letters`` deployment: triggered by every Crashed contract-review run (prefect.yaml
``triggers:``; the run id comes from the event) and swept every 10 minutes as a backstop. Logic:
:mod:`clausegate.ops.dead_letters`. Before a requeue the crashed attempt's process must be gone: when its
worker is alive and still runs it (a hung process), the run is set Cancelling so that worker kills
it; this run waits for that (up to ``CLAUSEGATE_REQUEUE_STOP_SECONDS``, default 120 s). A gate that
was marked crashed while it waited is put back (``restored``).
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.client.orchestration import get_client

from clausegate.ops import dead_letters


@flow(name="dead-letters", validate_parameters=True)
def handle_dead_letters(flow_run_id: str | None = None, slack_block: str | None = None) -> list[dict]:
    """``flow_run_id``: the crashed run (a UUID or ``prefect.flow-run.<uuid>``); none = sweep the last 24 h."""
    from prefect.settings import PREFECT_UI_URL

    from clausegate.gates import load_slack_settings
    from clausegate.gates.notify import SlackError, post_alert

    logger = get_run_logger()
    with get_client(sync_client=True) as client:
        ids = [dead_letters.run_id_of(flow_run_id)] if flow_run_id else dead_letters.unhandled_crashed(client)
        results = [dead_letters.handle(client, rid) for rid in ids]
    for handled in results:
        logger.info("%s %s: %s", handled.outcome, handled.flow_run_id, handled.reason)
        if handled.outcome != "dead-lettered":
            continue
        settings = load_slack_settings(slack_block)
        ui = PREFECT_UI_URL.value()
        text = dead_letters.alert_text(handled, f"{ui}/runs/flow-run/{handled.flow_run_id}" if ui else None)
        try:
            if settings is None or not post_alert(text, settings):
                logger.warning("CG-ALERT-NO-CHANNEL: no SlackSettings block / alert channel; the dead letter %s is "
                               "only in the logs and the audit log. Next step: set alert_channel (docs/slack.md)",
                               handled.flow_run_id)
        except SlackError as exc:
            logger.error("%s posting the dead-letter alert for %s: %s. Next step: docs/runbook.md, Slack", exc.code,
                         handled.flow_run_id, exc)
    return [h.model_dump() for h in results]
