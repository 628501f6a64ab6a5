"""`clausegate report-text` and `clausegate gate-text`: clause text that strict text mode keeps sealed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from clausegate.cli.server import require_server
from clausegate.cli.typer_app import app, console
from clausegate.errors import ClauseGateError

MAX_SEALED_REVIEW_BYTES = 64 * 1024 * 1024


@app.command("report-text")
def report_text(path: Annotated[Path, typer.Argument(help="a report's <stem>.json.sealed or its <stem>.json")]) -> None:
    """Print the clauses of a review whose report was written in strict text mode, from its sealed copy."""
    from clausegate.review.report import SEALED_SUFFIX  # local import: the review package; CLI start-up lean
    from clausegate.security.at_rest import unseal  # local import: cryptography; keeps CLI start-up lean

    sealed = path if path.name.endswith(SEALED_SUFFIX) else path.with_name(path.name + SEALED_SUFFIX)
    try:
        if sealed.stat().st_size > MAX_SEALED_REVIEW_BYTES:
            raise typer.BadParameter(f"{sealed} is larger than a sealed review can be")
        review = json.loads(unseal(sealed.read_bytes(), what=f"the sealed review {sealed.name}"))
    except FileNotFoundError:
        console.print(f"[red]No sealed review at {sealed}[/red]: reports carry one only when they were written with "
                      "CLAUSEGATE_STRICT_TEXT=true and CLAUSEGATE_SEAL_REPORTS=true.", highlight=False)
        raise typer.Exit(2) from None
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"{review['filename']} · playbook {review['playbook']} · status {review['status']}", highlight=False)
    for clause in review["clauses"]:
        where = f"§ {clause['section']}, " if clause.get("section") else ""
        pages = ",".join(map(str, clause["pages"]))
        console.print(f"\n[bold]{clause['category']}[/bold] ({where}p. {pages}, {clause['confidence']:.2f})",
                      highlight=False)
        console.print(clause["text"], highlight=False, markup=False)


@app.command("gate-text")
def gate_text(run_id: Annotated[str, typer.Argument(help="the flow-run id of a review at (or past) its gate")]) -> None:
    """Print the findings of a review's gate with their text, unsealed (strict text mode keeps it sealed in
    Prefect); needs the Prefect API credential and the at-rest key, as the worker has."""
    import uuid  # local import: only this command parses run ids

    from prefect.client.orchestration import get_client  # local import: Prefect; keeps CLI start-up lean

    from clausegate.gates import store  # local import: Prefect; keeps CLI start-up lean

    try:
        rid = uuid.UUID(run_id.strip())
    except ValueError:
        console.print(f"[red]'{run_id[:100]}' is not a flow run id[/red] (a UUID, as `clausegate gates` lists).",
                      highlight=False)
        raise typer.Exit(2) from None
    server = require_server("gate-text", "the gate is one of its flow runs")
    try:
        with get_client(sync_client=True) as client:
            record = store.current_record(client, client.read_flow_run(rid))
        if record is None:
            console.print(f"Run {rid} has no gate.", highlight=False)
            raise typer.Exit(4)
        console.print(f"{record.filename} · playbook {record.playbook} · gate {record.key} (on {server.where})",
                      highlight=False)
        for finding in record.findings:
            pages = ",".join(map(str, finding.pages)) or "-"
            console.print(f"\n[bold]{finding.category}[/bold] (p. {pages}, {finding.confidence:.2f})",
                          highlight=False)
            console.print(finding.unsealed_text(), highlight=False, markup=False)
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(1) from None
