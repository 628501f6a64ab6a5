"""ClauseGate's one Slack client: every call, the error classification and the retry policy.

Gates (``clausegate.gates.slack_tasks``), alerts (``clausegate.ops.alerts``), dead letters and the SLA
sweep post through here; the gateway's ephemeral answers too. What a message *says* lives with its
feature (the gate's Block Kit views are ``clausegate.gates.slack_view``).

Retries: one layer owns them (stacked retries multiply requests). The Prefect tasks that post use
:data:`SLACK_RETRY_POLICY` (``retries`` + ``retry_condition_fn``: transient errors only); the WebClient
has no retry handlers of its own (``SlackSettings.get_client``); callers outside Prefect tasks (gateway,
CLI) use :func:`with_retries`. ``ratelimited`` answers are honoured by waiting ``Retry-After`` (capped)
before the next attempt. A failure is a :class:`SlackError` with a ``CG-SLACK-*`` code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError

from clausegate.errors import ClauseGateError

if TYPE_CHECKING:
    from clausegate.config import SlackSettings

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
                headers = response.headers or {}
                retry_after = float(headers.get("Retry-After") or headers.get("retry-after") or 1)
            except (TypeError, ValueError):
                pass
            if sleep_on_ratelimit:
                time.sleep(min(retry_after, MAX_RETRY_AFTER))
            raise SlackError(f"Slack rate-limited {name} (Retry-After {retry_after:g} s).", code="CG-SLACK-RATELIMITED",
                             transient=True, slack_error="ratelimited",
                             hint="the task retries after Retry-After") from None
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
    except Exception as exc:  # the task's own exception
        return bool(getattr(exc, "transient", False))
    return False


SLACK_RETRY_POLICY: dict[str, Any] = {
    "retries": len(RETRY_DELAYS),
    "retry_delay_seconds": RETRY_DELAYS,
    "retry_condition_fn": retry_transient_slack,
}
"""Options for every Prefect task that talks to Slack: ``@task(name=..., **SLACK_RETRY_POLICY, ...)``."""


def post_message(settings: SlackSettings, channel: str, text: str, blocks: list | None = None,
                 **options: Any) -> tuple[str, str | None]:
    """``chat.postMessage`` to ``channel``; returns (channel id, ts) of the message. Raises SlackError."""
    answer = call_slack(settings.get_client().chat_postMessage, channel=channel, text=text, blocks=blocks, **options)
    return answer.get("channel") or channel, answer.get("ts")


def update_message(settings: SlackSettings, channel: str, ts: str, text: str, blocks: list | None = None) -> None:
    """``chat.update`` a posted message. Raises SlackError."""
    call_slack(settings.get_client().chat_update, channel=channel, ts=ts, text=text, blocks=blocks)


def post_ephemeral(settings: SlackSettings, channel: str, user: str, text: str) -> None:
    """``chat.postEphemeral``: a message only ``user`` sees. Raises SlackError (no wait on a rate limit)."""
    call_slack(settings.get_client().chat_postEphemeral, sleep_on_ratelimit=False, channel=channel, user=user,
               text=text)


def with_retries(fn: Callable[[], Any], delays: list[float] = RETRY_DELAYS[:2]) -> Any:
    """For callers outside Prefect tasks (gateway, CLI): transient SlackErrors retried ``len(delays)`` times."""
    for delay in [*delays, None]:
        try:
            return fn()
        except SlackError as exc:
            if not exc.transient or delay is None:
                raise
            time.sleep(delay)
