"""``GET /inbox/tasks/{id}/annotated``: the task's annotated contract (clausegate/review/annotate/: a .docx with a
Word comment on each finding, a PDF with highlights, an HTML page for a text), behind the same API key as the task.

Only the key that may see the task gets it (``Inbox.get`` checks the key's sender, as for the task itself); the file
is the one the review wrote next to its report (``Review.annotated``; while a gate waits, before the review is the
run's result, the copy written for the gate, found by the contract's hash).  In strict text mode the copy is stored
sealed and is unsealed here for that key only, like the clause text the inbox API returns.  It is sent as an
attachment that no browser renders in the gateway's origin (``Content-Disposition: attachment``, ``nosniff``, a
sandboxing CSP).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, Response

from clausegate.gateway.inbox import ERRORS, CallerDep, InboxDep
from clausegate.inbox.errors import TaskNotFound
from clausegate.review.annotate import MARK, MEDIA_TYPES
from clausegate.review.report import SEALED_SUFFIX
from clausegate.security import at_rest

router = APIRouter(prefix="/inbox", tags=["inbox"])
FILE = {"content": {"application/octet-stream": {}},
        "description": "the annotated contract: .docx (comments, tracked changes), PDF (highlights) or HTML (text)"}
MAX_BYTES = 200 * 1024 * 1024


def find(folder: Path, annotated: str | None, sha256: str | None, playbook: str) -> Path | None:
    """The annotated copy in the reports ``folder``: the review's own file name, else (a gate waiting) the newest
    copy for the contract's hash, this playbook's first."""
    if annotated and "/" not in annotated and "\\" not in annotated and (folder / annotated).is_file():
        return folder / annotated
    if not sha256 or not folder.is_dir():
        return None
    found = [p for p in folder.glob(f"*-{sha256[:12]}-*{MARK}.*") if p.is_file() and not p.is_symlink()]
    found.sort(key=lambda p: (p.name.split(MARK)[0].endswith(f"-{playbook}"), p.stat().st_mtime), reverse=True)
    return found[0] if found else None


def read(path: Path) -> bytes:
    if path.stat().st_size > MAX_BYTES:
        raise TaskNotFound("the annotated copy is larger than the gateway serves", hint="read it from the reports "
                                                                                       "folder on the server")
    data = path.read_bytes()
    if path.name.endswith(SEALED_SUFFIX):
        data = at_rest.unseal(data, what=f"the sealed annotated copy {path.name}")
    return data


def download_name(path: Path) -> str:
    name = path.name[:-len(SEALED_SUFFIX)] if path.name.endswith(SEALED_SUFFIX) else path.name
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


@router.get("/tasks/{task_id}/annotated", response_class=Response, responses={200: FILE, **ERRORS})
async def task_annotated(task_id: str, inbox: InboxDep, caller: CallerDep) -> Response:
    """The task's annotated contract: a Word comment (or a PDF highlight) on each finding, with its category,
    confidence, why it gates, its position and, once decided, the decision; 404 until one is written."""
    view = await inbox.get(caller, task_id)
    review = view.review
    path = find(inbox.settings.reports_dir, review.annotated if review else None, view.contract.get("sha256"),
                view.playbook)
    if path is None:
        raise TaskNotFound(f"task '{task_id}' has no annotated copy (yet)",
                           hint="it is written when the review reaches its gate or its report; a review that ran "
                                "with annotation off, failed to parse, or found nothing has none")
    name = download_name(path)
    data = await asyncio.to_thread(read, path)
    return Response(content=data, media_type=MEDIA_TYPES.get(Path(name).suffix, "application/octet-stream"),
                    headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store",
                             "X-Content-Type-Options": "nosniff",
                             "Content-Security-Policy": "sandbox; default-src 'none'"})
