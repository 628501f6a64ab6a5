"""The inbox's calendar routes: the sender's deadlines feed and one task's calendar (``clausegate.inbox.calendar``),
behind the same API keys as the rest of ``/inbox``."""

from __future__ import annotations

from fastapi import APIRouter, Response

from clausegate.gateway.inbox import ERRORS, CallerDep, InboxDep
from clausegate.inbox import calendar

router = APIRouter(prefix="/inbox", tags=["inbox"])
ICS = {"content": {"text/calendar": {}}, "description": "an iCalendar (RFC 5545) file"}


@router.get("/calendar.ics", response_class=Response, responses={200: ICS, **ERRORS})
async def sender_calendar(inbox: InboxDep, caller: CallerDep) -> Response:
    """The renewal notice deadlines and term ends of every contract reviewed for the key's sender, one feed."""
    body = await calendar.sender_feed(inbox, caller)
    return Response(content=body, media_type="text/calendar; charset=utf-8")


@router.get("/tasks/{task_id}/calendar.ics", response_class=Response, responses={200: ICS, **ERRORS})
async def task_calendar(task_id: str, inbox: InboxDep, caller: CallerDep) -> Response:
    """One reviewed contract's notice deadline and term end."""
    body = await calendar.task_calendar(inbox, caller, task_id)
    return Response(content=body, media_type="text/calendar; charset=utf-8")
