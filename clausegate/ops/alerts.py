"""Failure-rate alerting for contract-review runs (plain logic; the flow is flows/failure_alert.py).

Rule: among contract-review runs that *finished* in the last ``window_minutes`` (Completed,
Failed, Crashed; Cancelled ones and runs still waiting at a gate do not count), more than
``threshold_pct`` percent failed or crashed -> one Slack message to the SlackSettings block's
``alert_channel`` naming the failing runs and their error codes.

No alert storms: a message is only sent for failing runs not named in an earlier alert, and at
most one per ``cooldown_minutes`` (what the cooldown holds back goes out with the next check:
the next failure, or the deployment's 15-minute backstop schedule).  What was alerted lives in
the Prefect Variable ``clausegate_failure_alert``.

Codes: ``CG-ALERT-NO-CHANNEL`` (threshold crossed, but no SlackSettings block or no alert
channel: the alert is only logged and kept as an artifact); Slack failures keep the gates'
codes (``CG-SLACK-REJECTED``, ``CG-SLACK-UNREACHABLE``, ...).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel, Field

from clausegate.batch import RUN_CANCELLED, RUN_CRASHED, error_code_from_message

NO_CHANNEL = "CG-ALERT-NO-CHANNEL"
STATE_VARIABLE = "clausegate_failure_alert"
MAX_LISTED = 15


class RunInfo(BaseModel):
    id: str
    name: str
    state_type: str
    state_name: str
    message: str = ""
    contract: str = ""
    end_time: datetime | None = None

    @property
    def failed(self) -> bool:
        return self.state_type in ("FAILED", "CRASHED")

    @property
    def error_code(self) -> str:
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
    alerted_run_ids: list[str] = Field(default_factory=list)
    last_posted_at: datetime | None = None


def evaluate(runs: list[RunInfo], *, window_minutes: float, threshold_pct: float, min_runs: int = 1,
             state: AlertState | None = None, cooldown_minutes: float = 0.0,
             now: datetime | None = None) -> FailureCheck:
    """Decide whether to alert, from the runs that finished in the window."""
    state = state or AlertState()
    now = now or datetime.now(timezone.utc)
    finished = [r for r in runs if r.state_type in ("COMPLETED", "FAILED", "CRASHED")]
    failing = [r for r in finished if r.failed]
    rate = 100.0 * len(failing) / len(finished) if finished else 0.0
    over = len(finished) >= max(1, min_runs) and rate > threshold_pct
    seen = set(state.alerted_run_ids)
    new = [r for r in failing if r.id not in seen]
    check = FailureCheck(window_minutes=window_minutes, threshold_pct=threshold_pct, finished=len(finished),
                         failed=len(failing), rate_pct=round(rate, 2), over_threshold=over, failing=failing,
                         new_failing=new)
    if not over:
        check.reason = (f"{len(failing)} of {len(finished)} finished runs failed ({rate:.1f}% ≤ {threshold_pct:g}%)"
                        if len(finished) >= max(1, min_runs) else f"only {len(finished)} finished run(s) (< {min_runs})")
    elif not new:
        check.reason = "over the threshold, but every failing run was already alerted"
    elif state.last_posted_at and cooldown_minutes and now - state.last_posted_at < timedelta(minutes=cooldown_minutes):
        check.reason = (f"over the threshold; last alert {state.last_posted_at:%H:%M} UTC is within the "
                        f"{cooldown_minutes:g}-minute cooldown (the next check sends it)")
    else:
        check.should_alert = True
        check.reason = f"{len(failing)} of {len(finished)} runs failed ({rate:.1f}% > {threshold_pct:g}%)"
    return check


def read_runs(window_minutes: float, flow_name: str = "contract-review", now: datetime | None = None) -> list[RunInfo]:
    """Runs of ``flow_name`` that ended within the window (any final state)."""
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

    since = (now or datetime.now(timezone.utc)) - timedelta(minutes=window_minutes)
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
                infos.append(RunInfo(id=str(run.id), name=run.name, state_type=run.state_type.value if run.state_type else "",
                                     state_name=run.state_name or "", message=(run.state.message if run.state else "") or "",
                                     contract=str((run.parameters or {}).get("source", "")), end_time=run.end_time))
            if len(batch) < 200:
                return infos
            offset += 200


def render_alert(check: FailureCheck, run_url=lambda run_id: "") -> str:
    """Slack mrkdwn text (plain text works too): headline, error codes, failing runs with links."""
    from pathlib import PurePath

    lines = [f":rotating_light: *ClauseGate:* {check.failed} of {check.finished} contract-review runs failed in the "
             f"last {check.window_minutes:g} min ({check.rate_pct:.1f}% > {check.threshold_pct:g}%).",
             "Error codes: " + ", ".join(f"`{code}` ×{n}" for code, n in check.codes().items()),
             "", "*Failing runs* (newest first):"]
    runs = sorted(check.failing, key=lambda r: r.end_time or datetime.min.replace(tzinfo=timezone.utc), reverse=True)
    new_ids = {r.id for r in check.new_failing}
    for run in runs[:MAX_LISTED]:
        url = run_url(run.id)
        label = f"<{url}|{run.name}>" if url else run.name
        contract = PurePath(run.contract).name if run.contract else "?"
        lines.append(f"• {label} — `{run.error_code}` — {contract}{' (new)' if run.id in new_ids else ''}")
    if len(runs) > MAX_LISTED:
        lines.append(f"… and {len(runs) - MAX_LISTED} more (Prefect UI: filter flow `contract-review`, state Failed).")
    lines.append("Runbook: docs/runbook.md (look up each code).")
    return "\n".join(lines)


def load_state() -> AlertState:
    from prefect.variables import Variable

    data = Variable.get(STATE_VARIABLE, default=None)
    try:
        return AlertState.model_validate(data) if data else AlertState()
    except ValueError:
        return AlertState()


def save_state(check: FailureCheck, previous: AlertState, now: datetime | None = None) -> AlertState:
    """Remember the runs just alerted (only ids still inside the window are kept)."""
    from prefect.variables import Variable

    current = {r.id for r in check.failing}
    ids = sorted((set(previous.alerted_run_ids) & current) | {r.id for r in check.new_failing})
    state = AlertState(alerted_run_ids=ids, last_posted_at=now or datetime.now(timezone.utc))
    Variable.set(STATE_VARIABLE, state.model_dump(mode="json"), overwrite=True)
    return state


def summary(check: FailureCheck) -> dict[str, Any]:
    return {"finished": check.finished, "failed": check.failed, "rate_pct": check.rate_pct,
            "over_threshold": check.over_threshold, "alerted": check.should_alert, "reason": check.reason,
            "codes": check.codes()}
