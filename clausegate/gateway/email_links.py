"""The pages behind a gate e-mail's decision links: ``GET`` shows, only ``POST`` decides.

    GET  /gates/email/{token}   the finding, who asked, the answer the link gives, and a Confirm button
    POST /gates/email/{token}   the confirming click: checks, spends the link, resolve_gate(via="email")

Mail scanners and link previews fetch (GET) every link in a message: a GET reads, it never claims or
decides. The POST refuses, each with its code and an HTML page: a link ClauseGate did not sign
(``CG-EMAIL-LINK-FORGED``, 403), one past its time (``-EXPIRED``, 410), one already used (``-REPLAYED``,
409), another link for a finding the person already answered (``-REUSED``, 409), and an address that may
not fill the finding's slot (now), or a submitter's own approval (``-WRONG-PERSON``, 403: the one slot
check, :func:`clausegate.gates.findings.fillable`, and ``resolve_gate``'s own-contract rule). A decision
is recorded ``via: email`` with the link's address as the verified identity (the signed receipt names
it), through the same ``resolve_gate`` as Slack.
"""

from __future__ import annotations

from html import escape
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse
from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound

from clausegate.gates import email_links, findings, store
from clausegate.gates.email_links import LinkRefused
from clausegate.gates.model import DECISION_LABELS, DECISION_PAST
from clausegate.gates.rounds import current_progress
from clausegate.gateway.config import GatewayConfig, get_config

router = APIRouter(prefix="/gates/email", tags=["gates"])
Config = Annotated[GatewayConfig, Depends(get_config)]
STATUS = {email_links.FORGED: 403, email_links.EXPIRED: 410, email_links.REPLAYED: 409, email_links.REUSED: 409,
          email_links.WRONG_PERSON: 403}
STYLE = ("body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.45}"
         "blockquote{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem 1rem;color:#333}"
         "button{font-size:1.1rem;padding:.6rem 1.4rem;cursor:pointer}.code{font-family:monospace;color:#a00}")


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=robots content=noindex>"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><h1>{escape(title)}</h1>{body}"
            "</body></html>")
    return HTMLResponse(html, status_code=status,
                        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})


def _refused(error: LinkRefused) -> HTMLResponse:
    return _page("Not applied", f"<p id=code class=code>{escape(error.code)}</p><p id=message>{escape(error.message)}"
                                f"</p><p>{escape(error.hint)}</p>", STATUS[error.code])


def _gate(link: email_links.Link):
    """(record, progress) of the run's open gate the link is for (progress None: a one-decision gate), or None."""
    with get_client(sync_client=True) as client:
        try:
            flow_run = client.read_flow_run(UUID(link.run))
        except (ObjectNotFound, ValueError):
            return None
        record = store.current_record(client, flow_run)
        if record is None or record.key != link.gate:
            return None
        return record, (current_progress(client, record)[0] if record.per_finding else None)


def _wrong_person(record, prog, link: email_links.Link) -> LinkRefused | None:
    if prog is None:  # one decision: the gate's allowed addresses (resolve_gate checks it again)
        if link.email in record.allowed_addresses:
            return None
        return LinkRefused(email_links.WRONG_PERSON, f"{link.email} may not decide this gate.")
    ids, problems = findings.fillable(record, prog, via="email", user=link.email, finding=link.finding)
    if ids or not problems or all("already decided" in p for p in problems):
        return None
    return LinkRefused(email_links.WRONG_PERSON, f"{link.email} may not decide {link.finding} now: {problems[0]}")


@router.get("/{token}", response_class=HTMLResponse, summary="A decision link: shows the finding, decides nothing")
def show(token: str) -> HTMLResponse:
    try:
        link = email_links.read(token)
    except LinkRefused as error:
        return _refused(error)
    found = _gate(link)
    if found is None:
        return _page("Not waiting", "<p id=message>This contract is not waiting at this gate any more.</p>", 409)
    record, prog = found
    label = DECISION_LABELS[link.decision]
    if prog is None:  # a one-decision gate: every finding, one answer for the contract
        if link.finding != email_links.WHOLE_GATE:
            return _refused(LinkRefused(email_links.FORGED, "this link names no decision of the gate."))
        quotes = "".join(f"<p><b>{escape(f.id)} · {escape(f.category)}</b> · p. "
                         f"{escape(', '.join(map(str, f.pages)) or '-')}</p><blockquote>{escape(f.text)}</blockquote>"
                         for f in record.findings)
        return _page(f"{record.filename}: the contract", (
            f"<div id=finding>{quotes}</div><form method=post><p>You ({escape(link.email)}) answer for the whole "
            f"contract: <b>{escape(label)}</b>.</p><button id=confirm type=submit>Confirm: {escape(label)}</button>"
            "</form>"))
    fp = prog.get(link.finding)
    if fp is None:
        return _refused(LinkRefused(email_links.FORGED, "this link names no finding of the gate."))
    f = fp.finding
    return _page(f"{record.filename}: {f.id}", (
        f"<p><b>{escape(f.category)}</b> · p. {escape(', '.join(map(str, f.pages)) or '-')} · decides: "
        f"{escape(' and '.join(fp.roles) or 'anyone')}</p><blockquote id=finding>{escape(f.text)}</blockquote>"
        + (f"<p>Why: {escape(f.why)}</p>" if f.why else "")
        + f"<p id=state>{escape(findings.describe_slots(fp))}</p>"
        f"<form method=post><p>You ({escape(link.email)}) answer: <b>{escape(label)}</b>.</p>"
        f"<button id=confirm type=submit>Confirm: {escape(label)} {escape(f.id)}</button></form>"))


@router.post("/{token}", response_class=HTMLResponse, summary="The confirming click: decides the finding once")
def confirm(token: str, config: Config) -> HTMLResponse:
    try:
        link = email_links.read(token)
        found = _gate(link)
        if found is None:
            return _page("Not waiting", "<p id=message>This contract is not waiting at this gate any more.</p>", 409)
        refused = _wrong_person(*found, link)
        if refused is not None:
            raise refused
        with get_client(sync_client=True) as client:
            email_links.claim(client, link)
    except LinkRefused as error:
        return _refused(error)
    whole = link.finding == email_links.WHOLE_GATE
    outcome = config.resolve(link.run, link.decision, reviewer=link.email, via="email", email=link.email,
                             gate=link.gate, finding=None if whole else link.finding)
    if not outcome.ok:
        with get_client(sync_client=True) as client:
            email_links.release(client, link)
        if outcome.reason in ("not_in_role", "own_contract"):
            return _refused(LinkRefused(email_links.WRONG_PERSON, outcome.message))
        return _page("Not applied", f"<p id=message>{escape(outcome.message)}</p>", 409)
    what = "The contract" if whole else link.finding
    return _page("Recorded", f"<p id=message>{escape(what)} {escape(DECISION_PAST[link.decision])} by "
                             f"{escape(link.email)} (via e-mail). {escape(outcome.message)}</p>")
