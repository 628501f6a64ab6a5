"""A contract's versions in a reports folder, each with its version status.

A contract's versions are the review reports whose *Document Name* and *Parties* findings read the same (words
only, case aside), in the order they were written.  A version's status: **our draft** (the first),
**counterparty's revision** (a later one), **approved** (every decision on it approves, none asked again),
**changes requested** or **needs legal** (its decisions say so), **signed** (who and when: signing.py).
``clausegate versions`` lists them; a review that revises an earlier one lists them in its report's *Versions*.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clausegate.review.versions.model import VersionEntry
from clausegate.review.versions.signing import Signature, read_signatures

_WORDS = re.compile(r"[a-z0-9]+")
IDENTITY = ("Document Name", "Parties")


def identity(review: dict[str, Any]) -> tuple[str, ...] | None:
    """The contract's title and parties as its findings read them (None when neither was found)."""
    found = {}
    for clause in review.get("clauses", []):
        if clause.get("category") in IDENTITY and clause["category"] not in found:
            found[clause["category"]] = " ".join(_WORDS.findall(clause.get("text", "").lower()))
    return tuple(found.get(c, "") for c in IDENTITY) if found else None


def reports(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The review reports in ``folder``, oldest first."""
    out = []
    try:
        paths = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return []
    for path in paths:
        try:
            review = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(review, dict) and "contract_id" in review and "clauses" in review:
            out.append((path, review))
    return out


def version_status(review: dict[str, Any], first: bool, signatures: Sequence[Signature] = ()) -> str:
    """The version status of one review (its JSON report) among its contract's versions."""
    if signatures:
        return "signed (" + "; ".join(f"{s.signed_by}, {s.signed_on:%Y-%m-%d}" for s in signatures) + ")"
    decisions = [d.get("decision") for d in review.get("decisions", [])]
    asked = [f for f in (review.get("versions") or {}).get("findings", []) if f.get("outcome") == "asked_again"]
    if "escalate" in decisions or review.get("status") == "needs_legal":
        return "needs legal"
    if "changes" in decisions or review.get("status") == "changes_requested":
        return "changes requested"
    if decisions and set(decisions) == {"approve"} and review.get("status") == "complete" and not any(
            d.get("decision") is None for d in asked):
        return "approved"
    return "our draft" if first else "counterparty's revision"


def earlier_versions(folder: Path, review: dict[str, Any], revises: str | None = None) -> list[VersionEntry]:
    """The versions of ``review``'s contract in ``folder`` written before it, oldest first, each with its status as
    its report and signatures read now: the review it revises (``revises``: its run id) and the ones that one
    revised in turn, and any other review of the same title and parties."""
    found = [(p, r) for p, r in reports(folder) if r.get("flow_run_id") != review.get("flow_run_id")]
    by_run = {r["flow_run_id"]: r for _, r in found if r.get("flow_run_id")}
    chain, run = set(), revises
    while run and run in by_run and run not in chain:
        chain.add(run)
        run = (by_run[run].get("versions") or {}).get("revises")
    key = identity(review)
    same = [(p, r) for p, r in found if r.get("flow_run_id") in chain or (key is not None and identity(r) == key)]
    return [VersionEntry(filename=r.get("filename", p.name), review_id=r.get("flow_run_id") or "",
                         status=version_status(r, n == 0, read_signatures(p))) for n, (p, r) in enumerate(same)]
