"""Slack answers on the counterparty's tracked changes: Accept / Reject, and Counter… (a modal) with its submission.

Every request has passed Slack's signature check (``SlackBody``) before it gets here. An *Accept* or *Reject* click
is acknowledged at once and applied in the background through ``resolve_gate(changes=…)``, which checks it like every
Slack answer (the gate's channel, its reviewers, the finding's role: :mod:`clausegate.gates.authority`,
:func:`clausegate.gates.findings.fillable_changes`) and signs its receipt ``via slack`` with the user id of the
signed request; the outcome goes back through the click's response_url. A *Counter…* click opens a modal
(``views.open`` with the click's trigger_id, within Slack's 3 s; :func:`clausegate.gates.slack_changes.counter_view`)
whose private_metadata holds the run, gate, change and the click's channel; its submission (a ``view_submission``,
signed too, by the person who typed the text) is applied the same way with the text as the counter-proposal, and the
outcome is posted to that person (``chat.postEphemeral``). An empty text keeps the modal open with the error.

An answer (a click on Accept / Reject, a counter's submission) is written to the Prefect server (``slack_state.hold``)
before Slack is acknowledged, like every Slack answer, and released once applied and the person told; a gateway
killed in between leaves it held and the next start applies it (:func:`recover_held`, called by
``clausegate.gateway.slack.recover``), or, past ``PENDING_MAX_AGE_SECONDS``, tells the person it was not applied.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import parse_qs

from fastapi import BackgroundTasks, HTTPException, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from clausegate import audit
from clausegate.gates.changes import CHANGE_ID, CODE
from clausegate.gates.slack_changes import CHANGE_PREFIX, COUNTER_ACTION, COUNTER_BLOCK, COUNTER_CALLBACK, counter_view
from clausegate.gateway import slack_state
from clausegate.gateway.config import GatewayConfig
from clausegate.review.tracked_changes import ChangeAnswer
from clausegate.security import fetch, url_policies
from clausegate.slack import SlackError, call_slack, post_ephemeral

log = logging.getLogger("clausegate.gateway")
OPEN_SECONDS = 2.5  # Slack's trigger_id lives 3 s
HELD_KIND = "change"  # a held answer's ``kind``: an answer on a tracked change (a finding's has none)
RESTARTED = " (Applied after a gateway restart.)"


@dataclass(frozen=True)
class ChangeClick:
    """An answer on one tracked change, as a signed Slack request gave it."""

    run_id: str
    gate: str | None
    change: str
    decision: str  # accept | reject | counter
    user_id: str
    reviewer: str
    counter: str = ""
    response_url: str | None = None
    channel_id: str | None = None
    channel_name: str | None = None
    trigger_id: str | None = None
    shown: str = ""  # a Counter… click: the change as its message showed it
    submitted: bool = False  # the modal's submission (a counter with its text), not a click


def _payload(body: bytes) -> dict | None:
    try:
        raw = parse_qs(body.decode("utf-8"), keep_blank_values=True).get("payload", [""])[-1]
        payload = json.loads(raw) if raw else None
    except (UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) else None


def _user(payload: dict) -> tuple[str, str]:
    user = payload.get("user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "interaction payload without a user")
    name = user.get("username") or user.get("name") or user["id"]
    return user["id"], f"{name} ({user['id']})" if name != user["id"] else user["id"]


def parse(body: bytes) -> ChangeClick | None:
    """A click on a change's button, or the counter modal's submission; None for every other interaction."""
    payload = _payload(body)
    if payload is None:
        return None
    if payload.get("type") == "view_submission":
        view = payload.get("view") or {}
        if not isinstance(view, dict) or view.get("callback_id") != COUNTER_CALLBACK:
            return None
        user_id, reviewer = _user(payload)
        try:
            meta = json.loads(view.get("private_metadata") or "")
            text = (((view.get("state") or {}).get("values") or {}).get(COUNTER_BLOCK) or {}).get(COUNTER_ACTION) or {}
            change = str(meta["change"])
            return ChangeClick(run_id=str(meta["run"]), gate=meta.get("gate"), change=_checked(change),
                               decision="counter", user_id=user_id, reviewer=reviewer,
                               counter=str(text.get("value") or ""), channel_id=meta.get("channel"),
                               channel_name=meta.get("channel_name"), submitted=True)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise HTTPException(status.HTTP_400_BAD_REQUEST, "counter modal without its change") from None
    if payload.get("type") != "block_actions":
        return None
    actions = payload.get("actions") if isinstance(payload.get("actions"), list) else []
    action = next((a for a in actions if isinstance(a, dict) and str(a.get("action_id", "")).startswith(
        CHANGE_PREFIX)), None)
    if action is None:
        return None
    user_id, reviewer = _user(payload)
    try:
        value = json.loads(action.get("value") or "")
        decision = str(value["decision"])
        click = dict(run_id=str(value["run"]), gate=value.get("gate"), change=_checked(str(value["change"])))
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "button value is not a tracked change's") from None
    if action["action_id"] != f"{CHANGE_PREFIX}{decision}" or decision not in ("accept", "reject", "counter"):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "button value and action do not match")
    channel = payload.get("channel") or payload.get("container") or {}
    channel = channel if isinstance(channel, dict) else {}
    blocks = (payload.get("message") or {}).get("blocks") if isinstance(payload.get("message"), dict) else None
    shown = next((str((b.get("text") or {}).get("text", "")) for b in blocks or [] if isinstance(b, dict)
                  and b.get("block_id") == f"{CHANGE_PREFIX}{click['change']}"), "")
    return ChangeClick(decision=decision, user_id=user_id, reviewer=reviewer, shown=shown,
                       response_url=payload.get("response_url"), channel_id=channel.get("id") or channel.get(
                           "channel_id"), channel_name=channel.get("name"), trigger_id=payload.get("trigger_id"),
                       **click)


def _checked(change: str) -> str:
    if not CHANGE_ID.match(change):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "names no tracked change")
    return change


async def handle(click: ChangeClick, config: GatewayConfig, background: BackgroundTasks) -> Response:
    """Acknowledge the request; apply the answer (or open the counter modal); see the module docstring."""
    if click.submitted and not click.counter.strip():
        return JSONResponse({"response_action": "errors", "errors": {
            COUNTER_BLOCK: f"A counter needs your wording ({CODE}); or close this and accept or reject."}})
    if click.decision == "counter" and not click.submitted:
        try:
            problem = await asyncio.wait_for(run_in_threadpool(open_counter, config, click), timeout=OPEN_SECONDS)
        except Exception as exc:  # too slow for Slack's trigger, or Prefect unreachable
            problem = f"could not open the counter form ({type(exc).__name__})"
        if problem:
            background.add_task(tell, config, click, f":warning: {problem}. Counter with `clausegate resolve "
                                f"{click.run_id} --change {click.change}=counter:\"…\"` instead.")
        return Response(status_code=status.HTTP_200_OK)
    held = await slack_state.hold({"kind": HELD_KIND, **asdict(click)})  # on the Prefect server before Slack's ack
    background.add_task(apply, config, click, held)
    return Response(status_code=status.HTTP_200_OK)


def open_counter(config: GatewayConfig, click: ChangeClick) -> str | None:
    """``views.open`` the counter modal for the click's change (no Prefect read: Slack's trigger lives 3 s; the
    answer is checked when applied); the problem when it cannot, else None."""
    view = counter_view(click.run_id, click.gate, click.change, click.shown, click.channel_id, click.channel_name)
    try:
        call_slack(config.slack.get_client().views_open, sleep_on_ratelimit=False, trigger_id=click.trigger_id,
                   view=view)
    except SlackError as exc:
        return f"Slack did not open the counter form ({exc})"
    return None


def apply(config: GatewayConfig, click: ChangeClick, held: str | None = None, note: str = "") -> None:
    """Resolve the gate with this answer on the change, tell the person the outcome (with ``note``), then release
    the ``held`` answer (``slack_state.hold``)."""
    try:
        _apply(config, click, note)
    finally:
        if held is not None:
            slack_state.release(held)


def recover_held(config: GatewayConfig, name: str, raw: dict[str, Any], age: float) -> None:
    """A held answer on a change that a stopped gateway acknowledged but never applied: apply it now (the person is
    told it was applied after a restart), or, older than ``PENDING_MAX_AGE_SECONDS``, refuse it (audited, told)."""
    try:
        click = ChangeClick(**{k: raw[k] for k in ChangeClick.__dataclass_fields__ if k in raw})
        ChangeAnswer(decision=click.decision, counter=click.counter)
        _checked(click.change)
    except (TypeError, ValueError, HTTPException):
        slack_state.release(name)
        return
    log.warning("CG-GATEWAY-ANSWER-RECOVERED: run %s: applying %s %s by %s, acknowledged %.0f s ago by a gateway "
                "that stopped before applying it", click.run_id, click.change, click.decision, click.reviewer, age)
    if age <= slack_state.PENDING_MAX_AGE_SECONDS:
        apply(config, click, held=name, note=RESTARTED)
        return
    text = (f":warning: Your {click.decision} of {click.change} for run {click.run_id} was received {age / 60:.0f} "
            "minutes ago, but the gateway stopped before applying it; it was not applied. Answer again if it still "
            "stands.")
    audit.record(audit.gate_refused(run_id=click.run_id, reason="gateway_stopped", via="slack", who=click.reviewer,
                                    outcome="not_applied", message=text, decision=click.decision, gate=click.gate,
                                    slack_user_id=click.user_id))
    tell(config, replace(click, response_url=None), text)  # response_url is dead by then: postEphemeral
    slack_state.release(name)


def _apply(config: GatewayConfig, click: ChangeClick, note: str) -> None:
    try:
        answer = ChangeAnswer(decision=click.decision, counter=click.counter)
        outcome = config.resolve(click.run_id, "", reviewer=click.reviewer, via="slack", slack_user_id=click.user_id,
                                 settings=config.slack, gate=click.gate, slack_channel=click.channel_id,
                                 slack_channel_name=click.channel_name, changes={click.change: answer})
        icon = ":white_check_mark:" if outcome.kind == "resumed" else ":warning:"
        text = f"{icon} {outcome.message}"
        log.info("run %s: %s %s by %s -> %s", click.run_id, click.change, click.decision, click.reviewer,
                 outcome.kind)
    except Exception as exc:  # report every failure to the person who answered
        log.exception("resolving run %s (%s) failed", click.run_id, click.change)
        text = f":warning: Could not apply your answer on {click.change}: {exc}. Nothing was decided; try again."
    tell(config, click, text + note)


def tell(config: GatewayConfig, click: ChangeClick, text: str) -> None:
    """The outcome to the person: through the click's response_url, else an ephemeral message in the channel."""
    try:
        if click.response_url:
            message: dict[str, Any] = {"response_type": "ephemeral", "replace_original": False, "text": text}
            policy = url_policies.slack_policy(config.slack, config.limits.http_timeout_seconds)
            fetch.post_json_sync(click.response_url, message, policy)
        elif click.channel_id:
            post_ephemeral(config.slack, click.channel_id, click.user_id, text)
    except Exception as exc:  # the decision stands; only the feedback got lost
        log.warning("could not tell %s the outcome (%s): %s", click.user_id, text, exc)
