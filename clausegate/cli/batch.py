"""`clausegate batch DIR`: the nightly batch by hand (the same job, clausegate/pipeline/batch.py).

The contracts are reviewed as tasks of one in-process nightly-batch flow run, on the running local stack's
server (`clausegate up`) or a temporary one.  Contracts that need a person are sent as contract-review
deployment runs when the stack has the deployment and a live worker; otherwise they stay
``pending_decision`` (notice CG-GATE-DEFERRED).
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from clausegate.cli.server import TEMPORARY, find_server
from clausegate.cli.typer_app import app, console, quiet_if_temporary_server
from clausegate.review.money import eur_digits

STATUS_STYLE = {"reviewed": "green", "waiting": "yellow", "failed": "red", "not-submitted": "red",
                "unfinished": "red", "skipped": "dim", "in-flight": "dim", "duplicate": "dim"}


def _deployment_ready(deployment: str) -> tuple[bool, str]:
    """Is there a deployment *and* an online worker on its pool?"""
    from prefect.client.orchestration import get_client  # local import: keeps CLI start-up lean
    from prefect.exceptions import ObjectNotFound  # local import: keeps CLI start-up lean

    try:
        with get_client(sync_client=True) as client:
            dep = client.read_deployment_by_name(deployment)
            if not dep.work_pool_name:
                return False, f"deployment {deployment} has no work pool"
            workers = client.read_workers_for_work_pool(dep.work_pool_name)
            online = [w for w in workers if str(getattr(w.status, "value", w.status)).upper() == "ONLINE"]
            if not online:
                return False, f"no worker online on pool {dep.work_pool_name!r}"
            return True, f"{len(online)} worker(s) online on pool {dep.work_pool_name!r}"
    except ObjectNotFound:
        return False, f"deployment {deployment} not found"
    except Exception as exc:  # unreachable server etc.: no gate runs
        return False, f"Prefect API not usable ({type(exc).__name__}: {exc})"


# Short names for the long statuses (the table must fit 80 columns).
SHORT_STATUS = {"pending_decision": "pending", "changes_requested": "changes req.", "partial_failure": "partial",
                "not-submitted": "not submitted"}


def short_status(row) -> str:
    """The review status of a reviewed contract (``complete``, ``pending``...), else the row status."""
    status = row.review_status if row.status == "reviewed" and row.review_status else row.status
    return SHORT_STATUS.get(status, status)


def summary_table(summary, width: int = 80) -> Table:
    """One line per contract within ``width`` columns: the other columns keep their natural width (status and
    code capped; cost and worker only when they say something), the file name gets the rest and is cut with
    an ellipsis."""
    rows = [[r.file, short_status(r), "" if r.clauses is None else str(r.clauses), str(r.gates_waiting),
             eur_digits(r.cost_eur), r.error_code, r.worker] for r in summary.rows]
    headers = ["Contract", "Status", "Clauses", "Gates", "Cost €", "Code", "Worker"]
    keep = [True, True, True, True, any(r.cost_eur for r in summary.rows), True,
            width >= 100 and len({r.worker for r in summary.rows if r.worker}) > 1]
    headers = [h for h, k in zip(headers, keep, strict=True) if k]
    rows = [[c for c, k in zip(row, keep, strict=True) if k] for row in rows]
    widths = [min(18, max(len(headers[i]), *(len(row[i]) for row in rows))) for i in range(1, len(headers))]
    name_width = max(10, width - sum(widths) - 2 * (len(headers) - 1))  # 2: one space of padding + the rule
    table = Table(title=f"Batch — playbook {summary.playbook}", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, collapse_padding=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if header in ("Clauses", "Gates", "Cost €") else "left",
                         no_wrap=True, overflow="ellipsis", max_width=name_width if i == 0 else widths[i - 1])
    for r, row in zip(summary.rows, rows, strict=True):
        table.add_row(row[0], Text(row[1], style=STATUS_STYLE.get(r.status, "")), *row[2:])
    return table


def totals_line(summary) -> str:
    """The totals; contracts that need a person are counted where they are: waiting at a gate (asked in Slack and
    the UI), or reviewed but not asked (``pending_decision``: no contract-review deployment to ask in)."""
    t, b = summary.totals, summary.breakdown
    deferred = sum(1 for r in summary.rows if r.status == "reviewed" and r.review_status == "pending_decision")
    need = f"{deferred} need a person but not asked (pending_decision), " if deferred else ""
    return (f"{t.contracts} contracts: {t.reviewed} reviewed, {t.failed} failed, {t.waiting} waiting at a gate, "
            f"{need}{t.skipped} skipped · {t.clauses} clauses · {t.gates_waiting} gates · {eur_digits(t.cost_eur)} € · "
            f"{t.contracts_per_minute:.1f} contracts/min ({t.wall_seconds:.1f} s, {b.reviews_at_once:.1f} at once)")


class ProgressFromLogs(logging.Filter):
    """Console only (Prefect's console handler; the run's logs in the API keep every line): the batch's
    per-contract records (``PROGRESS_EXTRA``) drive ``progress``; Prefect's INFO lines of the flow and task runs
    (one per task) are not printed; warnings and errors still are."""

    def __init__(self, progress: Progress, task_id, extra: str, count: str) -> None:
        super().__init__()
        self.progress, self.task_id, self.extra, self.count = progress, task_id, extra, count

    def filter(self, record: logging.LogRecord) -> bool:
        event = getattr(record, self.extra, None)
        if event == "more":
            total = self.progress.tasks[0].total or 0
            self.progress.update(self.task_id, total=total + int(getattr(record, self.count, 0)))
        elif event == "done":
            self.progress.advance(self.task_id)
        runs = record.name.startswith(("prefect.flow_runs", "prefect.task_runs"))
        return not (runs and record.levelno < logging.WARNING)


@contextmanager
def progress_bar():
    """A rich progress bar of the contracts reviewed, fed by the batch run's log records (``ProgressFromLogs``)."""
    from clausegate.pipeline.batch import PROGRESS_COUNT, PROGRESS_EXTRA  # local import: Prefect; lean start-up

    progress = Progress(TextColumn("reviewing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=False)
    task_id = progress.add_task("reviewing", total=0)
    only = ProgressFromLogs(progress, task_id, PROGRESS_EXTRA, PROGRESS_COUNT)
    handlers = logging.getLogger().handlers  # Prefect's console handler sits on the root logger
    for handler in handlers:
        handler.addFilter(only)
    try:
        with progress:
            yield
    finally:
        for handler in handlers:
            handler.removeFilter(only)


@app.command("batch")
def batch_command(
    folder: Annotated[Path, typer.Argument(help="folder of contracts: PDFs and Word .docx files, searched "
                                                "recursively (text files: list them in a manifest, list:FILE)")],
    playbook: Annotated[str, typer.Option(help="built-in playbook name or path to a YAML playbook")] = "default",
    out: Annotated[Path, typer.Option(help="folder for reports; the batch summary goes to OUT/batches/")] = Path(
        "reports"),
    extractor: Annotated[str | None, typer.Option(help="'offline' or a model block; default: the playbook's")] = None,
    local: Annotated[bool, typer.Option("--local", help="never send contracts that need a person to a deployment "
                                                        "(they stay pending_decision)")] = False,
    deployments: Annotated[bool, typer.Option("--deployments", help="require the contract-review deployment and a "
                                                                    "worker for contracts that need a person")] = False,
    queue: Annotated[str, typer.Option(help="work queue for those contract-review runs: high, normal or low")
                     ] = "normal",
    max_in_flight: Annotated[int, typer.Option(min=1, help="reviews at once (>1 runs them in threads, where Prefect "
                                                           "task timeouts cannot interrupt a step)")] = 4,
    retry_failed: Annotated[bool, typer.Option(help="review again contracts whose last review failed")] = True,
    limit: Annotated[int | None, typer.Option(help="review at most N new contracts")] = None,
    timeout_minutes: Annotated[float, typer.Option(help="stop waiting after this long (runs keep going)")] = 360,
) -> None:
    """Review every new contract (PDF or Word .docx) in FOLDER (skips contracts already reviewed, by content
    hash)."""
    from prefect import flow  # local import: keeps CLI start-up lean

    from clausegate.batch.dispatch import DEFAULT_DEPLOYMENT, NO_DEPLOYMENT  # local import: keeps CLI start-up lean
    from clausegate.batch.summary import BatchSummary  # local import: keeps CLI start-up lean
    from clausegate.errors import ClauseGateError  # local import: keeps CLI start-up lean
    from clausegate.pipeline.batch import BATCH_FLOW_OPTIONS, review_batch  # local import: keeps CLI start-up lean
    from clausegate.pipeline.sync_body import async_body  # local import: keeps CLI start-up lean
    from clausegate.review.playbook import load_playbook  # local import: keeps CLI start-up lean

    if local and deployments:
        console.print("[red]choose one of --local and --deployments[/red]")
        raise typer.Exit(2)
    try:
        book = load_playbook(playbook)  # fail fast, before starting any server
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None

    server = find_server()
    real = server is not None and server.kind != TEMPORARY
    gate_deployment, why = None, "--local"
    if not local:
        ready, why = _deployment_ready(DEFAULT_DEPLOYMENT) if real else (
            False, "no PREFECT_API_URL and no running `clausegate up` stack here")
        gate_deployment = DEFAULT_DEPLOYMENT if ready else None
        if deployments and not ready:
            console.print(f"[red][{NO_DEPLOYMENT}] contract-review deployment runs unavailable: {why}.[/red] "
                          "Next step: `clausegate up`, or drop --deployments.")
            raise typer.Exit(1)
    console.print(f"Batch {folder} on {server.where if real else 'a temporary Prefect server'} · playbook "
                  f"[bold]{book.name}[/bold] · reviews as tasks of one run, "
                  f"{max_in_flight} at a time · contracts that need a person: "
                  f"{'contract-review runs' if gate_deployment else 'stay pending_decision'} ({why})")

    quiet_if_temporary_server()
    batch_flow = flow(**BATCH_FLOW_OPTIONS)(async_body(review_batch))  # async: clausegate/pipeline/sync_body.py
    with progress_bar():
        state = asyncio.run(batch_flow(str(folder.expanduser().resolve()), playbook, str(out.expanduser().resolve()),
                                       extractor=extractor, work_queue=queue, max_in_flight=max_in_flight,
                                       retry_failed=retry_failed, limit=limit, timeout_minutes=timeout_minutes,
                                       poll_seconds=1.0, deployment=gate_deployment, return_state=True))
    if not state.is_completed():
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(2)
    result = state.result()
    csv_path, json_path = result["summary_files"]
    summary = BatchSummary.model_validate(json.loads(Path(json_path).read_text(encoding="utf-8")))
    console.print(summary_table(summary, console.width))
    console.print(totals_line(summary))
    console.print(f"Summary: {csv_path}  {json_path}", overflow="fold")
    if summary.totals.failed:
        raise typer.Exit(1)
