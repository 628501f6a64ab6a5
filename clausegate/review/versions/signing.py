"""A version's signature: who signed the contract as one review read it, on what date, and who recorded it.

``clausegate versions sign`` writes it to the audit log (``clausegate.audit.version.signed``) and then next to the
review's JSON report (``<stem>.signatures.json``, in the reports folder the version list reads), so the version
list and the review's Markdown report show the version as **signed**.  A version whose gates are not all decided
by a person (one waiting for a decision, one escalated to legal, a gated category no decision covers) cannot be
signed: :func:`undecided` names what is open and :func:`check_signable` refuses with ``CG-VERSIONS-UNDECIDED``.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from clausegate.errors import ClauseGateError

UNDECIDED = "CG-VERSIONS-UNDECIDED"
UNKNOWN = "CG-VERSIONS-UNKNOWN"
NOT_RECORDED = "CG-VERSIONS-NOT-RECORDED"
SUFFIX = ".signatures.json"


class SigningError(ClauseGateError):
    """A version cannot be signed (the code says why: undecided gates, no such review, the audit log refused)."""

    code = UNDECIDED


class Signature(BaseModel):
    """One signature of a version: the person who signed, the date they signed, and who recorded it when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    flow_run_id: str
    contract_id: str
    filename: str
    signed_by: str
    signed_on: date
    recorded_by: str
    recorded_at: datetime
    audit_event: str


_SIGNATURES = TypeAdapter(list[Signature])


def undecided(review: dict[str, Any]) -> list[str]:
    """What a review (its JSON report) still waits on a person for: gated categories no decision covers, or the
    whole review while it waits for a decision or is escalated to legal.  Empty: every gate is decided."""
    covered = {c for d in review.get("decisions", []) if d.get("decision") in ("approve", "changes")
               for c in d.get("categories", [])}
    open_ = [c for c in review.get("gated_categories", []) if c not in covered]
    status = review.get("status")
    if status == "pending_decision" and not open_:
        open_ = ["the review waits for a decision"]
    if status == "needs_legal" and not open_:
        open_ = ["escalated to legal and not decided since"]
    return open_


def check_signable(review: dict[str, Any]) -> None:
    """Raise ``CG-VERSIONS-UNDECIDED`` when the review has a gate no person has decided."""
    open_ = undecided(review)
    if open_:
        raise SigningError(f"{review.get('filename', 'this version')} cannot be signed: its gates are not all "
                           f"decided ({'; '.join(open_)})", code=UNDECIDED,
                           hint="decide them first (clausegate gates, Slack or the Prefect UI), or sign the version "
                                "whose gates were decided")


def signatures_path(report: Path) -> Path:
    """Where the signatures of the review whose JSON report is ``report`` are kept (beside it)."""
    return report.with_name(report.name.removesuffix(".json") + SUFFIX)


def read_signatures(report: Path) -> list[Signature]:
    """The review's signatures, oldest first ([] when it has none or the file does not read)."""
    path = signatures_path(report)
    try:
        return _SIGNATURES.validate_json(path.read_bytes())
    except (OSError, ValueError):
        return []


def add_signature(report: Path, signature: Signature) -> list[Signature]:
    """Add ``signature`` to the review's signatures (written atomically, owner-only); all of them."""
    signatures = [*read_signatures(report), signature]
    path = signatures_path(report)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump([s.model_dump(mode="json") for s in signatures], out, indent=2)
    os.replace(tmp, path)
    return signatures


def signed_lines(signatures: list[Signature]) -> list[str]:
    """The Markdown report's "Version status" section of a signed version."""
    if not signatures:
        return []
    lines = ["", "## Version status: signed", ""]
    lines += [f"- Signed by {s.signed_by} on {s.signed_on:%Y-%m-%d} (recorded by {s.recorded_by} on "
              f"{s.recorded_at:%Y-%m-%d %H:%M} UTC; audit event `{s.audit_event}`)" for s in signatures]
    return lines
