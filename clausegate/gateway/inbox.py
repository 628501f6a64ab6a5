"""Inbox routes: submit review tasks, poll them, list, cancel, retry (``/inbox/tasks``).

Every route needs ``Authorization: Bearer <API key>``; the key decides the sender.  Errors from the
inbox (``InboxError``) become JSON ``{"detail": {"code", "message", "hint"}}`` with their HTTP status
in one handler (``create_app``); nothing below raises HTTP errors itself.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, Response, UploadFile, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from clausegate.gateway.config import GatewayConfig, get_config
from clausegate.inbox import intake
from clausegate.inbox.errors import Unauthorized, Unavailable
from clausegate.inbox.keys import ApiKeyRecord, Caller, authenticate
from clausegate.inbox.service import Inbox, validate_fields
from clausegate.inbox.settings import Priority
from clausegate.inbox.status import Submitted, TaskPage, TaskStatus, TaskView

router = APIRouter(prefix="/inbox", tags=["inbox"])
bearer = HTTPBearer(auto_error=False, description="an inbox API key: `clausegate inbox keys create --sender NAME`")

ERRORS = {code: {"description": text} for code, text in (
    (401, "missing, malformed, unknown or revoked API key"), (404, "no such task for this key's sender"),
    (409, "conflict with the task's state or an earlier idempotency key"), (413, "contract over the size limit"),
    (415, "not a PDF (checked by content)"), (422, "a field is missing or invalid (the message names it)"),
    (429, "sender over its submission rate (see Retry-After)"), (503, "Prefect (the inbox's store) unreachable"))}


def get_inbox(config: Annotated[GatewayConfig, Depends(get_config)]) -> Inbox:
    if config.inbox is None:
        raise Unavailable("the inbox is not enabled on this gateway", hint="start it with `clausegate gateway` (inbox on by default)")
    return config.inbox


async def get_key(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
                  _inbox: Annotated[Inbox, Depends(get_inbox)]) -> tuple[Caller, ApiKeyRecord]:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("no API key", hint="send 'Authorization: Bearer cgk_…' (`clausegate inbox keys create`)")
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return await authenticate(client, credentials.credentials)


def get_caller(key: Annotated[tuple[Caller, ApiKeyRecord], Depends(get_key)]) -> Caller:
    return key[0]


InboxDep = Annotated[Inbox, Depends(get_inbox)]
CallerDep = Annotated[Caller, Depends(get_caller)]


@router.post("/tasks", status_code=status.HTTP_201_CREATED, response_model=Submitted,
             responses={200: {"model": Submitted, "description": "an existing task (repeated submission)"}, **ERRORS})
async def submit_task(
    response: Response,
    inbox: InboxDep,
    key: Annotated[tuple[Caller, ApiKeyRecord], Depends(get_key)],
    file: Annotated[UploadFile | None, File(description="the contract PDF (multipart upload)")] = None,
    source_path: Annotated[str | None, Form(description="or: a path inside the server's source folder")] = None,
    source_url: Annotated[str | None, Form(description="or: an http(s) URL on the server's allow-list")] = None,
    sender: Annotated[str | None, Form(description="defaults to the key's sender (admins may file for others)")] = None,
    topic: Annotated[str | None, Form(description="free label, filterable (e.g. 'renewals')")] = None,
    priority: Annotated[Priority, Form(description="the work queue the review runs on")] = "normal",
    playbook: Annotated[str, Form(description="a built-in playbook name")] = "default",
    idempotency_key: Annotated[str | None, Form(description="same key → same task, never paid twice")] = None,
) -> Submitted:
    """Submit a contract for review; answers at once with the task id (201, or 200 for an existing task)."""
    caller, record = key
    has_file = file is not None and bool(file.filename or file.size)
    kind = intake.one_source(has_file, source_path, source_url)
    who = validate_fields(caller=caller, sender=sender, topic=topic, priority=priority, playbook=playbook,
                          idempotency_key=idempotency_key, playbooks=inbox.settings.playbooks())
    await inbox.admit(caller, record)
    settings = inbox.settings
    if kind == "file":
        data = await intake.read_capped(_chunks(file), settings.max_upload_bytes, f"the upload '{file.filename}'")
        name, origin = intake.safe_filename(file.filename), "upload"
    elif kind == "source_path":
        data, name = intake.read_reference(source_path, settings)
        name, origin = intake.safe_filename(name), f"path:{source_path}"
    else:
        data, name = await intake.fetch_url(source_url, settings)
        origin = f"url:{source_url}"
    stored = intake.store(data, name, origin, settings)
    submitted, created = await inbox.submit(caller, stored, sender=who, topic=topic, priority=priority,
                                            playbook=playbook, idempotency_key=idempotency_key)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    response.headers["Location"] = f"/inbox/tasks/{submitted.task_id}"
    return submitted


async def _chunks(upload: UploadFile):
    while chunk := await upload.read(intake.CHUNK):
        yield chunk


@router.get("/tasks/{task_id}", response_model=TaskView, responses=ERRORS)
async def get_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskView:
    """A task's status (pending, processing, waiting_for_human, done, escalated, failed, cancelled), its
    attempts and times, the error code when it failed, the review when done, the gate's links when waiting."""
    return await inbox.get(caller, task_id)


@router.get("/tasks", response_model=TaskPage, responses=ERRORS)
async def list_tasks(
    inbox: InboxDep,
    caller: CallerDep,
    status_: Annotated[TaskStatus | None, Query(alias="status")] = None,
    sender: Annotated[str | None, Query(max_length=63)] = None,
    topic: Annotated[str | None, Query(max_length=80)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> TaskPage:
    """Tasks newest first; ``next_cursor`` pages on. Failed tasks carry their error codes."""
    return await inbox.list(caller, status=status_, sender=sender, topic=topic, limit=limit, cursor=cursor)


@router.post("/tasks/{task_id}/cancel", response_model=TaskView, responses=ERRORS)
async def cancel_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskView:
    """Cancel a task that has not finished (a running review is stopped by its worker)."""
    return await inbox.cancel(caller, task_id)


@router.post("/tasks/{task_id}/retry", response_model=TaskView, responses=ERRORS)
async def retry_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskView:
    """Run a failed or cancelled task again (same id; finished steps come from the cache and are not paid again)."""
    return await inbox.retry(caller, task_id)
