"""The SLA sweep: escalate gates nobody decided within their SLA (the ``sla-sweeper`` flow, flows/sla_sweeper.py).

A gate's SLA is the last rung of its deadline ladder (the playbook's ``gates[].ladder``, by default
``sla_hours``; a gate over several categories uses the one that ends first), plus its one extension if a
reviewer extended it. Before that, the same sweep acts on the ladder's earlier rungs, reminders and
escalation levels, through every configured channel (:mod:`clausegate.gates.channels`,
:mod:`clausegate.ops.reminders`).
Past it, the sweep resumes the run with decision ``escalate``, reviewer ``sla``,
via ``sla`` (the same ``resolve_gate`` as every channel and the CLI): the review ends ``needs_legal``, the
report is still written, and every channel's escalation place hears about it. A timeout is an escalation,
never a rejection.

Each channel's escalation notice is a task with retries (transient errors: 1 + 3 attempts). When one
finally fails, the escalation still stands (the run was resumed with ``escalate``) but the sweeper
run ends **Failed** with ``[CG-GATE-ESCALATION-UNDELIVERED]`` naming the contracts nobody was told
about, after every other overdue gate was handled: a lost notice is visible in Prefect (and to a
failure automation), not a Completed run. No channel configured at all means no notices: logged as a
warning, not a failure. A gate the sweep could not escalate is posted to the alert channel.

Timing: Prefect fails a suspended run once its suspend timeout passes ("The flow was suspended and
never resumed"); after that nobody can answer it. The gate sets that timeout to SLA + 7 days
(``clausegate.gates.SUSPEND_GRACE``), so with the sweeper scheduled every few minutes the SLA
always acts first, and a sweeper outage of up to a week loses no gate. Latest escalation =
SLA + sweep interval. A zombie-run automation must treat Suspended/Paused runs as alive.
"""

from __future__ import annotations

from datetime import datetime

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State

from clausegate.gates import ResolveOutcome, WaitingGate, format_delta, resolve_gate, waiting_gates
from clausegate.gates import channels as gate_channels
from clausegate.gates.channel import ChannelUndelivered
from clausegate.gates.model import DecisionInfo, now_utc
from clausegate.ops import reminders
from clausegate.ops.alerts import post_alert


@task(name="escalate-gate", cache_policy=NO_CACHE)
def escalate(flow_run_id: str, gate: str, sla_hours: float) -> ResolveOutcome:
    return resolve_gate(flow_run_id, "escalate", reviewer="sla", via="sla", gate=gate,
                        comment=f"no decision within the SLA of {sla_hours:g} h")  # the resumed flow updates the views


def sweep(dry_run: bool = False, now: datetime | None = None) -> list[dict] | State:
    """Escalate every waiting gate past its SLA; return what was done (one entry per overdue gate).

    ``now``: the moment the ladder is read at (default: now; a sweep as of an earlier moment acts on the rungs
    due then, each still once). Fails (``CG-GATE-ESCALATION-UNDELIVERED``) when an escalation notice could not be
    delivered."""
    logger = get_run_logger()
    gates = waiting_gates(now=now)
    overdue = [g for g in gates if g.overdue]
    logger.info("%d gate(s) past their SLA", len(overdue))
    channels = gate_channels.configured() if gates and not dry_run else []
    if overdue and not dry_run and not channels:
        logger.warning("no channel configured: escalations are applied but nobody is notified (see docs/runbook.md)")
    done = [_sweep_one(gate, channels, dry_run, logger) for gate in overdue]
    if not dry_run:  # the ladder's earlier rungs (reminders.py), after the escalations
        done += reminders.remind_due([g for g in gates if not g.overdue], channels, logger)
    undelivered = [d for d in done if d.get("escalation_posted") is False]
    if undelivered:
        error = ChannelUndelivered(
            f"{len(undelivered)} SLA escalation(s) applied (needs_legal) but not delivered to the escalation "
            "channel: " + "; ".join(f"{d['contract']} (run {d['flow_run_id']}): {d.get('escalation_error', '')}"
                                    for d in undelivered)[:1500],
            hint="fix the channel (docs/runbook.md section 5) and tell legal about these contracts; `clausegate gates` "
                 "no longer lists them because they are decided")
        return Failed(message=str(error), data=error)
    return done


def _sweep_one(gate: WaitingGate, channels: list, dry_run: bool, logger) -> dict:
    """Escalate one overdue gate and tell every channel's escalation place (or the alert channel, if it failed)."""
    record = gate.record
    entry = {"flow_run_id": gate.flow_run_id, "contract": record.filename, "overdue_by": format_delta(-gate.sla_left)}
    if dry_run:
        return {**entry, "outcome": "dry_run"}
    outcome = escalate(gate.flow_run_id, record.key, record.sla_hours)
    entry.update(outcome=outcome.kind, message=outcome.message)
    logger.info("%s (%s): %s", record.filename, gate.flow_run_id, outcome.message)
    if channels and outcome.kind == "resumed":
        decided = DecisionInfo(decision="escalate", reviewer="sla", via="sla", decided_at=now_utc())
        delivered, errors = gate_channels.escalate_all(record, channels, f"Overdue by {entry['overdue_by']}.",
                                                       decided=decided)
        entry["escalation_channels"] = delivered
        entry["escalation_posted"] = not errors
        if errors:
            entry["escalation_error"] = "; ".join(errors)[:300]
            logger.error("%s (%s): escalated, but the escalation notice was not delivered: %s",
                         record.filename, gate.flow_run_id, entry["escalation_error"])
    elif channels and outcome.kind not in ("already_decided",) and (settings := gate_channels.alert_settings(channels)):
        post_alert(f":warning: SLA sweeper could not escalate {record.filename} (run {gate.flow_run_id}): "
                   f"{outcome.message}", settings, return_state=True)
    return entry
