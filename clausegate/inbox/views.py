"""What the task view adds to :mod:`clausegate.inbox.status`: the findings a waiting gate asks about, the contract's
hash from submission, and the outcome of a finished review remembered on its run so a list needs no review.

* ``GET /inbox/tasks/{id}`` of a task waiting at a gate lists the findings the person is asked about
  (``waiting.asked``: id, category, pages, confidence, position, text) from the gate's record; in strict text
  mode (or for a finding stored sealed) the text is left out: ``clausegate gates show`` reads it.
* ``contract.sha256`` comes from the run's ``clausegate.inbox.sha256`` label, set at submission (every kind:
  PDF, .docx, text), so it is known before the review ends.
* The status of a Completed run depends on its review (done, escalated, or failed without a decision).  The
  contract-review run labels itself with its review's outcome as it completes (``clausegate.review.outcome``,
  :mod:`clausegate.pipeline.outcome`); for a run without that label (reviewed before it existed) the first single
  view, which decodes the review anyway, writes ``clausegate.inbox.outcome`` (``<state id>|<status>|<code>``;
  labels are merged, never replaced).  ``GET /inbox/tasks`` reads either and decodes no review of a run that has
  one (it writes nothing: a run with neither is decoded for its status, as before).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from pydantic import BaseModel, Field, model_validator

from clausegate.config import strict_text
from clausegate.gates import store
from clausegate.gates.model import GateRecord
from clausegate.inbox.connection import SharedClient
from clausegate.inbox.status import LABEL, NO_DECISION, GateWaiting, TaskError, TaskView
from clausegate.pipeline.outcome import OUTCOME_LABEL as REVIEW_LABEL  # written by the run itself
from clausegate.review.schemas import ContractTerms

log = logging.getLogger("clausegate.inbox")

SHA_LABEL = LABEL + "sha256"
OUTCOME_LABEL = LABEL + "outcome"


class AskedFinding(BaseModel):
    """One finding a waiting gate asks a person about."""

    id: str
    category: str
    pages: list[int] = []
    confidence: float
    position: str | None = None
    text: str | None = Field(None, description="the clause (with its § / ¶ or span for a .docx or text); null in "
                             "strict text mode (`clausegate gates show RUN` reads it)")


class GateView(GateWaiting):
    asked: list[AskedFinding] = Field(default_factory=list, description="the findings the gate asks about")


class TaskDetail(TaskView):
    """A task with its review (once done) and, while a gate waits, the findings it asks about; the review's key
    terms and renewal dates also on their own (``key_terms``), the first thing a person reads."""

    waiting: GateView | None = None
    key_terms: ContractTerms | None = Field(None, description="the review's key terms and renewal dates, once done")

    @model_validator(mode="after")
    def _key_terms_of_review(self) -> TaskDetail:
        if self.key_terms is None and self.review is not None:
            self.key_terms = self.review.contract_terms
        return self


def asked(record: GateRecord, strict: bool) -> list[AskedFinding]:
    return [AskedFinding(id=f.id, category=f.category, pages=list(f.pages), confidence=f.confidence,
                         position=f.position, text=None if strict or f.sealed_text is not None else f.text)
            for f in record.findings]


def resolve_command(run_id) -> str:
    return f"clausegate resolve {run_id} approve|changes|escalate --comment '…'"


def gate_view(run: FlowRun, ui_url: str | None, strict: bool) -> GateView:
    """Where and how a person decides the gate ``run`` waits at, and what it asks (sync: Prefect's gate store)."""
    waiting = GateView(ui_url=ui_url, resolve_command=resolve_command(run.id))
    key = store.gate_key_of(run)
    if key is None:
        return waiting
    with get_client(sync_client=True) as client:
        record, slack = store.read_record(client, run.id, key), store.read_slack_ref(client, run.id, key)
        extras = store.read_extras(client, run.id, key)
    if record is not None:
        waiting.categories, waiting.findings = list(record.categories), len(record.findings)
        waiting.sla_deadline = record.sla_deadline + timedelta(hours=extras.extra_hours())
        waiting.asked = asked(record, strict)
    waiting.acknowledged = [{k: a.get(k) for k in ("reviewer", "via", "at")} for a in extras.acks]
    if slack is not None and slack.ok and slack.channel and slack.ts:
        waiting.slack_channel = slack.channel
        waiting.slack_url = f"https://slack.com/archives/{slack.channel}/p{slack.ts.replace('.', '')}"
    return waiting


async def waiting_of(run: FlowRun, ui_url: str | None, *, light: bool) -> GateView:
    """The gate's view; ``light`` (a list's item): its links only, no gate record read."""
    if light:
        return GateView(ui_url=ui_url, resolve_command=resolve_command(run.id))
    return await asyncio.to_thread(gate_view, run, ui_url, strict_text())


async def record_outcome(prefect: SharedClient, run: FlowRun, view: TaskView) -> None:
    """Remember a Completed run's outcome on the run (a label), so a list need not decode its review again."""
    value = outcome_value(run, view)
    if value is None:
        return
    try:
        async with prefect.writing() as client:
            await client.update_flow_run_labels(run.id, {OUTCOME_LABEL: value})
    except Exception as exc:  # only a shortcut: a later list decodes the review again
        log.warning("task %s: its outcome could not be recorded on the run (%s)", run.id, type(exc).__name__)


def labels_of(run: FlowRun) -> dict:
    return dict(getattr(run, "labels", None) or {})


def _from_review_label(value: str) -> tuple[str, str | None] | None:
    """(status, code) from the run's own ``status|gated|decided`` label, by the rule of ``status.undecided``."""
    parts = value.split("|")
    if len(parts) != 3 or not parts[0]:
        return None
    status, gated, decided = parts
    if status == "needs_legal":
        return "escalated", None
    if status == "pending_decision" or (gated == "1" and decided == "0" and status in ("complete",
                                                                                          "changes_requested")):
        return "failed", NO_DECISION
    return "done", None


def known_outcome(run: FlowRun) -> tuple[str, str | None] | None:
    """(status, error code) of a Completed run from its labels (the run's own, else a view's record of this
    state); None when neither is there."""
    labels = labels_of(run)
    if labels.get(REVIEW_LABEL):
        return _from_review_label(str(labels[REVIEW_LABEL]))
    value = str(labels.get(OUTCOME_LABEL, ""))
    state_id, _, rest = value.partition("|")
    status, _, code = rest.partition("|")
    if run.state is None or state_id != str(run.state.id) or status not in ("done", "escalated", "failed"):
        return None
    return status, code or None


def outcome_value(run: FlowRun, view: TaskView) -> str | None:
    """The label value recording ``view``'s outcome of a Completed ``run`` (None when there is nothing to record)."""
    if run.state is None or view.status not in ("done", "escalated", "failed"):
        return None
    return f"{run.state.id}|{view.status}|{view.error.code if view.error else ''}"


def recorded_error(code: str | None) -> TaskError | None:
    if code is None:
        return None
    if code == NO_DECISION:
        return TaskError(code=code, message=f"{NO_DECISION}: the review's gated findings need a person's decision, "
                                            "but the run ended without one; GET the task for its review")
    return TaskError(code=code, message=f"{code}: GET the task for its review")
