"""Prefect state → inbox status, and the task view the API returns (built from the flow run alone)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from clausegate.schemas import Review

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

TAG = "inbox"


def tag(kind: str, value: str) -> str:
    return f"inbox-{kind}:{value}"


def tag_value(tags: list[str], kind: str) -> str | None:
    prefix = f"inbox-{kind}:"
    return next((t[len(prefix):] for t in tags if t.startswith(prefix)), None)


def status_of(state_type: str | None, review: Review | None = None) -> TaskStatus:
    status = _BY_TYPE.get(state_type or "SCHEDULED", "pending")
    if status == "done" and review is not None and review.status == "needs_legal":
        return "escalated"
    return status  # type: ignore[return-value]


def error_code(message: str | None, state_type: str | None) -> str | None:
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


class TaskView(BaseModel):
    task_id: str
    status: TaskStatus
    state: str = Field(description="the Prefect state name behind the status")
    sender: str
    topic: str | None = None
    priority: str
    playbook: str
    contract: dict[str, Any] = Field(description="filename, sha256, size_bytes, origin")
    attempts: int = Field(description="how many times the review ran (Prefect run_count)")
    created: datetime | None = None
    started: datetime | None = None
    finished: datetime | None = None
    updated: datetime | None = None
    error: TaskError | None = None
    review: Review | None = Field(None, description="the structured review (clauses, decisions, cost) once done")
    waiting: GateWaiting | None = None
    links: dict[str, str] = {}


class TaskPage(BaseModel):
    tasks: list[TaskView]
    next_cursor: str | None = Field(None, description="pass as ?cursor= for the next (older) page; null at the end")


class Submitted(BaseModel):
    task_id: str
    status: TaskStatus
    duplicate_of_existing: bool = Field(False, description="true when an existing task was returned (same "
                                        "idempotency key, or same contract + playbook still pending or done)")
    links: dict[str, str] = {}
