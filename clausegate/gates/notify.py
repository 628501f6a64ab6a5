"""Talking to Slack: one call wrapper that classifies errors, and the Prefect tasks that post.

Slack is a *view* of the gate: a failed post never stops the gate from suspending, it is recorded
(``SlackRef(ok=False, error=...)``) and reported in the review's notices. Escalation notices (the SLA
sweeper's ``post_escalation``, a person's ``notify_person_escalation``) are tasks with the same
retries; when they finally fail the sweeper run fails (``CG-GATE-ESCALATION-UNDELIVERED``) and a
review carries that notice. Retries: the Prefect tasks
here own them (``retries`` + ``retry_condition_fn``: transient errors only); the WebClient has no
retry handlers of its own (``SlackSettings.get_client``). ``ratelimited`` answers are honoured by
waiting ``Retry-After`` (capped) before the next attempt.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from clausegate.errors import ClauseGateError
from clausegate.gates.model import DecisionInfo, GateRecord, SlackRef
from clausegate.gates.slack_view import decided_message, escalation_message, gate_message, person_escalation_message

# Slack error codes that trying again can fix; everything else (channel_not_found, not_in_channel,
# invalid_auth, invalid_blocks, ...) is a configuration problem and fails at once.
TRANSIENT_SLACK_ERRORS = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout",
                          "team_added_to_org"}
MAX_RETRY_AFTER = 30.0
RETRY_DELAYS = [1.0, 2.0, 4.0]


class SlackError(ClauseGateError):
    """Slack refused or could not take a request (``transient`` says whether to retry)."""

    code = "CG-SLACK"

    def __init__(self, message: str, *, hint: str = "", code: str | None = None, transient: bool = False,
                 slack_error: str | None = None) -> None:
        self.transient = transient
        self.slack_error = slack_error
        super().__init__(message, hint=hint, code=code)

    def __reduce__(self):
        return (_rebuild_slack_error, (self.message, self.hint, self.code, self.transient, self.slack_error))


def _rebuild_slack_error(message, hint, code, transient, slack_error):
    return SlackError(message, hint=hint, code=code, transient=transient, slack_error=slack_error)


def call_slack(method: Callable[..., Any], *, sleep_on_ratelimit: bool = True, **kwargs) -> Any:
    """Call a WebClient method; raise ``SlackError`` (transient or permanent) on any failure."""
    from slack_sdk.errors import SlackApiError

    name = getattr(method, "__name__", "slack call")
    try:
        return method(**kwargs)
    except SlackApiError as exc:
        response = exc.response
        status = getattr(response, "status_code", None)
        data = getattr(response, "data", None)
        error = data.get("error") if isinstance(data, dict) else None
        if status == 429 or error == "ratelimited":
            retry_after = 1.0
            try:
                retry_after = float((response.headers or {}).get("Retry-After") or (response.headers or {}).get("retry-after") or 1)
            except (TypeError, ValueError):
                pass
            if sleep_on_ratelimit:
                time.sleep(min(retry_after, MAX_RETRY_AFTER))
            raise SlackError(f"Slack rate-limited {name} (Retry-After {retry_after:g} s).", code="CG-SLACK-RATELIMITED",
                             transient=True, slack_error="ratelimited", hint="the task retries after Retry-After") from None
        if status is not None and status >= 500:
            raise SlackError(f"Slack answered HTTP {status} to {name}.", code="CG-SLACK-UNAVAILABLE", transient=True,
                             slack_error=f"http_{status}", hint="Slack is having trouble; the task retries") from None
        if error in TRANSIENT_SLACK_ERRORS:
            raise SlackError(f"Slack error '{error}' on {name}.", code="CG-SLACK-UNAVAILABLE", transient=True,
                             slack_error=error, hint="the task retries") from None
        raise SlackError(f"Slack rejected {name}: '{error or status}'.", code="CG-SLACK-REJECTED", transient=False,
                         slack_error=error or f"http_{status}",
                         hint="check the SlackSettings block: bot token, channel id, and that the app is in the "
                              "channel (see docs/slack.md)") from None
    except (OSError, TimeoutError) as exc:  # URLError, connection refused, socket timeout
        raise SlackError(f"Slack is unreachable on {name}: {exc}.", code="CG-SLACK-UNREACHABLE", transient=True,
                         slack_error="unreachable", hint="check the network / api_base_url; the task retries") from None
    except ValueError as exc:  # a non-JSON answer
        raise SlackError(f"Slack answered {name} with something that is not JSON: {exc}.", code="CG-SLACK-UNAVAILABLE",
                         transient=True, slack_error="bad_response") from None


def retry_transient_slack(task, task_run, state) -> bool:
    """``retry_condition_fn``: retry only ``SlackError``s marked transient."""
    try:
        state.result()
    except Exception as exc:  # noqa: BLE001 - the task's own exception
        return bool(getattr(exc, "transient", False))
    return False


def _notify_cache_key(context, parameters) -> str:
    """One post per gate per flow run: a resumed run (same run id, same gate key) gets the cached ref."""
    return f"clausegate-notify-{context.task_run.flow_run_id}-{parameters['record'].key}"


@task(name="notify-slack", retries=len(RETRY_DELAYS), retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=retry_transient_slack, cache_key_fn=_notify_cache_key, persist_result=True)
def notify_gate(record: GateRecord, settings) -> SlackRef:
    """Post the gate's question to the gate channel; return where it is."""
    text, blocks = gate_message(record, settings.run_url(record.flow_run_id))
    answer = call_slack(settings.get_client().chat_postMessage, channel=settings.channel, text=text, blocks=blocks,
                        unfurl_links=False)
    return SlackRef(ok=True, channel=answer.get("channel") or settings.channel, ts=answer.get("ts"))


def update_message(settings, record: GateRecord, ref: SlackRef, decision: DecisionInfo) -> None:
    """``chat.update`` the gate message to the decided view (buttons removed). Raises SlackError."""
    text, blocks = decided_message(record, decision, settings.run_url(record.flow_run_id))
    call_slack(settings.get_client().chat_update, channel=ref.channel, ts=ref.ts, text=text, blocks=blocks)


@task(name="stamp-slack-decision", retries=len(RETRY_DELAYS), retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=retry_transient_slack, cache_policy=NO_CACHE)
def stamp_decision(record: GateRecord, ref: SlackRef, decision: DecisionInfo, settings) -> bool:
    update_message(settings, record, ref, decision)
    return True


@task(name="post-escalation", retries=len(RETRY_DELAYS), retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=retry_transient_slack, cache_policy=NO_CACHE)
def post_escalation(record: GateRecord, outcome_text: str, settings) -> SlackRef:
    text, blocks = escalation_message(record, settings.run_url(record.flow_run_id), outcome_text)
    channel = settings.escalation_channel or settings.channel
    answer = call_slack(settings.get_client().chat_postMessage, channel=channel, text=text, blocks=blocks,
                        unfurl_links=False)
    return SlackRef(ok=True, channel=answer.get("channel") or channel, ts=answer.get("ts"))


ESCALATION_UNDELIVERED = "CG-GATE-ESCALATION-UNDELIVERED"


class EscalationUndelivered(ClauseGateError):
    """An escalation was applied (the review is ``needs_legal``) but nobody in the escalation channel was told."""

    code = ESCALATION_UNDELIVERED


def _person_escalation_cache_key(context, parameters) -> str:
    """One notice per gate per flow run: a flow that runs its post-resume code again does not post twice."""
    return f"clausegate-escalation-{context.task_run.flow_run_id}-{parameters['record'].key}"


@task(name="post-person-escalation", retries=len(RETRY_DELAYS), retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=retry_transient_slack, cache_key_fn=_person_escalation_cache_key, persist_result=True)
def notify_person_escalation(record: GateRecord, decision: DecisionInfo, settings) -> SlackRef:
    """Tell the escalation channel that a person escalated the gate (Slack, CLI or the Prefect UI)."""
    text, blocks = person_escalation_message(record, decision, settings.run_url(record.flow_run_id))
    channel = settings.escalation_channel or settings.channel
    answer = call_slack(settings.get_client().chat_postMessage, channel=channel, text=text, blocks=blocks,
                        unfurl_links=False)
    return SlackRef(ok=True, channel=answer.get("channel") or channel, ts=answer.get("ts"))


@task(name="post-alert", retries=len(RETRY_DELAYS), retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=retry_transient_slack, cache_policy=NO_CACHE)
def post_alert(text: str, settings) -> bool:
    if not settings.alert_channel:
        return False
    call_slack(settings.get_client().chat_postMessage, channel=settings.alert_channel, text=text)
    return True


def with_retries(fn: Callable[[], Any], delays: list[float] = RETRY_DELAYS[:2]) -> Any:
    """For callers outside Prefect tasks (gateway, CLI): transient SlackErrors retried ``len(delays)`` times."""
    for delay in [*delays, None]:
        try:
            return fn()
        except SlackError as exc:
            if not exc.transient or delay is None:
                raise
            time.sleep(delay)
