"""Slack as a gate channel: the :class:`clausegate.gates.channel.Channel` over the gate's Slack tasks and views.

The message is posted by ``slack_tasks.notify_gate`` (Block Kit from ``slack_view`` and ``slack_findings``);
``update`` re-renders it in place (a per-finding gate's progress, a one-decision gate's decided view without
buttons); reminders are replies in the gate message's thread that mention the people who still have to
answer; an escalation is a message in the escalation channel (a ladder rung mentioning the role's people,
the SLA sweep's or a person's escalation as their Block Kit notices). ``verify`` checks Slack's request
signature (slack-sdk's ``SignatureVerifier``) and returns the user id the signed request names: the only
identity a Slack answer proves.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from slack_sdk.signature import Clock, SignatureVerifier

from clausegate import slack
from clausegate.config import SlackSettings, load_slack_settings, slack_block_name
from clausegate.gates import store
from clausegate.gates.channel import ChannelUndelivered, reaches
from clausegate.gates.listing import WaitingGate, format_delta
from clausegate.gates.model import DecisionInfo, GateRecord, SlackRef, stamp_key
from clausegate.gates.rounds import current_progress
from clausegate.gates.slack_findings import findings_message, reminder_text
from clausegate.gates.slack_tasks import (
    notify_gate,
    notify_person_escalation,
    post_escalation,
    post_reminder,
    stamp_decision,
)

UNDELIVERED, NOT_UPDATED = "CG-SLACK-UNDELIVERED", "CG-SLACK-NOT-UPDATED"


@task(name="post-escalation-rung", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def post_escalation_rung(text: str, settings) -> SlackRef:
    channel, ts = slack.post_message(settings, settings.escalation_channel or settings.channel, text, None,
                                     unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)


@task(name="update-slack-gate", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def update_findings_message(record: GateRecord, settings) -> bool:
    """``chat.update`` the gate message to its current state (answers, acks, assignments)."""
    refresh_message(record, settings)
    return True


def refresh_message(record: GateRecord, settings) -> None:
    """Re-render the per-finding gate message from the run's records (raises SlackError); nothing when never posted."""
    with get_client(sync_client=True) as client:
        ref = store.read_slack_ref(client, record.flow_run_id, record.key)
        if ref is None or not ref.ok:
            return
        prog, extras = current_progress(client, record)
    text, blocks = findings_message(record, prog, extras, settings.run_url(record.flow_run_id))
    slack.update_message(settings, ref.channel, ref.ts, text, blocks)


class _Clock(Clock):
    def __init__(self, now) -> None:
        self._now = now

    def now(self) -> float:
        return self._now()


class SlackChannel:
    """The Slack implementation of :class:`clausegate.gates.channel.Channel`."""

    name = "slack"  # the Via of its answers
    block = SlackSettings
    routers = ("clausegate.gateway.slack", "clausegate.gateway.slack_events")  # the gateway modules serving it
    undelivered, not_updated = UNDELIVERED, NOT_UPDATED
    ref = SlackRef  # what ``post`` returns, stored on the run once (clausegate.gates.channels)
    posts_when_absent = True  # no block: the gate records why the message was not posted (a review notice)

    def __init__(self, settings, clock=time.time) -> None:
        self.settings = settings
        self.clock = clock

    @property
    def legacy_deciders(self):
        """Who decides, from the block's older fields when no Deciders block is saved."""
        return self.settings

    @property
    def alert_settings(self):
        """The block, when it names an alert channel (``clausegate.ops.alerts.post_alert``)."""
        return self.settings if getattr(self.settings, "alert_channel", None) else None

    @classmethod
    def load(cls, block_name: str | None = None) -> SlackChannel | None:
        settings = load_slack_settings(block_name)
        return cls(settings) if settings is not None else None

    @staticmethod
    def absent_ref() -> SlackRef:
        return SlackRef(ok=False, error=f"no SlackSettings block '{slack_block_name()}'")

    def post(self, record: GateRecord) -> SlackRef:
        state = notify_gate(record, self.settings, return_state=True)
        if state.is_completed():
            return state.result()
        return SlackRef(ok=False, error=str(state.result(raise_on_failure=False))[:500])

    def update(self, record: GateRecord) -> str | None:
        """Per-finding: the progress; one decision, once decided: the decided view (stamped once). Error or None."""
        if record.per_finding:
            state = update_findings_message(record, self.settings, return_state=True)
            return None if state.is_completed() else str(state.message)
        with get_client(sync_client=True) as client:
            ref = store.read_slack_ref(client, record.flow_run_id, record.key)
            info = store.read_decision(client, record.flow_run_id, record.key)
            stamped = store.is_stamped(client, record.flow_run_id, record.key)
        if ref is None or not ref.ok or info is None or stamped:
            return None
        state = stamp_decision(record, ref, info, self.settings, return_state=True)
        if not state.is_completed():
            return str(state.message)
        with get_client(sync_client=True) as client:
            store.write_once(client, record.flow_run_id, stamp_key(record.key), {"by": "flow"})
        return None

    def remind(self, gate: WaitingGate, people: list[str], percent: int) -> bool:
        if gate.slack is None or not gate.slack.ok:
            return False
        record, left, ids = gate.record, format_delta(gate.sla_left), reaches(people, "slack")
        if record.per_finding:
            with get_client(sync_client=True) as client:
                prog, _ = current_progress(client, record)
            text = reminder_text(record, prog, percent, ids, left)
        else:
            who = " ".join(f"<@{p}>" for p in ids) or "Reviewers"
            text = (f":alarm_clock: {who}: {percent}% of the SLA for *{record.filename}* has passed ({left} left); "
                    "it escalates to legal at 100%.")
        return post_reminder(record, gate.slack, text, self.settings, return_state=True).is_completed()

    def escalate(self, record: GateRecord, people: list[str], note: str, decided: DecisionInfo | None = None) -> bool:
        """A ladder rung (``decided`` None), the SLA's escalation or a person's; raises ChannelUndelivered."""
        if decided is None:
            who = " ".join(f"<@{p}>" for p in reaches(people, "slack")) or "Escalation"
            text = (f":rotating_light: {who}: *{record.filename}* is late ({note}); it still waits for a decision: "
                    f"{self.settings.run_url(record.flow_run_id)}")
            state = post_escalation_rung(text, self.settings, return_state=True)
        elif decided.via == "sla":
            state = post_escalation(record, note, self.settings, return_state=True)
        else:
            state = notify_person_escalation(record, decided, self.settings, return_state=True)
        if not state.is_completed():
            raise ChannelUndelivered(f"the escalation channel was not told: "
                                     f"{str(state.result(raise_on_failure=False))[:300]}")
        return True

    def verify(self, evidence) -> str | None:
        """``evidence``: (raw body, X-Slack-Request-Timestamp, X-Slack-Signature) of a request to the gateway.

        The user id the signed request names; ``""`` for a signed request that names nobody (an Events API URL
        check); None when Slack did not sign it (or not within the 5-minute window)."""
        body, timestamp, signature = evidence
        verifier = SignatureVerifier(self.settings.signing_secret.get_secret_value(), clock=_Clock(self.clock))
        try:
            if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
                return None
        except ValueError:
            return None
        text = body if isinstance(body, str) else body.decode("utf-8")
        if text.lstrip().startswith("{"):  # the Events API sends JSON
            try:
                event = json.loads(text).get("event") or {}
            except (json.JSONDecodeError, AttributeError):
                return ""
            return str(event.get("user") or "") if isinstance(event, dict) else ""
        form = parse_qs(text)
        if "payload" in form:
            try:
                return str((json.loads(form["payload"][0]).get("user") or {}).get("id") or "")
            except (json.JSONDecodeError, AttributeError):
                return ""
        return (form.get("user_id") or [""])[0]
