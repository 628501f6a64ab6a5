"""Inbox routes: submit review tasks, poll them, list, cancel, retry (``/inbox/tasks``).

Every route needs ``Authorization: Bearer <API key>``; the key decides the sender.  Errors from the
inbox (``InboxError``) become JSON ``{"detail": {"code", "message", "hint"}}`` with their HTTP status
in one handler (``create_app``); nothing below raises HTTP errors itself.

A submission is judged before it is read: the key (a header) first, then the sender's rate slot, and
only then is the body parsed, from a stream the gateway caps while it arrives
(``clausegate.gateway.security.BodyLimitMiddleware``): a multipart form (``SubmitFields`` + ``file``) or a
JSON text submission (``TextSubmission``).  Neither is a FastAPI ``Form()``/body signature (FastAPI would
parse and spool it before any dependency ran); their schemas are declared for OpenAPI by hand.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, UploadFile, status
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from python_multipart.multipart import parse_options_header
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.datastructures import UploadFile as StarletteUploadFile
from starlette.formparsers import FormParser, MultiPartException, MultiPartParser

from clausegate.config import InboxSettings
from clausegate.gateway.config import GatewayConfig, get_config
from clausegate.inbox import intake, playbooks
from clausegate.inbox.errors import BadSubmission, TooLarge, Unauthorized, Unavailable, clip
from clausegate.inbox.fields import TOPIC_PATTERN, Priority, validate_fields
from clausegate.inbox.keys import SENDER_PATTERN, ApiKeyRecord, Caller, authenticate
from clausegate.inbox.messages import MessageSubmitted, submit_message
from clausegate.inbox.service import Inbox
from clausegate.inbox.status import Submitted, TaskPage, TaskStatus
from clausegate.inbox.views import TaskDetail

router = APIRouter(prefix="/inbox", tags=["inbox"])
bearer = HTTPBearer(auto_error=False, description="an inbox API key: `clausegate inbox keys create --sender NAME`")

ERRORS = {code: {"description": text} for code, text in (
    (401, "missing, malformed, unknown or revoked API key"), (404, "no such task for this key's sender"),
    (409, "conflict with the task's state or an earlier idempotency key"),
    (413, "document, e-mail or text over its size limit"),
    (415, "not a document the inbox takes: a PDF (by content), or .docx / .odt / .txt / .md / .eml whose content "
          "matches its name (CG-INBOX-NOT-PDF, CG-INBOX-NOT-DOCX, CG-INBOX-NOT-TEXT)"),
    (422, "a field is missing or invalid (the message names it); 'revises' names no task of this sender "
          "(CG-INBOX-REVISES); an .eml with malformed headers "
          "(CG-INBOX-EML-MALFORMED) or nothing to review (CG-INBOX-EML-NO-CONTRACT)"),
    (429, "sender over its submission rate (see Retry-After)"), (503, "Prefect (the inbox's store) unreachable"))}


def get_inbox(config: Annotated[GatewayConfig, Depends(get_config)]) -> Inbox:
    if config.inbox is None:
        raise Unavailable("the inbox is not enabled on this gateway",
                          hint="start it with `clausegate gateway` (inbox on by default)")
    return config.inbox


async def get_key(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
                  inbox: Annotated[Inbox, Depends(get_inbox)]) -> tuple[Caller, ApiKeyRecord]:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise Unauthorized("no API key", hint="send 'Authorization: Bearer cgk_…' (`clausegate inbox keys create`)")
    async with inbox.prefect.use() as client:  # the gateway's one Prefect client (clausegate/inbox/connection.py)
        return await authenticate(client, credentials.credentials)


def get_caller(key: Annotated[tuple[Caller, ApiKeyRecord], Depends(get_key)]) -> Caller:
    return key[0]


InboxDep = Annotated[Inbox, Depends(get_inbox)]
CallerDep = Annotated[Caller, Depends(get_caller)]


class SubmitFields(BaseModel):
    """The text fields of a submission (the multipart form beside ``file``); also its OpenAPI schema."""

    source_path: str | None = Field(None, description="or: a path inside the server's source folder")
    source_url: str | None = Field(None, description="or: an http(s) URL on the server's allow-list")
    sender: str | None = Field(None, description="defaults to the key's sender (admins may file for others)")
    topic: str | None = Field(None, description="free label, filterable (e.g. 'renewals')")
    priority: Priority = Field("normal", description="the work queue the review runs on")
    playbook: str = Field("default", description="a playbook name: built-in or the team's (GET /inbox/playbooks)")
    idempotency_key: str | None = Field(None, description="same key → same task, never paid twice")
    revises: str | None = Field(None, description="the task_id of this sender's earlier version of the contract: the "
                                                  "review then says what changed and carries unchanged decisions")


class TextSubmission(BaseModel):
    """A JSON submission: the contract text itself (a whole contract or a single clause), stored as a sealed
    ``.txt`` upload and reviewed like one."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="the contract or clause text (UTF-8; at most CLAUSEGATE_INBOX_MAX_UPLOAD_MB)")
    sender: str | None = Field(None, description="defaults to the key's sender (admins may file for others)")
    topic: str | None = Field(None, description="free label, filterable (e.g. 'renewals')")
    priority: Priority = Field("normal", description="the work queue the review runs on")
    playbook: str = Field("default", description="a playbook name: built-in or the team's (GET /inbox/playbooks)")
    idempotency_key: str | None = Field(None, description="same key → same task, never paid twice")
    revises: str | None = Field(None, description="the task_id of this sender's earlier version of the contract: the "
                                                  "review then says what changed and carries unchanged decisions")


FILE_DESCRIPTION = ("the contract (multipart upload): a PDF (checked by content, whatever its name), a Word .docx, "
                    "UTF-8 text (.txt, .md), or an e-mail (.eml: each PDF/DOCX attachment becomes its own task, the "
                    "body too when it holds contract language; the answer is then a MessageSubmitted)")


def _form_schema() -> dict:
    schema = SubmitFields.model_json_schema()
    schema["title"] = "Body_submit_task_inbox_tasks_post"
    schema.pop("description", None)
    file = {"anyOf": [{"type": "string", "contentMediaType": "application/octet-stream"}, {"type": "null"}],
            "title": "File", "description": FILE_DESCRIPTION}
    schema["properties"] = {"file": file, **schema["properties"]}
    return schema


def _text_schema() -> dict:
    schema = TextSubmission.model_json_schema()
    schema["title"] = "TextSubmission"
    return schema


MAX_FORM_FIELDS = 16  # the form has 9 fields; a few unknown ones are ignored, thousands are refused
MAX_FIELD_BYTES = 16 * 1024  # a text field (the longest legitimate one, a URL, is 2 KB at most)


class SealingMultiPartParser(MultiPartParser):
    """Starlette's multipart parser, with the file part streamed into a sealed temporary file as it arrives
    (``clausegate.inbox.intake.open_upload``) instead of a spool: the gateway holds a chunk, not the upload."""

    def __init__(self, *args, settings: InboxSettings, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings

    def on_headers_finished(self) -> None:
        super().on_headers_finished()
        upload = self._current_part.file
        if upload is not None:
            upload.file.close()  # the empty spool starlette made for it
            upload.file = _OpenedOnFirstUse(self.settings, upload.filename or "")
            self._files_to_close_on_error.append(upload.file)


class _OpenedOnFirstUse:
    """The sealed upload file, created on its first use: the parser's callbacks run on the event loop, its
    writes in the thread pool (``UploadFile.write``), so creating the file there keeps a slow disk off the loop."""

    def __init__(self, settings: InboxSettings, shown_name: str) -> None:
        self._settings, self._shown_name, self._writer = settings, shown_name, None

    def _opened(self):
        if self._writer is None:
            self._writer = intake.open_upload(self._settings, self._shown_name)
        return self._writer

    def write(self, data: bytes) -> int:
        return self._opened().write(data)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def __getattr__(self, name: str):
        if name.startswith("_"):  # e.g. UploadFile's `_rolled` probe: not a real attribute, never opens the file
            raise AttributeError(name)
        return getattr(self._opened(), name)


async def read_submission(request: Request, settings: InboxSettings) -> tuple[SubmitFields, UploadFile | None,
                                                                               FormData]:
    """The submission's fields and upload, parsed from the (size-capped) multipart stream.

    Called only after the key was checked and a rate slot taken: nothing of the body is read before.
    At most one file, ``MAX_FORM_FIELDS`` fields of ``MAX_FIELD_BYTES`` each; the body as a whole is
    capped while it streams (``BodyLimitMiddleware``: the upload limit plus the form's overhead), and
    the upload is sealed into a temporary file under the inbox's uploads folder while it arrives (capped
    at the upload limit there too), never held whole in memory nor spooled to a plain temp file.
    """
    content_type, _ = parse_options_header(request.headers.get("content-type", ""))
    try:
        async with aclosing(request.stream()) as stream:
            if content_type == b"multipart/form-data":
                parser = SealingMultiPartParser(request.headers, stream, max_files=1, max_fields=MAX_FORM_FIELDS,
                                                max_part_size=MAX_FIELD_BYTES, settings=settings)
                form = await parser.parse()
            elif content_type == b"application/x-www-form-urlencoded":
                form = await FormParser(request.headers, stream, max_fields=MAX_FORM_FIELDS,
                                        max_part_size=MAX_FIELD_BYTES).parse()
            else:
                form = FormData()
    except MultiPartException as exc:  # malformed multipart, too many files/fields, a field too large
        raise BadSubmission(f"the multipart form could not be read: {clip(exc.message, 200)}",
                            hint=f"send one 'file' and the text fields (each at most {MAX_FIELD_BYTES // 1024} KB), "
                                 "e.g. curl -F file=@contract.pdf -F playbook=default …") from None
    values: dict[str, str] = {}
    for name in SubmitFields.model_fields:
        value = form.get(name)
        if isinstance(value, StarletteUploadFile):
            raise BadSubmission(f"field '{name}' must be text, not a file", hint="send the contract as 'file' only")
        if value:  # an empty field is an absent one (as FastAPI's Form() treats it)
            values[name] = value
    upload = form.get("file")
    if isinstance(upload, str):
        if upload:
            raise BadSubmission("field 'file' must be a file upload (a multipart part with a filename)",
                                hint="e.g. curl -F file=@contract.pdf …; or use 'source_path' / 'source_url'")
        upload = None
    try:
        fields = SubmitFields.model_validate(values)
    except ValidationError as exc:  # the same 422 FastAPI gives for a declared Form() field
        raise RequestValidationError([{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]) from None
    return fields, upload, form


async def read_text_submission(request: Request, settings: InboxSettings) -> TextSubmission:
    """A JSON body (capped while it streams by ``BodyLimitMiddleware``), validated; ``content`` checked for size,
    emptiness and characters no text file holds (NUL, lone surrogates)."""
    body = bytearray()
    async with aclosing(request.stream()) as stream:
        async for chunk in stream:
            body += chunk
    try:
        values = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadSubmission("the JSON body could not be read", hint='send e.g. {"content": "The Supplier shall…", '
                            '"playbook": "default"} with Content-Type: application/json') from None
    except RecursionError:  # arrays or objects nested thousands deep: the decoder's recursion limit
        raise BadSubmission("the JSON body is nested too deeply to read (a submission is one flat object)",
                            hint='send {"content": "…", "playbook": "…", …} with text values only') from None
    if not isinstance(values, dict):
        raise BadSubmission("the JSON body must be an object", hint='send {"content": "…", …}')
    try:
        text = TextSubmission.model_validate(values)
    except ValidationError as exc:  # the documented 422 naming the field (clausegate.gateway.app)
        raise RequestValidationError([{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]) from None
    try:
        size = len(text.content.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadSubmission("field 'content' holds characters that are not valid Unicode text (lone surrogates)",
                            hint="send the text as UTF-8") from None
    if size > settings.max_upload_bytes:
        raise TooLarge(f"field 'content' is {size / 1024 / 1024:.1f} MB, over the inbox limit of "
                       f"{settings.max_upload_mb:g} MB", hint="split the text or upload the document")
    if not text.content.strip():
        raise BadSubmission("field 'content' is empty", hint="send the contract's or the clause's text")
    if "\x00" in text.content:
        raise BadSubmission("field 'content' contains NUL characters", hint="send plain text")
    return text


@router.post("/tasks", status_code=status.HTTP_201_CREATED, response_model=Submitted | MessageSubmitted,
             responses={200: {"model": Submitted | MessageSubmitted,
                              "description": "an existing task (repeated submission), or an e-mail whose tasks "
                                             "all existed already"}, **ERRORS},
             openapi_extra={"requestBody": {"content": {"multipart/form-data": {"schema": _form_schema()},
                                                        "application/json": {"schema": _text_schema()}}}})
async def submit_task(
    request: Request,
    response: Response,
    inbox: InboxDep,
    key: Annotated[tuple[Caller, ApiKeyRecord], Depends(get_key)],
) -> Submitted:
    """Submit a contract for review; answers at once with the task id (201, or 200 for an existing task).

    Sources: a multipart ``file`` (PDF, .docx, .txt/.md, or an .eml: one task per PDF/DOCX attachment and per
    body with contract language, answered as a ``MessageSubmitted``), ``source_path``, ``source_url``, or a
    JSON body ``{"content": "…"}`` (a contract's or a single clause's text).  The sender is the API key's.
    ``revises``: the task id of the sender's earlier version (422 CG-INBOX-REVISES for any other).
    The API key is checked and the sender's rate slot taken before a byte of the upload is read."""
    caller, record = key
    await inbox.admit(caller, record)
    content_type, _ = parse_options_header(request.headers.get("content-type", ""))
    if content_type == b"application/json":
        text = await read_text_submission(request, inbox.settings)
        fields = SubmitFields(sender=text.sender, topic=text.topic, priority=text.priority, playbook=text.playbook,
                              idempotency_key=text.idempotency_key, revises=text.revises)
        return await _submit(response, inbox, caller, fields, None, text=text.content)
    fields, file, form = await read_submission(request, inbox.settings)
    try:
        return await _submit(response, inbox, caller, fields, file)
    finally:
        await form.close()  # the upload's temporary file, unless it was stored


async def _submit(response: Response, inbox: Inbox, caller: Caller, fields: SubmitFields,
                  file: UploadFile | None, text: str | None = None) -> Submitted | MessageSubmitted:
    has_file = file is not None and bool(file.filename or file.size)
    kind = "text" if text is not None else intake.one_source(has_file, fields.source_path, fields.source_url)
    who = validate_fields(caller=caller, sender=fields.sender, topic=fields.topic, priority=fields.priority,
                          playbook=fields.playbook, idempotency_key=fields.idempotency_key,
                          playbooks=inbox.settings.playbooks(), source_path=fields.source_path,
                          source_url=fields.source_url, revises=fields.revises)
    settings = inbox.settings
    await run_in_threadpool(playbooks.check_usable, settings, fields.playbook)  # a team file that does not load
    # File work (reading a referenced file; hashing, sealing and writing the upload) runs in a worker thread:
    # on the event loop it would hold up every other request of the gateway while it runs.
    if kind == "text":
        stored = await run_in_threadpool(intake.store_text, text, fields.topic, settings)
    elif kind == "file":  # sealed to a temporary file while it streamed in (SealingMultiPartParser)
        stored = await run_in_threadpool(intake.store_upload, file.file, intake.safe_filename(file.filename),
                                         "upload", settings)
    else:
        if kind == "source_path":
            data, name = await run_in_threadpool(intake.read_reference, fields.source_path, settings)
            name, origin = intake.safe_filename(name), f"path:{fields.source_path}"
        else:
            data, name = await intake.fetch_url(fields.source_url, settings)
            origin = f"url:{fields.source_url}"
        stored = await run_in_threadpool(intake.store, data, name, origin, settings)  # durable before the run exists
    if stored.kind == "eml":
        if fields.revises:
            raise BadSubmission("field 'revises' does not go with an e-mail (.eml): it may hold several contracts",
                                hint="submit the revised contract itself (its PDF or .docx) with 'revises'")
        message, created = await submit_message(inbox, caller, stored, sender=who, topic=fields.topic,
                                                priority=fields.priority, playbook=fields.playbook,
                                                idempotency_key=fields.idempotency_key)
        response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return message
    submitted, created = await inbox.submit(caller, stored, sender=who, topic=fields.topic, priority=fields.priority,
                                            playbook=fields.playbook, idempotency_key=fields.idempotency_key,
                                            revises=fields.revises)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    response.headers["Location"] = f"/inbox/tasks/{submitted.task_id}"
    return submitted


@router.get("/playbooks", response_model=playbooks.PlaybookList, responses=ERRORS)
async def list_playbooks(inbox: InboxDep, caller: CallerDep) -> playbooks.PlaybookList:
    """The playbooks a submission may name: the built-in ones and the team's own (``NAME.yaml`` in
    CLAUSEGATE_INBOX_PLAYBOOKS_DIR), each team file checked (a malformed one is listed with its error)."""
    return await run_in_threadpool(playbooks.list_playbooks, inbox.settings)


@router.get("/tasks/{task_id}", response_model=TaskDetail, responses=ERRORS)
async def get_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskDetail:
    """A task's status (pending, processing, waiting_for_human, done, escalated, failed, cancelled), its
    attempts and times, the error code when it failed, the review when done, the gate's links and the findings
    it asks about when waiting (their text left out in strict text mode)."""
    return await inbox.get(caller, task_id)


@router.get("/tasks", response_model=TaskPage, responses=ERRORS)
async def list_tasks(
    inbox: InboxDep,
    caller: CallerDep,
    status_: Annotated[TaskStatus | None, Query(alias="status")] = None,
    sender: Annotated[str | None, Query(max_length=63, pattern=SENDER_PATTERN)] = None,
    topic: Annotated[str | None, Query(max_length=80, pattern=TOPIC_PATTERN)] = None,
    message: Annotated[str | None, Query(max_length=40, pattern=r"^msg-[0-9a-f]{20}$",
                                         description="the tasks of one e-mail (its message_id)")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> TaskPage:
    """Tasks newest first, ``limit`` a page (``next_cursor`` pages on); failed tasks carry their error codes.
    An item carries no review and no gate details: GET the task for those."""
    return await inbox.list(caller, status=status_, sender=sender, topic=topic, limit=limit, cursor=cursor,
                            message=message)


@router.post("/tasks/{task_id}/cancel", response_model=TaskDetail, responses=ERRORS)
async def cancel_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskDetail:
    """Cancel a task that has not finished (a running review is stopped by its worker)."""
    return await inbox.cancel(caller, task_id)


@router.post("/tasks/{task_id}/retry", response_model=TaskDetail, responses=ERRORS)
async def retry_task(task_id: str, inbox: InboxDep, caller: CallerDep) -> TaskDetail:
    """Run a failed or cancelled task again (same id; finished steps come from the cache and are not paid again)."""
    return await inbox.retry(caller, task_id)
