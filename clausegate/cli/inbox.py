"""`clausegate inbox keys create|list|revoke` and `clausegate inbox audit`."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from clausegate.cli.server import require_server
from clausegate.cli.typer_app import app, console

notes = Console(stderr=True)  # messages go to stderr, so `KEY=$(clausegate inbox keys create ...)` gets the key only


def _server(command: str) -> None:
    """Keys and the audit log live on a real Prefect server, never a temporary one (checked by each command, not
    a group callback, so that ``--help`` needs none)."""
    server = require_server(f"inbox {command}", "keys and the audit log live in its database")
    notes.print(f"[dim]on {server.where}[/dim]", highlight=False)


inbox_app = typer.Typer(help="The inbox API: its keys and audit log.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys of inbox senders (only their hashes are stored, as Prefect variables).",
                       no_args_is_help=True)
inbox_app.add_typer(keys_app, name="keys")
app.add_typer(inbox_app, name="inbox")


@keys_app.command("create")
def create_key(
    sender: Annotated[str, typer.Option(help="the sender this key submits as and whose tasks it sees")],
    admin: Annotated[bool, typer.Option(help="an admin key sees and acts on every sender's tasks")] = False,
    rate_per_minute: Annotated[int | None, typer.Option(min=1, help="submissions per minute for this sender "
                                                        "(default: CLAUSEGATE_INBOX_RATE_PER_MINUTE, 30)")] = None,
    note: Annotated[str, typer.Option(help="who holds the key, for the list")] = "",
) -> None:
    """Create a key. It is printed once; store it in the client's secret store."""
    from prefect.client.orchestration import get_client  # local import: keeps CLI start-up lean

    from clausegate.config import settings  # local import: Prefect; keeps CLI start-up lean
    from clausegate.inbox import keys, limits  # local import: Prefect; keeps CLI start-up lean

    _server("keys create")
    key, record = keys.new_key(sender, admin=admin, rate_per_minute=rate_per_minute, note=note)
    keys.save(record)

    async def limit() -> None:
        async with get_client() as client:
            await limits.ensure_limit(client, sender, rate_per_minute or settings().inbox.rate_per_minute)

    asyncio.run(limit())
    notes.print(f"key id {record.key_id} for sender '{sender}'{' (admin)' if admin else ''}:")
    print(key)
    notes.print("[dim]Shown once. Send it as 'Authorization: Bearer <key>'. Revoke: "
                  f"clausegate inbox keys revoke {record.key_id}[/dim]")


@keys_app.command("list")
def list_keys() -> None:
    """Keys (id, sender, admin, created, revoked); never the keys themselves."""
    from clausegate.inbox import keys  # local import: Prefect; keeps CLI start-up lean

    _server("keys list")
    table = Table("key id", "sender", "admin", "rate/min", "created", "revoked", "note")
    for r in keys.load_all():
        table.add_row(r.key_id, r.sender, "yes" if r.admin else "", str(r.rate_per_minute or "default"),
                      r.created.strftime("%Y-%m-%d %H:%M"),
                      r.revoked_at.strftime("%Y-%m-%d %H:%M") if r.revoked_at else "", r.note)
    console.print(table)


@keys_app.command("revoke")
def revoke_key(key_id: Annotated[str, typer.Argument(help="the key id (second part of cgk_<id>_…)")]) -> None:
    """Revoke a key at once (its next request answers 401)."""
    from clausegate.inbox import keys  # local import: Prefect; keeps CLI start-up lean

    _server("keys revoke")
    record = keys.revoke(key_id)
    if record is None:
        notes.print(f"[red]no key with id {key_id}[/red] (see `clausegate inbox keys list`)")
        raise typer.Exit(1)
    console.print(f"revoked key {key_id} of sender '{record.sender}'")


@inbox_app.command("audit")
def show_audit(limit: Annotated[int, typer.Option(min=1, max=500)] = 50) -> None:
    """The audit log (submissions, cancels, retries, gate decisions), newest first."""
    from prefect.client.orchestration import get_client  # local import: keeps CLI start-up lean

    from clausegate import audit  # local import: Prefect; keeps CLI start-up lean

    _server("audit")

    async def read():
        async with get_client() as client:
            return await audit.read(client, limit=limit)

    # one line per event (time, action, who, run), its details wrapped under it: a five-column table was
    # unreadable in an 80-column terminal
    events = asyncio.run(read())
    if not events:
        console.print("The audit log is empty.")
    for event in events:
        payload = dict(event.payload)
        who, run = payload.pop("actor", ""), payload.pop("flow_run_id", "") or ""
        details = ", ".join(f"{k}={v}" for k, v in payload.items() if v not in (None, ""))
        console.print(f"{event.occurred:%Y-%m-%d %H:%M:%S} [bold]{escape(event.event.removeprefix(audit.PREFIX))}"
                      f"[/bold] by {escape(str(who) or '-')}", highlight=False)
        if run:
            console.print(f"  run {run}", highlight=False)
        if details:
            console.print(f"  {escape(details)}", highlight=False)
