"""Slack as a gate channel: the :class:`clausegate.gates.channel.Channel` over the gate's Slack tasks and views.

The message and its updates are ``slack_tasks`` / ``rounds`` (Block Kit from ``slack_view`` and
``slack_findings``); reminders are replies in the gate message's thread that mention the people who still
have to answer; an escalation rung is a message in the escalation channel mentioning the role's people.
``verify`` checks Slack's request signature (slack-sdk's ``SignatureVerifier``) and returns the user id
the signed request names: the only identity a Slack answer proves.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from slack_sdk.signature import SignatureVerifier

from clausegate import slack
from clausegate.gates.channel import reaches
from clausegate.gates.listing import WaitingGate, format_delta
from clausegate.gates.model import GateRecord, SlackRef
from clausegate.gates.rounds import current_progress, refresh_message
from clausegate.gates.slack_findings import reminder_text
from clausegate.gates.slack_tasks import notify_gate, post_reminder


@task(name="post-escalation-rung", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def post_escalation_rung(text: str, settings) -> SlackRef:
    channel, ts = slack.post_message(settings, settings.escalation_channel or settings.channel, text, None,
                                     unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)


class SlackChannel:
    """The Slack implementation of :class:`clausegate.gates.channel.Channel`."""

    name = "slack"

    def __init__(self, settings) -> None:
        self.settings = settings

    def post(self, record: GateRecord) -> SlackRef:
        state = notify_gate(record, self.settings, return_state=True)
        if state.is_completed():
            return state.result()
        return SlackRef(ok=False, error=str(state.result(raise_on_failure=False))[:500])

    def update(self, record: GateRecord) -> None:
        refresh_message(record, self.settings)

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

    def escalate(self, gate: WaitingGate, people: list[str], note: str) -> bool:
        who = " ".join(f"<@{p}>" for p in reaches(people, "slack")) or "Escalation"
        record = gate.record
        text = (f":rotating_light: {who}: *{record.filename}* is late ({note}); it still waits for a decision: "
                f"{self.settings.run_url(record.flow_run_id)}")
        return post_escalation_rung(text, self.settings, return_state=True).is_completed()

    def verify(self, evidence) -> str | None:
        """``evidence``: (raw body, X-Slack-Request-Timestamp, X-Slack-Signature) of a request to the gateway."""
        body, timestamp, signature = evidence
        verifier = SignatureVerifier(self.settings.signing_secret.get_secret_value())
        if not verifier.is_valid(body=body, timestamp=timestamp, signature=signature):
            return None
        form = parse_qs(body if isinstance(body, str) else body.decode("utf-8"))
        if "payload" in form:
            return (json.loads(form["payload"][0]).get("user") or {}).get("id")
        return (form.get("user_id") or [None])[0]

