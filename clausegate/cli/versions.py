"""`clausegate versions`: the versions of each contract reviewed into a reports folder, with a status per version,
and the earlier review a new one most likely revises (the same parties and title).

A contract's versions are the reports whose *Document Name* and *Parties* findings read the same (words only,
case aside), in the order they were written.  A version's status: **our draft** (the first), **counterparty's
revision** (a later one), **approved** (every decision on it approves, none asked again), **changes requested**
or **needs legal** (its decisions say so).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from clausegate.cli.typer_app import app, console

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
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime):
        try:
            review = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(review, dict) and "contract_id" in review and "clauses" in review:
            out.append((path, review))
    return out


def version_status(review: dict[str, Any], first: bool) -> str:
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


def proposal(review: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """The latest earlier review of another file with the same parties and title, or None."""
    key = identity(review)
    if key is None:
        return None
    earlier = [r for _, r in reports(folder) if r.get("contract_id") != review.get("contract_id")
               and identity(r) == key and r.get("flow_run_id") != review.get("flow_run_id")]
    return earlier[-1] if earlier else None


@app.command("versions")
def versions(out: Annotated[Path, typer.Option(help="the reports folder")] = Path("reports")) -> None:
    """List each contract's versions in the reports folder, with a status per version."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for _, review in reports(out):
        groups.setdefault(identity(review) or (review["contract_id"],), []).append(review)
    if not groups:
        console.print(f"No review reports in {out}.", highlight=False)
        return
    table = Table("Contract", "Version", "File", "Review id", "Review", "Version status", "Changed since")
    for key, items in groups.items():
        title = (key[0] if len(key) == 2 else items[0]["filename"])[:40] or items[0]["filename"]
        for number, review in enumerate(items, 1):
            v = review.get("versions") or {}
            counts = ", ".join(f"{n} {s}" for s, n in (v.get("counts") or {}).items() if n and s != "unchanged")
            table.add_row(title if number == 1 else "", f"v{number}", review["filename"],
                          (review.get("flow_run_id") or "-")[:36], review.get("status", ""),
                          version_status(review, number == 1), counts or ("-" if number == 1 else "not compared"))
    console.print(table)
