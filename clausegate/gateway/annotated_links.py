"""``GET /annotated/{token}``: the annotated contract behind a gate's signed link ("Open the clause" in Slack, the
link in the Prefect UI form and the gate e-mail), for a person who holds no inbox API key.

The token (clausegate/gates/annotated_links.py) names one file in the inbox's reports folder, for one contract and
playbook, until it expires; the route checks the signature and the time first, then that the name is the
contract's annotated copy (``…-<sha256[:12]>-….annotated.*``, no folder, no symlink).  Refused: a link we did not
sign or that was changed (``CG-ANNOTATED-LINK-FORGED``, 403), one past its time (``-EXPIRED``, 410), a copy that
is not there (``-GONE``, 404): a small HTML page with the code, never a file.  In strict text mode the copy is
stored sealed and unsealed here for a valid link only.  Sent like ``/inbox/tasks/{id}/annotated``: an attachment
(``Content-Disposition``), ``nosniff``, a sandboxing CSP, ``no-store``.
"""

from __future__ import annotations

import asyncio
from html import escape
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Response
from fastapi.responses import HTMLResponse

from clausegate.config import settings
from clausegate.gates import annotated_links
from clausegate.gates.annotated_links import GONE, AnnotatedLinkRefused
from clausegate.gateway.annotated import download_name, read
from clausegate.gateway.config import GatewayConfig, get_config
from clausegate.inbox.errors import TaskNotFound
from clausegate.review.annotate import MARK, MEDIA_TYPES

router = APIRouter(tags=["gates"])
Config = Annotated[GatewayConfig, Depends(get_config)]
FILE = {"content": {"application/octet-stream": {}},
        "description": "the annotated contract: .docx (comments, tracked changes), PDF (highlights) or HTML (text)"}
REFUSED = {status: {"content": {"text/html": {}}, "description": f"{code}: an HTML page with the code; no file"}
           for code, status in annotated_links.STATUS.items()}
SAFE_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": "sandbox; default-src 'none'"}


def _refused(error: AnnotatedLinkRefused) -> HTMLResponse:
    html = ("<!doctype html><html lang=en><head><meta charset=utf-8><meta name=robots content=noindex>"
            "<title>Not available</title></head><body><h1>Not available</h1>"
            f"<p id=code>{escape(error.code)}</p><p id=message>{escape(error.message)}</p>"
            f"<p id=hint>{escape(error.hint)}</p></body></html>")
    return HTMLResponse(html, status_code=error.http_status, headers=SAFE_HEADERS)


def copy_path(folder: Path, link: annotated_links.AnnotatedLink) -> Path:
    """The file the link names, if it is this contract's annotated copy in ``folder``; raises ``GONE``."""
    name = link.file
    if f"-{link.sha256[:12]}-{link.playbook}{MARK}." not in name or name.startswith("."):
        raise AnnotatedLinkRefused(GONE, "the link names no annotated copy of its contract.")
    path = folder / name
    if not path.is_file() or path.is_symlink():
        raise AnnotatedLinkRefused(GONE, "the annotated copy this link names is not on the server (any more).")
    return path


@router.get("/annotated/{token}", response_class=Response, responses={200: FILE, **REFUSED},
            summary="A gate's signed link: the annotated contract, without an API key")
async def annotated_by_link(token: str, config: Config) -> Response:
    """The annotated contract a gate's link names (a Word comment or PDF highlight on each finding), while the link
    is valid; an HTML page with a ``CG-ANNOTATED-LINK-*`` code otherwise."""
    folder = config.inbox.settings.reports_dir if config.inbox is not None else settings().inbox.reports_dir
    try:
        link = annotated_links.read(token)
        path = copy_path(folder, link)
        data = await asyncio.to_thread(read, path)
    except AnnotatedLinkRefused as error:
        return _refused(error)
    except TaskNotFound as error:  # larger than the gateway serves
        return _refused(AnnotatedLinkRefused(GONE, f"{error.message} ({error.hint})."))
    name = download_name(path)
    return Response(content=data, media_type=MEDIA_TYPES.get(Path(name).suffix, "application/octet-stream"),
                    headers={"Content-Disposition": f'attachment; filename="{name}"', **SAFE_HEADERS})
