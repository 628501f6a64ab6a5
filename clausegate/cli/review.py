"""`clausegate review` and `clausegate playbooks`.

`clausegate review` runs :func:`clausegate.pipeline.review.review_contract` as an in-process
``contract-review`` flow run (the deployment's entry point is flows/contract_review.py; the library
never imports ``flows``), on the server clausegate/cli/server.py finds: the configured one, else the running
local stack's, else a temporary one (started by the ``clausegate`` launcher as the command starts:
clausegate/stack/temporary_server.py).  With a stack up the launcher
hands the whole command to the stack's warm-start process (clausegate/cli/launch.py), unless ``--no-warm-start``.

An expected failure (a ``CG-*`` error such as an encrypted or corrupt PDF) prints its code, message and next
step only; Prefect's traceback and error lines stay in the run's logs, off the console.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clausegate.cli.review_input import REVIEW_INPUT, ReviewInputError, review_input
from clausegate.cli.server import TEMPORARY, find_server
from clausegate.cli.typer_app import app, console, quiet_if_temporary_server
from clausegate.errors import ClauseGateError
from clausegate.review.document.codes import NOT_FOUND
from clausegate.stack.warmstart import WARM_CHILD_ENV

RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
# The Failed state's message of a review a step stopped (clausegate/pipeline/review.py).
STOPPED = re.compile(r"^(?P<code>CG-[A-Z0-9-]+) at step '(?P<step>[^']*)': (?:\[(?P=code)\] )?(?P<message>.*?)"
                     r"(?: Next step: (?P<hint>.*?))?(?: Partial report: (?P<report>.+))?$", re.S)


def choose_server() -> tuple[str | None, str]:
    """The Prefect server this review runs on, and how to say so: the configured one, the running local
    stack's, or a temporary one (clausegate/cli/server.py); its URL is ``None`` when Prefect starts that itself."""
    server = find_server()
    if server is None or server.kind == TEMPORARY:
        return None, ("a temporary Prefect server (no local stack is up; `clausegate up` starts one, and reviews "
                      "on it start in seconds)")
    where = server.where
    if os.environ.get(WARM_CHILD_ENV):  # clausegate/cli/launch.py handed this command to the stack
        where += " (run by the stack's warm-start process: Prefect and the model already loaded)"
    return server.url, where


class HideExpectedFailures(logging.Filter):
    """Console only: drop the traceback of a ``CG-*`` error and the flow/task-run error and "Finished in state
    Failed" lines (the CLI prints the code, message and next step once); the run's logs (API handler) keep all
    of it.  An unexpected exception's traceback still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ClauseGateError):
            return False
        if error is not None or not record.name.startswith(RUN_LOGGERS):
            return True
        return record.levelno < logging.ERROR and not str(record.msg).startswith("Finished in state Failed")


def hide_expected_failures_on_console() -> None:
    for handler in logging.getLogger().handlers:  # Prefect's console handler sits on the root logger
        if not any(isinstance(f, HideExpectedFailures) for f in handler.filters):
            handler.addFilter(HideExpectedFailures())


def run_link(api_url: str | None, flow_run_id) -> str:
    """Where the run and its logs are: the server's UI, or (temporary server) its id in PREFECT_HOME's database."""
    if api_url:
        return f"{api_url.removesuffix('/api')}/runs/flow-run/{flow_run_id}"
    return f"flow run {flow_run_id} (kept in the temporary server's database under PREFECT_HOME)"


def print_failure(message: str | None, run_url: str | None) -> None:
    """The code, message and next step of a review that did not complete, then where its logs are."""
    stopped = STOPPED.match(message or "")
    if stopped:
        console.print(f"[red][{stopped['code']}][/red] {stopped['message']} (step '{stopped['step']}')",
                      highlight=False)
        if stopped["hint"]:
            console.print(f"Next step: {stopped['hint']}", highlight=False)
        if stopped["report"]:
            console.print(f"Partial report: {stopped['report']}", highlight=False)
    else:
        console.print(f"[red]Review did not complete:[/red] {message}", highlight=False)
    if run_url:
        console.print(f"Run logs (with the details): {run_url}", highlight=False)


def findings_table(review) -> Table:
    """One row per category: every page it was found on, the best clause, cut to fit."""
    table = Table(title=f"{review.filename}: {len(review.clauses)} clauses in "
                        f"{len({c.category for c in review.clauses})} categories")
    table.add_column("Category", style="bold")
    table.add_column("Pages" if review.format == "pdf" else "Where", justify="right")
    table.add_column("Conf.", justify="right")
    table.add_column("Gate")
    table.add_column("Best clause", overflow="fold", max_width=60)
    by_category: dict[str, list] = {}
    for clause in review.clauses:
        by_category.setdefault(clause.category, []).append(clause)
    for category, clauses in by_category.items():
        best = max(clauses, key=lambda c: c.confidence)
        pages = sorted({p for c in clauses for p in c.pages})
        where = ",".join(map(str, pages)) if review.format == "pdf" else ",".join(
            f"¶ {c.paragraph}" if c.paragraph else f"chars {c.span[0]}" if c.span else "?" for c in clauses)
        text = " ".join(best.text.split())
        gate = ("[red]needs a person[/red]" if category in review.gated_categories else
                "[yellow]listed: possible[/yellow]" if category in review.notes else
                "possible" if best.possible else "")
        name = f"{category} (team-defined)" if best.custom else category  # a playbook's custom_categories
        table.add_row(name, where, f"{best.confidence:.2f}", gate,
                      text[:110] + ("…" if len(text) > 110 else ""))
    for clause in review.cleared_by_model:  # taken off the gate by a model, with its reason: a person may overturn it
        table.add_row(clause.category, ",".join(map(str, clause.pages)), f"{clause.confidence:.2f}",
                      "[cyan]cleared by the model[/cyan]", " ".join(clause.cleared.reason.split())[:110])
    for check in review.positions:  # a required clause not found (playbook positions): a row with no quote
        if check.verdict == "missing":
            gate = "[red]needs a person[/red]" if check.category in review.gated_categories else "missing"
            table.add_row(check.category, "-", "-", gate, check.reason)
    return table


@app.command()
def review(
    file: Annotated[Path | None, typer.Argument(
        help="the contract: a PDF, .docx or text file; '-' reads it from stdin (text, or a PDF/.docx)")] = None,
    text: Annotated[str | None, typer.Option(
        "--text", help="review this text (a whole contract or a single clause) instead of a file")] = None,
    playbook: Annotated[str, typer.Option(help="built-in playbook name or path to a YAML playbook")] = "default",
    out: Annotated[Path, typer.Option(help="folder for the JSON and Markdown reports")] = Path("reports"),
    extractor: Annotated[str | None, typer.Option(
        help="'offline' or a model block (e.g. anthropic-model/NAME); default: the playbook's")] = None,
    warm_start: Annotated[bool, typer.Option(
        help="with a local stack up, run in its warm-start process, where Prefect and the model are loaded "
             "already (clausegate/cli/launch.py); --no-warm-start runs the review in this process")] = True,
    annotate: Annotated[bool, typer.Option(
        "--annotate", help="also write the annotated copy next to the report: a .docx with a Word comment on each "
                           "finding (and the playbook's fallback wording as a tracked change), a PDF with highlights, "
                           "an HTML page for text (docs/annotate.md)")] = False,
    revises: Annotated[str | None, typer.Option(
        help="the earlier version this one revises: its review id (`clausegate versions` lists them) or its file. "
             "The report says what changed clause by clause; a decision on a clause whose text and playbook are "
             "unchanged is carried with its receipt (docs/revisions.md)")] = None,
) -> None:
    """Review FILE (or stdin: -, or --text "…") with the contract-review flow and write its report."""
    from clausegate.review.playbook import load_playbook  # local import: keeps CLI start-up lean

    try:
        load_playbook(playbook)  # fail fast, before starting any server
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    if file is None and text is None:
        console.print(f"[red][{REVIEW_INPUT}] nothing to review.[/red] Next step: give a FILE, - (stdin) or "
                      "--text \"…\".", highlight=False)
        raise typer.Exit(2)
    try:
        with review_input(file, text) as path:
            _review_file(path, playbook, out, extractor, annotate, revises)
    except ReviewInputError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(2) from None


def _review_file(file: Path, playbook: str, out: Path, extractor: str | None, annotate: bool = False,
                 revises: str | None = None) -> None:
    """The review of one file on disk (the command's FILE, or the private copy of stdin / --text)."""
    if not file.is_file():
        console.print(f"[red][{NOT_FOUND}] {file} does not exist.[/red] Next step: check the path.")
        raise typer.Exit(2)

    api_url, server = choose_server()
    console.print(f"Reviewing [bold]{file.name}[/bold] with playbook [bold]{playbook}[/bold] on {server}")
    from prefect import flow  # local import: keeps CLI start-up lean

    from clausegate.pipeline.review import (  # local import: Prefect; keeps CLI start-up lean
        REVIEW_FLOW_OPTIONS,
        review_contract,
    )
    from clausegate.pipeline.sync_body import async_body  # local import: Prefect; keeps CLI start-up lean

    hide_expected_failures_on_console()
    quiet_if_temporary_server()
    contract_review = flow(**REVIEW_FLOW_OPTIONS)(async_body(review_contract))  # async: see sync_body.py
    with console.status("running the contract-review flow…"):
        state = asyncio.run(contract_review(str(file.resolve()), playbook=playbook, extractor=extractor,
                                            out_dir=str(out.resolve()), annotate=annotate, revises=revises,
                                            return_state=True))
    if not state.is_completed():
        print_failure(state.message, run_link(api_url, state.state_details.flow_run_id))
        raise typer.Exit(1)
    result = state.result()
    from clausegate.cli.key_terms_view import key_terms_table  # local import: keeps CLI start-up lean

    terms = key_terms_table(result)
    if terms is not None:
        console.print(terms)
    console.print(findings_table(result))
    _say_version(result, out, revises)
    if result.scope == "clause":
        from clausegate.review.report_formats import CLAUSE_NOTE  # local import: keeps CLI start-up lean

        console.print(CLAUSE_NOTE)
    elif result.missing_categories:
        console.print(f"Missing ({len(result.missing_categories)}): " + ", ".join(result.missing_categories))
    for warning in result.warnings:
        console.print(f"[yellow]{warning.code}[/yellow] {warning.message}")
    console.print(f"Report: {out.resolve()}")
    if result.annotated:
        console.print(f"Annotated copy: {out.resolve() / result.annotated}", highlight=False)
    console.print(f"Run: {run_link(api_url, state.state_details.flow_run_id)}", highlight=False)


@app.command()
def playbooks(
    categories: bool = typer.Option(False, "--categories",
                                    help="List CUAD's clause category names, the ones a playbook may use."),
) -> None:
    """List the built-in playbooks (or, with --categories, the clause category names)."""
    from clausegate.review.playbook import builtin_playbooks, load_playbook  # local import: keeps CLI start-up lean

    if categories:
        from clausegate.review.categories import CATEGORIES  # local import: keeps CLI start-up lean

        for name in CATEGORIES:
            console.print(name, highlight=False)
        return
    for name in builtin_playbooks():
        book = load_playbook(name)
        console.print(f"[bold]{name}[/bold]: {book.description} ({len(book.categories)} categories, gates: "
                      f"{', '.join(book.gated_categories) or 'none'})")


def _say_version(result, out: Path, revises: str | None) -> None:
    """What changed since the version it revises; with none named, the earlier review it most likely revises."""
    from clausegate.cli.versions import proposal  # local import: keeps CLI start-up lean

    if result.versions is not None:
        v = result.versions
        carried = sum(1 for f in v.findings if f.outcome == "carried")
        asked = sum(1 for f in v.findings if f.outcome == "asked_again")
        console.print(f"Revises {v.revises_filename}: " + ", ".join(f"{n} {s}" for s, n in v.counts.items() if n)
                      + f"; {carried} gated finding(s) carried, {asked} asked again (report: Versions).",
                      highlight=False)
    elif revises is None:
        earlier = proposal(result.model_dump(mode="json"), out)
        if earlier is not None:
            console.print(f"This looks like a new version of {earlier['filename']} (the same parties and title, "
                          f"reviewed as {earlier.get('flow_run_id') or 'an earlier review'}). To see what changed "
                          f"and carry its decisions: clausegate review FILE --revises "
                          f"{earlier.get('flow_run_id') or '<its file>'}", highlight=False)
