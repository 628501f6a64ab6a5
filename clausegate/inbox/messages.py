"""An e-mail submission: one task per document of the message (``clausegate.inbox.email_intake``), linked to it.

Each document is stored sealed like an upload and submitted like one (same dedupe, same limits), with the
message's link (``MessageLink``: our message id, the MIME part, ``Subject:``/``From:``/``Message-ID:`` as
metadata) on the run's labels and an ``inbox-message:<id>`` tag to list them by.  The subject is the tasks'
topic unless the submission names one.  A client's ``idempotency_key`` is made per part (``KEY/PART``).  A
refused part (too large, not what it claims, an idempotency conflict) is listed with its code and the others
go through; a message that yields no task at all is refused (``CG-INBOX-EML-NO-CONTRACT``).
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from clausegate.inbox import intake
from clausegate.inbox.email_intake import ParsedMessage
from clausegate.inbox.eml_sandbox import parse_message
from clausegate.inbox.errors import InboxError, NothingToReview, Unavailable, clip
from clausegate.inbox.intake import StoredContract
from clausegate.inbox.keys import Caller
from clausegate.inbox.status import MessageLink, Submitted
from clausegate.security import at_rest


class PartSubmitted(Submitted):
    part: str = Field(description="where the document sits in the message: 'body', '2', '3.1', '3.body'")
    filename: str
    kind: str = Field(description="pdf, docx or text (the message body)")


class PartNote(BaseModel):
    part: str
    filename: str | None = None
    code: str | None = Field(None, description="why the part was refused (null: skipped, not a document)")
    message: str
    hint: str = ""


class MessageSubmitted(BaseModel):
    """The answer to an ``.eml`` upload: a task per document, and what was refused or skipped."""

    message_id: str = Field(description="list its tasks with GET /inbox/tasks?message=ID")
    subject: str | None = None
    from_header: str | None = Field(None, description="the message's From: as sent (metadata; the tasks' sender "
                                    "is the API key's)")
    topic: str | None = None
    tasks: list[PartSubmitted] = []
    refused: list[PartNote] = []
    skipped: list[PartNote] = []


async def submit_message(inbox, caller: Caller, stored: StoredContract, *, sender: str, topic: str | None,
                         priority: str, playbook: str, idempotency_key: str | None) -> tuple[MessageSubmitted, bool]:
    """(the answer, any task created?) for the stored ``.eml`` ``stored``; see the module docstring."""
    settings = inbox.settings
    data = await asyncio.to_thread(at_rest.read_sealed_file, stored.path, max_plain_bytes=settings.max_message_bytes)
    parsed: ParsedMessage = await asyncio.to_thread(parse_message, data, settings)
    topic = topic or parsed.topic
    answer = MessageSubmitted(message_id=parsed.message_id, subject=parsed.subject, from_header=parsed.from_header,
                              topic=topic, refused=[PartNote(**vars(n)) for n in parsed.refused],
                              skipped=[PartNote(**vars(n)) for n in parsed.skipped])
    created_any = False
    for document in parsed.documents:
        link = MessageLink(message_id=parsed.message_id, part=document.part, subject=parsed.subject,
                           from_header=parsed.from_header, header_message_id=parsed.header_message_id)
        try:
            contract = await asyncio.to_thread(intake.store, document.data, document.filename,
                                               f"eml:{parsed.message_id}/{document.part}", settings)
            submitted, created = await inbox.submit(
                caller, contract, sender=sender, topic=topic, priority=priority, playbook=playbook,
                idempotency_key=f"{idempotency_key}/{document.part}" if idempotency_key else None, message=link)
        except Unavailable:
            raise  # Prefect is down: the client retries the whole message (what was created is found again)
        except InboxError as error:
            answer.refused.append(PartNote(part=document.part, filename=document.filename, code=error.code,
                                           message=error.message, hint=error.hint))
            continue
        created_any |= created
        answer.tasks.append(PartSubmitted(**submitted.model_dump(), part=document.part, filename=contract.filename,
                                          kind=contract.kind))
    if not answer.tasks:
        why = "; ".join(f"part {n.part}: {n.code or 'skipped'}: {n.message}" for n in answer.refused + answer.skipped)
        raise NothingToReview(f"the e-mail holds nothing to review ({clip(why or 'no parts', 600)})",
                              hint="attach the contract (PDF or .docx), or paste the clause into the body")
    return answer, created_any
