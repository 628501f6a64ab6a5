"""`clausegate batch DIR`: the nightly batch by hand, with a progress bar.

With a reachable Prefect server that has the contract-review deployment and a live worker on
its pool (e.g. after `clausegate up`), contracts fan out as deployment runs exactly like the
nightly-batch flow; otherwise (or with `--local`) each contract is a plain in-process flow call.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clausegate.cli.app import app, console, use_stack_api_url as _use_stack_api_url
from clausegate.review.money import eur_digits

STATUS_STYLE = {"reviewed": "green", "waiting": "yellow", "failed": "red", "not-submitted": "red",
                "unfinished": "red", "skipped": "dim", "in-flight": "dim", "duplicate": "dim"}


def _deployment_ready(deployment: str) -> tuple[bool, str]:
    """Is there a deployment *and* an online worker on its pool?"""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

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
    except Exception as exc:  # noqa: BLE001 - unreachable server etc.: fall back to local
        return False, f"Prefect API not usable ({type(exc).__name__}: {exc})"


def summary_table(summary) -> Table:
    table = Table(title=f"Batch {summary.source} — playbook {summary.playbook} ({summary.mode})")
    for name, justify in (("Contract", "left"), ("Status", "left"), ("Clauses", "right"), ("Gates", "right"),
                          ("Cost €", "right"), ("Code", "left"), ("Worker", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    for r in summary.rows:
        style = STATUS_STYLE.get(r.status, "")
        status = r.status + (f" ({r.review_status})" if r.review_status else "")
        table.add_row(r.file, f"[{style}]{status}[/{style}]" if style else status,
                      "" if r.clauses is None else str(r.clauses), str(r.gates_waiting), eur_digits(r.cost_eur),
                      r.error_code, r.worker)
    t = summary.totals
    table.add_section()
    table.add_row(f"TOTAL {t.contracts}", f"{t.reviewed} reviewed · {t.failed} failed · {t.waiting} waiting · "
                  f"{t.skipped} skipped", str(t.clauses), str(t.gates_waiting), eur_digits(t.cost_eur), "",
                  f"{t.contracts_per_minute:.1f}/min")
    return table


@app.command("batch")
def batch_command(
    folder: Annotated[Path, typer.Argument(help="folder of contract PDFs (searched recursively)")],
    playbook: Annotated[str, typer.Option(help="built-in playbook name or path to a YAML playbook")] = "default",
    out: Annotated[Path, typer.Option(help="folder for reports; the batch summary goes to OUT/batches/")] = Path("reports"),
    extractor: Annotated[str | None, typer.Option(help="'offline' or a model block; default: the playbook's")] = None,
    local: Annotated[bool, typer.Option("--local", help="in-process flow calls even if a worker is available")] = False,
    deployments: Annotated[bool, typer.Option("--deployments", help="require deployment runs (fail if unavailable)")] = False,
    queue: Annotated[str, typer.Option(help="work queue for deployment runs: high, normal or low")] = "normal",
    max_in_flight: Annotated[int, typer.Option(min=1, help="deployment runs open at once")] = 8,
    workers: Annotated[int, typer.Option(min=1, help="parallel in-process reviews (local mode; >1 runs them in "
                                                     "threads, where Prefect task timeouts cannot interrupt a step)")] = 1,
    retry_failed: Annotated[bool, typer.Option(help="review again contracts whose last review failed")] = True,
    limit: Annotated[int | None, typer.Option(help="review at most N new contracts")] = None,
    timeout_minutes: Annotated[float, typer.Option(help="stop waiting after this long (runs keep going)")] = 360,
) -> None:
    """Review every new PDF in FOLDER (skips contracts already reviewed, by content hash)."""
    from clausegate import batch
    from clausegate.errors import ClauseGateError
    from clausegate.review.playbook import load_playbook

    if local and deployments:
        console.print("[red]choose one of --local and --deployments[/red]")
        raise typer.Exit(2)
    try:
        book = load_playbook(playbook)
        files = batch.load_source(folder).discover()
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2)
    out_dir = str(out.expanduser().resolve())

    mode, why = "local", "--local"
    api_url = None if local else _use_stack_api_url()
    if not local:
        if api_url:
            ready, why = _deployment_ready(batch.DEFAULT_DEPLOYMENT)
            mode = "deployments" if ready else "local"
        else:
            why = "no PREFECT_API_URL and no running `clausegate up` stack here"
        if deployments and mode != "deployments":
            console.print(f"[red][{batch.NO_DEPLOYMENT}] deployment runs unavailable: {why}.[/red] "
                          "Next step: `clausegate up`, or drop --deployments.")
            raise typer.Exit(1)
    console.print(f"{len(files)} PDF(s) in {folder} · playbook [bold]{book.name}[/bold] · mode [bold]{mode}[/bold] ({why})")

    in_flight = {}
    if mode == "deployments":
        try:
            in_flight = batch.in_flight_reviews(playbook)
        except Exception as exc:  # noqa: BLE001
            console.print(f"[yellow]could not read in-flight runs ({exc}); continuing[/yellow]")
    todo, decided = batch.plan_batch(files, playbook=book.name, out_dir=out_dir, max_file_mb=book.steps.parse.max_file_mb,
                                     retry_failed=retry_failed, in_flight=in_flight, limit=limit)
    started = datetime.now(timezone.utc)
    if mode == "deployments":
        dispatcher = batch.DeploymentDispatcher(playbook=playbook, out_dir=out_dir, extractor=extractor,
                                                work_queue=queue, as_subflow=False,
                                                batch_id=f"cli-{started:%Y%m%dT%H%M%S}")
    else:
        dispatcher = batch.LocalDispatcher(playbook=playbook, out_dir=out_dir, extractor=extractor, workers=workers)

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=False) as progress:
        bar = progress.add_task("reviewing", total=len(todo), last=f"{len(decided)} skipped")

        def on_progress(event, candidate, row):
            if event == "done" and row is not None:
                progress.update(bar, advance=1, last=f"{row.file}: {row.status} {row.error_code}".strip())
            elif event == "started" and candidate is not None:
                progress.update(bar, last=f"started {candidate.filename}")

        rows = batch.run_batch(todo, dispatcher, max_in_flight=max_in_flight if mode == "deployments" else workers,
                               poll_seconds=1.0 if mode == "deployments" else 0.5,
                               timeout_seconds=timeout_minutes * 60, on_progress=on_progress)
    summary = batch.BatchSummary(source=str(folder), playbook=book.name, mode=mode, started_at=started,
                                 finished_at=datetime.now(timezone.utc), rows=[*decided, *rows])
    csv_path, json_path = batch.write_summary(summary, Path(out_dir) / "batches")
    console.print(summary_table(summary))
    console.print(f"Summary: {csv_path}  {json_path}")
    if summary.totals.failed:
        raise typer.Exit(1)
