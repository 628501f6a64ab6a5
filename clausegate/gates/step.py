"""The gate step the contract-review flow calls: one suspension, one question per channel per contract.

    decisions, status, notices = run_gate(review, book)

Called in the flow (not in a task: Prefect cannot suspend from a task) after the review is
assembled. What happens:

1. No gated finding, or the review did not complete: nothing (``[], review.status, []``).
2. The run has no deployment (a plain ``clausegate review``): Prefect cannot suspend it, so the
   review is marked ``pending_decision`` with a notice saying how to get a decision; the run
   completes.
3. Otherwise: the gate record is written on the run, the question is posted through every configured
   channel (:mod:`clausegate.gates.channels`; once per channel, a failure recorded, never fatal) and the
   run suspends with ``wait_for_input=GateInput``
   (the Prefect UI shows the form), ``key=gate key`` (includes the run's ``run_count``) and
   ``timeout`` = SLA + a week. The process exits; nothing runs while the run waits.
   A deployed run never completes without a decision: if Prefect refuses to suspend it (e.g. it
   was started as a subflow) or it comes back without an answer, :func:`wait_for_answer` raises
   :class:`~clausegate.errors.GateError` (``CG-GATE-CANNOT-SUSPEND`` / ``CG-GATE-NO-ANSWER``) and
   the run fails. Before writing the gate and before suspending, the process checks that its
   attempt is still the run's current one (:mod:`clausegate.runs.attempts`): a stale process (its run
   was crashed or requeued while it hung) exits without touching the run.
4. After a resume Prefect re-runs the flow from the top: finished tasks come from cache, this
   step sees the answer is recorded, skips the posts, and ``suspend_flow_run`` (same key, a
   pause that already fired) returns the answer instead of suspending again (no prefect#18326
   loop). The decision becomes a ``GateDecision``; the status follows it: approve → ``complete``,
   changes → ``changes_requested``, escalate (a person or the SLA) → ``needs_legal``.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.flow_runs import suspend_flow_run
from prefect.runtime import flow_run as runtime_flow_run
from pydantic import ValidationError

from clausegate import audit
from clausegate.config import load_deciders, strict_text
from clausegate.errors import GateError
from clausegate.gates import changes as tracked_changes
from clausegate.gates import channels as gate_channels
from clausegate.gates import store
from clausegate.gates.authority import SENDER_TAG
from clausegate.gates.channel import ChannelUndelivered
from clausegate.gates.deciders import WhoDecides, who_decides
from clausegate.gates.gate_terms import form_lines, gate_terms
from clausegate.gates.model import (
    DECISION_PAST,
    STATUS_BY_DECISION,
    DecisionInfo,
    GateInput,
    GateRecord,
    cleared_findings,
    findings_of,
    gate_key,
    now_utc,
    suspend_timeout_seconds,
    unverified_reviewer,
)
from clausegate.gates.rounds import run_rounds
from clausegate.review import ladder
from clausegate.review.ladder import Rung
from clausegate.review.money import eur_text
from clausegate.review.playbook import Playbook
from clausegate.review.redact import redact_review
from clausegate.review.schemas import GateDecision, Notice, Review
from clausegate.runs.attempts import ensure_current
from clausegate.runs.tags import read_tag

DEFAULT_SLA_HOURS = 24.0


class GateOutcome(NamedTuple):
    decisions: list[GateDecision]
    status: str
    notices: list[Notice]


def describe_for_ui(record: GateRecord) -> str:
    """Markdown shown above the form in the Prefect UI."""
    lines = [
        f"### {record.filename} needs a decision",
        "",
        f"Playbook **{record.playbook}**: {len(record.findings)} finding(s) a person must see "
        f"({', '.join(record.categories)}). SLA: decide by **{record.sla_deadline:%Y-%m-%d %H:%M} UTC** "
        f"({record.sla_hours:g} h); after that the SLA sweeper escalates to legal.",
        *form_lines(record),
    ]
    # one heading line and a wrapped quote per finding: a table's clause column ran off the form's right edge
    for f in record.findings:
        pages = ", ".join(map(str, f.pages)) or "-"
        quote = " ".join(f.text.split())
        lines += ["", f"**{f.category}** · p. {pages} · confidence {f.confidence:.2f}", "", f"> {quote}"]
        if f.why:  # why it needs a person (clausegate.review.gate_reasons)
            lines += ["", f"Why: {f.why}"]
        if f.position:  # against the playbook's position
            lines += ["", f"Position: *{f.position}*"]
    if record.noted:  # possible findings listed without a decision (possible_findings: note)
        lines += ["", f"**Listed, not asked** ({len(record.noted)} possible finding(s) in gated categories):"]
        for f in record.noted:
            lines += ["", f"*{f.category}* · p. {', '.join(map(str, f.pages)) or '-'} · {f.confidence:.2f}", "",
                      f"> {' '.join(f.text.split())}"]
    if record.cleared:  # what a model took off the gate: a person can overturn it
        lines += ["", f"**Cleared by the model** ({len(record.cleared)}; not asked, listed so you can overturn them):"]
        for f in record.cleared:
            pages = ", ".join(map(str, f.pages)) or "-"
            lines += ["", f"*{f.category}* · p. {pages} · offline confidence {f.confidence:.2f} · {f.why}", "",
                      f"> {' '.join(f.text.split())}"]
    lines += ["", f"Cost so far: {eur_text(record.cost_eur)}. Choose **approve**, **changes** or **escalate**, "
                  "enter your name as reviewer, and resume."]
    return "\n".join(lines)


def _allowed(who: WhoDecides, categories: list[str], book: Playbook, addresses: bool = False) -> list[str]:
    """The gate's allowed reviewers (user ids; ``addresses``: the e-mail addresses); a restricted list also
    admits the people of the gate's roles."""
    allowed = [u for u in who.reviewers_for(categories) if ("@" in u) == addresses]
    if allowed:
        members = who.role_members()
        roles = {r for g in book.gates if g.category in categories for r in g.roles}
        allowed = sorted({*allowed, *(u for r in roles for u in members.get(r, []) if ("@" in u) == addresses)})
    return allowed


def _deadlines(book: Playbook, categories: list[str]) -> tuple[float, list[Rung]]:
    """(SLA hours, the ladder in times since the gate opened) of the gate whose SLA ends first."""
    gates = [g for g in book.gates if g.category in categories]
    if not gates:
        return DEFAULT_SLA_HOURS, []
    first = min(gates, key=lambda g: ladder.decide_hours(g.ladder, g.sla_hours))
    return ladder.fixed(first.ladder, first.sla_hours)


def _sla_hours(book: Playbook, categories: list[str]) -> float:
    return _deadlines(book, categories)[0]


def run_gate(review: Review, book: Playbook, *, block_name: str | None = None) -> GateOutcome:
    """Ask a person about the review's gated findings; see the module docstring."""
    if review.status != "complete" or not review.gated_categories:
        return GateOutcome([], review.status, [])
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        raise RuntimeError("run_gate must be called inside a flow run")
    logger = get_run_logger()
    flow_run = context.flow_run
    categories = list(review.gated_categories)
    key = gate_key(review.contract_id, categories, runtime_flow_run.run_count)  # attempt number: kept by a resume

    if flow_run.deployment_id is None:
        logger.warning("gate %s: %s need a decision, but this run has no deployment and cannot wait; "
                       "the review is marked pending_decision", key, ", ".join(categories))
        return GateOutcome([], "pending_decision", [Notice(
            code="CG-GATE-NO-DEPLOYMENT",
            message=f"{', '.join(categories)} need a person's decision, but this run was started without a "
                    "deployment and cannot wait for one. Run it as a deployment (prefect deploy; "
                    "run_deployment / `prefect deployment run contract-review/...`) to get the decision "
                    "asked through its channels and the Prefect UI.")])

    channels = gate_channels.configured(block_name)
    who = who_decides(load_deciders(block_name), gate_channels.legacy_deciders(channels))
    with get_client(sync_client=True) as client:
        ensure_current("the gate", client=client)  # a stale attempt must not open (or post) a gate
        decided = store.read_decision(client, flow_run.id, key)
        record = store.read_record(client, flow_run.id, key)
        if decided is None:
            if record is None:
                sla, steps = _deadlines(book, categories)
                # a high-risk clause whose only reason is a tracked change: shown, only its changes asked
                asked, shown = tracked_changes.split_findings(review, categories, strict=strict_text())
                record = GateRecord(
                    key=key, flow_run_id=str(flow_run.id), flow_run_name=flow_run.name, contract_id=review.contract_id,
                    filename=review.filename, playbook=review.playbook, categories=categories,
                    findings=asked, cleared=cleared_findings(review, strict=strict_text()),
                    noted=findings_of(review, review.notes, strict=strict_text()),
                    reasons={g.category: g.reason for g in book.gates if g.category in categories},
                    clauses_total=len(review.clauses), cost_eur=review.cost.eur, opened_at=now_utc(),
                    suggestions=[x for x in (redact_review(review) if strict_text() else review).suggestions
                                 if x.category in categories],
                    sla_hours=sla, suspend_timeout_seconds=suspend_timeout_seconds(sla),
                    allowed_reviewers=_allowed(who, categories, book), ladder=steps,
                    allowed_addresses=[a.lower() for a in _allowed(who, categories, book, addresses=True)],
                    submitters=who.submitter_ids(read_tag(list(flow_run.tags or []), SENDER_TAG)),
                    roles={g.category: list(g.roles) for g in book.gates if g.category in categories and g.roles},
                    role_members=who.role_members(),
                    playbook_sha256=playbook_sha256(book), model_version=review.extractor,
                    annotated=review.annotated, contract_terms=gate_terms(review, strict=strict_text()),
                )
                record = record.model_copy(update={"change_findings": shown, "changes": tracked_changes.of_review(
                    review, [*asked, *shown], strict=strict_text())})  # each: accept / reject / counter
                if not store.write_once(client, flow_run.id, record.record_key, record):
                    record = store.read_record(client, flow_run.id, key) or record
            refs = gate_channels.post_all(client, record, channels, logger)
            logger.info("gate %s: waiting for a decision on %s (SLA %g h, Prefect timeout %d s); asked: %s",
                        key, ", ".join(categories), record.sla_hours, record.suspend_timeout_seconds,
                        ", ".join(f"{n} {'ok' if r.ok else 'failed'}" for n, r in refs.items()) or "nowhere")

    if record is None:  # answered, but the record is gone (not written by ClauseGate): still take the answer
        record = GateRecord(key=key, flow_run_id=str(flow_run.id), contract_id=review.contract_id,
                            filename=review.filename, playbook=review.playbook, categories=categories,
                            findings=findings_of(review, categories, strict=strict_text()), opened_at=now_utc(),
                            sla_hours=_sla_hours(book, categories),
                            suspend_timeout_seconds=suspend_timeout_seconds(_sla_hours(book, categories)))
    if record.per_finding:  # a decision per finding and role: one suspension per answer (clausegate.gates.rounds)
        decisions, status, notices = run_rounds(record, channels, wait_for_answer)
        return GateOutcome(decisions, status, notices + gate_channels.undelivered_notices(record))
    form = GateInput.with_initial_data(description=describe_for_ui(record))
    answer = wait_for_answer(form, record)  # first time: suspends (the process exits); after the resume: the answer

    return record_decision(record, answer, channels)


def record_decision(record: GateRecord, answer: GateInput, channels: list) -> GateOutcome:
    """After the resume: attribute the accepted answer, audit it, update the channels, notify an escalation.

    Attribution comes from the stored answer and its receipt (``store.read_decision``), never from
    the answer's own claims: a verified receipt from ``resolve_gate`` gives the receiving channel's
    ``Via``, ``cli`` or ``sla`` and the verified reviewer; anything else is ``ui`` with the reviewer marked
    as stated in the form. Exactly one ``gate.decided`` audit event per decision, whatever the path (its id is fixed
    per run + gate). A person's escalation (not the SLA sweeper's, which sends its own) goes to every
    channel's escalation place; if none could be told the review says so
    (``CG-GATE-ESCALATION-UNDELIVERED``), the decision stands.
    """
    logger = get_run_logger()
    key, categories = record.key, list(record.categories)
    flow_run_id = record.flow_run_id
    with get_client(sync_client=True) as client:
        info = store.read_decision(client, flow_run_id, key)
    if info is None:  # the stored answer is unreadable (not written through the form's schema): still unverified
        info = DecisionInfo(decision=answer.decision, reviewer=unverified_reviewer(answer.reviewer),
                            stated_reviewer=answer.reviewer, comment=answer.comment, via="ui", decided_at=now_utc())
    if info.receipt_problem:
        logger.warning("gate %s: the answer named a decision receipt that was not accepted (%s); recorded as ui",
                       key, info.receipt_problem)
    decision = GateDecision(gate=key, categories=categories, decision=info.decision, reviewer=info.reviewer,
                            comment=info.comment, via=info.via, decided_at=info.decided_at)
    logger.info("gate %s: %s", key, info.describe())
    audit.record(audit.gate_decided(
        flow_run_id=flow_run_id, gate=key, decision=info.decision, via=info.via, reviewer=info.reviewer,
        reviewer_verified=info.reviewer_verified, stated_reviewer=info.stated_reviewer,
        verified_user=info.verified_user, comment=info.comment, claimed_via=info.claimed_via,
        receipt_problem=info.receipt_problem, decided_at=info.decided_at))
    notices = gate_channels.undelivered_notices(record, answered_via=info.via)
    notices += [Notice(code=code, message=f"The gate's {name} view still asks for a decision: {error}")
                for name, code, error in gate_channels.update_all(record, channels, logger)]
    if info.decision == "escalate":
        notices.append(Notice(code="CG-GATE-ESCALATED", message=f"{', '.join(categories)}: "
                              f"{DECISION_PAST['escalate']} ({'SLA passed' if info.via == 'sla' else info.reviewer}); "
                              "legal must review before this contract proceeds."))
        if info.via != "sla" and channels:  # the sweeper sends (and answers for) its own notices
            _, errors = gate_channels.escalate_all(record, channels, f"escalated by {info.reviewer}", decided=info)
            if errors:
                logger.error("gate %s: %s: not every escalation place was told about this escalation: %s",
                             key, ChannelUndelivered.code, "; ".join(errors))
                notices.append(Notice(code=ChannelUndelivered.code, message=f"Escalated by {info.reviewer}, but "
                                      f"the escalation was not delivered ({'; '.join(errors)[:300]}); tell legal."))
    return GateOutcome([decision], STATUS_BY_DECISION[info.decision], notices)


def playbook_sha256(book: Playbook) -> str:
    """sha256 of the playbook as loaded (canonical JSON): the decision receipt names it."""
    return hashlib.sha256(book.model_dump_json().encode("utf-8")).hexdigest()


def wait_for_answer(form, record: GateRecord, key: str | None = None):
    """Suspend at the gate (the process exits) or, after the resume, return the answer.

    Never returns without an answer: a deployed run that cannot wait for a person fails instead of
    completing with the gate unanswered. A stale attempt (see :mod:`clausegate.runs.attempts`) exits
    without touching the run, before suspending and when Prefect refuses the suspension because
    the run has moved on.
    """
    logger = get_run_logger()
    key, categories = key or record.key, ", ".join(record.categories)
    ensure_current("suspending at the gate")
    try:
        return suspend_flow_run(wait_for_input=form, timeout=record.suspend_timeout_seconds, key=key)
    except RuntimeError as exc:  # the server refused to suspend
        ensure_current("failing the gate", max_age=0)  # refused: another attempt may own the run; read
        logger.error("gate %s: CG-GATE-CANNOT-SUSPEND: Prefect refused to suspend the run (%s); it fails instead of "
                     "completing without a decision", key, exc)
        raise GateError(f"{categories} need a person's decision, but Prefect refused to suspend this run to wait "
                        f"for it ({str(exc)[:300]}).",
                        hint="start the review as its own deployment run (not as a subflow), e.g. "
                             "`run_deployment(..., as_subflow=False)`, or retry it: `prefect flow-run retry "
                             f"{record.flow_run_id}`; see docs/runbook.md") from None
    except ValidationError:  # resumed without a valid answer (not possible through ClauseGate or the UI form)
        logger.error("gate %s: CG-GATE-NO-ANSWER: the run was resumed without an answer; it fails", key)
        raise GateError(f"the run was resumed without an answer for {categories}; no decision is recorded.",
                        hint=f"retry it to ask again (`prefect flow-run retry {record.flow_run_id}`); "
                             "answer through a gate channel, `clausegate resolve` or the Prefect UI form",
                        code="CG-GATE-NO-ANSWER") from None
