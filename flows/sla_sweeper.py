"""The SLA sweeper: escalate gates nobody decided within their SLA (its own deployment, on a schedule).

A gate's SLA comes from the playbook (``gates[].sla_hours``; a gate over several categories uses
the shortest). Past it, the sweeper resumes the run with decision ``escalate``, reviewer ``sla``,
via ``sla`` (the same ``resolve_gate`` as Slack and the CLI): the review ends ``needs_legal``, the
report is still written, and the escalation channel hears about it. A timeout is an escalation,
never a rejection.

Timing: Prefect fails a suspended run once its suspend timeout passes ("The flow was suspended and
never resumed"); after that nobody can answer it. The gate sets that timeout to SLA + 7 days
(``clausegate.gates.SUSPEND_GRACE``), so with the sweeper scheduled every few minutes the SLA
always acts first, and a sweeper outage of up to a week loses no gate. Latest escalation =
SLA + sweep interval. A zombie-run automation must treat Suspended/Paused runs as alive.
"""

from __future__ import annotations

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from clausegate.gates import load_slack_settings, resolve_gate, waiting_gates
from clausegate.gates.listing import format_delta
from clausegate.gates.notify import post_alert, post_escalation


@task(name="escalate-gate", cache_policy=NO_CACHE)
def escalate(flow_run_id: str, gate: str, sla_hours: float):
    return resolve_gate(flow_run_id, "escalate", reviewer="sla", via="sla", gate=gate,
                        comment=f"no decision within the SLA of {sla_hours:g} h", settings=load_slack_settings())


@flow(name="sla-sweeper", log_prints=False)
def sla_sweeper(dry_run: bool = False) -> list[dict]:
    """Escalate every waiting gate past its SLA; return what was done (one entry per overdue gate)."""
    logger = get_run_logger()
    overdue = [g for g in waiting_gates() if g.overdue]
    logger.info("%d gate(s) past their SLA", len(overdue))
    settings = load_slack_settings() if overdue and not dry_run else None
    done: list[dict] = []
    for gate in overdue:
        record = gate.record
        entry = {"flow_run_id": gate.flow_run_id, "contract": record.filename, "overdue_by": format_delta(-gate.sla_left)}
        if dry_run:
            done.append({**entry, "outcome": "dry_run"})
            continue
        outcome = escalate(gate.flow_run_id, record.key, record.sla_hours)
        entry.update(outcome=outcome.kind, message=outcome.message)
        logger.info("%s (%s): %s", record.filename, gate.flow_run_id, outcome.message)
        if settings is not None and outcome.kind == "resumed":
            posted = post_escalation(record, f"Overdue by {entry['overdue_by']}.", settings, return_state=True)
            entry["escalation_posted"] = posted.is_completed()
        elif settings is not None and outcome.kind not in ("already_decided",):
            post_alert(f":warning: SLA sweeper could not escalate {record.filename} (run {gate.flow_run_id}): "
                       f"{outcome.message}", settings, return_state=True)
        done.append(entry)
    return done


if __name__ == "__main__":
    sla_sweeper()
