"""The gate's deadline ladder, short of its SLA: reminders and escalation levels, part of the SLA sweep.

Each gate carries its ladder (``GateRecord.deadlines()``, from the playbook's ``gates[].ladder``; by
default reminders at 50% and 80%, decided at 100%). The SLA sweep (:mod:`clausegate.ops.sla`) decides the
last rung (``resolve_gate(..., via="sla")``); this module acts on the rungs before it. For each waiting
gate past a rung, the sweep claims the rung (a write-once flow-run input ``clausegate-remind-<gate>-<percent>``,
the rung's place as a percentage of the SLA: two sweeps never both act), then, through every channel the
gate uses (:class:`clausegate.gates.channel.Channel`):

* ``remind``: tells the people who still have to answer (a per-finding gate's open slots' people or
  assignees, and whoever may decide an undecided tracked change; a one-decision gate's allowed reviewers).
  Several due reminders act once, as the latest;
* ``escalate``: tells the role named by ``to`` (its people), or the escalation place, that the gate is late;
  the gate keeps waiting. A second escalation level is a second such rung.

A rung that cannot be delivered is logged and recorded (``posted: false``); it is not retried by the
next sweep (the claim stands) and later rungs are unaffected. Each is one audit event
(``gate.reminded`` / ``gate.escalation_sent``).
"""

from __future__ import annotations

from prefect.client.orchestration import get_client

from clausegate import audit
from clausegate.gates import findings, store
from clausegate.gates.listing import WaitingGate
from clausegate.gates.model import GateRecord, remind_key
from clausegate.gates.rounds import current_progress
from clausegate.review import ladder


def due_rungs(gate: WaitingGate) -> list[tuple[ladder.Rung, int]]:
    """The gate's rungs before its SLA that are due and not yet claimed: (rung, its percentage of the SLA)."""
    record = gate.record
    out = []
    for rung in record.deadlines()[:-1]:
        percent = ladder.percent(rung, record.ladder, record.sla_hours)
        if gate.sla_fraction * 100 >= percent and percent not in gate.extras.reminders:
            out.append((rung, percent))
    return out


def remind_due(gates: list[WaitingGate], channels: list, logger) -> list[dict]:
    """Act on the due rungs of every gate through ``channels``; one entry per rung acted on (``outcome``:
    ``reminded`` / ``reminder_failed`` / ``escalation_sent`` / ``escalation_failed``)."""
    done = []
    for gate in gates:
        due = due_rungs(gate)
        if due:
            done += _climb(gate, due, channels, logger)
    return done


def _people(record: GateRecord, prog) -> list[str]:
    """Every identity (user ids, addresses) that still has to answer."""
    if prog is None:
        return [*record.allowed_reviewers, *record.allowed_addresses]
    people = []
    for fp in prog.findings:
        for role in fp.open_slots:
            people += findings.slot_people(record, fp, role) if role != findings.ANY_ROLE else record.allowed_reviewers
    places = {fp.finding.id: fp for fp in [*prog.context, *prog.findings]}
    for cp in prog.changes:  # an undecided tracked change: whoever may decide its finding
        fp = places.get(cp.change.finding)
        for role in (fp.slots if fp is not None and not cp.done else []):
            people += findings.slot_people(record, fp, role) if role != findings.ANY_ROLE else record.allowed_reviewers
    return sorted(set(people))


def _climb(gate: WaitingGate, due: list[tuple[ladder.Rung, int]], channels: list, logger) -> list[dict]:
    record = gate.record
    with get_client(sync_client=True) as client:
        claimed = [(r, p) for r, p in due if store.write_once(client, record.flow_run_id, remind_key(record.key, p),
                                                               {"percent": p, "do": r.do, "at": gate.now.isoformat()})]
        prog = current_progress(client, record)[0] if claimed and record.per_finding else None
    reminders = [(r, p) for r, p in claimed if r.do == "remind"]
    acting = reminders[-1:] + [(r, p) for r, p in claimed if r.do == "escalate"]
    entries = []
    for rung, percent in acting:
        entry = {"flow_run_id": gate.flow_run_id, "contract": record.filename, "percent": percent}
        if rung.do == "remind":
            people = _people(record, prog)
            posted = [c.name for c in channels if _safely(c, c.remind, gate, (gate, people, percent), logger)]
            entry.update(people=people, outcome="reminded" if posted else "reminder_failed", channels=posted)
            event = audit.audit_event("gate.reminded", actor="clausegate-sla-sweeper", flow_run_id=record.flow_run_id,
                                      gate=record.key, percent=percent, people=people, posted=bool(posted),
                                      channels=posted)
        else:
            people = list(record.role_members.get(rung.to, [])) if rung.to else []
            note = f"{percent}% of its SLA has passed" + (f"; escalated to {rung.to}" if rung.to else "")
            posted = [c.name for c in channels if _safely(c, c.escalate, gate, (record, people, note), logger)]
            entry.update(people=people, to=rung.to, outcome="escalation_sent" if posted else "escalation_failed",
                         channels=posted)
            event = audit.audit_event("gate.escalation_sent", actor="clausegate-sla-sweeper",
                                      flow_run_id=record.flow_run_id, gate=record.key, percent=percent, to=rung.to,
                                      people=people, posted=bool(posted), channels=posted)
        if not posted:
            logger.warning("%s (%s): the %d%% %s was not delivered by any channel", record.filename,
                           gate.flow_run_id, percent, rung.do)
        audit.record(event)
        entries.append(entry)
    return entries


def _safely(channel, act, gate: WaitingGate, args: tuple, logger) -> bool:
    try:
        return bool(act(*args))
    except Exception as exc:  # a channel's failure is logged; the other channels and rungs go on
        logger.warning("%s: the %s channel's %s failed: %s", gate.record.filename, channel.name, act.__name__, exc)
        return False
