"""What a person does at a gate besides deciding: acknowledge ("I'm on it"), reassign a finding, extend the SLA once.

    outcome = act(run_id, "ack", user_id="U0DANA", reviewer="dana (U0DANA)", via="slack", settings=settings)
    outcome = act(run_id, "reassign", finding="F1", target="U0LEE", user_id=..., ...)
    outcome = act(run_id, "extend", hours=4, user_id=..., ...)

Each is a write-once flow-run input on the waiting run (``clausegate-ack-…``, ``clausegate-assign-…``,
``clausegate-extend-…``: see :mod:`clausegate.gates.model`), one audit event (``gate.acknowledged``,
``gate.reassigned``, ``gate.extended``) and, for a per-finding gate, a ``chat.update`` of the gate
message. Who: an acknowledgement by anyone who can answer the gate (Slack or the CLI; the path is
recorded); a reassignment only from Slack, by a person of the finding's role (or its assignee), to
another person of the same role; the SLA extension once per gate, from Slack by a person of one of
the gate's roles (any allowed reviewer for a gate without roles, or the CLI's operator:
``clausegate resolve RUN extend --hours N``), at most the gate's own SLA again. From Slack, each also
follows the decisions' rule (:func:`slack_refusal`: the gate's channel, never a DM; its allowed
reviewers; at a per-finding gate a person who may decide one of its open findings).
"""

from __future__ import annotations

import logging
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from pydantic import BaseModel, ConfigDict

from clausegate import audit
from clausegate.gates import authority, findings, store
from clausegate.gates.channel import proves_person
from clausegate.gates.model import DECISIONS, GateRecord, ack_key, assign_key, extend_key, now_utc
from clausegate.gates.rounds import current_progress
from clausegate.gates.slack_channel import refresh_message
from clausegate.slack import SlackError, post_message, with_retries

log = logging.getLogger("clausegate.gates")
ACTIONS = ("ack", "reassign", "extend")


class ActionOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    ok: bool
    message: str
    reason: str | None = None


def act(run_id: str, action: str, *, user_id: str | None, reviewer: str, via: str, settings=None,
        finding: str | None = None, target: str | None = None, hours: float | None = None,
        slack_channel: str | None = None, slack_channel_name: str | None = None) -> ActionOutcome:
    """Apply one gate action (see the module docstring); never raises for expected cases.
    ``slack_channel`` (id) and ``slack_channel_name``: where a Slack answer was given."""
    try:
        uuid = UUID(str(run_id).strip())
    except ValueError:
        return ActionOutcome(ok=False, message=f"'{str(run_id)[:100]}' is not a flow run id.", reason="unknown_run")
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(uuid)
        except ObjectNotFound:
            return ActionOutcome(ok=False, message=f"there is no flow run {uuid}.", reason="unknown_run")
        record = store.current_record(client, flow_run)
        state = flow_run.state
        if record is None or state is None or state.is_final():
            return ActionOutcome(ok=False, message=f"run {uuid} is not waiting at a gate.", reason="not_waiting")
        refused = slack_refusal(client, flow_run, record, action, user_id=user_id, channel=slack_channel,
                                channel_name=slack_channel_name, settings=settings) if via == "slack" else None
        if refused is not None:
            outcome = ActionOutcome(ok=False, reason=refused.reason, message=refused.message)
        elif action == "ack":
            outcome = _ack(client, record, user_id=user_id, reviewer=reviewer, via=via)
        elif action == "reassign":
            outcome = _reassign(client, record, user_id=user_id, reviewer=reviewer, via=via, finding=finding,
                                target=target, settings=settings)
        elif action == "extend":
            outcome = _extend(client, record, user_id=user_id, reviewer=reviewer, via=via, hours=hours)
        else:
            return ActionOutcome(ok=False, message=f"unknown gate action '{action[:20]}'.", reason="invalid_answer")
    if not outcome.ok:
        audit.record(audit.gate_refused(run_id=str(uuid), reason=outcome.reason or "refused", via=via, who=reviewer,
                                        outcome=f"{action}_refused", message=outcome.message, gate=record.key,
                                        slack_user_id=user_id))
    elif settings is not None and record.per_finding:
        try:
            with_retries(lambda: refresh_message(record, settings))
        except SlackError as exc:
            log.warning("gate %s: %s recorded, but the Slack message was not updated: %s", record.key, action, exc)
    return outcome


def slack_refusal(client, flow_run, record: GateRecord, answer: str, *, user_id: str | None, channel: str | None,
                  channel_name: str | None, settings, finding: str | None = None) -> authority.Refusal | None:
    """Why a Slack ``answer`` (a decision or ``ack``/``reassign``/``extend``) may not count at this gate, None when
    it may: the decisions' rule (:func:`clausegate.gates.authority.slack_refusal`), then at a per-finding gate
    :func:`clausegate.gates.findings.fillable`: a decision needs a finding this person may decide (``finding``:
    that one); an acknowledgement a person of one of the open roles, or an assignee."""
    ref = store.read_slack_ref(client, flow_run.id, record.key)
    refused = authority.slack_refusal(record, ref, decision=answer, slack_user_id=user_id, channel=channel,
                                      channel_name=channel_name, tags=flow_run.tags, settings=settings)
    if refused is not None or not record.per_finding or answer in ("reassign", "extend"):
        return refused  # reassign and extend check their own roles (below)
    prog, _ = current_progress(client, record)
    ids, problems = findings.fillable(record, prog, via="slack", user=user_id,
                                      finding=finding if answer in DECISIONS else None)
    if ids or (problems and all("already decided" in p for p in problems)):
        return None
    if problems:
        return authority.Refusal("not_in_role", f"{record.filename}: refused: {problems[0]} Nothing was changed.")
    roles = sorted({r for fp in prog.findings for r in fp.open_slots})
    what = "acknowledge this gate" if answer == "ack" else "decide any of its open findings"
    return authority.Refusal("not_in_role", f"{record.filename}: refused: not in role {' or '.join(roles)} (nor "
                                            f"assigned one of its findings), so you cannot {what}. Nothing was "
                                            "changed.")


def precheck(run_id: str, answer: str, *, user_id: str, channel: str | None, channel_name: str | None,
             settings, reviewer: str, finding: str | None = None) -> str | None:
    """The refusal a ``/resolve`` gets at once (audited here), or None: the answer goes on to be applied, which
    checks again. None too when the run is not waiting at a gate now (the full path says why)."""
    try:
        uuid = UUID(str(run_id).strip())
    except ValueError:
        return None
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(uuid)
        except ObjectNotFound:
            return None
        record = store.current_record(client, flow_run)
        if record is None or flow_run.state is None or not flow_run.state.is_paused():
            return None
        refused = slack_refusal(client, flow_run, record, answer, user_id=user_id, channel=channel,
                                channel_name=channel_name, settings=settings, finding=finding)
    if refused is not None:
        audit.record(audit.gate_refused(run_id=str(uuid), reason=refused.reason, via="slack", who=reviewer,
                                        outcome="forbidden" if answer in DECISIONS else f"{answer}_refused",
                                        message=refused.message, decision=answer if answer in DECISIONS else None,
                                        gate=record.key, slack_user_id=user_id))
    return refused.message if refused is not None else None


def _ack(client, record: GateRecord, *, user_id, reviewer, via) -> ActionOutcome:
    who = user_id or reviewer
    at = now_utc()
    value = {"user": user_id, "reviewer": reviewer, "via": via, "at": at.isoformat()}
    if not store.write_once(client, record.flow_run_id, ack_key(record.key, who), value):
        return ActionOutcome(ok=True, message=f"{record.filename}: you had already acknowledged this gate.")
    audit.record(audit.audit_event("gate.acknowledged", actor=reviewer, flow_run_id=record.flow_run_id,
                                   gate=record.key, via=via, slack_user_id=user_id, at=at.isoformat()))
    return ActionOutcome(ok=True, message=f"{record.filename}: acknowledged by {reviewer}; the gate shows you are "
                                          "on it.")


def _roles_of(record: GateRecord, user_id: str | None) -> set[str]:
    return {role for role, people in record.role_members.items() if user_id and user_id in people}


def _reassign(client, record: GateRecord, *, user_id, reviewer, via, finding, target, settings) -> ActionOutcome:
    if not proves_person(via) or not user_id:
        return ActionOutcome(ok=False, reason="role_unverified", message="a reassignment must come from Slack "
                             "(`/resolve RUN F1 reassign @person`): only Slack proves who asks.")
    prog, extras = current_progress(client, record)
    fp = prog.get(finding or "")
    if fp is None:
        return ActionOutcome(ok=False, reason="unknown_finding", message=f"{record.filename}: no finding "
                             f"'{(finding or '')[:20]}' at this gate.")
    target = (target or "").strip().lstrip("<@").rstrip(">").split("|")[0]
    mine = [r for r in fp.open_slots if r in _roles_of(record, user_id) or fp.assignees.get(r) == user_id]
    if not mine:
        return ActionOutcome(ok=False, reason="not_in_role", message=f"{record.filename}: {fp.finding.id} has no open "
                             "role of yours to reassign.")
    role = next((r for r in mine if target in record.role_members.get(r, [])), None)
    if role is None or target == user_id:
        return ActionOutcome(ok=False, reason="not_in_role", message=f"{record.filename}: {target or 'nobody'} is not "
                             f"another person of role {' or '.join(mine)}; reassign to someone with the same role.")
    n = len([e for e in extras.assignment_log if e.get("finding") == fp.finding.id and e.get("role") == role])
    value = {"finding": fp.finding.id, "role": role, "to": target, "by": reviewer, "by_user": user_id,
             "at": now_utc().isoformat(), "n": n}
    while not store.write_once(client, record.flow_run_id, assign_key(record.key, fp.finding.id, role, n), value):
        n += 1
        value["n"] = n
    audit.record(audit.audit_event("gate.reassigned", actor=reviewer, flow_run_id=record.flow_run_id, gate=record.key,
                                   finding=fp.finding.id, role=role, to=target, via=via, slack_user_id=user_id))
    if settings is not None:
        ref = store.read_slack_ref(client, record.flow_run_id, record.key)
        if ref is not None and ref.ok:
            try:
                with_retries(lambda: post_message(settings, ref.channel, f"<@{target}>: {reviewer} reassigned "
                                                  f"{fp.finding.id} ({fp.finding.category}, role {role}) of "
                                                  f"{record.filename} to you.", None, thread_ts=ref.ts))
            except SlackError as exc:
                log.warning("gate %s: reassignment not announced in Slack: %s", record.key, exc)
    return ActionOutcome(ok=True, message=f"{record.filename}: {fp.finding.id} ({role}) reassigned to {target}.")


def _extend(client, record: GateRecord, *, user_id, reviewer, via, hours) -> ActionOutcome:
    hours = float(hours or record.sla_hours)
    if not 0 < hours <= record.sla_hours:
        return ActionOutcome(ok=False, reason="invalid_answer", message=f"{record.filename}: the SLA can be extended "
                             f"once by at most its own {record.sla_hours:g} h.")
    gate_roles = {r for rs in record.roles.values() for r in rs}
    if gate_roles and (not proves_person(via) or not (_roles_of(record, user_id) & gate_roles)):
        return ActionOutcome(ok=False, reason="not_in_role", message=f"{record.filename}: refused: not in role "
                             f"{' or '.join(sorted(gate_roles))}: only a person of one of the gate's roles, answering "
                             "in Slack, can extend its SLA.")
    if via == "slack" and record.allowed_reviewers and user_id not in record.allowed_reviewers:
        return ActionOutcome(ok=False, reason="not_allowed_reviewer", message=f"{record.filename}: you are not one "
                             "of this gate's reviewers.")
    value = {"hours": hours, "by": reviewer, "by_user": user_id, "via": via, "at": now_utc().isoformat()}
    if not store.write_once(client, record.flow_run_id, extend_key(record.key), value):
        return ActionOutcome(ok=False, reason="already_extended", message=f"{record.filename}: the SLA was already "
                             "extended once; it cannot be extended again.")
    audit.record(audit.audit_event("gate.extended", actor=reviewer, flow_run_id=record.flow_run_id, gate=record.key,
                                   hours=hours, via=via, slack_user_id=user_id))
    return ActionOutcome(ok=True, message=f"{record.filename}: SLA extended once by {hours:g} h.")

