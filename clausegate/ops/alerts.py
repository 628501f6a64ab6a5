"""Operational alerts: the Slack alert channel, and failure-rate alerting for contract-review runs.

:func:`post_alert` is the one task that posts to the SlackSettings block's ``alert_channel`` (the
failure-rate check, dead letters and the SLA sweep use it; transient Slack errors are retried).

Failure-rate rule (:func:`check_failure_rate`, the body of the ``failure-alert`` flow,
flows/failure_alert.py): among the contract reviews that *finished* in the last ``window_minutes``,
more than ``threshold_pct`` percent failed -> one Slack message to the alert channel naming the failing
reviews and their error codes.  A review is either (:func:`read_outcomes`)

- a contract-review flow run that ended Completed, Failed or Crashed (Cancelled ones and runs still
  waiting at a gate do not count), or
- a contract reviewed as a task of a batch run: its ``clausegate.review.completed`` / ``.failed`` event
  (:mod:`clausegate.batch.review_events`; one that ended ``pending_decision`` counts when its decision run
  ends).  The alert names the batch run for these.

Each review is counted once: a contract-review run emits no review event.

No alert storms: a message is only sent for failing reviews not named in an earlier alert, and at
most one per ``cooldown_minutes`` (what the cooldown holds back goes out with the next check:
the next failure, or the deployment's 15-minute backstop schedule).  What was alerted lives in
the Prefect Variable ``clausegate_failure_alert``.

Codes: ``CG-ALERT-NO-CHANNEL`` (threshold crossed, but no SlackSettings block or no alert
channel: the alert is only logged and kept as an artifact); Slack failures keep the Slack client's
codes (``CG-SLACK-REJECTED``, ``CG-SLACK-UNREACHABLE``, ...): the run ends Failed with that code.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import PurePath
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterEndTime,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import StateType
from prefect.events import Event
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventOrder
from prefect.states import Failed, State
from prefect.variables import Variable
from pydantic import BaseModel, Field

from clausegate import slack
from clausegate.batch import review_events
from clausegate.config import load_slack_settings
from clausegate.runs.states import RUN_CANCELLED, RUN_CRASHED, error_code_from_message

NO_CHANNEL = "CG-ALERT-NO-CHANNEL"
STATE_VARIABLE = "clausegate_failure_alert"
MAX_LISTED = 15


class RunInfo(BaseModel):
    """One finished review: a contract-review flow run, or (``batch_run_id`` set) a contract reviewed inside
    a batch run, read from its review event (``id``: the event's id; ``name``: the batch run's name)."""

    id: str
    name: str
    state_type: str
    state_name: str
    message: str = ""
    contract: str = ""
    end_time: datetime | None = None
    code: str = ""
    batch_run_id: str = ""

    @property
    def in_batch(self) -> bool:
        return bool(self.batch_run_id)

    @property
    def failed(self) -> bool:
        return self.state_type in ("FAILED", "CRASHED")

    @property
    def error_code(self) -> str:
        if self.code:
            return self.code
        if self.state_type == "CRASHED":
            return RUN_CRASHED
        if self.state_type == "CANCELLED":
            return RUN_CANCELLED
        return error_code_from_message(self.message)


class FailureCheck(BaseModel):
    window_minutes: float
    threshold_pct: float
    finished: int
    failed: int
    rate_pct: float
    over_threshold: bool
    finished_in_batches: int = 0
    failed_in_batches: int = 0
    failing: list[RunInfo] = Field(default_factory=list)
    new_failing: list[RunInfo] = Field(default_factory=list)
    should_alert: bool = False
    reason: str = ""

    def codes(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for run in self.failing:
            counts[run.error_code] = counts.get(run.error_code, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


class AlertState(BaseModel):
    # ids of the runs and review events already alerted (the field keeps its name: it is stored)
    alerted_run_ids: list[str] = Field(default_factory=list)
    last_posted_at: datetime | None = None


def evaluate(runs: list[RunInfo], *, window_minutes: float, threshold_pct: float, min_runs: int = 1,
             state: AlertState | None = None, cooldown_minutes: float = 0.0,
             now: datetime | None = None) -> FailureCheck:
    """Decide whether to alert, from the reviews that finished in the window."""
    state = state or AlertState()
    now = now or datetime.now(UTC)
    finished = [r for r in runs if r.state_type in ("COMPLETED", "FAILED", "CRASHED")]
    failing = [r for r in finished if r.failed]
    rate = 100.0 * len(failing) / len(finished) if finished else 0.0
    over = len(finished) >= max(1, min_runs) and rate > threshold_pct
    seen = set(state.alerted_run_ids)
    new = [r for r in failing if r.id not in seen]
    check = FailureCheck(window_minutes=window_minutes, threshold_pct=threshold_pct, finished=len(finished),
                         failed=len(failing), rate_pct=round(rate, 2), over_threshold=over,
                         finished_in_batches=sum(r.in_batch for r in finished),
                         failed_in_batches=sum(r.in_batch for r in failing), failing=failing, new_failing=new)
    if not over:
        check.reason = (f"{len(failing)} of {len(finished)} finished reviews failed "
                        f"({rate:.1f}% ≤ {threshold_pct:g}%)"
                        if len(finished) >= max(1, min_runs)
                        else f"only {len(finished)} finished review(s) (< {min_runs})")
    elif not new:
        check.reason = "over the threshold, but every failing review was already alerted"
    elif state.last_posted_at and cooldown_minutes and now - state.last_posted_at < timedelta(minutes=cooldown_minutes):
        check.reason = (f"over the threshold; last alert {state.last_posted_at:%H:%M} UTC is within the "
                        f"{cooldown_minutes:g}-minute cooldown (the next check sends it)")
    else:
        check.should_alert = True
        check.reason = f"{len(failing)} of {len(finished)} reviews failed ({rate:.1f}% > {threshold_pct:g}%)"
    return check


def read_runs(window_minutes: float, flow_name: str = "contract-review", now: datetime | None = None) -> list[RunInfo]:
    """Runs of ``flow_name`` that ended within the window (any final state)."""
    since = (now or datetime.now(UTC)) - timedelta(minutes=window_minutes)
    final = [StateType.COMPLETED, StateType.FAILED, StateType.CRASHED, StateType.CANCELLED]
    infos: list[RunInfo] = []
    with get_client(sync_client=True) as client:
        offset = 0
        while True:
            batch = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
                flow_run_filter=FlowRunFilter(end_time=FlowRunFilterEndTime(after_=since),
                                              state=FlowRunFilterState(type=FlowRunFilterStateType(any_=final))),
                limit=200, offset=offset)
            for run in batch:
                infos.append(RunInfo(id=str(run.id), name=run.name,
                                     state_type=run.state_type.value if run.state_type else "",
                                     state_name=run.state_name or "",
                                     message=(run.state.message if run.state else "") or "",
                                     contract=str((run.parameters or {}).get("source", "")), end_time=run.end_time))
            if len(batch) < 200:
                return infos
            offset += 200


def read_review_events(window_minutes: float, now: datetime | None = None) -> list[RunInfo]:
    """The ``clausegate.review.*`` events (reviews inside batch runs) that occurred within the window."""
    until = now or datetime.now(UTC)
    event_filter = EventFilter(event=EventNameFilter(name=[review_events.COMPLETED, review_events.FAILED]),
                               occurred=EventOccurredFilter(since=until - timedelta(minutes=window_minutes),
                                                            until=until),
                               order=EventOrder.DESC)
    with get_client(sync_client=True) as client:
        page = client.read_events(filter=event_filter, limit=50)  # the API serves at most 50 per page
        events = list(page.events)
        while page.next_page:
            page = client.read_events_page(str(page.next_page))
            events += page.events
    return [outcome_from_event(event) for event in events]


def outcome_from_event(event: Event) -> RunInfo:
    """A review event as a :class:`RunInfo`: failed, finished, or (``pending_decision``) waiting for a person."""
    payload = event.payload or {}
    batch = next((r for r in event.related if r.role == "flow-run"), None)
    failed = event.event == review_events.FAILED
    waiting = not failed and payload.get("review_status") == "pending_decision"
    state_type = "FAILED" if failed else "PAUSED" if waiting else "COMPLETED"
    return RunInfo(id=str(event.id), name=str(payload.get("flow_run_name") or (batch.name if batch else "") or ""),
                   state_type=state_type, state_name=state_type.title(), message=str(payload.get("detail") or ""),
                   contract=str(payload.get("file") or ""), end_time=event.occurred,
                   code=str(payload.get("error_code") or ""),
                   batch_run_id=str(payload.get("flow_run_id")
                                    or (batch.id.removeprefix("prefect.flow-run.") if batch else "")))


def read_outcomes(window_minutes: float, flow_name: str = "contract-review",
                  now: datetime | None = None) -> list[RunInfo]:
    """Every review that ended within the window: ``flow_name`` runs and reviews inside batch runs."""
    return read_runs(window_minutes, flow_name, now) + read_review_events(window_minutes, now)


def render_alert(check: FailureCheck, run_url=lambda run_id: "") -> str:
    """Slack mrkdwn text (plain text works too): headline, error codes, failing reviews with links to their
    run (a contract-review run, or the batch run a contract was reviewed in)."""
    runs_finished = check.finished - check.finished_in_batches
    counts = f"contract-review runs failed: {check.failed - check.failed_in_batches} of {runs_finished}"
    if check.finished_in_batches:
        counts += f"; reviews in batch runs failed: {check.failed_in_batches} of {check.finished_in_batches}"
    lines = [f":rotating_light: *ClauseGate:* {check.failed} of {check.finished} contract reviews failed in the "
             f"last {check.window_minutes:g} min ({check.rate_pct:.1f}% > {check.threshold_pct:g}%) — {counts}.",
             "Error codes: " + ", ".join(f"`{code}` ×{n}" for code, n in check.codes().items()),
             "", "*Failing reviews* (newest first):"]
    runs = sorted(check.failing, key=lambda r: r.end_time or datetime.min.replace(tzinfo=UTC), reverse=True)
    new_ids = {r.id for r in check.new_failing}
    for run in runs[:MAX_LISTED]:
        url = run_url(run.batch_run_id or run.id)
        label = f"<{url}|{run.name}>" if url else run.name
        contract = PurePath(run.contract).name if run.contract else "?"
        new = " (new)" if run.id in new_ids else ""
        if run.in_batch:
            lines.append(f"• {contract} — `{run.error_code}` — in batch run {label}{new}")
        else:
            lines.append(f"• {label} — `{run.error_code}` — {contract}{new}")
    if len(runs) > MAX_LISTED:
        lines.append(f"… and {len(runs) - MAX_LISTED} more (Prefect UI: filter flow `contract-review`, "
                     "state Failed; batch reviews: event feed, `clausegate.review.failed`).")
    lines.append("Runbook: docs/runbook.md (look up each code).")
    return "\n".join(lines)


def load_state() -> AlertState:
    data = Variable.get(STATE_VARIABLE, default=None)
    try:
        return AlertState.model_validate(data) if data else AlertState()
    except ValueError:
        return AlertState()


def save_state(check: FailureCheck, previous: AlertState, now: datetime | None = None) -> AlertState:
    """Remember the runs just alerted (only ids still inside the window are kept)."""
    current = {r.id for r in check.failing}
    ids = sorted((set(previous.alerted_run_ids) & current) | {r.id for r in check.new_failing})
    state = AlertState(alerted_run_ids=ids, last_posted_at=now or datetime.now(UTC))
    Variable.set(STATE_VARIABLE, state.model_dump(mode="json"), overwrite=True)
    return state


def summary(check: FailureCheck) -> dict[str, Any]:
    return {"finished": check.finished, "failed": check.failed, "rate_pct": check.rate_pct,
            "over_threshold": check.over_threshold, "alerted": check.should_alert, "reason": check.reason,
            "codes": check.codes()}


@task(name="post-alert", **slack.SLACK_RETRY_POLICY, cache_policy=NO_CACHE)
def post_alert(text: str, settings) -> bool:
    """Post ``text`` to the alert channel; False when the block has none (nothing is sent)."""
    if not settings.alert_channel:
        return False
    slack.post_message(settings, settings.alert_channel, text)
    return True


def check_failure_rate(*, threshold_pct: float, window_minutes: float, min_runs: int, cooldown_minutes: float,
                       slack_block: str | None, flow_name: str) -> dict | State:
    """The ``failure-alert`` flow: check the rate, alert once (see the module docstring)."""
    logger = get_run_logger()
    runs = read_outcomes(window_minutes, flow_name)
    previous = load_state()
    check = evaluate(runs, window_minutes=window_minutes, threshold_pct=threshold_pct, min_runs=min_runs,
                     state=previous, cooldown_minutes=cooldown_minutes)
    logger.info("%s: %s", "ALERT" if check.should_alert else "no alert", check.reason)
    if not check.should_alert:
        return summary(check)

    settings = load_slack_settings(slack_block)
    text = render_alert(check, settings.run_url if settings is not None else (lambda run_id: ""))
    create_markdown_artifact(key="failure-alert", markdown=text.replace(":rotating_light: ", ""),
                             description="contract-review failure-rate alert")
    if settings is None or not settings.alert_channel:
        logger.warning("[%s] %s — not sent: %s. Next step: set `alert_channel` in the SlackSettings block.",
                       NO_CHANNEL, check.reason,
                       "no SlackSettings block" if settings is None else "the block has no alert_channel")
        save_state(check, previous)
        return {**summary(check), "delivered": False, "code": NO_CHANNEL}
    state = post_alert(text, settings, return_state=True)
    if not state.is_completed():
        try:
            state.result()
        except slack.SlackError as error:
            logger.error("alert not delivered: %s", error)
            return Failed(message=f"{error.code}: alert not delivered to {settings.alert_channel}: {error.message}")
        except Exception as error:  # any other failure of the post: the run ends Failed with it
            return Failed(message=f"alert not delivered: {error}")
    save_state(check, previous)
    logger.info("alert posted to %s (%d failing reviews, %d new)", settings.alert_channel, check.failed,
                len(check.new_failing))
    return {**summary(check), "delivered": True}
