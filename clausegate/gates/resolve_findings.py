"""``resolve_gate`` for a per-finding gate: which findings this answer decides, then one resume round.

The roles are checked here (:func:`clausegate.gates.findings.fillable`, the one slot check) for the paths that
answer through ``resolve_gate`` (a Slack or e-mail answer must come from a person of the finding's role, or its
assignee; the CLI cannot prove a person, so it decides
only findings without a role; the SLA sweeper escalates every open finding), and again by the resumed
flow (:mod:`clausegate.gates.findings`), which is what counts for answers from the Prefect UI.
Between two answers the run is briefly not waiting (it re-runs to the next round): an answer
arriving then waits for the run to suspend again (:func:`await_round`, up to ``ROUND_WAIT_SECONDS``).
"""

from __future__ import annotations

import time
from uuid import UUID

import httpx
from prefect.client.schemas.responses import SetStateStatus

from clausegate.gates import changes as tracked
from clausegate.gates import findings, receipts, store
from clausegate.gates.channel import proves_person
from clausegate.gates.model import DECISION_PAST, RECEIPT_FIELD, GateInput, GateRecord
from clausegate.gates.rounds import current_progress

ROUND_WAIT_SECONDS = 180.0
RACE_RETRIES = 4


def await_round(client, flow_run, deadline_s: float = ROUND_WAIT_SECONDS):
    """The run, once it waits at a gate again (or has finished); returns the latest read of it."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        state = flow_run.state
        if state is None or state.is_paused() or state.is_final():
            return flow_run
        time.sleep(0.5)
        flow_run = client.read_flow_run(flow_run.id)
    return flow_run


def finished_message(client, record: GateRecord) -> str:
    prog, _ = current_progress(client, record)
    return "; ".join(f"{fp.finding.id}: {findings.describe_slots(fp)}" for fp in prog.findings)


def resolve_with_retry(client, flow_run, record: GateRecord, answer: GateInput, **kw):
    """:func:`resolve_round`; when another answer resumed the run first, wait for the next round and try again."""
    for _ in range(RACE_RETRIES):
        outcome = resolve_round(client, flow_run, record, answer, **kw)
        if outcome.reason != "race":
            return outcome
        flow_run = await_round(client, client.read_flow_run(flow_run.id))
        if flow_run.state is None or not flow_run.state.is_paused():
            break
    return outcome


def resolve_round(client, flow_run, record: GateRecord, answer: GateInput, *, via: str, slack_user_id: str | None,
                  verified_user: str | None, finding: str | None, outcome, changes: dict | None = None,
                  findings_too: bool = True):
    """Decide the findings this answerer may decide (``finding``: one of them) in one resume; see the module.

    ``changes``: answers on tracked changes (C1 → ChangeAnswer) decided in the same round; ``findings_too`` False:
    only those (``clausegate resolve RUN --change C1=accept`` without a decision)."""
    rid = str(flow_run.id)
    state_name = flow_run.state.name if flow_run.state else "unknown"
    pause_key = store.pause_key_of(flow_run) or record.key
    prog, _ = current_progress(client, record)
    if finding and prog.get(finding) is None:
        ids = ", ".join(fp.finding.id for fp in prog.findings)
        return outcome("rejected", rid, f"{record.filename}: there is no finding '{finding[:20]}' at this gate "
                                        f"(its findings: {ids}).", state=state_name, record=record,
                       reason="unknown_finding")
    ids, problems = findings.fillable(record, prog, via=via, user=verified_user, finding=finding) if findings_too \
        else ([], [])
    change_ids, change_problems = findings.fillable_changes(record, prog, via=via, user=verified_user,
                                                            wanted=list(changes or {}))
    if changes and not change_ids:
        why = f"{record.filename}: {' '.join(change_problems[:3])} Nothing was changed."
        if all("already decided" in p for p in change_problems):
            return outcome("already_decided", rid, why, state=state_name, record=record)
        if all("no such tracked change" in p for p in change_problems):
            return outcome("rejected", rid, why, state=state_name, record=record, reason="invalid_answer")
        return outcome("forbidden", rid, why, state=state_name, record=record,
                       reason="not_in_role" if proves_person(via) else "role_unverified")
    problems += change_problems
    if via == "sla" and not ids and any(not c.done for c in prog.changes):  # only changes open: the SLA closes it
        ids = [fp.finding.id for fp in prog.findings]  # already decided (first answer wins): nothing is overwritten
    elif not ids and not change_ids and any(not c.done for c in prog.changes):
        open_changes = ", ".join(c.change.id for c in prog.changes if not c.done)
        return outcome("rejected", rid, f"{record.filename}: every finding is decided; the tracked changes "
                                        f"{open_changes} are open: answer each with accept, reject or counter "
                                        f"(`clausegate resolve {rid} --change C1=accept`, the Slack buttons, or the "
                                        "Prefect form).", state=state_name, record=record, reason="invalid_answer")
    if not ids and not change_ids:
        if problems and all("already decided" in p for p in problems):
            return outcome("already_decided", rid, f"{record.filename}: {' '.join(problems)} Your answer was not "
                                                   "applied.", state=state_name, record=record)
        reason = "not_in_role" if proves_person(via) else "role_unverified"
        why = " ".join(problems[:3]) or "every finding you may decide is decided."
        return outcome("forbidden", rid, f"{record.filename}: {why} Nothing was changed.", state=state_name,
                       record=record, reason=reason)
    decided = {fid: answer.decision for fid in ids}
    changed = {cid: changes[cid] for cid in change_ids}
    in_findings = ids + [c.finding for c in record.changes if c.id in changed]
    receipt = receipts.issue(flow_run_id=rid, gate=pause_key, decision=receipts.signed_summary(decided, changed),
                             reviewer=answer.reviewer, comment=answer.comment, via=via, verified_user=verified_user,
                             evidence=receipts.evidence_of(record, in_findings))
    store.write_receipt(client, receipt)
    run_input = {"reviewer": answer.reviewer, "comment": answer.comment, **decided,
                 **tracked.run_input(changed), RECEIPT_FIELD: receipt.nonce}
    try:
        result = client.resume_flow_run(UUID(rid), run_input=run_input)
    except httpx.HTTPStatusError as exc:
        store.delete_receipt(client, receipt)
        if exc.response.status_code != 409:
            raise
        return outcome("not_suspended", rid, f"{record.filename}: another answer was being applied at the same "
                                             "moment; yours was not applied. Answer again in a few seconds.",
                       record=record, reason="race")
    if result.status != SetStateStatus.ACCEPT:
        store.delete_receipt(client, receipt)
        reason = getattr(result.details, "reason", "") or "not accepted"
        race = result.status == SetStateStatus.ABORT
        return outcome("not_suspended", rid, f"{record.filename}: Prefect did not take the answer ({reason}); "
                                             "answer again in a few seconds.", state=state_name, record=record,
                       reason="race" if race else None)
    info = store.read_decision(client, UUID(rid), pause_key)
    skipped = f" Not counted: {' '.join(problems)}" if problems else ""
    what = [f"{', '.join(ids)} {DECISION_PAST[answer.decision]}"] if ids else []
    what += [f"{cid} {tracked.CHANGE_PAST[changed[cid].decision]}" for cid in change_ids]
    message = (f"{record.filename}: {'; '.join(what)} by {info.reviewer if info else answer.reviewer}; the gate "
               f"message shows who still has to answer.{skipped}")
    return outcome("resumed", rid, message, state="Resuming", decision=info, record=record)
