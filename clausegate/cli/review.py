"""`clausegate review` and `clausegate playbooks`.

`clausegate review` runs :func:`clausegate.pipeline.review.review_contract` as an in-process
``contract-review`` flow run (the deployment's entry point is flows/contract_review.py; the library
never imports ``flows``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clausegate.cli.app import app, console
from clausegate.errors import ClauseGateError
from clausegate.review.document.codes import NOT_FOUND


def _server_label() -> str:
    url = os.environ.get("PREFECT_API_URL")
    return f"Prefect server {url}" if url else "a temporary local Prefect server (set PREFECT_API_URL to use yours)"


def findings_table(review) -> Table:
    """One row per category: every page it was found on, the best clause, cut to fit."""
    table = Table(title=f"{review.filename}: {len(review.clauses)} clauses in "
                        f"{len({c.category for c in review.clauses})} categories")
    table.add_column("Category", style="bold")
    table.add_column("Pages", justify="right")
    table.add_column("Conf.", justify="right")
    table.add_column("Gate")
    table.add_column("Best clause", overflow="fold", max_width=60)
    by_category: dict[str, list] = {}
    for clause in review.clauses:
        by_category.setdefault(clause.category, []).append(clause)
    for category, clauses in by_category.items():
        best = max(clauses, key=lambda c: c.confidence)
        pages = sorted({p for c in clauses for p in c.pages})
        text = " ".join(best.text.split())
        gate = "[red]needs a person[/red]" if category in review.gated_categories else ""
        table.add_row(category, ",".join(map(str, pages)), f"{best.confidence:.2f}", gate,
                      text[:110] + ("…" if len(text) > 110 else ""))
    return table


@app.command()
def review(
    file: Annotated[Path, typer.Argument(help="the contract PDF")],
    playbook: Annotated[str, typer.Option(help="built-in playbook name or path to a YAML playbook")] = "default",
    out: Annotated[Path, typer.Option(help="folder for the JSON and Markdown reports")] = Path("reports"),
    extractor: Annotated[str | None, typer.Option(help="'offline' or a provider; default: the playbook's")] = None,
) -> None:
    """Review FILE with the contract-review flow and write its report."""
    from clausegate.review.playbook import load_playbook  # local import: keeps CLI start-up lean

    try:
        load_playbook(playbook)  # fail fast, before starting any server
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    if not file.is_file():
        console.print(f"[red][{NOT_FOUND}] {file} does not exist.[/red] Next step: check the path.")
        raise typer.Exit(2)

    console.print(f"Reviewing [bold]{file.name}[/bold] with playbook [bold]{playbook}[/bold] on {_server_label()}")
    from prefect import flow  # local import: keeps CLI start-up lean

    from clausegate.pipeline.review import (  # local import: Prefect; keeps CLI start-up lean
        REVIEW_FLOW_OPTIONS,
        review_contract,
    )
    from clausegate.pipeline.sync_body import async_body  # local import: Prefect; keeps CLI start-up lean

    contract_review = flow(**REVIEW_FLOW_OPTIONS)(async_body(review_contract))  # async: see sync_body.py
    with console.status("running the contract-review flow…"):
        state = asyncio.run(contract_review(str(file.resolve()), playbook=playbook, extractor=extractor,
                                            out_dir=str(out.resolve()), return_state=True))
    if not state.is_completed():
        console.print(f"[red]Review did not complete:[/red] {state.message}")
        raise typer.Exit(1)
    result = state.result()
    console.print(findings_table(result))
    if result.missing_categories:
        console.print(f"Missing ({len(result.missing_categories)}): " + ", ".join(result.missing_categories))
    for warning in result.warnings:
        console.print(f"[yellow]{warning.code}[/yellow] {warning.message}")
    console.print(f"Report: {out.resolve()}")


@app.command()
def playbooks() -> None:
    """List the built-in playbooks."""
    from clausegate.review.playbook import builtin_playbooks, load_playbook  # local import: keeps CLI start-up lean

    for name in builtin_playbooks():
        book = load_playbook(name)
        console.print(f"[bold]{name}[/bold]: {book.description} ({len(book.categories)} categories, gates: "
                      f"{', '.join(book.gated_categories) or 'none'})")

