"""`clausegate versions`: the versions of each contract reviewed into a reports folder, with a status per version
(clausegate/review/versions/catalog.py), and the earlier review a new one most likely revises (the same parties and
title); `clausegate versions sign`: who signed a version and when, in the audit log and beside its report, refused
while a gate of it is undecided (clausegate/review/versions/signing.py).
"""

from __future__ import annotations

import getpass
import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any
from uuid import NAMESPACE_URL, uuid5

import typer
from rich.table import Table

from clausegate.cli.typer_app import app, console
from clausegate.errors import ClauseGateError
from clausegate.review.versions import signing
from clausegate.review.versions.catalog import identity, reports, version_status


def proposal(review: dict[str, Any], folder: Path) -> dict[str, Any] | None:
    """The latest earlier review of another file with the same parties and title, or None."""
    key = identity(review)
    if key is None:
        return None
    earlier = [r for _, r in reports(folder) if r.get("contract_id") != review.get("contract_id")
               and identity(r) == key and r.get("flow_run_id") != review.get("flow_run_id")]
    return earlier[-1] if earlier else None


versions_app = typer.Typer(help="Each contract's versions in the reports folder, with a status per version.")
app.add_typer(versions_app, name="versions")
Out = Annotated[Path, typer.Option(help="the reports folder")]


@versions_app.callback(invoke_without_command=True)
def versions(ctx: typer.Context, out: Out = Path("reports"),
             as_json: Annotated[bool, typer.Option("--json", help="one JSON list, for scripts")] = False) -> None:
    """List each contract's versions in the reports folder, with a status per version."""
    if ctx.invoked_subcommand is not None:
        return
    groups: dict[tuple[str, ...], list[tuple[Path, dict[str, Any]]]] = {}
    for path, review in reports(out):
        groups.setdefault(identity(review) or (review["contract_id"],), []).append((path, review))
    if not groups and not as_json:
        console.print(f"No review reports in {out}.", highlight=False)
        return
    rows = []
    for key, items in groups.items():
        title = (key[0] if len(key) == 2 else items[0][1]["filename"])[:40] or items[0][1]["filename"]
        for number, (path, review) in enumerate(items, 1):
            v = review.get("versions") or {}
            counts = ", ".join(f"{n} {s}" for s, n in (v.get("counts") or {}).items() if n and s != "unchanged")
            rows.append({"contract": title, "version": f"v{number}", "file": review["filename"],
                         "review_id": review.get("flow_run_id") or "-", "review": review.get("status", ""),
                         "version_status": version_status(review, number == 1, signing.read_signatures(path)),
                         "changed_since": counts or ("-" if number == 1 else "not compared")})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("Contract", "Version", "File", "Review id", "Review", "Version status", "Changed since")
    for row in rows:
        table.add_row(row["contract"] if row["version"] == "v1" else "", row["version"], row["file"],
                      row["review_id"][:36], row["review"], row["version_status"], row["changed_since"])
    console.print(table)


def find_report(folder: Path, ref: str) -> tuple[Path, dict[str, Any]]:
    """The report ``ref`` names: a review id (its run id, or the start of one as listed), a JSON report's path, or
    the reviewed file's name when one report of it is in ``folder`` (``CG-VERSIONS-UNKNOWN`` otherwise)."""
    found = reports(folder)
    given = Path(ref)
    if given.suffix == ".json" and given.is_file():
        found = reports(given.parent)
        match = [(p, r) for p, r in found if p.resolve() == given.resolve()]
    else:
        match = [(p, r) for p, r in found if r.get("flow_run_id") == ref] or \
                [(p, r) for p, r in found if len(ref) >= 8 and (r.get("flow_run_id") or "").startswith(ref)] or \
                [(p, r) for p, r in found if r.get("filename") == ref]
    if len(match) == 1:
        return match[0]
    what = "several reviews" if match else "no review report"
    listed = ", ".join(f"{r['filename']} ({r.get('flow_run_id') or 'no id'})" for _, r in match)
    raise signing.SigningError(f"{what} in {folder} match '{ref}'" + (f": {listed}" if listed else ""),
                               code=signing.UNKNOWN, hint="name the version by its review id, as `clausegate "
                               "versions` lists it, or by its JSON report's path")


def _record_signature(review: dict[str, Any], by: str, on: date) -> str:
    """The ``version.signed`` audit event, posted to the Prefect server's audit log; its id."""
    from clausegate import audit  # local import: Prefect; keeps CLI start-up lean
    from clausegate.cli.server import require_server  # local import: Prefect settings; keeps CLI start-up lean

    require_server("versions sign", "the signature is recorded in its audit log")
    run = review.get("flow_run_id") or ""
    event_id = uuid5(NAMESPACE_URL, f"clausegate:version.signed:{run or review['contract_id']}:{by}:{on}")
    event = audit.audit_event("version.signed", actor=by, flow_run_id=run or None, event_id=event_id,
                              contract_id=review["contract_id"], filename=review["filename"], signed_by=by,
                              signed_on=on.isoformat(), recorded_by=getpass.getuser())
    if not audit.record(event):
        raise signing.SigningError(f"the signature of {review['filename']} could not be written to the audit log",
                                   code=signing.NOT_RECORDED, hint="check that the Prefect server answers "
                                   "(clausegate status), then sign again; nothing was recorded")
    return str(event_id)


@versions_app.command("sign")
def sign(version: Annotated[str, typer.Argument(help="the version: its review id, its JSON report or its file's name")],
         by: Annotated[str, typer.Option("--by", help="who signed it")],
         on: Annotated[str | None, typer.Option("--date", help="when they signed it (YYYY-MM-DD; default: today)")]
         = None,
         out: Out = Path("reports")) -> None:
    """Record who signed a version and when (audit log, beside its report); refused while a gate is undecided."""
    try:
        when = date.fromisoformat(on) if on else datetime.now(UTC).date()
    except ValueError:
        console.print(f"[red]--date '{on}' is not a date: give it as YYYY-MM-DD[/red]", highlight=False)
        raise typer.Exit(2) from None
    if not by.strip():
        console.print("[red]--by names no one: give the signer's name[/red]", highlight=False)
        raise typer.Exit(2)
    try:
        path, review = find_report(out, version)
        signing.check_signable(review)
        event = _record_signature(review, by.strip(), when)
    except ClauseGateError as error:
        console.print(f"[red]{error}[/red]", highlight=False)
        raise typer.Exit(1) from None
    signature = signing.Signature(flow_run_id=review.get("flow_run_id") or "", contract_id=review["contract_id"],
                                  filename=review["filename"], signed_by=by.strip(), signed_on=when,
                                  recorded_by=getpass.getuser(), recorded_at=datetime.now(UTC), audit_event=event)
    signatures = signing.add_signature(path, signature)
    markdown = path.with_suffix(".md")
    if markdown.is_file():
        text = markdown.read_text(encoding="utf-8").split("\n## Version status: signed\n", 1)[0].rstrip("\n")
        markdown.write_text("\n".join([text, *signing.signed_lines(signatures)]) + "\n", encoding="utf-8")
    console.print(f"{review['filename']}: signed by {by.strip()} on {when:%Y-%m-%d} (audit event {event}; "
                  f"{signing.signatures_path(path).name})", highlight=False)
