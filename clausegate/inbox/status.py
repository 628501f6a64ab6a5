"""Prefect state + the review → inbox status, and the task view the API returns (built from the flow run alone).

The status follows the review, not only the Prefect state: a Completed run is ``done`` only when its
review needs no decision or has one (``escalated`` when legal must look); a Completed run whose
review still waits for a decision (``pending_decision``, or gated findings and no decision — a run
completed by a process that could not wait) is ``failed`` with ``CG-GATE-NO-DECISION``: nobody has
approved that contract. A run being requeued by dead-letters (Cancelling with ``CG-RUN-REQUEUING``
while its hung process is stopped) stays ``pending``; the worker's Cancelled right after that Cancelling is
``processing`` until the requeue. A final Prefect state is never ``pending``: any other Cancelled is ``cancelled``.

Responses carry no Prefect API endpoints: state messages and review notices can quote one (an HTTP
error names the URL it failed on); :func:`scrub_api_urls` replaces them, and links that point at
the API are dropped. A UI link to the run (its decision form) stays: the UI asks for the credential.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from prefect.settings import PREFECT_API_URL
from pydantic import BaseModel, Field, model_validator

from clausegate.ops.dead_letters import REQUEUING
from clausegate.review.schemas import Review

TaskStatus = Literal["pending", "processing", "waiting_for_human", "done", "escalated", "failed", "cancelled"]

# Prefect state types per inbox status ("done" and "escalated" are both COMPLETED: the review tells them apart).
STATE_TYPES: dict[str, tuple[str, ...]] = {
    "pending": ("SCHEDULED", "PENDING"),
    "processing": ("RUNNING",),
    "waiting_for_human": ("PAUSED",),
    "done": ("COMPLETED",),
    "escalated": ("COMPLETED",),
    "failed": ("FAILED", "CRASHED"),
    "cancelled": ("CANCELLED", "CANCELLING"),
}
_BY_TYPE = {t: status for status, types in STATE_TYPES.items() for t in types if status != "escalated"}
_CODE = re.compile(r"\bCG-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")
NO_DECISION = "CG-GATE-NO-DECISION"
API_URL_REMOVED = "[API URL removed]"
# Any http(s) URL whose path is /api or starts with /api/ (Prefect's REST API lives there; so does no UI page).
_API_URL = re.compile(r"""https?://[^\s/'"<>]+(?:/[^\s/'"<>]+)*?/api(?:/[^\s'"<>]*)?(?=[\s'"<>),.;]|$)""")

TAG = "inbox"


def tag(kind: str, value: str) -> str:
    return f"inbox-{kind}:{value}"


def tag_value(tags: list[str], kind: str) -> str | None:
    prefix = f"inbox-{kind}:"
    return next((t[len(prefix):] for t in tags if t.startswith(prefix)), None)


def undecided(review: Review | None) -> bool:
    """The review still needs a person's decision and has none (``pending_decision``, or gated findings
    without a decision that is not legal's)."""
    if review is None:
        return False
    if review.status == "pending_decision":
        return True
    return bool(review.gated_categories) and not review.decisions and review.status in ("complete", "changes_requested")


def status_of(state_type: str | None, review: Review | None = None) -> TaskStatus:
    status = _BY_TYPE.get(state_type or "SCHEDULED", "pending")
    if status == "done" and review is not None:
        if review.status == "needs_legal":
            return "escalated"
        if undecided(review):
            return "failed"  # completed without the decision it needs: never "done" (see the module docstring)
    return status  # type: ignore[return-value]


def error_code(message: str | None, state_type: str | None) -> str | None:
    if state_type in ("CANCELLING", "CANCELLED") and REQUEUING in (message or ""):
        return REQUEUING  # not an error: TaskView turns it back into "pending"
    if state_type not in ("FAILED", "CRASHED"):
        return None
    found = _CODE.search(message or "")
    if found:
        return found.group(0)
    return "CG-RUN-CRASHED" if state_type == "CRASHED" else "CG-RUN-FAILED"


class TaskError(BaseModel):
    code: str
    message: str


class GateWaiting(BaseModel):
    """Where a person decides: the run in the Prefect UI (its form) and the Slack message."""

    ui_url: str | None = None
    slack_url: str | None = None
    slack_channel: str | None = None
    categories: list[str] = []
    findings: int = 0
    sla_deadline: datetime | None = None
    resolve_command: str
    acknowledged: list[dict[str, Any]] = Field(default_factory=list, description="who pressed *I'm on it* (or "
                                               "`resolve RUN ack`) and when: reviewer, via, at")


def scrub_api_urls(text: str | None) -> str | None:
    """``text`` with every API URL (the configured Prefect API's and any ``…/api/…``) replaced."""
    if not text:
        return text
    api = _configured_api_url()
    if api:
        text = text.replace(api, API_URL_REMOVED)
    return _API_URL.sub(API_URL_REMOVED, text)


def _configured_api_url() -> str | None:
    try:
        value = PREFECT_API_URL.value()
    except Exception:  # no Prefect settings here: the pattern still applies
        return None
    return str(value).rstrip("/") if value else None


def _is_api_link(url: str | None) -> bool:
    return bool(url) and scrub_api_urls(url) != url


def _safe_links(links: dict[str, str]) -> dict[str, str]:
    return {name: url for name, url in links.items() if not _is_api_link(url)}


def _scrub_review(review: Review) -> Review:
    warnings = [w.model_copy(update={"message": scrub_api_urls(w.message)}) for w in review.warnings]
    update: dict[str, Any] = {"warnings": warnings}
    if review.failure is not None:
        update["failure"] = review.failure.model_copy(update={"message": scrub_api_urls(review.failure.message)})
    return review.model_copy(update=update)


def no_decision_error(review: Review) -> TaskError:
    categories = ", ".join(review.gated_categories) or "gated findings"
    return TaskError(code=NO_DECISION, message=f"{NO_DECISION}: {categories} need a person's decision, but the run "
                     "ended without one: nobody has approved this contract. An operator can run it again to ask "
                     "(`prefect flow-run retry TASK_ID`); see docs/runbook.md.")


# Flow-run labels of a task taken from an e-mail (``clausegate.inbox.messages``): metadata only, never the sender.
LABEL = "clausegate.inbox."
MESSAGE_LABELS = ("message_id", "part", "subject", "from_header", "header_message_id")


class MessageLink(BaseModel):
    """The e-mail a task came from: our message id (every task of one message has it; ``?message=`` lists them),
    the MIME part, and the message's ``Subject:``, ``From:`` and ``Message-ID:`` as sent (metadata only: the
    task's sender is the API key's)."""

    message_id: str
    part: str
    subject: str | None = None
    from_header: str | None = None
    header_message_id: str | None = None

    def labels(self) -> dict[str, str]:
        return {LABEL + name: value for name, value in self.model_dump().items() if value is not None}

    @classmethod
    def of_labels(cls, labels: dict[str, Any] | None) -> MessageLink | None:
        found = {name: str(labels[LABEL + name]) for name in MESSAGE_LABELS if LABEL + name in (labels or {})}
        return cls(**found) if "message_id" in found and "part" in found else None


class TaskView(BaseModel):
    task_id: str
    status: TaskStatus
    state: str = Field(description="the Prefect state name behind the status")
    sender: str
    topic: str | None = None
    priority: str
    playbook: str
    revises: str | None = Field(None, description="the task (its id: the earlier review's run id) this one revises")
    contract: dict[str, Any] = Field(description="filename, sha256, size_bytes, origin")
    attempts: int = Field(description="how many times the review ran (Prefect run_count)")
    created: datetime | None = None
    started: datetime | None = None
    finished: datetime | None = None
    updated: datetime | None = None
    error: TaskError | None = None
    review: Review | None = Field(None, description="the structured review (clauses, decisions, cost) once done")
    waiting: GateWaiting | None = None
    message: MessageLink | None = Field(None, description="the e-mail this task was taken from (an .eml upload)")
    links: dict[str, str] = {}

    @model_validator(mode="after")
    def _follow_review_and_hide_api(self) -> TaskView:
        if self.error is not None and self.error.code == REQUEUING:  # dead-letters is requeueing it
            # Cancelling (no end time yet): pending. The worker's Cancelled after it (a final state, with an end
            # time): never pending; the hung attempt is stopped and the requeue follows (dead-letters, or the
            # stuck-run sweep if that was lost), so the task is in work and not finished.
            self.status, self.error = ("pending" if self.finished is None else "processing"), None
            self.finished = None
        if self.status in ("done", "escalated") and self.review is not None and undecided(self.review):
            self.status = "failed"
        if self.status == "failed" and self.error is None and self.review is not None and undecided(self.review):
            self.error = no_decision_error(self.review)
        if self.error is not None:
            self.error = TaskError(code=self.error.code, message=scrub_api_urls(self.error.message) or "")
        if self.review is not None:
            self.review = _scrub_review(self.review)
        if self.waiting is not None and _is_api_link(self.waiting.ui_url):
            self.waiting.ui_url = None
        self.links = _safe_links(self.links)
        return self


class TaskPage(BaseModel):
    tasks: list[TaskView]
    next_cursor: str | None = Field(None, description="pass as ?cursor= for the next (older) page; null at the end")


class Submitted(BaseModel):
    task_id: str
    status: TaskStatus
    duplicate_of_existing: bool = Field(False, description="true when an existing task was returned (same "
                                        "idempotency key, or same contract + playbook still pending or done)")
    links: dict[str, str] = {}

    @model_validator(mode="after")
    def _hide_api(self) -> Submitted:
        self.links = _safe_links(self.links)
        return self
