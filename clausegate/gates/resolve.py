"""The one way a gate gets answered outside the Prefect UI: Slack buttons, /resolve, the CLI, the SLA sweeper.

    outcome = resolve_gate(run_id, "approve", reviewer="dana", via="cli", comment="ok")
    outcome.kind   # resumed | already_decided | not_suspended | unknown_run | not_a_gate | forbidden
                   # | rejected | timed_out | error
    outcome.message  # one sentence for the person who asked

Reads the run's state: Suspended at a ClauseGate gate → write a signed **decision receipt** on the
run (this path, ``via``, received this answer from this verified user: the Slack user id, the CLI's
login, the sweeper), then resume with the answer and the receipt's nonce as the run input (the
server validates it against the stored form schema and stores it only if it accepts the resume, so
with concurrent clicks the first wins). The resumed flow attributes the decision from the receipt
and writes the one ``gate.decided`` audit event (``clausegate.gates.receipts``, ``step``). Anything
else → a typed outcome saying why not, naming who decided first when someone did, and a
``gate.refused`` audit event with the reason. After a resume the Slack message is updated to the
decided view (best effort: a Slack failure is reported in ``slack_error``, the decision stands).

``via`` is the path that received the answer and is only for the trusted callers in this
repository (the gateway after verifying Slack's signature, the CLI, the SLA sweeper): a receipt
needs the receipt key (``receipts.signing_key``), which Prefect API users do not have.
"""

from __future__ import annotations

import getpass
import logging
import time
from typing import Literal
from uuid import UUID

import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.responses import SetStateStatus
from prefect.exceptions import ObjectNotFound
from pydantic import BaseModel, ConfigDict

from clausegate import audit
from clausegate.errors import ClauseGateError
from clausegate.gates import authority, receipts, resolve_findings, store
from clausegate.gates import changes as tracked_changes
from clausegate.gates import channels as gate_channels
from clausegate.gates.channel import proves_person
from clausegate.gates.model import (
    DECISION_PAST,
    RECEIPT_FIELD,
    DecisionInfo,
    GateInput,
    GateRecord,
    normalise_decision,
    now_utc,
    stamp_key,
)
from clausegate.gates.slack_tasks import update_gate_message
from clausegate.slack import SlackError, with_retries

OutcomeKind = Literal["resumed", "already_decided", "not_suspended", "unknown_run", "not_a_gate", "forbidden",
                      "rejected", "timed_out", "error"]
SWEEPER_USER = "clausegate-sla-sweeper"
# The audit's reason for each refused outcome (not_suspended is "wrong_gate" when the answer named another gate).
REFUSAL_REASONS = {"already_decided": "already_decided", "not_suspended": "not_waiting", "unknown_run": "unknown_run",
                   "not_a_gate": "not_a_gate", "forbidden": "not_allowed_reviewer", "rejected": "invalid_answer",
                   "timed_out": "timed_out", "error": "prefect_unreachable"}
log = logging.getLogger("clausegate.gates")


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
    reason: str | None = None  # refused: the audit's reason (REFUSAL_REASONS, or wrong_gate)

    @property
    def ok(self) -> bool:
        return self.kind == "resumed"


def _outcome(kind: OutcomeKind, run_id: str, message: str, **kw) -> ResolveOutcome:
    return ResolveOutcome(kind=kind, flow_run_id=run_id, message=message, **kw)


def receiving_paths() -> tuple[str, ...]:
    """The ``via`` values resolve_gate answers for: every channel of the table, the CLI and the SLA sweeper."""
    return (*gate_channels.names(), "cli", "sla")


def _login() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no login name (e.g. no passwd entry): nothing to verify
        return None


def verified_user_of(via: str, slack_user_id: str | None, email: str | None = None,
                     verified: str | None = None) -> str | None:
    """Who the receiving path itself vouches for: the signed Slack request's user, the signed e-mail link's
    address, the CLI's login, the sweeper; any other channel: the identity its ``verify`` returned."""
    if via == "email":
        return email.strip().lower() if email else None
    return {"slack": slack_user_id, "cli": _login(), "sla": SWEEPER_USER}.get(via, verified)


def resolve_gate(run_id: str | UUID, decision: str, *, reviewer: str, via: str, comment: str = "",
                 slack_user_id: str | None = None, settings=None, gate: str | None = None,
                 slack_channel: str | None = None, slack_channel_name: str | None = None,
                 finding: str | None = None, email: str | None = None,
                 verified: str | None = None, changes: dict | None = None) -> ResolveOutcome:
    """Answer the gate of flow run ``run_id``; see the module docstring. Never raises for expected cases.

    ``via``: the path that received the answer (``slack``, ``email``, ``cli`` or ``sla``), recorded in the
    signed receipt with the user that path verified (Slack user id, the e-mail link's ``email`` address, the
    CLI's login, the sweeper).
    ``slack_user_id``, ``slack_channel`` (id) and ``slack_channel_name``: the verified Slack user and
    where the answer was given; a Slack answer counts only as :mod:`clausegate.gates.authority` says
    (the gate's channel, its allowed reviewers, never the submitter's own approval).
    ``gate``: the gate key the answer was given for (a Slack button carries it); an answer to an
    earlier gate of the run (e.g. a message from before a ``flow-run retry``) is not applied to
    the current one. ``settings``: a SlackSettings block, to update the gate message.
    Every answer that is not applied is written to the audit log (``gate.refused``).
    ``finding``: a per-finding gate's finding id (F1, …); None decides every open finding the answerer
    may decide (``clausegate.gates.resolve_findings``; a one-decision gate ignores it).
    ``verified``: the identity another channel's ``verify`` proved (its answers' ``via`` is the channel's name).
    ``changes``: answers on the gate's tracked changes (``{"C1": ChangeAnswer}``, :mod:`clausegate.gates.changes`),
    given in the same round; with them ``decision`` may be empty (only the changes are decided).
    """
    rid = str(run_id).strip()
    verified_user = verified_user_of(via, slack_user_id, email, verified)
    where = (slack_channel, slack_channel_name, settings)
    outcome = _attempt(rid, decision, reviewer=reviewer, via=via, comment=comment, slack_user_id=slack_user_id,
                       verified_user=verified_user, gate=gate, where=where, finding=finding, changes=changes)
    if outcome.kind != "resumed":  # the audit log: every refused attempt, who made it, through which path, why
        audit.record(audit.gate_refused(
            run_id=rid, reason=outcome.reason or REFUSAL_REASONS.get(outcome.kind, outcome.kind), via=str(via),
            who=reviewer, outcome=outcome.kind, message=outcome.message, decision=decision,
            gate=gate or (outcome.record.key if outcome.record else None), slack_user_id=slack_user_id,
            verified_user=verified_user))
    if outcome.kind in ("resumed", "already_decided") and settings is not None and outcome.record is not None \
            and not outcome.record.per_finding:  # a per-finding gate's message is updated by the resumed flow
        outcome = _update_slack(outcome, settings)
    return outcome


def _attempt(rid: str, decision: str, *, reviewer: str, via: str, comment: str, slack_user_id: str | None,
             verified_user: str | None, gate: str | None, where: tuple, finding: str | None = None,
             changes: dict | None = None) -> ResolveOutcome:
    paths = receiving_paths()
    if via not in paths:
        return _outcome("rejected", rid, f"'{str(via)[:40]}' is not a path resolve_gate answers for "
                                         f"({', '.join(paths)}); answers in the Prefect UI go through its form.")
    word = normalise_decision(decision) if decision or not changes else tracked_changes.as_decision(changes)
    if word is None:
        return _outcome("rejected", rid, f"'{decision[:40]}' is not a decision: use approve, changes or escalate.")
    try:
        uuid = UUID(rid)
    except ValueError:
        return _outcome("unknown_run", rid, f"'{rid[:100]}' is not a flow run id (a UUID like 0b9c…-…).")
    try:
        answer = GateInput(decision=word, reviewer=reviewer, comment=comment)
    except ValueError as exc:
        return _outcome("rejected", rid, f"invalid answer: {exc}")
    try:
        return _resolve(uuid, answer, via, slack_user_id, verified_user, gate, where, finding, changes,
                        findings_too=bool(decision))
    except (httpx.HTTPError, OSError) as exc:
        return _outcome("error", rid, f"could not reach the Prefect API to resume run {rid}: {exc}. "
                                      "Nothing was decided; try again.")
    except ClauseGateError as exc:  # the receipt key is unreadable (local_secrets): nothing was resumed
        return _outcome("error", rid, f"could not sign the decision receipt: {exc}. Nothing was decided.",
                        reason="receipt_key_unavailable")


def _suspend_timed_out(state) -> bool:
    """Prefect failed the run because nobody resumed it before its suspend timeout (``pause_expirations``)."""
    return state is not None and state.is_failed() and "never resumed" in (state.message or "")


def _timed_out(rid: str, record, state_name: str) -> ResolveOutcome:
    return _outcome("timed_out", rid, f"{record.filename}: run {rid} waited past Prefect's suspend timeout and "
                                      "failed; it cannot be answered any more.", state=state_name, record=record)


def _lost_race(client, uuid: UUID, record) -> ResolveOutcome:
    """Our resume conflicted with another answer's (409): report that answer once it is recorded (~seconds)."""
    rid = str(uuid)
    deadline = time.monotonic() + 5
    while True:
        first = store.read_decision(client, uuid, record.key)
        if first is not None:
            return _outcome("already_decided", rid, f"{record.filename}: already decided: {first.describe()}. "
                                                    "Your answer was not applied.",
                            state="Resuming", decision=first, record=record)
        if time.monotonic() > deadline:
            return _outcome("not_suspended", rid, f"{record.filename}: run {rid} is no longer waiting (another "
                                                  "answer was being applied); yours was not applied.", record=record)
        time.sleep(0.2)


def _slack_refusal(client, flow_run, record, answer: GateInput, slack_user_id: str | None, where: tuple,
                   *, channel_only: bool = False) -> authority.Refusal | None:
    """Why this Slack answer may not decide ``record`` (None: it may); see clausegate.gates.authority."""
    channel, channel_name, settings = where
    ref = store.read_slack_ref(client, flow_run.id, record.key)
    refusal = authority.slack_refusal(record, ref, decision=answer.decision, slack_user_id=slack_user_id,
                                      channel=channel, channel_name=channel_name, tags=flow_run.tags,
                                      settings=settings)
    return refusal if refusal is not None and (not channel_only or refusal.reason == "wrong_channel") else None


def _resolve(uuid: UUID, answer: GateInput, via: str, slack_user_id: str | None, verified_user: str | None,
             gate: str | None, where: tuple, finding: str | None = None, changes: dict | None = None,
             findings_too: bool = True) -> ResolveOutcome:
    rid = str(uuid)
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(uuid)
        except ObjectNotFound:
            return _outcome("unknown_run", rid, f"there is no flow run {rid} on this Prefect server.")
        record = store.current_record(client, flow_run)
        if record is not None and record.per_finding:  # between two answers: wait for the next round
            flow_run = resolve_findings.await_round(client, flow_run)
            record = store.current_record(client, flow_run) or record
        state = flow_run.state
        state_name = state.name if state else "unknown"
        paused = state is not None and state.is_paused()
        if via == "slack" and record is not None:  # outside the gate's channel: not even who decided
            refusal = _slack_refusal(client, flow_run, record, answer, slack_user_id, where, channel_only=True)
            if refusal is not None:
                return _outcome("forbidden", rid, refusal.message, state=state_name, record=record,
                                reason=refusal.reason)
        if gate is not None and record is not None and record.key != gate:
            earlier = store.read_record(client, uuid, gate)
            first = store.read_decision(client, uuid, gate) if earlier else None
            if first is not None:
                return _outcome("already_decided", rid, f"{earlier.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state=state_name, decision=first, record=earlier)
            return _outcome("not_suspended", rid, f"{record.filename}: this message is for an earlier gate of run "
                                                  f"{rid} ({gate[:100]}); the run is {state_name} at gate "
                                                  f"{record.key}. Answer the newest message.",
                            state=state_name, record=record, reason="wrong_gate")

        if not paused:
            if record is None:
                return _outcome("not_a_gate", rid, f"run {rid} ({flow_run.name}) is {state_name} and has no "
                                                   "ClauseGate gate.", state=state_name)
            if record.per_finding and state is not None and state.is_final() and not state.is_failed():
                return _outcome("already_decided", rid, f"{record.filename}: already decided: "
                                f"{resolve_findings.finished_message(client, record)}. Your answer was not applied.",
                                state=state_name, record=record)
            first = store.read_decision(client, uuid, record.key) if not record.per_finding else None
            if first is not None:
                return _outcome("already_decided", rid, f"{record.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state=state_name, decision=first, record=record)
            if _suspend_timed_out(state):
                return _timed_out(rid, record, state_name)
            waiting_soon = state is not None and (state.is_running() or state.is_pending() or state.is_scheduled())
            hint = " It has not reached its gate (yet); try again in a few seconds." if waiting_soon else ""
            return _outcome("not_suspended", rid, f"{record.filename}: run {rid} is {state_name}, not waiting for "
                                                  f"a decision.{hint}", state=state_name, record=record)

        if record is None:
            key = store.pause_key_of(flow_run)
            why = (f" It waits at {key}, but that gate's record is missing or cannot be read (the log says which)."
                   if key and key.startswith("gate-") else "")
            return _outcome("not_a_gate", rid, f"run {rid} is {state_name}, but not at a ClauseGate gate.{why}",
                            state=state_name)
        refusal = _slack_refusal(client, flow_run, record, answer, slack_user_id, where) if via == "slack" else None
        if refusal is None and record.allowed_reviewers and slack_user_id is not None \
                and slack_user_id not in record.allowed_reviewers:
            refusal = authority.Refusal("not_allowed_reviewer", f"{record.filename}: you are not one of the "
                                                                "reviewers allowed to decide this gate.")
        if refusal is None and proves_person(via) and via != "slack" and not record.per_finding \
                and (verified_user or "") not in {*record.allowed_reviewers, *record.allowed_addresses}:
            refusal = authority.Refusal("not_in_role", f"{record.filename}: {verified_user} is not one of the "
                                                       "people allowed to decide this gate.")
        if refusal is None and proves_person(via) and via != "slack" and answer.decision == "approve" \
                and verified_user in record.submitters:  # Slack's own-contract rule is in authority.slack_refusal
            refusal = authority.Refusal("own_contract", f"{record.filename}: you submitted this contract, so you "
                                                        "cannot approve it; another person must.")
        if refusal is not None:  # channel, reviewers, own contract (clausegate.gates.authority)
            return _outcome("forbidden", rid, refusal.message, state=state_name, record=record,
                            reason=refusal.reason)

        if record.per_finding:  # a decision per finding and role (clausegate.gates.resolve_findings)
            return resolve_findings.resolve_with_retry(client, flow_run, record, answer, via=via,
                                                       slack_user_id=slack_user_id, verified_user=verified_user,
                                                       finding=finding, outcome=_outcome, changes=changes,
                                                       findings_too=findings_too)
        if changes:  # a one-decision gate has no tracked changes to decide
            return _outcome("rejected", rid, f"{record.filename}: this gate asks no decision on tracked changes "
                                             f"({tracked_changes.CODE}); answer it with approve, changes or escalate.",
                            state=state_name, record=record, reason="invalid_answer")
        # The receipt first (this path received this answer), then the resume that names it.
        receipt = receipts.issue(flow_run_id=rid, gate=record.key, decision=answer.decision, reviewer=answer.reviewer,
                                 comment=answer.comment, via=via, verified_user=verified_user,
                                 evidence=receipts.evidence_of(record))
        store.write_receipt(client, receipt)
        run_input = {**answer.model_dump(mode="json"), RECEIPT_FIELD: receipt.nonce}
        try:
            result = client.resume_flow_run(uuid, run_input=run_input)
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code != 409:
                raise
            # PostgreSQL: another answer's resume holds the run's state row; it wins, this one was not applied
            store.delete_receipt(client, receipt)
            return _lost_race(client, uuid, record)
        with_receipt = True
        if result.status == SetStateStatus.REJECT and RECEIPT_FIELD in (getattr(result.details, "reason", "") or ""):
            with_receipt = False
            # A gate opened by an older ClauseGate (its stored form forbids unknown fields): answer without the
            # receipt; the decision is then recorded as coming from the UI/API (unverified), never wrongly as ours.
            log.warning("run %s: gate %s predates decision receipts; answering without one (recorded as ui)",
                        rid, record.key)
            result = client.resume_flow_run(uuid, run_input=answer.model_dump(mode="json"))
        if result.status != SetStateStatus.ACCEPT or not with_receipt:
            store.delete_receipt(client, receipt)
        if result.status == SetStateStatus.ACCEPT:
            info = store.read_decision(client, uuid, record.key) or DecisionInfo(
                decision=answer.decision, reviewer=answer.reviewer, comment=answer.comment, via=via,
                reviewer_verified=receipts.proves_reviewer(receipt), verified_user=verified_user, decided_at=now_utc())
            new_state = result.state.name if result.state else "Resuming"
            return _outcome("resumed", rid, f"{record.filename}: {DECISION_PAST[info.decision]} by {info.reviewer}; "
                                            "the review continues.", state=new_state, decision=info, record=record)
        if result.status == SetStateStatus.ABORT:  # someone resumed it between our read and our resume
            first = store.read_decision(client, uuid, record.key)
            if first is not None:
                return _outcome("already_decided", rid, f"{record.filename}: already decided: {first.describe()}. "
                                                        "Your answer was not applied.",
                                state="Resuming", decision=first, record=record)
            now = client.read_flow_run(uuid).state  # or Prefect failed it as its suspend timeout ran out
            if _suspend_timed_out(now):
                return _timed_out(rid, record, now.name)
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
            with_retries(lambda: update_gate_message(settings, record, ref, info))
            store.write_once(client, record.flow_run_id, stamp_key(record.key), {"by": outcome.decision.via})
    except SlackError as exc:
        return outcome.model_copy(update={"slack_updated": False, "slack_error": str(exc)})
    except (httpx.HTTPError, OSError) as exc:
        return outcome.model_copy(update={"slack_updated": False, "slack_error": f"Prefect API: {exc}"})
    return outcome.model_copy(update={"slack_updated": True})
