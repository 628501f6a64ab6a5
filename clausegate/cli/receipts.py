"""`clausegate receipts verify REPORT.json`: check the receipt of every decision a review carried from an earlier
version of the contract: its signature (the receipt key), and that it signs this review's clause and playbook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clausegate.cli.typer_app import app, console
from clausegate.errors import ClauseGateError

receipts_app = typer.Typer(help="Decision receipts: check a carried decision's receipt.", no_args_is_help=True)
app.add_typer(receipts_app, name="receipts")


def check_carried(review, *, key: bytes | None = None) -> list[tuple[str, str, bool, str]]:
    """(category, reviewer, ok, why) for each carried decision of ``review`` (``key``: the receipt key, else
    ClauseGate's own)."""
    from clausegate.gates.model import text_sha256  # local import: the gate model; keeps CLI start-up lean
    from clausegate.gates.receipts import signature_valid  # local import: the receipt key; CLI start-up lean
    from clausegate.review.versions.carry import signed_decision_of  # local import: the review package

    out = []
    for decision in review.decisions:
        carried = decision.carried
        if carried is None:
            continue
        category = ", ".join(decision.categories)
        receipt = signature_valid(carried.receipt, key=key)
        clauses = [text_sha256(c.text) for c in review.clauses if c.category in decision.categories]
        slot = receipt is not None and carried.finding and "=" in receipt.decision  # one slot of a per-finding gate
        if receipt is None:
            out.append((category, decision.reviewer, False, "the receipt's signature does not verify"))
        elif receipt.flow_run_id != carried.flow_run_id or receipt.gate != carried.gate or signed_decision_of(
                receipt.decision, carried.finding) != decision.decision:
            out.append((category, decision.reviewer, False, "the receipt is for another run or decision"))
        elif receipt.playbook_sha256 != carried.playbook_sha256:
            out.append((category, decision.reviewer, False, "the receipt signs another playbook"))
        elif slot and (receipt.clause_sha256.get(carried.finding) != carried.clause_sha256
                       or carried.clause_sha256 not in clauses):
            out.append((category, decision.reviewer, False, "a clause of this review is not the text the receipt "
                                                            "signs"))
        elif not slot and (not clauses or any(h not in receipt.clause_sha256.values() for h in clauses)):
            out.append((category, decision.reviewer, False, "a clause of this review is not the text the receipt "
                                                            "signs"))
        else:
            out.append((category, decision.reviewer, True, f"signed receipt {receipt.nonce[:12]} of run "
                                                           f"{receipt.flow_run_id[:8]} ({receipt.via}) signs this "
                                                           f"clause's text and this playbook"))
    return out


@receipts_app.command("verify")
def verify(report: Annotated[Path, typer.Argument(help="a review's JSON report (reports/<stem>.json)")]) -> None:
    """Check the receipts of the decisions REPORT carried from the earlier version (exit 1 if one fails)."""
    from clausegate.review.schemas import Review  # local import: the review package; keeps CLI start-up lean

    try:
        review = Review.model_validate(json.loads(report.read_text(encoding="utf-8")))
        results = check_carried(review)
    except (OSError, ValueError) as error:
        console.print(f"[red]{report} is not a readable review report: {error}[/red]", highlight=False)
        raise typer.Exit(2) from None
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(2) from None
    if not results:
        console.print(f"{review.filename}: no decision was carried from an earlier version.", highlight=False)
        return
    table = Table("Category", "Reviewer", "Receipt", "Why")
    for category, reviewer, ok, why in results:
        table.add_row(category, reviewer, "[green]valid[/green]" if ok else "[red]INVALID[/red]", why)
    console.print(table)
    if not all(ok for _, _, ok, _ in results):
        raise typer.Exit(1)
