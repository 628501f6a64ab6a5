"""Slack Events API (``/slack/events``): a reply in a gate message's thread acknowledges the gate.

Slack signs event requests like every other (``verified_slack_body``: signature, 5-minute window, replays →
403). The URL check (``url_verification``) answers the challenge. A ``message`` event that replies in a gate
message's thread (its ``channel`` and ``thread_ts`` are the gate's posted message, ``clausegate.gates.listing``)
is an acknowledgement by its author (``clausegate.gates.actions.act(..., "ack")``), as the "I'm on it" button
is; the reply's text is never read for a decision (decisions come from the buttons and ``/resolve``). Bot
messages, edits and other subtypes are ignored; a redelivery (``X-Slack-Retry-Num``) changes nothing, since an
acknowledgement is written once.  Slack wants a 200 within 3 s: the lookup runs after the answer.
"""

from __future__ import annotations

import json
import logging

from fastapi import APIRouter, BackgroundTasks, HTTPException, status
from fastapi.responses import JSONResponse

from clausegate.gates.actions import act
from clausegate.gates.listing import gate_of_message
from clausegate.gateway.config import GatewayConfig
from clausegate.gateway.security import SlackBody
from clausegate.gateway.slack import Config

log = logging.getLogger("clausegate.gateway")
router = APIRouter(prefix="/slack", tags=["slack"])


def thread_reply(payload: dict) -> tuple[str, str, str] | None:
    """(channel, thread_ts, user) of a person's reply in a thread; None for anything else."""
    event = payload.get("event") if payload.get("type") == "event_callback" else None
    if not isinstance(event, dict) or event.get("type") != "message" or event.get("subtype") or event.get("bot_id"):
        return None
    channel, thread, user = event.get("channel"), event.get("thread_ts"), event.get("user")
    if not all(isinstance(v, str) and v for v in (channel, thread, user)) or thread == event.get("ts"):
        return None  # the thread's own parent message is not a reply
    return channel, thread, user


def acknowledge_reply(config: GatewayConfig, channel: str, thread_ts: str, user: str) -> str | None:
    """Acknowledge the gate whose message the reply is under; the run id, or None when it is no gate's thread."""
    run_id = gate_of_message(channel, thread_ts)
    if run_id is None:
        return None
    outcome = act(run_id, "ack", user_id=user, reviewer=user, via="slack", settings=config.slack,
                  slack_channel=channel)  # the thread's channel: the gate's own (gate_of_message)
    log.info("thread reply by %s on run %s: %s", user, run_id, outcome.message)
    return run_id


@router.post("/events", summary="Slack Events API: a reply in a gate's thread acknowledges it")
async def events(body: SlackBody, config: Config, background: BackgroundTasks) -> JSONResponse:
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not JSON") from None
    if not isinstance(payload, dict):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not a JSON object")
    if payload.get("type") == "url_verification":
        return JSONResponse({"challenge": str(payload.get("challenge", ""))[:200]})
    reply = thread_reply(payload)
    if reply is not None:
        background.add_task(acknowledge_reply, config, *reply)
    return JSONResponse({"ok": True})
