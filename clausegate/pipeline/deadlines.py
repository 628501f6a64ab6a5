"""Renewal-deadline reminders, on Prefect's scheduler: a reviewed contract with a notice deadline ahead gets one
scheduled run of the ``deadline-reminder`` deployment (``flows/deadline_reminder.py``) at
``CLAUSEGATE_REMINDER_LEAD_DAYS`` before the deadline (at 09:00 UTC; at once when that moment has passed but the
deadline has not).  The run sits *Scheduled* on the server (visible, movable and cancellable in the UI) until a
worker starts it; it then posts the reminder to the Slack block's channel, naming the contract's owner (the
inbox sender).  One run per contract, deadline and owner (the run's idempotency key), so a re-review or a
retried run never schedules it twice.  No scheduler of our own: Prefect holds the date.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from prefect import get_run_logger, task
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run

from clausegate.config import load_slack_settings, settings
from clausegate.review.schemas import Review
from clausegate.slack import SLACK_RETRY_POLICY, post_message

REMINDER_DEPLOYMENT = "deadline-reminder/deadline-reminder"
REMIND_AT = time(9, 0, tzinfo=UTC)


SENDER_TAG = "inbox-sender:"  # the tag the inbox gives a run it submits (clausegate.inbox.status.tag, above us)


def owner_of(tags: list[str]) -> str | None:
    """The contract's owner: the inbox sender the run is tagged with (``inbox-sender:<name>``), if any."""
    return next((t[len(SENDER_TAG):] for t in tags if t.startswith(SENDER_TAG)), None)


def reminder_time(deadline: date, lead_days: float, now: datetime) -> datetime | None:
    """When to remind of ``deadline``: ``lead_days`` before it at 09:00 UTC, or ``now`` if that has passed; None
    when the deadline itself has passed."""
    if deadline < now.date():
        return None
    at = datetime.combine(deadline, REMIND_AT) - timedelta(days=lead_days)
    return max(at, now)


def schedule_reminder(review: Review, *, now: datetime | None = None) -> str | None:
    """Schedule the reminder run of ``review``'s notice deadline; its id, or None (no deadline ahead, or the
    ``deadline-reminder`` deployment is not deployed: a one-off ``clausegate review``)."""
    logger = get_run_logger()
    renewal = review.contract_terms.renewal if review.contract_terms else None
    if renewal is None or not renewal.notice_deadline:
        return None
    now = now or datetime.now(UTC)
    deadline = date.fromisoformat(renewal.notice_deadline)
    when = reminder_time(deadline, settings().reminder_lead_days, now)
    if when is None:
        return None
    owner = owner_of(list(flow_run.tags or []))
    parameters = {"contract_id": review.contract_id, "filename": review.filename, "deadline": deadline.isoformat(),
                  "term_end": renewal.term_end, "owner": owner, "explanation": renewal.explanation}
    try:
        run = run_deployment(REMINDER_DEPLOYMENT, parameters=parameters, scheduled_time=when, timeout=0,
                             as_subflow=False, tags=["clausegate", "deadline-reminder"],
                             idempotency_key=f"deadline-reminder:{review.contract_id}:{deadline}:{owner or '-'}")
    except ObjectNotFound:
        logger.info("no '%s' deployment on this server: the notice deadline %s is in the report and its .ics, "
                    "but no reminder is scheduled", REMINDER_DEPLOYMENT, deadline)
        return None
    logger.info("reminder of the notice deadline %s scheduled for %s (run %s)", deadline, when.isoformat(), run.id)
    return str(run.id)


def reminder_text(filename: str, deadline: str, term_end: str | None, owner: str | None, explanation: str) -> str:
    who = f" ({owner})" if owner else ""
    days = (date.fromisoformat(deadline) - datetime.now(UTC).date()).days
    due = f"in {days} days" if days > 0 else "today" if days == 0 else f"{-days} days ago"
    return (f":calendar: Renewal notice deadline for *{filename}*{who}: *{deadline}* ({due}). "
            f"Give notice by then or the contract renews"
            + (f" past {term_end}" if term_end else "") + f". {explanation}")


@task(name="post-deadline-reminder", **SLACK_RETRY_POLICY)
def post_reminder(text: str) -> dict:
    """Post the reminder to the Slack block's channel (retried like every Slack call)."""
    slack = load_slack_settings()
    if slack is None:
        get_run_logger().warning("no Slack block: the reminder was not posted: %s", text)
        return {"posted": False, "text": text}
    channel, ts = post_message(slack, slack.channel, text,
                               blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}])
    return {"posted": True, "channel": channel, "ts": ts}


def remind(contract_id: str, filename: str, deadline: str, term_end: str | None = None, owner: str | None = None,
           explanation: str = "") -> dict:
    """The reminder run's body: tell the owner the notice deadline is near."""
    result = post_reminder(reminder_text(filename, deadline, term_end, owner, explanation))
    get_run_logger().info("contract %s: reminder of %s %s", contract_id[:12], deadline,
                          "posted" if result.get("posted") else "not posted (no Slack block)")
    return result
