"""The gate's Slack posts: Prefect tasks that post or update a gate's views (``slack_view``) via ``clausegate.slack``.

Slack is a *view* of the gate: a failed post never stops the gate from suspending, it is recorded
(``SlackRef(ok=False, error=...)``) and reported in the review's notices. Escalation notices (the SLA
sweep's ``post_escalation``, a person's ``notify_person_escalation``) are tasks with the same
retries; when they finally fail ``SlackChannel.escalate`` raises ``ChannelUndelivered``: the sweeper
run fails and a review carries that notice. Every task here retries transient Slack errors only
(``clausegate.slack.SLACK_RETRY_POLICY``).
"""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from clausegate import slack
from clausegate.gates.findings import progress
from clausegate.gates.model import DecisionInfo, GateRecord, SlackRef
from clausegate.gates.slack_findings import findings_message
from clausegate.gates.slack_view import decided_message, escalation_message, gate_message, person_escalation_message
from clausegate.gates.store import GateExtras


def _notify_cache_key(context, parameters) -> str:
    """One post per gate per flow run: a resumed run (same run id, same gate key) gets the cached ref."""
    return f"clausegate-notify-{context.task_run.flow_run_id}-{parameters['record'].key}"


@task(name="notify-slack", **slack.SLACK_RETRY_POLICY, cache_key_fn=_notify_cache_key, persist_result=True)
def notify_gate(record: GateRecord, settings) -> SlackRef:
    """Post the gate's question to the gate channel; return where it is."""
    if record.per_finding:  # a decision per finding: its own view (clausegate.gates.slack_findings)
        url = settings.run_url(record.flow_run_id)
        text, blocks = findings_message(record, progress(record, []), GateExtras(), url)
    else:
        text, blocks = gate_message(record, settings.run_url(record.flow_run_id))
    channel, ts = slack.post_message(settings, settings.channel, text, blocks, unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)


def update_gate_message(settings, record: GateRecord, ref: SlackRef, decision: DecisionInfo) -> None:
    """``chat.update`` the gate message to the decided view (buttons removed). Raises SlackError."""
    text, blocks = decided_message(record, decision, settings.run_url(record.flow_run_id))
    slack.update_message(settings, ref.channel, ref.ts, text, blocks)


@task(name="stamp-slack-decision", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def stamp_decision(record: GateRecord, ref: SlackRef, decision: DecisionInfo, settings) -> bool:
    update_gate_message(settings, record, ref, decision)
    return True


@task(name="post-escalation", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def post_escalation(record: GateRecord, outcome_text: str, settings) -> SlackRef:
    """Tell the escalation channel that the SLA sweep escalated the gate."""
    text, blocks = escalation_message(record, settings.run_url(record.flow_run_id), outcome_text)
    channel, ts = slack.post_message(settings, settings.escalation_channel or settings.channel, text, blocks,
                                     unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)


def _person_escalation_cache_key(context, parameters) -> str:
    """One notice per gate per flow run: a flow that runs its post-resume code again does not post twice."""
    return f"clausegate-escalation-{context.task_run.flow_run_id}-{parameters['record'].key}"


@task(name="post-person-escalation", **slack.SLACK_RETRY_POLICY, cache_key_fn=_person_escalation_cache_key,
      persist_result=True)
def notify_person_escalation(record: GateRecord, decision: DecisionInfo, settings) -> SlackRef:
    """Tell the escalation channel that a person escalated the gate (Slack, CLI or the Prefect UI)."""
    text, blocks = person_escalation_message(record, decision, settings.run_url(record.flow_run_id))
    channel, ts = slack.post_message(settings, settings.escalation_channel or settings.channel, text, blocks,
                                     unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)


@task(name="post-reminder", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def post_reminder(record: GateRecord, ref: SlackRef, text: str, settings) -> SlackRef:
    """A reminder as a reply in the gate message's thread (mentions notify the people named)."""
    channel, ts = slack.post_message(settings, ref.channel, text, None, thread_ts=ref.ts, unfurl_links=False)
    return SlackRef(ok=True, channel=channel, ts=ts)
