"""Reminders at 50% and 80% of a gate's SLA: part of the SLA sweep (the ``sla-sweeper`` deployment's schedule).

For each waiting gate past a threshold whose reminder was not sent, the sweep claims the reminder
(a write-once flow-run input ``clausegate-remind-<gate>-<percent>``: two sweeps never both send it),
then posts it as a reply in the gate message's thread, mentioning who still has to answer: a
per-finding gate's open roles' people (or assignees), a one-decision gate's allowed reviewers.
A sweep that finds a gate already past 80% claims 50% too and sends one reminder (80%). A reminder
that cannot be posted is logged; it is not retried by the next sweep (the claim stands) and the
escalation at 100% is unaffected. Each sent reminder is one ``gate.reminded`` audit event.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client

from clausegate import audit
from clausegate.gates import store
from clausegate.gates.actions import open_people
from clausegate.gates.listing import WaitingGate, format_delta
from clausegate.gates.model import remind_key
from clausegate.gates.rounds import current_progress
from clausegate.gates.slack_findings import reminder_text
from clausegate.gates.slack_tasks import post_reminder

THRESHOLDS = (50, 80)


def remind_due(gates: list[WaitingGate], settings, logger) -> list[dict]:
    """Send the due reminders; one entry per reminder sent (``outcome``: ``reminded`` or ``reminder_failed``)."""
    done = []
    for gate in gates:
        due = [t for t in THRESHOLDS if gate.sla_fraction * 100 >= t and t not in gate.extras.reminders]
        if not due:
            continue
        entry = _remind(gate, due, settings, logger)
        if entry is not None:
            done.append(entry)
    return done


def _remind(gate: WaitingGate, due: list[int], settings, logger) -> dict | None:
    record = gate.record
    with get_client(sync_client=True) as client:
        claimed = [t for t in due if store.write_once(client, record.flow_run_id, remind_key(record.key, t),
                                                       {"percent": t, "at": gate.now.isoformat()})]
        if not claimed:
            return None  # another sweep sent it
        percent = max(claimed)
        if record.per_finding:
            prog, _ = current_progress(client, record)
            people = open_people(record, prog)
        else:
            prog, people = None, list(record.allowed_reviewers)
    left = format_delta(gate.sla_left)
    if prog is not None:
        text = reminder_text(record, prog, percent, people, left)
    else:
        who = " ".join(f"<@{p}>" for p in people) or "Reviewers"
        text = (f":alarm_clock: {who}: {percent}% of the SLA for *{record.filename}* has passed ({left} left); "
                "it escalates to legal at 100%.")
    entry = {"flow_run_id": gate.flow_run_id, "contract": record.filename, "percent": percent, "people": people}
    posted = None
    if settings is not None and gate.slack is not None and gate.slack.ok:
        posted = post_reminder(record, gate.slack, text, settings, return_state=True)
    ok = posted is not None and posted.is_completed()
    if not ok:
        logger.warning("%s (%s): the %d%% reminder was not posted (%s)", record.filename, gate.flow_run_id, percent,
                       "no Slack message" if posted is None else posted.message)
    audit.record(audit.audit_event("gate.reminded", actor="clausegate-sla-sweeper", flow_run_id=record.flow_run_id,
                                   gate=record.key, percent=percent, people=people, posted=ok))
    return {**entry, "outcome": "reminded" if ok else "reminder_failed"}
