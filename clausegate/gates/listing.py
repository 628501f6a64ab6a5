"""Which gates are waiting: suspended runs with a ClauseGate gate record, most urgent first."""

from __future__ import annotations

from datetime import datetime, timedelta

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
from prefect.client.schemas.objects import StateType
from prefect.client.schemas.sorting import FlowRunSort
from pydantic import BaseModel, ConfigDict

from clausegate.gates import store
from clausegate.gates.model import GateRecord, SlackRef, now_utc
from clausegate.gates.store import GateExtras


class WaitingGate(BaseModel):
    model_config = ConfigDict(frozen=True)

    flow_run_id: str
    flow_run_name: str
    record: GateRecord
    waiting_since: datetime
    now: datetime
    slack: SlackRef | None = None
    extras: GateExtras = GateExtras()

    @property
    def contract(self) -> str:
        return self.record.filename

    @property
    def age(self) -> timedelta:
        return self.now - self.waiting_since

    @property
    def sla_deadline(self) -> datetime:
        """The record's SLA deadline, plus the one extension if someone extended it."""
        return self.record.sla_deadline + timedelta(hours=self.extras.extra_hours())

    @property
    def sla_fraction(self) -> float:
        """How much of the SLA has passed (0.5 at half time; ≥ 1 overdue)."""
        total = (self.sla_deadline - self.record.opened_at).total_seconds()
        return (self.now - self.record.opened_at).total_seconds() / total if total > 0 else 1.0

    @property
    def sla_left(self) -> timedelta:
        """Negative when the SLA has passed (the sweeper escalates it)."""
        return self.sla_deadline - self.now

    @property
    def overdue(self) -> bool:
        return self.sla_left <= timedelta(0)


def waiting_gates(*, now: datetime | None = None, page: int = 200) -> list[WaitingGate]:
    """All runs suspended at a ClauseGate gate, earliest SLA deadline first.  Read ``page`` runs at a time, in a
    stable order, to the last one: a sweep that read only the first page would miss gates beyond it."""
    moment = now or now_utc()
    gates: list[WaitingGate] = []
    paused = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED])))
    with get_client(sync_client=True) as client:
        runs, offset = [], 0
        while True:
            batch = client.read_flow_runs(flow_run_filter=paused, sort=FlowRunSort.ID_DESC, limit=page, offset=offset)
            runs += batch
            if len(batch) < page:
                break
            offset += page
        for run in runs:
            key = store.gate_key_of(run)
            if key is None:
                continue
            record = store.read_record(client, run.id, key)
            if record is None:
                continue
            gates.append(WaitingGate(flow_run_id=str(run.id), flow_run_name=run.name, record=record,
                                     waiting_since=run.state.timestamp, now=moment,
                                     slack=store.read_slack_ref(client, run.id, key),
                                     extras=store.read_extras(client, run.id, key)))
    return sorted(gates, key=lambda g: g.sla_deadline)


def gate_of_message(channel: str, ts: str) -> str | None:
    """The run waiting at the gate whose Slack message is ``ts`` in ``channel`` (a thread reply names its parent
    so), or None."""
    found = next((g for g in waiting_gates() if g.slack and g.slack.channel == channel and g.slack.ts == ts), None)
    return found.flow_run_id if found else None


def format_delta(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d {hours}h"
    if hours:
        return f"{sign}{hours}h {minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m {secs:02d}s"
    return f"{sign}{secs}s"
