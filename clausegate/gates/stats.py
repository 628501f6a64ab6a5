"""How long people take at the gates: time to acknowledge and to decide, SLA breaches, reminders.

Read from what the gates store, nothing of its own:

* the **gate record** on each run (``clausegate-gate-*`` flow-run inputs): opened at, SLA, categories;
* the **accepted answer** (``store.read_decision``): decided at (when Prefect stored the answer), decision,
  via and ClauseGate's attribution of the reviewer;
* the **audit log** (``clausegate.audit.gate.*`` events): acknowledgements and reminders.  Hook for the
  acknowledge/remind feature: an event named in :data:`ACK_EVENTS` (its earliest per run and gate is the
  acknowledgement) or :data:`REMINDER_EVENTS` (each one a reminder sent), or an ``acknowledged_at``
  attribute on the record or the decision, is counted; until such events exist the ack columns stay
  empty ("-") and reminders 0.  A role comes from the decision's ``role`` or the record's ``roles``
  (category -> role names), else "(no role)".
* a **per-finding gate**'s answer rounds (``store.read_rounds``, filled into slots by
  :func:`clausegate.gates.findings.progress`): one sample per finding and role, with the person who filled it,
  so everyone who decided a finding in Slack is under "By reviewer" and each role under "By role".

One :class:`GateSample` per gated category of a gate (per finding and role at a per-finding gate);
:func:`summarise` groups them by category, role and reviewer (a gate counts once per group: decided when its last
sample in the group is, open while one is).  Median and p90 are nearest-rank over the decided
(acknowledged) gates.  SLA breach rate: the gates decided after their SLA deadline, escalated by the
SLA sweeper, or still open past it, over every gate whose deadline has passed or that was decided.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterStartTime
from prefect.client.schemas.sorting import FlowRunSort
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventOrder
from pydantic import BaseModel, ConfigDict

from clausegate import audit
from clausegate.gates import findings, store
from clausegate.gates.listing import format_delta
from clausegate.gates.model import GateRecord, now_utc

ACK_EVENTS = ("gate.acknowledged",)
REMINDER_EVENTS = ("gate.reminded",)
NO_ROLE = "(no role)"
PAGE = 200  # the most flow runs the API returns in one page
LOOKBACK = timedelta(days=30)  # a gate opened in the window may belong to a run started up to this long before


class GateSample(BaseModel):
    """One gated category of one gate, with its times."""

    model_config = ConfigDict(frozen=True)

    flow_run_id: str
    gate: str
    category: str
    playbook: str
    opened_at: datetime
    sla_hours: float
    acknowledged_at: datetime | None = None
    decided_at: datetime | None = None
    decision: str | None = None
    via: str | None = None
    reviewer: str | None = None
    role: str = NO_ROLE
    reminders: int = 0

    @property
    def deadline(self) -> datetime:
        return self.opened_at + timedelta(hours=self.sla_hours)

    def breached(self, now: datetime) -> bool | None:
        """True: decided late, escalated by the SLA, or still open past the deadline; None: open within it."""
        if self.decided_at is not None:
            return self.via == "sla" or self.decided_at > self.deadline
        return True if now > self.deadline else None

    @property
    def seconds_to_decide(self) -> float | None:
        if self.decided_at is None or self.via == "sla":  # the sweeper's escalation is not a person deciding
            return None
        return max((self.decided_at - self.opened_at).total_seconds(), 0.0)

    @property
    def seconds_to_acknowledge(self) -> float | None:
        if self.acknowledged_at is None:
            return None
        return max((self.acknowledged_at - self.opened_at).total_seconds(), 0.0)


class StatsRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    gates: int
    decided: int
    decide_median_s: float | None = None
    decide_p90_s: float | None = None
    ack_median_s: float | None = None
    ack_p90_s: float | None = None
    breach_rate: float | None = None
    reminders: int = 0


class GateStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    since: datetime
    now: datetime
    overall: StatsRow
    by_category: list[StatsRow]
    by_role: list[StatsRow]
    by_reviewer: list[StatsRow]
    by_channel: list[StatsRow] = []  # the channel each decision came through (via: slack, email, ui, cli, sla)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100): an observed value, never an interpolation; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q / 100 * len(ordered)) - 1, 0)]


def _gate_once(samples: list[GateSample]) -> list[GateSample]:
    """One sample per gate, whatever its categories, findings and roles: an open one if any, else the last decided."""
    chosen: dict[tuple[str, str], GateSample] = {}
    for s in samples:
        kept = chosen.get((s.flow_run_id, s.gate))
        if kept is None or (kept.decided_at is not None and (s.decided_at is None or s.decided_at > kept.decided_at)):
            chosen[(s.flow_run_id, s.gate)] = s
    return list(chosen.values())


def _row(name: str, samples: list[GateSample], now: datetime) -> StatsRow:
    gates = _gate_once(samples)
    decide = [x for s in gates if (x := s.seconds_to_decide) is not None]
    ack = [x for s in gates if (x := s.seconds_to_acknowledge) is not None]
    known = [b for s in gates if (b := s.breached(now)) is not None]
    return StatsRow(name=name, gates=len(gates), decided=sum(s.decided_at is not None for s in gates),
                    decide_median_s=statistics.median(decide) if decide else None,
                    decide_p90_s=percentile(decide, 90), ack_median_s=statistics.median(ack) if ack else None,
                    ack_p90_s=percentile(ack, 90), breach_rate=sum(known) / len(known) if known else None,
                    reminders=sum(s.reminders for s in gates))


def _grouped(samples: list[GateSample], key, now: datetime) -> list[StatsRow]:
    groups: dict[str, list[GateSample]] = {}
    for s in samples:
        if (name := key(s)) is not None:
            groups.setdefault(name, []).append(s)
    rows = [_row(name, group, now) for name, group in groups.items()]
    return sorted(rows, key=lambda r: (-r.gates, r.name))


def summarise(samples: Iterable[GateSample], *, since: datetime, now: datetime | None = None) -> GateStats:
    moment = now or now_utc()
    kept = [s for s in samples if s.opened_at >= since]
    return GateStats(since=since, now=moment, overall=_row("all gates", kept, moment),
                     by_category=_grouped(kept, lambda s: s.category, moment),
                     by_role=_grouped(kept, lambda s: s.role, moment),
                     by_reviewer=_grouped(kept, lambda s: s.reviewer if s.decided_at else None, moment),
                     by_channel=_grouped(kept, lambda s: s.via if s.decided_at else None, moment))


def _role(record: GateRecord, decision: Any, category: str) -> str:
    """The role a decision was made in: the decision's ``role``, the record's ``roles`` for the category, or none."""
    role = getattr(decision, "role", None)
    if role:
        return str(role)
    roles = getattr(record, "roles", None)
    if isinstance(roles, dict) and roles.get(category):
        named = roles[category]
        return "+".join(named) if isinstance(named, list | tuple) else str(named)
    return NO_ROLE


def samples_of(record: GateRecord, decision, *, acknowledged_at: datetime | None = None, reminders: int = 0,
               rounds: list | None = None, assignments: dict | None = None) -> list[GateSample]:
    """The samples of one gate (one per category) from its record and its accepted answer (or None); a per-finding
    gate's from its answer ``rounds`` (``store.read_rounds``) and reassignments: one per finding and role."""
    ack = acknowledged_at or getattr(record, "acknowledged_at", None) or getattr(decision, "acknowledged_at", None)
    common = dict(flow_run_id=record.flow_run_id, gate=record.key, playbook=record.playbook,
                  opened_at=record.opened_at, sla_hours=record.sla_hours, acknowledged_at=ack, reminders=reminders)
    if record.per_finding:
        out = []
        for fp in findings.progress(record, rounds or [], assignments).findings:
            for role in fp.slots:
                a = fp.answers.get(role)
                done = dict(decided_at=a.decided_at, decision=a.decision, via=a.via, reviewer=a.reviewer) if a else {}
                out.append(GateSample(category=fp.finding.category,
                                      role=NO_ROLE if role == findings.ANY_ROLE else role, **common, **done))
        return out
    if decision is not None:
        common.update(decided_at=decision.decided_at, decision=decision.decision, via=decision.via,
                      reviewer=decision.reviewer)
    return [GateSample(category=c, role=_role(record, decision, c), **common) for c in record.categories]


def _audit_marks(events) -> tuple[dict[tuple[str, str | None], datetime], dict[tuple[str, str | None], int]]:
    """Earliest acknowledgement and number of reminders per (run, gate) from ``clausegate.audit.gate.*`` events."""
    acks: dict[tuple[str, str | None], datetime] = {}
    reminders: dict[tuple[str, str | None], int] = {}
    for event in events:
        action = event.event.removeprefix(audit.PREFIX)
        payload = event.payload or {}
        where = (str(payload.get("flow_run_id")), payload.get("gate"))
        if action in ACK_EVENTS:
            acks[where] = min(acks.get(where, event.occurred), event.occurred)
        elif action in REMINDER_EVENTS:
            reminders[where] = reminders.get(where, 0) + 1
    return acks, reminders


def _mark(marks: dict, record: GateRecord, default=None):
    return marks.get((record.flow_run_id, record.key), marks.get((record.flow_run_id, None), default))


def gate_events(client, since: datetime, limit: int = 5000) -> list:
    """The ``clausegate.audit.gate.*`` events since ``since`` (the API serves 50 a page)."""
    wanted = EventFilter(event=EventNameFilter(prefix=[audit.PREFIX + "gate."]),
                         occurred=EventOccurredFilter(since=since), order=EventOrder.DESC)
    page = client.read_events(filter=wanted, limit=50)
    events = list(page.events)
    while page.next_page and len(events) < limit:
        page = client.read_events_page(str(page.next_page))
        events += page.events
    return events


def _runs(client, started_after: datetime, limit: int) -> list:
    """The flow runs started after ``started_after``, newest first, at most ``limit`` (the API serves 200 a page)."""
    runs: list = []
    wanted = FlowRunFilter(start_time=FlowRunFilterStartTime(after_=started_after))
    while len(runs) < limit:
        page = client.read_flow_runs(flow_run_filter=wanted, sort=FlowRunSort.START_TIME_DESC, offset=len(runs),
                                     limit=min(PAGE, limit - len(runs)))
        runs += page
        if len(page) < PAGE:
            break
    return runs


def collect(*, since: datetime, limit: int = 2000) -> list[GateSample]:
    """Every gate opened since ``since`` on the Prefect server (runs started up to :data:`LOOKBACK` before)."""
    samples: list[GateSample] = []
    with get_client(sync_client=True) as client:
        acks, reminders = _audit_marks(gate_events(client, since - LOOKBACK))
        for run in _runs(client, since - LOOKBACK, limit):
            for record in store.all_records(client, run.id):
                if record.opened_at < since:
                    continue
                per_finding = record.per_finding
                decision = None if per_finding else store.read_decision(client, run.id, record.key)
                rounds = store.read_rounds(client, run.id, record.key) if per_finding else None
                extras = store.read_extras(client, run.id, record.key).assignments if per_finding else None
                samples += samples_of(record, decision, acknowledged_at=_mark(acks, record),
                                      reminders=_mark(reminders, record, 0), rounds=rounds, assignments=extras)
    return samples


def gate_stats(*, days: float = 7, limit: int = 2000, now: datetime | None = None) -> GateStats:
    """The stats of the gates opened in the last ``days`` days."""
    moment = now or now_utc()
    since = moment - timedelta(days=days)
    return summarise(collect(since=since, limit=limit), since=since, now=moment)


def duration(seconds: float | None) -> str:
    """"4m 12s", "1h 05m", "2d 3h"; "-" when nothing was measured."""
    return "-" if seconds is None else format_delta(timedelta(seconds=round(seconds)))


def rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


GROUPS = (("Category", "by_category"), ("Role", "by_role"), ("Reviewer", "by_reviewer"), ("Channel", "by_channel"))


def cells(row: StatsRow) -> list[str]:
    """A row's figures as text: gates, decided, decide median/p90, ack median/p90, SLA breach, reminders."""
    return [str(row.gates), str(row.decided), duration(row.decide_median_s), duration(row.decide_p90_s),
            duration(row.ack_median_s), duration(row.ack_p90_s), rate(row.breach_rate), str(row.reminders)]


def render_markdown(stats: GateStats) -> str:
    """The weekly artifact: the overall line, then one table per grouping."""
    o = stats.overall
    lines = [f"# Gate response times, {stats.since:%Y-%m-%d %H:%M} to {stats.now:%Y-%m-%d %H:%M} UTC", "",
             f"{o.gates} gate(s) opened, {o.decided} decided. Time to decide: median {duration(o.decide_median_s)}, "
             f"p90 {duration(o.decide_p90_s)}. Time to acknowledge: median {duration(o.ack_median_s)}, p90 "
             f"{duration(o.ack_p90_s)}. SLA breach rate {rate(o.breach_rate)}; {o.reminders} reminder(s) sent.", "",
             "Median and p90 are nearest-rank over decided gates (the SLA sweeper's escalations are breaches, not "
             "decisions); the breach rate counts gates decided or past their deadline. `clausegate gates --stats`."]
    for title, field in GROUPS:
        rows = getattr(stats, field)
        lines += ["", f"## By {title.lower()}", ""]
        if not rows:
            lines.append("No gates.")
            continue
        lines += [f"| {title} | Gates | Decided | Decide median | Decide p90 | Ack median | Ack p90 | SLA breach "
                  "| Reminders |", "|---|---|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join([row.name.replace("|", "\\|"), *cells(row)]) + " |" for row in rows]
    return "\n".join(lines) + "\n"
