"""The flow side of a per-finding gate: suspend once per answer until every required role has answered.

    outcome = run_rounds(record, channels, wait)      # from run_gate, for a record with roles

Round ``n`` suspends under pause key ``round_key(gate, n)`` with the gate's per-finding form
(:func:`clausegate.gates.findings.findings_form`). Each answer resumes the run; Prefect re-runs the
flow from the top (finished tasks from cache), and here ``suspend_flow_run`` with the keys that already
fired returns their answers one after the other, so the rounds replay without waiting. The answers fill
the slots (:func:`clausegate.gates.findings.progress`); while a slot is open every channel shows the answer
(``Channel.update``) and the run suspends again under the next key. An answer that filled
nothing (e.g. the Prefect UI form for a role's finding) is audited as ``gate.refused``
(``role_unverified``) and the form's description says where to answer instead.
"""

from __future__ import annotations

from uuid import NAMESPACE_URL, uuid5

from prefect import get_run_logger
from prefect.client.orchestration import get_client

from clausegate import audit
from clausegate.gates import changes as tracked_changes
from clausegate.gates import findings, store
from clausegate.gates.channel import ChannelUndelivered, escalate_all, update_all
from clausegate.gates.gate_terms import form_lines
from clausegate.gates.model import DecisionInfo, GateRecord, round_key
from clausegate.review.money import eur_text
from clausegate.review.schemas import GateDecision, Notice


def describe_rounds(record: GateRecord, prog: findings.Progress) -> str:
    """Markdown above the Prefect UI form: each finding, who must decide it, and what is decided so far."""
    lines = [f"### {record.filename}: a decision per finding", "",
             f"Playbook **{record.playbook}**. SLA: decide by **{record.sla_deadline:%Y-%m-%d %H:%M} UTC**. "
             "Findings with a role must be decided where the gate asked you (a channel proves who you are; "
             "this form cannot).", *form_lines(record)]
    for _, fid, why in prog.refused[-5:]:
        lines += ["", f"**Not counted** ({fid}): {why}"]
    for fp in prog.findings:
        f = fp.finding
        pages = ", ".join(map(str, f.pages)) or "-"
        who = " and ".join(fp.roles) or "anyone"
        lines += ["", f"**{f.id} · {f.category}** · p. {pages} · decides: {who} · {findings.describe_slots(fp)}", "",
                  f"> {' '.join(f.text.split())}"]
    lines += tracked_changes.describe_lines(prog.changes, record.change_findings)
    lines += ["", f"Cost so far: {eur_text(record.cost_eur)}."]
    return "\n".join(lines)


def refused_event_id(flow_run_id: str, rkey: str, fid: str):
    return uuid5(NAMESPACE_URL, f"clausegate:gate.refused:{flow_run_id}:{rkey}:{fid}")


def current_progress(client, record: GateRecord) -> tuple[findings.Progress, store.GateExtras]:
    extras = store.read_extras(client, record.flow_run_id, record.key)
    rounds = store.read_rounds(client, record.flow_run_id, record.key)
    return findings.progress(record, rounds, extras.assignments), extras


def run_rounds(record: GateRecord, channels: list, wait) -> tuple[list[GateDecision], str, list[Notice]]:
    """See the module docstring; ``wait(form, record, key)`` suspends (or returns a fired round's answer)."""
    logger = get_run_logger()
    rounds: list = []
    n = 0
    while True:
        with get_client(sync_client=True) as client:
            extras = store.read_extras(client, record.flow_run_id, record.key)
        prog = findings.progress(record, rounds, extras.assignments)
        if prog.complete:
            break
        rkey = round_key(record.key, n)
        with get_client(sync_client=True) as client:
            fired = store.read_decision(client, record.flow_run_id, rkey) is not None
        if not fired and n > 0:  # about to wait again: show this answer in every channel
            update_all(record, channels, logger)
        form = findings.findings_form(record).with_initial_data(description=describe_rounds(record, prog))
        wait(form, record, rkey)  # suspends here (the process exits) until the next answer
        with get_client(sync_client=True) as client:
            info = store.read_decision(client, record.flow_run_id, rkey)
        rounds.append(info)
        _audit_refusals(record, rkey, info, findings.progress(record, rounds, extras.assignments), n)
        n += 1
    return _finish(record, prog, channels, logger)





def _audit_refusals(record: GateRecord, rkey: str, info, prog: findings.Progress, n: int) -> None:
    for rnd, fid, why in prog.refused:
        if rnd != n:
            continue
        event = audit.gate_refused(run_id=record.flow_run_id, reason="role_unverified", via=info.via if info else "ui",
                                   who=info.reviewer if info else "unknown", outcome="not_counted", message=why,
                                   gate=rkey, decision=info.findings.get(fid) if info else None)
        audit.record(event.model_copy(update={"id": refused_event_id(record.flow_run_id, rkey, fid)}))


def _finish(record: GateRecord, prog: findings.Progress, channels: list, logger):
    """Every slot filled: one GateDecision and one gate.decided event per (finding, role); the message stamped."""
    decisions, notices = [], []
    for fp in prog.findings:
        for role, a in fp.answers.items():
            gate = f"{record.key}/{fp.finding.id}/{role}"
            decisions.append(GateDecision(gate=gate, categories=[fp.finding.category], decision=a.decision,
                                          reviewer=a.reviewer, comment=a.comment, via=a.via, decided_at=a.decided_at,
                                          finding=fp.finding.id, role=None if role == findings.ANY_ROLE else role))
            audit.record(audit.gate_decided(flow_run_id=record.flow_run_id, gate=gate, decision=a.decision, via=a.via,
                                            reviewer=a.reviewer, reviewer_verified=a.verified_user is not None,
                                            verified_user=a.verified_user, comment=a.comment,
                                            decided_at=a.decided_at))
    verified = {c.change.id: c.answer.verified_user for c in prog.changes if c.answer is not None}
    for d in tracked_changes.gate_decisions(record.key, prog.changes):  # the counterparty's changes, each decided
        decisions.append(d)
        user = verified.get(d.change.change.id)
        audit.record(audit.gate_decided(flow_run_id=record.flow_run_id, gate=d.gate, decision=d.decision, via=d.via,
                                        reviewer=d.reviewer, reviewer_verified=user is not None, verified_user=user,
                                        comment=d.comment, decided_at=d.decided_at))
    status = prog.status
    logger.info("gate %s: every required role answered; status %s", record.key, status)
    notices += [Notice(code=code, message=f"The gate's {name} view still asks for a decision: {error}")
                for name, code, error in update_all(record, channels, logger)]
    escalated = [fp.finding for fp in prog.findings if fp.outcome == "escalate"]
    if escalated:
        notices.append(Notice(code="CG-GATE-ESCALATED", message=", ".join(f"{f.id} {f.category}" for f in escalated)
                              + ": escalated; legal must review before this contract proceeds."))
    by_person = [a for fp in prog.findings for a in fp.answers.values() if a.decision == "escalate" and a.via != "sla"]
    if by_person and channels:  # the sweeper sends its own notice; a person's is sent here
        a = by_person[0]
        info = DecisionInfo(decision="escalate", reviewer=a.reviewer, comment=a.comment, via=a.via,
                            decided_at=a.decided_at)
        _, errors = escalate_all(record, channels, f"escalated by {a.reviewer}", decided=info)
        if errors:
            notices.append(Notice(code=ChannelUndelivered.code, message=f"Escalated by {a.reviewer}, but the "
                                  f"escalation was not delivered ({'; '.join(errors)[:300]}); tell legal."))
    return decisions, status, notices
