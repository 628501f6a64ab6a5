"""`clausegate up`, `clausegate down`, `clausegate status`: the local stack in one command."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from clausegate.cli.typer_app import app, console
from clausegate.config import settings
from clausegate.errors import ClauseGateError
from clausegate.security import credentials
from clausegate.stack.state import StackOptions, StackPaths


def _paths(project: Path | None, home: Path | None) -> StackPaths:
    root = (project or settings().project_dir or Path.cwd()).resolve()
    if not (root / "prefect.yaml").is_file():
        console.print(f"[red][CG-STACK-START] no prefect.yaml in {root}.[/red] Next step: run from the ClauseGate "
                      "project folder or pass --project.")
        raise typer.Exit(2)
    return StackPaths.for_project(root, home)


ProjectOpt = Annotated[Path | None, typer.Option(help="project folder with prefect.yaml (default: current folder)")]
HomeOpt = Annotated[Path | None, typer.Option(help="stack folder (default: PROJECT/.clausegate)")]


@app.command()
def up(
    port: Annotated[int, typer.Option(help="Prefect server (API + UI) port")] = 4200,
    host: Annotated[str, typer.Option(help="address to listen on (keep 127.0.0.1 unless you know why)")] = "127.0.0.1",
    gateway_port: Annotated[int, typer.Option(help="gateway (Slack interactivity) port")] = 8787,
    worker_limit: Annotated[int, typer.Option(min=2, help="flow runs the worker executes at once (>= 2: the nightly "
                                                          "batch holds one slot while its reviews run)")] = 4,
    query_seconds: Annotated[float, typer.Option(help="worker poll interval (PREFECT_WORKER_QUERY_SECONDS)")] = 2.0,
    nightly_cron: Annotated[str | None, typer.Option(
        envvar="CLAUSEGATE_NIGHTLY_CRON", help="nightly-batch cron (default from prefect.yaml: 0 2 * * *)")] = None,
    timezone: Annotated[str | None, typer.Option(envvar="CLAUSEGATE_TIMEZONE",
                                                 help="IANA zone for the schedule (default: this machine's)")] = None,
    api_url: Annotated[str | None, typer.Option(help="use this running Prefect server instead of starting one")] = None,
    worker: Annotated[bool, typer.Option(help="start a worker")] = True,
    gateway: Annotated[bool, typer.Option(help="start the gateway (if this build has it)")] = True,
    slack: Annotated[str, typer.Option(help="auto: a local fake Slack + demo block unless a SlackSettings block "
                                            "exists; demo; off")] = "auto",
    fake_slack_port: Annotated[int, typer.Option(help="port of the local fake Slack (demo mode)")] = 8902,
    warm_start: Annotated[bool, typer.Option(help="fork flow runs from a preloaded process instead of starting a new "
                                                  "Python per run (~3x the throughput; after a code change runs use "
                                                  "the normal engine until the stack is restarted)")] = True,
    database: Annotated[str, typer.Option(
        envvar="CLAUSEGATE_DATABASE", help="the Prefect server's database: postgres (an embedded PostgreSQL in the "
                                           "stack folder, no install needed) or sqlite (Prefect's default; "
                                           "'database is locked' retries under load)")] = "postgres",
    supervise: Annotated[bool, typer.Option(help="run a supervisor that restarts a process of the stack that "
                                                 "exits (back-off 0, 1, 2 … 60 s; docs/operations.md)")] = True,
    project: ProjectOpt = None,
    home: HomeOpt = None,
) -> None:
    """Start the local stack: database (embedded PostgreSQL), Prefect server, pool + queues + limits, deployments,
    worker, gateway, and a supervisor that restarts what exits.  On a partly running stack: only what is
    missing."""
    from clausegate.stack import lifecycle  # local import: Prefect's client; keeps `clausegate` start-up lean

    paths = _paths(project, home)
    options = StackOptions(host=host, port=port, gateway_port=gateway_port, worker_limit=worker_limit,
                           worker_query_seconds=query_seconds, nightly_cron=nightly_cron, timezone=timezone,
                           api_url=api_url, start_worker=worker, start_gateway=gateway,
                           slack=slack, fake_slack_port=fake_slack_port, warm_start=warm_start,
                           database=database.lower(), supervise=supervise)
    try:
        state = lifecycle.up(options, paths, echo=lambda msg: console.print(f"  {msg}"))
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(1) from None
    console.print()
    console.print(f"[bold green]ClauseGate is up.[/bold green]  Prefect UI: [link]{state['ui_url']}[/link]")
    console.print(f"  API:      {state['api_url']}   (`clausegate` commands run here find it; for `prefect …`: "
                  f"export PREFECT_API_URL={state['api_url']})")
    if state.get("database"):
        console.print(f"  Database: {_describe_database(state['database'])}")
    if state.get("server_started"):
        console.print(f"  Login:    the UI and API ask for [bold]{credentials.api_auth_string()}[/bold]  (kept in "
                      f"{credentials.secrets_dir() / credentials.AUTH_FILE}, mode 600; `clausegate auth rotate` "
                      "makes a new one)")
    if state.get("gateway_url"):
        console.print(f"  Gateway:  {state['gateway_url']}   inbox API docs: {state['gateway_url']}/docs "
                      "(keys: `clausegate inbox keys create --sender NAME`)")
    else:
        console.print(f"  Gateway:  [yellow]{state.get('gateway_note', 'not started')}[/yellow]")
    console.print(f"  Slack:    {state.get('slack', '-')}"
                  + (" (local fake Slack; put your app's token/secret/channels in the UI: Blocks > ClauseGate Slack)"
                     if state.get("slack") == "demo" else ""))
    if state.get("nightly_schedule"):
        console.print(f"  Nightly batch: {state['nightly_schedule']} (inbox: {paths.project / 'inbox'})")
    skipped = state.get("skipped_deployments")
    console.print(f"  Deployed: {', '.join(state.get('deployments', [])) or '-'}"
                  + (f"  (skipped: {', '.join(skipped)})" if skipped else ""))
    console.print(f"  Logs:     {paths.logs}/   State: {paths.state_file}")
    console.print("  Try:      clausegate batch samples/   ·   clausegate status   ·   clausegate down")


def _restarts(book: dict | None, alive: bool, supervised: bool) -> str:
    """The supervisor's restarts of one process (clausegate/stack/supervise.py), and what it does next."""
    book = book or {}
    text = str(book.get("restarts", 0))
    if book.get("last_restart"):
        text += f" (last {time.strftime('%H:%M:%S', time.localtime(book['last_restart']))})"
    if not alive and supervised and book.get("next_attempt"):
        text += f"; restarting in {max(0, book['next_attempt'] - time.time()):.0f} s"
    if book.get("last_error") and not alive:
        text += f"; last try failed: {book['last_error']}"
    return text


def _describe_database(db: dict) -> str:
    kind = {"postgres": "PostgreSQL (embedded)", "sqlite": "SQLite", "external": "from PREFECT_SERVER_DATABASE_"
            "CONNECTION_URL"}.get(db.get("kind"), str(db.get("kind")))
    return f"{kind}  {db.get('url', '')}" + (f"  (log: {db['log']})" if db.get("log") else "")


@app.command()
def down(project: ProjectOpt = None, home: HomeOpt = None) -> None:
    """Stop exactly the processes `clausegate up` started (database and logs are kept)."""
    from clausegate.stack import lifecycle  # local import: Prefect's client; keeps `clausegate` start-up lean

    paths = _paths(project, home)
    results = lifecycle.down(paths, echo=lambda msg: console.print(f"  {msg}"))
    if results:
        console.print("[bold]stack stopped[/bold] (data kept in " + str(paths.home) + ")")


@app.command()
def status(project: ProjectOpt = None, home: HomeOpt = None) -> None:
    """Show the stack's processes, server health, queues, workers, deployments and runs needing attention."""
    from clausegate.stack import lifecycle  # local import: Prefect's client; keeps `clausegate` start-up lean

    paths = _paths(project, home)
    info = lifecycle.status(paths)
    table = Table(title=f"ClauseGate stack ({paths.home})")
    for col in ("process", "pid", "alive", "restarts", "log"):
        table.add_column(col)
    books = info["supervisor"].get("processes", {})
    supervisor_alive = any(p["alive"] for p in info["processes"] if p["name"] == "supervisor")
    for p in info["processes"]:
        table.add_row(p["name"], str(p["pid"]), "[green]yes[/green]" if p["alive"] else "[red]no[/red]",
                      _restarts(books.get(p["name"]), p["alive"], supervisor_alive), p["log"])
    console.print(table)
    if info["processes"] and not supervisor_alive:
        console.print("[yellow]No supervisor is running: a process that exits is not restarted.[/yellow] "
                      "`clausegate up` starts what is missing (the supervisor included).")
    if not info.get("api_url"):
        console.print("not started here: run `clausegate up`")
        raise typer.Exit(1)
    health = "[green]healthy[/green]" if info["healthy"] else "[red]not answering[/red]"
    console.print(f"Prefect API {info['api_url']}: {health}   UI: {info.get('ui_url') or '-'}   "
                  f"Gateway: {info.get('gateway_url') or '-'}")
    console.print("Database: " + (_describe_database(info["database"]) if info.get("database") else
                                  "the server's own (not started here)"))
    if not info["healthy"]:
        raise typer.Exit(1)
    console.print("Queues (priority): " + ", ".join(f"{n}={p}{' (paused)' if paused else ''}"
                                                    for n, p, paused in info.get("queues", [])))
    workers = info.get("workers") or []
    console.print("Workers: " + (", ".join(f"{n} {s} (last heartbeat {t})" for n, s, t in workers) or
                                 "[red]none[/red] — runs will stay Scheduled/Late (see docs/runbook.md)"))
    for d in info.get("deployments", []):
        console.print(f"Deployment {d['name']}: queue {d['queue']}{' PAUSED' if d['paused'] else ''}; "
                      + ("; ".join(d["schedules"]) or "no schedule"))
    runs = info.get("runs", {})
    console.print("Runs: " + ", ".join(f"{k} {v}" for k, v in runs.items()))
