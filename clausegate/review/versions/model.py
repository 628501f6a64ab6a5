"""The report's view of a review as the next version of an earlier one (``Review.versions``) and of a carried
decision (``GateDecision.carried``); the models the review's schemas hold."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CarriedFrom(_Model):
    """Where a carried decision was made: the earlier review's run and the signed receipt it stands on
    (``clausegate receipts verify`` checks it against this review's clause)."""

    flow_run_id: str
    gate: str = ""
    finding: str = ""
    role: str = Field("", description="per-finding gate: the role whose slot the earlier answer filled")
    clause_sha256: str
    playbook_sha256: str
    receipt: dict[str, Any] = Field(default_factory=dict, description="the decision receipt (signed)")


class VersionChange(_Model):
    """One clause that differs from the earlier version (clausegate.review.versions.align)."""

    status: Literal["changed", "moved", "added", "removed"]
    old_text: str | None = None
    new_text: str | None = None
    redline: str = ""
    moved: bool = False
    untracked: bool = False


class VersionFinding(_Model):
    """A gated finding against the earlier version's decisions (clausegate.review.versions.carry)."""

    category: str
    role: str = Field("", description="per-finding gate: the role's slot ('' : the finding as a whole)")
    outcome: Literal["carried", "asked_again", "new"]
    why: str
    earlier_decision: str | None = None
    earlier_reviewer: str | None = None
    earlier_decided_at: datetime | None = None
    earlier_comment: str = ""
    redline: str = ""


class VersionEntry(_Model):
    """An earlier version of the contract in the reports folder, as the version list reads it (catalog.py)."""

    filename: str
    review_id: str = ""
    status: str


class Versions(_Model):
    """This review as the next version of an earlier one: what changed and what its decisions carry."""

    revises: str = Field(description="the earlier review (its run id) or file it was compared with")
    revises_filename: str = ""
    proposed: bool = Field(False, description="not named: found as the earlier review of the same parties and title")
    counts: dict[str, int] = Field(default_factory=dict, description="clauses unchanged/changed/moved/added/removed")
    changes: list[VersionChange] = []
    findings: list[VersionFinding] = []
    history: list[VersionEntry] = Field(default_factory=list, description="the contract's earlier versions in the "
                                        "reports folder when this review was written, each with its status")

    def filename_or(self, fallback: str) -> str:
        return self.revises_filename or fallback


