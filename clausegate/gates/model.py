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
  told who decided.

Slack, the Prefect UI form and the CLI are views of this record; they all end in one resume call.
"""

from __future__ import annotations

import hashlib
import math
from datetime import datetime, timedelta, timezone
from typing import Literal

from prefect.input import RunInput
from prefect.input.run_input import keyset_from_base_key
from pydantic import BaseModel, ConfigDict, Field

from clausegate.schemas import Review, Suggestion

Decision = Literal["approve", "changes", "escalate"]
Via = Literal["slack", "ui", "cli", "sla"]

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
    """The reviewer's answer: rendered as a form in the Prefect UI (Resume → the run's form)."""

    decision: Decision = Field(
        description="approve: the clauses are acceptable; changes: send back with requested changes; "
                    "escalate: legal must look at it."
    )
    reviewer: str = Field(min_length=1, max_length=200, description="Who decides (your name or e-mail).")
    comment: str = Field("", max_length=3000, description="Why, or which changes (optional).")
    via: Via = Field("ui", description="Where the answer came from; keep 'ui' when answering in the Prefect UI.")


class Finding(BaseModel):
    """One gated clause as shown to the reviewer."""

    model_config = ConfigDict(frozen=True)

    category: str
    pages: list[int]
    text: str
    confidence: float


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
    reasons: dict[str, str] = {}
    clauses_total: int = 0
    cost_eur: float = 0.0
    suggestions: list[Suggestion] = []
    opened_at: datetime
    sla_hours: float
    suspend_timeout_seconds: int
    allowed_reviewers: list[str] = []

    @property
    def sla_deadline(self) -> datetime:
        return self.opened_at + timedelta(hours=self.sla_hours)

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
    """A decision as recorded by Prefect (the accepted resume's input) with its time."""

    model_config = ConfigDict(frozen=True)

    decision: Decision
    reviewer: str
    comment: str = ""
    via: Via = "ui"
    decided_at: datetime

    def describe(self) -> str:
        when = self.decided_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = f"{DECISION_PAST[self.decision]} by {self.reviewer} via {self.via} at {when}"
        return text + (f" ({self.comment})" if self.comment else "")


def gate_key(contract_id: str, categories: list[str], run_count: int) -> str:
    """Stable across a resume (same contract, same findings, same attempt), new on each retry.

    ``run_count`` (the flow run's attempt number) is part of the key: a resume keeps it, a
    ``prefect flow-run retry`` increments it, so a retried run asks again instead of failing on a
    pause key that already fired. The digest covers the content: if the contract changed between
    attempts, the gate asks again.
    """
    digest = hashlib.sha256(("|".join([contract_id, *sorted(categories)])).encode()).hexdigest()[:12]
    return f"gate-r{max(run_count, 1)}-{digest}"


def record_key(key: str) -> str:
    return f"{RECORD_PREFIX}{key}"


def slack_key(key: str) -> str:
    return f"{RECORD_PREFIX}slack-{key}"


def stamp_key(key: str) -> str:
    return f"{RECORD_PREFIX}stamp-{key}"


def response_key(key: str) -> str:
    """Where Prefect stores the accepted answer of ``suspend_flow_run(key=key, wait_for_input=...)``."""
    return keyset_from_base_key(f"suspended-{key}")["response"]


def findings_of(review: Review, categories: list[str]) -> list[Finding]:
    wanted = set(categories)
    out = []
    for clause in review.clauses:
        if clause.category in wanted:
            text = " ".join(clause.text.split())
            if len(text) > CLAUSE_CUT:
                text = text[: CLAUSE_CUT - 1].rstrip() + "…"
            out.append(Finding(category=clause.category, pages=list(clause.pages), text=text,
                               confidence=round(clause.confidence, 3)))
    return out


def suspend_timeout_seconds(sla_hours: float) -> int:
    return math.ceil(timedelta(hours=sla_hours).total_seconds() + SUSPEND_GRACE.total_seconds())


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
