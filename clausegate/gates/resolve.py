"""The one way a gate gets answered outside the Prefect UI: Slack buttons, /resolve, the CLI, the SLA sweeper.

    outcome = resolve_gate(run_id, "approve", reviewer="dana", via="cli", comment="ok")
    outcome.kind   # resumed | already_decided | not_suspended | unknown_run | not_a_gate | forbidden
                   # | rejected | timed_out | error
    outcome.message  # one sentence for the person who asked

Reads the run's state: Suspended at a ClauseGate gate → resume with the answer as the run input
(the server validates it against the stored form schema and stores it only if it accepts the
resume, so with concurrent clicks the first wins); anything else → a typed outcome saying why not,
naming who decided first when someone did. After a resume the Slack message is updated to the
decided view (best effort: a Slack failure is reported in ``slack_error``, the decision stands).
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.responses import SetStateStatus
from prefect.exceptions import ObjectNotFound
from pydantic import BaseModel, ConfigDict

from clausegate.gates import store
from clausegate.gates.model import DECISION_PAST, DecisionInfo, GateInput, GateRecord, normalise_decision, now_utc, stamp_key
from clausegate.gates.notify import SlackError, update_message, with_retries

OutcomeKind = Literal["resumed", "already_decided", "not_suspended", "unknown_run", "not_a_gate", "forbidden",
                      "rejected", "timed_out", "error"]


class ResolveOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: OutcomeKind
    flow_run_id: str
    message: str
    state: str | None = None
    decision: DecisionInfo | None = None  # resumed: this answer; already_decided: the first answer
    record: GateRecord | None = None
    slack_updated: bool | None = None
    slack_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.kind == "resumed"


def _outcome(kind: OutcomeKind, run_id: str, message: str, **kw) -> ResolveOutcome:
    return ResolveOutcome(kind=kind, flow_run_id=run_id, message=message, **kw)


def resolve_gate(run_id: str | UUID, decision: str, *, reviewer: str, via: str, comment: str = "",
                 slack_user_id: str | None = None, settings=None, gate: str | None = None) -> ResolveOutcome:
    """Answer the gate of flow run ``run_id``; see the module docstring. Never raises for expected cases.

    ``slack_user_id``: checked against the gate's allowed reviewers (Slack answers only).
    ``gate``: the gate key the answer was given for (a Slack button carries it); an answer to an
    earlier gate of the run (e.g. a message from before a ``flow-run retry``) is not applied to
    the current one. ``settings``: a SlackSettings block, to update the gate message.
    """
    rid = str(run_id).strip()
    word = normalise_decision(decision)
    if word is None:
        return _outcome("rejected", rid, f"'{decision}' is not a decision: use approve, changes or escalate.")
    try:
        uuid = UUID(rid)
    except ValueError:
        return _outcome("unknown_run", rid, f"'{rid}' is not a flow run id (a UUID like 0b9c…-…).")
    try:
        answer = GateInput(decision=word, reviewer=reviewer, comment=comment, via=via)
    except ValueError as exc:
        return _outcome("rejected", rid, f"invalid answer: {exc}")
    try:
        outcome = _resolve(uuid, answer, slack_user_id, gate)
    except (httpx.HTTPError, OSError) as exc:
        return _outcome("error", rid, f"could not reach the Prefect API to resume run {rid}: {exc}. "
                                      "Nothing was decided; try again.")
    if outcome.kind == "resumed":  # the audit log: who decided what, when, through which channel
        from clausegate import audit

        audit.record(audit.audit_event("gate.decided", actor=reviewer, flow_run_id=rid, decision=word, via=via,
                                       comment=comment, slack_user_id=slack_user_id, gate=gate))
    if outcome.kind in ("resumed", "already_decided") and settings is not None and outcome.record is not None:
        outcome = _update_slack(outcome, settings)
    return outcome


def _resolve(uuid: UUID, answer: GateInput, slack_user_id: str | None, gate: str | None) -> ResolveOutcome:
    rid = str(uuid)
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(uuid)
        except ObjectNotFound:
            return _outcome("unknown_run", rid, f"there is no flow run {rid} on this Prefect server.")
        state = flow_run.state
        state_name = state.name if state else "unknown"
        record = store.current_record(client, flow_run)
        paused = state is not None and state.is_paused()
        if gate is not None and record is not None and record.key != gate:
            earlier = store.read_record(client, uuid, gate)
            first = store.read_decision(client, uuid, gate) if earlier else None
            if first is not None:
                return _outcome("already_decided", rid, f"{earlier.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state=state_name, decision=first, record=earlier)
            return _outcome("not_suspended", rid, f"{record.filename}: this message is for an earlier gate of run "
                                                  f"{rid} ({gate}); the run is {state_name} at gate {record.key}. "
                                                  "Answer the newest message.", state=state_name, record=record)

        if not paused:
            if record is None:
                return _outcome("not_a_gate", rid, f"run {rid} ({flow_run.name}) is {state_name} and has no "
                                                   "ClauseGate gate.", state=state_name)
            first = store.read_decision(client, uuid, record.key)
            if first is not None:
                return _outcome("already_decided", rid, f"{record.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state=state_name, decision=first, record=record)
            if state is not None and state.is_failed() and "never resumed" in (state.message or ""):
                return _outcome("timed_out", rid, f"{record.filename}: run {rid} waited past Prefect's suspend "
                                                  "timeout and failed; it cannot be answered any more.",
                                state=state_name, record=record)
            waiting_soon = state is not None and (state.is_running() or state.is_pending() or state.is_scheduled())
            hint = " It has not reached its gate (yet); try again in a few seconds." if waiting_soon else ""
            return _outcome("not_suspended", rid, f"{record.filename}: run {rid} is {state_name}, not waiting for "
                                                  f"a decision.{hint}", state=state_name, record=record)

        if record is None:
            return _outcome("not_a_gate", rid, f"run {rid} is {state_name}, but not at a ClauseGate gate.",
                            state=state_name)
        if slack_user_id is not None and record.allowed_reviewers and slack_user_id not in record.allowed_reviewers:
            return _outcome("forbidden", rid, f"{record.filename}: you are not one of the reviewers allowed to "
                                              "decide this gate. Nothing was changed.",
                            state=state_name, record=record)

        result = client.resume_flow_run(uuid, run_input=answer.model_dump(mode="json"))
        if result.status == SetStateStatus.ACCEPT:
            info = store.read_decision(client, uuid, record.key) or DecisionInfo(
                decision=answer.decision, reviewer=answer.reviewer, comment=answer.comment, via=answer.via,
                decided_at=now_utc())
            new_state = result.state.name if result.state else "Resuming"
            return _outcome("resumed", rid, f"{record.filename}: {DECISION_PAST[info.decision]} by {info.reviewer}; "
                                            "the review continues.", state=new_state, decision=info, record=record)
        if result.status == SetStateStatus.ABORT:  # someone resumed it between our read and our resume
            first = store.read_decision(client, uuid, record.key)
            if first is not None:
                return _outcome("already_decided", rid, f"{record.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state="Resuming", decision=first, record=record)
            return _outcome("not_suspended", rid, f"{record.filename}: run {rid} is no longer waiting "
                                                  f"({result.details.reason if result.details else 'aborted'}).",
                            record=record)
        reason = getattr(result.details, "reason", "") or ""
        if result.state is not None and result.state.is_failed():
            return _outcome("timed_out", rid, f"{record.filename}: run {rid} waited past Prefect's suspend timeout "
                                              f"and failed; it cannot be answered any more ({reason}).",
                            state="Failed", record=record)
        return _outcome("rejected", rid, f"{record.filename}: Prefect refused the answer: {reason}. The run still "
                                         "waits.", state=state_name, record=record)


def _update_slack(outcome: ResolveOutcome, settings) -> ResolveOutcome:
    """Replace the buttons with who decided (idempotent; also heals a message a late click finds stale)."""
    record, info = outcome.record, outcome.decision
    try:
        with get_client(sync_client=True) as client:
            ref = store.read_slack_ref(client, record.flow_run_id, record.key)
            if ref is None or not ref.ok:
                return outcome
            if outcome.kind == "already_decided" and store.is_stamped(client, record.flow_run_id, record.key):
                return outcome
            with_retries(lambda: update_message(settings, record, ref, info))
            store.write_once(client, record.flow_run_id, stamp_key(record.key), {"by": outcome.decision.via})
    except SlackError as exc:
        return outcome.model_copy(update={"slack_updated": False, "slack_error": str(exc)})
    except (httpx.HTTPError, OSError) as exc:
        return outcome.model_copy(update={"slack_updated": False, "slack_error": f"Prefect API: {exc}"})
    return outcome.model_copy(update={"slack_updated": True})
