"""`clausegate gates`, `clausegate resolve` and `clausegate gateway`."""

from __future__ import annotations

import getpass
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from clausegate.cli.server import require_server
from clausegate.cli.typer_app import app, console
from clausegate.errors import ClauseGateError

EXIT_CODES = {"resumed": 0, "already_decided": 3, "not_suspended": 4, "unknown_run": 2, "not_a_gate": 4,
              "forbidden": 5, "rejected": 6, "timed_out": 7, "error": 1}


def stats_tables(stats, width: int = 80) -> list[Table]:
    """One table per grouping (category, role, reviewer) within ``width`` columns: the figures keep their
    natural width, the name gets the rest and is cut with an ellipsis."""
    from clausegate.gates.stats import GROUPS, cells  # local import: Prefect; keeps CLI start-up lean

    headers = ["Gates", "Done", "Decide", "p90", "Ack", "p90", "SLA!", "Remind"]
    tables = []
    for title, field in GROUPS:
        rows = [[row.name, *cells(row)] for row in getattr(stats, field)] or [["none", *["-"] * len(headers)]]
        widths = [max(len(h), *(len(r[i + 1]) for r in rows)) for i, h in enumerate(headers)]
        name_width = max(8, width - sum(widths) - 2 * len(headers))
        table = Table(title=f"By {title.lower()}", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                      pad_edge=False, collapse_padding=True)
        table.add_column(title, no_wrap=True, overflow="ellipsis", max_width=name_width)
        for header, w in zip(headers, widths, strict=True):
            table.add_column(header, justify="right", no_wrap=True, max_width=w)
        for row in rows:
            table.add_row(*row)
        tables.append(table)
    return tables


@app.command()
def gates(
    stats: Annotated[bool, typer.Option("--stats", help="how long people take: time to acknowledge and decide "
                                                        "(median, p90), SLA breach rate, reminders")] = False,
    days: Annotated[float, typer.Option(min=0.01, help="with --stats: the gates opened in the last DAYS days")] = 7,
) -> None:
    """List the gates waiting for a decision: run, contract, findings, age, SLA left (--stats: response times)."""
    from clausegate.gates import format_delta, waiting_gates  # local import: Prefect; keeps CLI start-up lean

    server = require_server("gates", "the waiting gates are its flow runs")
    if stats:
        from clausegate.gates.stats import duration, gate_stats, rate  # local import: Prefect; lean start-up

        found = gate_stats(days=days)
        o = found.overall
        console.print(f"[bold]Gates opened in the last {days:g} day(s)[/bold] on {server.where}: {o.gates}, "
                      f"{o.decided} decided · decide median {duration(o.decide_median_s)}, p90 "
                      f"{duration(o.decide_p90_s)} · ack median {duration(o.ack_median_s)} · SLA breach "
                      f"{rate(o.breach_rate)} · {o.reminders} reminder(s)", highlight=False)
        for table in stats_tables(found, width=min(console.width, 100)):
            console.print(table)
        console.print("Done: decided · Decide/Ack: median time to decide/acknowledge · SLA!: breach rate · "
                      "Remind: reminders sent", highlight=False)
        return
    waiting = waiting_gates()
    if not waiting:
        console.print(f"No gates are waiting for a decision on {server.where}.", highlight=False)
        return
    # one short block per gate (run id whole, then what it is about, wrapped): a table squeezed its columns
    # to a few characters each in an 80-column terminal
    console.print(f"[bold]{len(waiting)} gate(s) waiting for a decision[/bold] on {server.where}", highlight=False)
    for gate in waiting:
        record = gate.record
        sla = format_delta(gate.sla_left)
        sla = f"[red]{sla} (overdue)[/red]" if gate.overdue else sla
        if gate.slack and gate.slack.ok:
            slack = "posted"
        else:
            slack = f"[yellow]{escape(((gate.slack.error if gate.slack else None) or 'none')[:40])}[/yellow]"
        console.print(f"\n[bold]{gate.flow_run_id}[/bold]  age {format_delta(gate.age)} · SLA left {sla} · "
                      f"Slack {slack}", highlight=False)
        console.print(f"  {escape(record.filename)}: {len(record.findings)} finding(s): "
                      f"{escape(', '.join(record.categories))}", highlight=False)
        if not record.per_finding:  # a per-finding gate's lines (below) say the same and who decides
            for line in finding_lines(record):
                console.print(f"    {escape(line)}", highlight=False)
        acks = ", ".join(f"{a.get('reviewer')} at {str(a.get('at', ''))[:16].replace('T', ' ')} UTC"
                         for a in gate.extras.acks)
        console.print(f"  acknowledged: {escape(acks) if acks else '[yellow]not yet[/yellow]'}"
                      + (f" · reminders sent at {', '.join(f'{p}%' for p in gate.extras.reminders)}"
                         if gate.extras.reminders else "")
                      + (f" · SLA extended by {gate.extras.extra_hours():g} h" if gate.extras.extension else ""),
                      highlight=False)
        if record.per_finding:
            for line in gate_progress_lines(record):
                console.print(f"  {escape(line)}", highlight=False)
    console.print("Answer with [bold]clausegate resolve RUN approve|changes|escalate --comment ...[/bold] "
                  "(a per-finding gate: [bold]--finding F1[/bold]; findings with a role: in Slack; a tracked change: "
                  "[bold]--change C1=accept|reject|counter:\"…\"[/bold])")


QUOTE_START = 60  # characters of a finding's quote in `clausegate gates`: enough to tell two of a category apart


def finding_lines(record) -> list[str]:
    """One line per finding: id, category, page (a PDF's; a .docx's § / ¶ or a text's span opens its quote) and
    the start of the quote, so two findings of one category differ; a sealed text (strict mode) is not shown."""
    from clausegate.review.redact import SEALED_TEXT  # local import: keeps CLI start-up lean

    lines = []
    for f in record.findings:
        parts = [f"{f.id} {f.category}".strip()]
        if f.pages:
            parts.append(f"p. {','.join(map(str, f.pages[:3]))}")
        text = " ".join(f.text.split())
        if f.sealed_text is None and text != SEALED_TEXT:
            parts.append(f'"{text[:QUOTE_START].rstrip()}{"…" if len(text) > QUOTE_START else ""}"')
        else:
            parts.append("(text sealed: `clausegate gate-text RUN`)")
        lines.append(" · ".join(parts))
    return lines


def gate_progress_lines(record) -> list[str]:
    """One line per finding of a per-finding gate: id, category, who decides, what is decided so far."""
    from prefect.client.orchestration import get_client  # local import: Prefect; keeps CLI start-up lean

    from clausegate.gates.findings import describe_slots  # local import: Prefect; keeps CLI start-up lean
    from clausegate.gates.rounds import current_progress  # local import: Prefect; keeps CLI start-up lean

    with get_client(sync_client=True) as client:
        prog, _ = current_progress(client, record)
    labels = dict(zip((f.id for f in record.findings), finding_lines(record), strict=True))
    from clausegate.gates.changes import describe, label  # local import: Prefect; keeps CLI start-up lean

    return [f"{labels.get(fp.finding.id, fp.finding.id)} ({' and '.join(fp.roles) or 'anyone'}): "
            f"{describe_slots(fp)}" for fp in prog.findings] + [
        f"tracked change {label(cp.change)}: {describe(cp)}" for cp in prog.changes]


@app.command()
def resolve(
    run_id: Annotated[str, typer.Argument(help="the waiting flow run's id")],
    decision: Annotated[str, typer.Argument(help="approve | changes | escalate | ack | extend (may be left out with "
                                                 "--change: only the tracked changes are decided)")] = "",
    comment: Annotated[str, typer.Option(help="why, or which changes")] = "",
    finding: Annotated[str | None, typer.Option(help="a per-finding gate's finding (F1, …); without it: every "
                                                     "open finding the CLI may decide (those without a role)")] = None,
    reviewer: Annotated[str | None, typer.Option(help="who decides (default: your login name; the login is "
                                                      "recorded with the decision either way)")] = None,
    hours: Annotated[float | None, typer.Option(help="extend: by how many hours (at most the gate's own SLA; "
                                                     "default: the SLA again)")] = None,
    change: Annotated[list[str] | None, typer.Option("--change", help="a tracked change of the other side: "
                                                     "C1=accept, C1=reject or C1=counter:\"your wording\" "
                                                     "(repeat per change; `clausegate gates` lists them)")] = None,
) -> None:
    """Answer a waiting gate (resumes the run); tells you if someone decided first.

    Recorded as ``via cli`` with your login (a signed receipt, docs/security.md §5); an answer
    that is not applied is written to the audit log (``clausegate inbox audit``: ``gate.refused``).
    The login is the operator account, not proof of a person: a finding whose playbook names a role
    cannot be decided here (exit 5; answer it in Slack). ``ack`` records that you are on it; ``extend`` moves
    the SLA once (a gate without roles; a role's gate is extended in Slack). ``--change C1=counter:"…"`` answers
    one of the counterparty's tracked changes inside a finding (a bad one: CG-GATE-CHANGE-ANSWER, exit 2)."""
    from clausegate.config import load_slack_settings  # local import: Prefect; keeps CLI start-up lean
    from clausegate.gates import resolve_gate  # local import: Prefect; keeps CLI start-up lean

    answers = change_answers(change or [])
    if not decision.strip() and not answers:
        console.print("[red]Say a decision (approve, changes, escalate, ack, extend) or --change C1=….[/red]")
        raise typer.Exit(2)
    server = require_server("resolve", "the gate is one of its flow runs")
    action = decision.strip().lower()
    if action in ("ack", "extend"):
        from clausegate.gates.actions import act  # local import: Prefect; keeps CLI start-up lean

        done = act(run_id, action, user_id=None, reviewer=reviewer or getpass.getuser(), via="cli",
                   settings=load_slack_settings(), hours=hours)
        label = "acknowledged" if action == "ack" else "extended"
        console.print((f"[green]{label}[/green]: " if done.ok else "[red]refused[/red]: ") + escape(done.message),
                      highlight=False)
        raise typer.Exit(0 if done.ok else 5 if done.reason == "not_in_role" else 4)
    outcome = resolve_gate(run_id, decision, reviewer=reviewer or getpass.getuser(), via="cli", comment=comment,
                           settings=load_slack_settings(), finding=finding, changes=answers or None)
    colour = {"resumed": "green", "already_decided": "yellow"}.get(outcome.kind, "red")
    console.print(f"[{colour}]{outcome.kind}[/{colour}]: {outcome.message} [dim](on {server.where})[/dim]",
                  highlight=False)
    if outcome.slack_error:
        console.print(f"[yellow]The Slack message was not updated:[/yellow] {outcome.slack_error}")
    raise typer.Exit(EXIT_CODES.get(outcome.kind, 1))


def change_answers(specs: list[str]) -> dict:
    """``--change`` values → ``{"C1": ChangeAnswer}``; a bad one prints its CG-GATE-CHANGE-ANSWER and exits 2."""
    from clausegate.gates.changes import parse_changes  # local import: Prefect; keeps CLI start-up lean

    try:
        return parse_changes(specs)  # the one parser (Slack's /resolve uses it too)
    except ClauseGateError as error:
        console.print(f"[red]{escape(str(error))}[/red]", highlight=False)
        raise typer.Exit(2) from None


@app.command()
def gateway(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8787,
    block: Annotated[str | None, typer.Option(
        help="SlackSettings block name (default: $CLAUSEGATE_SLACK_BLOCK or 'clausegate')")] = None,
) -> None:
    """Run the gateway with uvicorn: the inbox API (/inbox, docs at /docs) and, with a SlackSettings block,
    Slack interactivity + /resolve."""
    import uvicorn  # local import: keeps CLI start-up lean

    from clausegate.gateway.app import create_app, load_config  # local import: keeps CLI start-up lean

    server = require_server("gateway", "inbox tasks and gates are its flow runs")
    try:
        config = load_config(block)
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]")
        raise typer.Exit(2) from None
    slack = (f"Slack block '{config.slack._block_document_name}': POST /slack/interactions, POST /slack/commands"
             if config.slack is not None else "Slack: off (no SlackSettings block; see docs/slack.md)")
    console.print(f"ClauseGate gateway on http://{host}:{port} — inbox: /inbox/tasks (API docs /docs); "
                  f"{slack}; GET /healthz; on {server.where}", highlight=False)
    uvicorn.run(create_app(config), host=host, port=port, log_level="info")
