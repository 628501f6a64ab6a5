"""What a human gate is: the input form, the durable gate record, keys, decisions and statuses.

The gate's state lives in Prefect, on the suspended flow run:

* the run's **Suspended** state (``pause_key`` = the gate key, ``pause_timeout`` = Prefect's own
  deadline) and the form schema + Markdown description Prefect stores for ``wait_for_input``;
* a **gate record** (flow-run input ``clausegate-<gate key>``): contract, findings, SLA deadline,
  who may answer — what the Slack view, ``clausegate gates`` and the SLA sweeper read;
* the **Slack reference** (``clausegate-slack-<gate key>``): channel + ts of the posted message, or
  why posting failed; and ``clausegate-stamp-<gate key>`` once the message shows the decision;
* the **decision**: Prefect's own response input (``suspended-<gate key>-response``), written by
  the server only when it accepts the resume, so the first answer wins and later ones can be
  told who decided;
* a **decision receipt** per answer given through ``resolve_gate`` (Slack, the CLI, the SLA
  sweeper): ``clausegate-receipt-<gate key>-<nonce>``, signed with a server-side key, written
  before the resume whose run input carries the nonce (``clausegate_receipt``).

Slack, the Prefect UI form and the CLI are views of this record; they all end in one resume call.
Where an answer came from (``via``) is never taken from the answer: it is ``slack``/``cli``/``sla``
only when a valid receipt matches the accepted answer, otherwise ``ui`` with the reviewer name
marked as stated in the form (see ``clausegate.gates.receipts`` and docs/security.md §5).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Literal

from prefect.input import RunInput
from prefect.input.run_input import keyset_from_base_key
from pydantic import BaseModel, ConfigDict, Field

from clausegate.review import ladder
from clausegate.review.document.codes import INTEGRITY_CATEGORY, INTEGRITY_CODES
from clausegate.review.gate_reasons import describe_reasons
from clausegate.review.ladder import Rung
from clausegate.review.positions import MISSING_REASON, describe
from clausegate.review.redact import SEALED_TEXT
from clausegate.review.report_formats import pending_changes_note, where
from clausegate.review.schemas import Review, Suggestion, Via
from clausegate.review.term_models import ContractTerms
from clausegate.review.tracked_changes import ChangeAnswer, TrackedChange
from clausegate.security import at_rest

Decision = Literal["approve", "changes", "escalate"]

DECISIONS: tuple[str, ...] = ("approve", "changes", "escalate")
DECISION_LABELS = {"approve": "Approve", "changes": "Request changes", "escalate": "Escalate"}
DECISION_PAST = {"approve": "approved", "changes": "requested changes", "escalate": "escalated"}
STATUS_BY_DECISION = {"approve": "complete", "changes": "changes_requested", "escalate": "needs_legal"}
DECISION_ALIASES = {
    "approve": "approve", "approved": "approve", "ok": "approve", "lgtm": "approve",
    "changes": "changes", "change": "changes", "request-changes": "changes", "request_changes": "changes",
    "reject": "changes",
    "escalate": "escalate", "escalated": "escalate", "legal": "escalate",
}

# Prefect fails a suspended run when its suspend timeout passes ("The flow was suspended and never
# resumed"); after that nobody can answer. The SLA sweeper escalates at the SLA, so Prefect's
# timeout is the SLA plus this grace: a week in which the sweeper may be down without a gate
# being lost. Prefect's timeout is the backstop, the SLA is the policy.
SUSPEND_GRACE = timedelta(days=7)

RECORD_PREFIX = "clausegate-"
CLAUSE_CUT = 300


def normalise_decision(word: str) -> str | None:
    """'Approved' -> 'approve'; None when the word is not a decision."""
    return DECISION_ALIASES.get(word.strip().lower())


class GateInput(RunInput):
    """The reviewer's answer: rendered as a form in the Prefect UI (Resume → the run's form).

    No ``via`` field: where an answer came from is decided by the path that received it (a signed
    receipt from ``resolve_gate``), never by the caller. Unknown fields (an old client's ``via``,
    ``resolve_gate``'s receipt nonce) are accepted by the server and ignored here: a caller who
    claims ``via: slack`` through the Prefect API gets an answer recorded as ``ui`` (and audited),
    not a refused resume it could simply repeat without the field.
    """

    model_config = ConfigDict(extra="ignore")

    decision: Decision = Field(
        description="approve: the clauses are acceptable; changes: send back with requested changes; "
                    "escalate: legal must look at it."
    )
    reviewer: str = Field(min_length=1, max_length=200, description="Who decides (your name or e-mail).")
    comment: str = Field("", max_length=3000, description="Why, or which changes (optional).")


class Finding(BaseModel):
    """One gated clause as shown to the reviewer."""

    model_config = ConfigDict(frozen=True)

    category: str
    pages: list[int]
    text: str
    confidence: float
    id: str = Field("", description="stable id within the gate (F1, F2, …): the per-finding answers name it")
    text_sha256: str = Field("", description="sha256 of the clause's whole normalised text (the decision "
                             "receipt records it: what exactly was approved)")
    sealed_text: str | None = Field(None, description="strict text mode: the text, sealed with the at-rest key "
                                    "(`text` then says so); `clausegate gate-text RUN` reads it")
    position: str | None = Field(None, description="the finding against the playbook's position, e.g. "
                                 "\"deviates: walk-away: …\" (clausegate/review/positions.py)")
    why: str | None = Field(None, description="why it needs a person: found, possible, disputed by the model (both "
                            "sides), found by the model, a position, missing (clausegate.review.gate_reasons)")
    where: str = Field("", description="where the contract says it: \"§ 11.3 Liability, p. 7\", \"§ 8.5, ¶ 41\" "
                       "(clausegate.review.report_formats.where); \"\": a missing clause")

    def unsealed_text(self) -> str:
        if self.sealed_text is None:
            return self.text
        return at_rest.unseal(self.sealed_text.encode("ascii"), what="a gate finding's sealed text").decode("utf-8")


class GateRecord(BaseModel):
    """The durable record of one open gate (stored as a flow-run input on the waiting run)."""

    model_config = ConfigDict(frozen=True)

    key: str
    flow_run_id: str
    flow_run_name: str = ""
    contract_id: str
    filename: str
    playbook: str
    categories: list[str]
    findings: list[Finding]
    cleared: list[Finding] = Field(default_factory=list, description="low-confidence findings a model took off the "
                                   "gate, with its reason: listed so that a person can overturn them")
    noted: list[Finding] = Field(default_factory=list, description="possible findings in gated categories listed "
                                 "without a decision (the playbook's possible_findings: note)")
    reasons: dict[str, str] = {}
    clauses_total: int = 0
    cost_eur: float = 0.0
    suggestions: list[Suggestion] = []
    opened_at: datetime
    sla_hours: float
    suspend_timeout_seconds: int
    allowed_reviewers: list[str] = []
    allowed_addresses: list[str] = []  # who may answer a one-decision gate by e-mail (its signed links)
    roles: dict[str, list[str]] = Field(default_factory=dict, description="per category, the roles that must "
                                        "decide its findings (playbook gates[].roles); empty: one decision")
    role_members: dict[str, list[str]] = Field(default_factory=dict, description="per role, its people (Slack "
                                               "user ids, e-mail), fixed when the gate opened")
    playbook_sha256: str = ""
    model_version: str = ""
    ladder: list[Rung] = Field(default_factory=list, description="the gate's deadlines (playbook gates[].ladder); "
                               "empty: remind at 50% and 80%, decide at 100% of sla_hours")
    submitters: list[str] = Field(default_factory=list, description="the people (Slack ids, addresses) who submitted "
                                  "the contract: they may not approve it")
    annotated: str | None = Field(None, description="the review's annotated copy (its file name in the reports folder) "
                                  "the gate's views link to (clausegate.gates.annotated_links)")
    contract_terms: ContractTerms | None = Field(None, description="the key terms the gate's views show first "
                                                 "(clausegate.gates.gate_terms: no quotes; strict: parties sealed)")
    changes: list[TrackedChange] = Field(default_factory=list, description="the counterparty's pending tracked "
                                         "changes inside the findings: each one accepted, rejected or countered")
    change_findings: list[Finding] = Field(default_factory=list, description="high-risk findings the playbook does "
                                           "not gate that hold tracked changes: shown as their changes' clause, "
                                           "not asked themselves (only their changes are)")

    def deadlines(self) -> list[Rung]:
        """The ladder as it runs (:func:`clausegate.review.ladder.rungs`); the last rung decides, at ``sla_hours``."""
        return ladder.rungs(self.ladder, self.sla_hours)

    @property
    def sla_deadline(self) -> datetime:
        return self.opened_at + timedelta(hours=self.sla_hours)

    @property
    def per_finding(self) -> bool:
        """A decision per finding (and per role): the playbook names roles for a gated category, or tracked changes
        inside the findings ask a decision each (:mod:`clausegate.gates.changes`)."""
        return any(self.roles.values()) or bool(self.changes)

    def roles_for(self, finding: Finding) -> list[str]:
        return list(self.roles.get(finding.category, []))

    @property
    def record_key(self) -> str:
        return record_key(self.key)


class SlackRef(BaseModel):
    """Where the gate's Slack message is, or why it could not be posted."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    channel: str | None = None
    ts: str | None = None
    error: str | None = None


class DecisionInfo(BaseModel):
    """A decision as recorded by Prefect (the accepted resume's input) with its time and attribution.

    ``via`` and ``reviewer`` are ClauseGate's attribution, not the caller's claim: with a verified
    receipt they are the receiving path's (``reviewer_verified``: the Slack user / CLI login /
    sweeper the receipt names); otherwise ``via`` is ``ui`` and ``reviewer`` is the name typed into
    the form, marked :data:`UNVERIFIED_MARK`. ``stated_reviewer`` is the name as the answer gave it,
    ``claimed_via`` a ``via`` the caller put into the run input (ignored; kept for the audit), and
    ``receipt_problem`` why a receipt the answer pointed to was not accepted.
    """

    model_config = ConfigDict(frozen=True)

    decision: Decision
    reviewer: str
    comment: str = ""
    via: Via = "ui"
    decided_at: datetime
    reviewer_verified: bool = False
    stated_reviewer: str | None = None
    verified_user: str | None = None
    claimed_via: str | None = None
    receipt_problem: str | None = None
    findings: dict[str, Decision] = Field(default_factory=dict, description="a per-finding gate's answer: "
                                          "finding id -> decision (``decision`` is then the strictest of them)")
    changes: dict[str, ChangeAnswer] = Field(default_factory=dict, description="answers on tracked changes: "
                                             "change id (C1, …) -> accept / reject / counter with its text")

    def describe(self) -> str:
        when = self.decided_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        text = f"{DECISION_PAST[self.decision]} by {self.reviewer} via {self.via} at {when}"
        return text + (f" ({self.comment})" if self.comment else "")


UNVERIFIED_MARK = "as stated in the Prefect UI form, unverified"
CLI_STATED_MARK = "as stated to clausegate resolve"
RECEIPT_FIELD = "clausegate_receipt"  # the run-input field resolve_gate puts its receipt nonce in


def unverified_reviewer(stated: str) -> str:
    """A reviewer name nobody verified (typed into the Prefect UI form / sent to the API), marked as such."""
    return f"{stated} ({UNVERIFIED_MARK})"


def gate_key(contract_id: str, categories: list[str], run_count: int) -> str:
    """Stable across a resume (same contract, same findings, same attempt), new on each retry.

    ``run_count`` (the flow run's attempt number) is part of the key: a resume keeps it, a
    ``prefect flow-run retry`` increments it, so a retried run asks again instead of failing on a
    pause key that already fired. The digest covers the content: if the contract changed between
    attempts, the gate asks again.
    """
    digest = hashlib.sha256(("|".join([contract_id, *sorted(categories)])).encode()).hexdigest()[:12]
    return f"gate-r{max(run_count, 1)}-{digest}"


ROUND_SUFFIX = re.compile(r"-a(\d+)$")


def round_key(key: str, n: int) -> str:
    """The pause key of answer round ``n`` of a per-finding gate: the gate key itself, then ``<key>-a1``, …

    Each answer resumes the run; until every required role has answered, it suspends again under
    the next round's key (a key that already fired returns its answer, so a re-run replays the rounds)."""
    return key if n == 0 else f"{key}-a{n}"


def base_key(pause_key: str) -> str:
    """The gate key of a pause key (``round_key`` undone)."""
    return ROUND_SUFFIX.sub("", pause_key)


def round_of(pause_key: str) -> int:
    found = ROUND_SUFFIX.search(pause_key)
    return int(found.group(1)) if found else 0


def record_key(key: str) -> str:
    return f"{RECORD_PREFIX}{key}"


def slack_key(key: str) -> str:
    return f"{RECORD_PREFIX}slack-{key}"


def stamp_key(key: str) -> str:
    return f"{RECORD_PREFIX}stamp-{key}"


def _part(text: str) -> str:
    """A flow-run input key allows lowercase letters, digits and dashes only."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())


def ack_key(key: str, user: str) -> str:
    """An acknowledgement ("I'm on it") by one person (first per person kept)."""
    return f"{RECORD_PREFIX}ack-{key}-{_part(user)}"


def assign_key(key: str, finding: str, role: str, n: int) -> str:
    """The ``n``-th reassignment of one finding's role slot."""
    return f"{RECORD_PREFIX}assign-{key}-{_part(finding)}-{_part(role)}-{n}"


def extend_key(key: str) -> str:
    """The gate's one SLA extension (write-once: a second is refused)."""
    return f"{RECORD_PREFIX}extend-{key}"


def remind_key(key: str, percent: int) -> str:
    """The reminder sent at ``percent`` of the SLA (write-once: one per threshold, whichever sweep is first)."""
    return f"{RECORD_PREFIX}remind-{key}-{percent}"


def receipt_key(key: str, nonce: str) -> str:
    """Where ``resolve_gate`` stores the signed receipt of one answer (nonce: lowercase hex)."""
    return f"{RECORD_PREFIX}receipt-{key}-{nonce}"


def response_key(key: str) -> str:
    """Where Prefect stores the accepted answer of ``suspend_flow_run(key=key, wait_for_input=...)``."""
    return keyset_from_base_key(f"suspended-{key}")["response"]


def findings_of(review: Review, categories: list[str], *, strict: bool = False) -> list[Finding]:
    """The findings a person is asked about; ``strict`` (strict text mode): their text only sealed."""
    wanted = set(categories)
    out: list[Finding] = []
    if INTEGRITY_CATEGORY in wanted:  # hidden or garbled text: each warning is a finding the person sees
        for warning in review.warnings:
            if warning.code in INTEGRITY_CODES:
                out.append(_finding(INTEGRITY_CATEGORY, [warning.page] if warning.page else [], warning.message,
                                    1.0, strict))
    verdicts = {c.clause: c for c in review.positions if c.clause is not None}
    for index, clause in enumerate(review.clauses):
        if clause.category in wanted:
            text = " ".join(clause.text.split())
            if review.format != "pdf":  # a .docx or text has no pages: its § and ¶ / span, the draft's pending changes
                text = f"{where(clause)}{pending_changes_note(review, clause)}: {text}"
            elif clause.section:
                text = f"§ {clause.section}: {text}"
            if clause.possible:  # scored near the threshold without reaching it: the person checks it
                text = f"POSSIBLE (not certain; please check): {text}"
            if clause.custom:  # a clause type the playbook defines (by examples), not one of CUAD's
                text = f"team-defined clause type: {text}"
            pages = list(clause.pages) if review.format == "pdf" else []
            check = verdicts.get(index)  # strict: the verdict only (its reason quotes the clause's figures)
            position = (check.verdict if strict else describe(check)) if check else None
            why = (", ".join(dict.fromkeys(r.why for r in review.gate_reasons if r.category == clause.category))
                   if strict else describe_reasons(review.gate_reasons, clause.category)) or None
            out.append(_finding(clause.category, pages, text, round(clause.confidence, 3), strict,
                                source=clause.text).model_copy(update={"position": position, "why": why,
                                                                       "where": where(clause)}))
    for check in review.positions:  # a required clause the review did not find: no quote, no page
        if check.verdict == "missing" and check.category in wanted:
            out.append(Finding(category=check.category, pages=[], text=MISSING_REASON, confidence=0.0,
                               position=describe(check), text_sha256=text_sha256(MISSING_REASON),
                               why=f"required clause missing: {check.reason}"))
    return [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(out, 1)]


def cleared_findings(review: Review, *, strict: bool = False) -> list[Finding]:
    """The findings a model took off the gate (``Review.cleared_by_model``), as the gate message lists them."""
    out = []
    for clause in review.cleared_by_model:
        pages = list(clause.pages) if review.format == "pdf" else []
        why = f"cleared by the model {clause.cleared.model}" + ("" if strict else f": {clause.cleared.reason}")
        out.append(_finding(clause.category, pages, clause.text, round(clause.confidence, 3), strict,
                            source=clause.text).model_copy(update={"why": why}))
    return out


def text_sha256(text: str) -> str:
    """sha256 of a clause's normalised text (whitespace collapsed, NFC): the receipt's proof of what was decided."""
    return hashlib.sha256(unicodedata.normalize("NFC", " ".join(text.split())).encode("utf-8")).hexdigest()


def _finding(category: str, pages: list[int], text: str, confidence: float, strict: bool,
             source: str | None = None) -> Finding:
    text = " ".join(text.split())
    digest = text_sha256(source if source is not None else text)
    if len(text) > CLAUSE_CUT:
        text = text[: CLAUSE_CUT - 1].rstrip() + "…"
    if strict:
        return Finding(category=category, pages=pages, text=SEALED_TEXT, confidence=confidence, text_sha256=digest,
                       sealed_text=at_rest.seal(text.encode("utf-8")).decode("ascii"))
    return Finding(category=category, pages=pages, text=text, confidence=confidence, text_sha256=digest)


def suspend_timeout_seconds(sla_hours: float) -> int:
    return math.ceil(timedelta(hours=sla_hours).total_seconds() + SUSPEND_GRACE.total_seconds())


def now_utc() -> datetime:
    return datetime.now(UTC)
