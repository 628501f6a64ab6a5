"""Slack routes: button clicks (``/slack/interactions``) and the ``/resolve`` command (``/slack/commands``).

Every request is verified first (``verified_slack_body``: signature, 5-minute window, replays → 403,
the seen signatures kept in the Prefect server). The answer is then written to the Prefect server
(``slack_state.hold``) and Slack acknowledged at once (Slack wants it within 3 s); the resume runs
afterwards in a background task, and its outcome goes back to the person through the request's
``response_url`` (an ephemeral message), while ``resolve_gate`` updates the gate message itself. An
answer a killed gateway acknowledged but never applied is applied by the next start (``recover``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import asdict, dataclass, replace
from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import APIRouter, BackgroundTasks, Depends, HTTPException, Response, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from clausegate import audit
from clausegate.errors import ClauseGateError
from clausegate.gates import changes as tracked_changes
from clausegate.gates.model import DECISIONS, normalise_decision
from clausegate.gates.slack_findings import ACK_ACTION
from clausegate.gates.slack_view import ACTION_PREFIX
from clausegate.gateway import slack_changes, slack_state
from clausegate.gateway.config import GatewayConfig, get_config
from clausegate.gateway.security import SlackBody
from clausegate.security import fetch, url_policies
from clausegate.slack import post_ephemeral

router = APIRouter(prefix="/slack", tags=["slack"])
log = logging.getLogger("clausegate.gateway")
Config = Annotated[GatewayConfig, Depends(get_config)]

USAGE = ("Usage: `/resolve <run-id> approve|changes|escalate [comment]`, `/resolve <run-id> <finding> "
         "approve|changes|escalate [comment]`, `/resolve <run-id> C1=accept|reject|counter:\"your wording\" …`, "
         "`/resolve <run-id> ack`, `/resolve <run-id> <finding> reassign @person`, `/resolve <run-id> extend [hours]`")
FINDING_ID = re.compile(r"^[Ff]\d{1,3}$")
PENDING_RECOVERED = "CG-GATEWAY-ANSWER-RECOVERED"  # an acknowledged answer applied by the next gateway start
PRECHECK_SECONDS = 2.0  # Slack wants the command answered within 3 s
ICONS = {"resumed": ":white_check_mark:", "already_decided": ":information_source:"}


@dataclass(frozen=True)
class Answer:
    run_id: str
    decision: str
    user_id: str
    reviewer: str
    comment: str
    response_url: str | None
    channel_id: str | None
    gate: str | None = None
    channel_name: str | None = None
    finding: str | None = None  # a per-finding gate's finding id (F1, …)
    action: str = "decide"  # decide | ack | reassign | extend (clausegate.gates.actions)
    target: str | None = None  # reassign: the Slack user id; extend: the hours
    changes: tuple[str, ...] = ()  # answers on tracked changes as typed (``C1=accept``; clausegate.gates.changes)


def _form(body: bytes) -> dict[str, str]:
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(body))
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not form-encoded") from None
    return {k: v[-1] for k, v in fields.items()}


def _reviewer(user: dict[str, Any]) -> str:
    name = user.get("username") or user.get("name") or user.get("id")
    return f"{name} ({user['id']})" if name != user.get("id") else str(user["id"])


def parse_click(body: bytes) -> Answer | None:
    """A ClauseGate button click from a block_actions payload; None for other interactions (ignored)."""
    raw = _form(body).get("payload")
    if not raw:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "no 'payload' field")
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "'payload' is not JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "'payload' is not an interaction payload")
    if payload["type"] != "block_actions":
        return None
    user, actions = payload.get("user"), payload.get("actions")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str) or not isinstance(actions, list):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "block_actions payload without user or actions")
    action = next((a for a in actions if isinstance(a, dict) and str(a.get("action_id", "")).startswith(ACTION_PREFIX)),
                  None)
    if action is None:
        return None
    kind = "ack" if action["action_id"] == ACK_ACTION else "decide"
    try:
        value = json.loads(action.get("value") or "")
        run_id, gate, finding = str(value["run"]), value.get("gate"), value.get("finding")
        decision = "ack" if kind == "ack" else str(value["decision"])
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "button value is not a ClauseGate gate value") from None
    if kind == "decide" and (decision not in DECISIONS or action["action_id"] != f"{ACTION_PREFIX}{decision}"):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "button value and action do not match")
    if finding is not None and not (isinstance(finding, str) and FINDING_ID.match(finding)):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "button value names no finding")
    channel = payload.get("channel") or payload.get("container") or {}
    if not isinstance(channel, dict):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "block_actions payload with a malformed channel")
    name = channel.get("name")
    return Answer(run_id=run_id, decision=decision, user_id=user["id"], reviewer=_reviewer(user), comment="",
                  response_url=payload.get("response_url"), channel_id=channel.get("id") or channel.get("channel_id"),
                  gate=str(gate) if gate else None, channel_name=name if isinstance(name, str) else None,
                  finding=finding, action=kind)


def _post_back(config: GatewayConfig, answer: Answer, text: str) -> None:
    """Tell the person what happened: via response_url (ephemeral), else chat.postEphemeral."""
    try:
        if answer.response_url:  # through the checked fetcher: hooks.slack.com or the configured Slack API origin only
            message = {"response_type": "ephemeral", "replace_original": False, "text": text}
            policy = url_policies.slack_policy(config.slack, config.limits.http_timeout_seconds)
            fetch.post_json_sync(answer.response_url, message, policy)
        elif answer.channel_id:
            post_ephemeral(config.slack, answer.channel_id, answer.user_id, text)
    except Exception as exc:  # the decision stands; only the feedback got lost
        log.warning("could not tell %s the outcome (%s): %s", answer.user_id, text, exc)


def answer_in_background(config: GatewayConfig, answer: Answer, held: str | None = None, note: str = "") -> None:
    """Resolve the gate and report back (runs after Slack got its acknowledgement), then release the held
    answer (``slack_state.hold``); ``note`` is added to what the person is told (e.g. a restart's)."""
    try:
        _answer(config, answer, note)
    finally:
        if held is not None:
            slack_state.release(held)


def _act(config: GatewayConfig, answer: Answer) -> str:
    """Ack / reassign / extend (clausegate.gates.actions), as the verified Slack user of the request."""
    from clausegate.gates.actions import act  # local import: Prefect client; keeps the app's import lean

    hours = None
    if answer.action == "extend" and answer.target:
        try:
            hours = float(answer.target)
        except ValueError:
            return f":warning: '{answer.target[:20]}' is not a number of hours. {USAGE}"
    outcome = act(answer.run_id, answer.action, user_id=answer.user_id, reviewer=answer.reviewer, via="slack",
                  settings=config.slack, finding=answer.finding, target=answer.target, hours=hours,
                  slack_channel=answer.channel_id, slack_channel_name=answer.channel_name)
    return (":white_check_mark: " if outcome.ok else ":warning: ") + outcome.message


def _answer(config: GatewayConfig, answer: Answer, note: str) -> None:
    try:
        if answer.action != "decide":
            _post_back(config, answer, _act(config, answer) + note)
            return
        changes = tracked_changes.parse_changes(answer.changes) if answer.changes else None
        outcome = config.resolve(answer.run_id, "" if changes else answer.decision, reviewer=answer.reviewer,
                                 via="slack", comment=answer.comment, slack_user_id=answer.user_id,
                                 settings=config.slack, gate=answer.gate, slack_channel=answer.channel_id,
                                 slack_channel_name=answer.channel_name,
                                 **({"finding": answer.finding} if answer.finding else {}),
                                 **({"changes": changes} if changes else {}))
        icon = ICONS.get(outcome.kind, ":warning:")
        text = f"{icon} {outcome.message}"
        if outcome.slack_error:
            text += f" (The gate message could not be updated: {outcome.slack_error})"
        log.info("run %s: %s by %s -> %s", answer.run_id, answer.decision, answer.reviewer, outcome.kind)
    except Exception as exc:  # report every failure to the person who clicked
        log.exception("resolving run %s failed", answer.run_id)
        text = (f":warning: Could not resume run {answer.run_id}: {exc}. "
                "Nothing was decided; try again or use the Prefect UI.")
    _post_back(config, answer, text + note)


def recover(config: GatewayConfig) -> int:
    """At start-up: apply the answers a stopped gateway acknowledged but never applied; how many there were.

    Each is resolved as if it had just arrived and the person is told it was applied after a restart;
    one older than ``slack_state.PENDING_MAX_AGE_SECONDS`` is not applied late (audited, person told).
    """
    found = slack_state.held_answers()
    for name, raw, age in found:
        if raw.get("kind") == slack_changes.HELD_KIND:  # an answer on a tracked change: its own recovery
            slack_changes.recover_held(config, name, raw, age)
            continue
        try:
            answer = Answer(**{k: raw.get(k) for k in Answer.__dataclass_fields__})
        except TypeError:
            slack_state.release(name)
            continue
        log.warning("%s: run %s: applying %s by %s, acknowledged %.0f s ago by a gateway that stopped before "
                    "applying it", PENDING_RECOVERED, answer.run_id, answer.decision, answer.reviewer, age)
        if age > slack_state.PENDING_MAX_AGE_SECONDS:
            _too_late(config, answer, age)
            slack_state.release(name)
            continue
        answer_in_background(config, answer, held=name, note=" (Applied after a gateway restart.)")
    return len(found)


def recover_quietly(config: GatewayConfig) -> int:
    """``recover`` for the app's start-up: a failure is logged, never stops the gateway (the answers stay held)."""
    try:
        return recover(config)
    except Exception as exc:
        log.error("%s: could not read the Slack answers a stopped gateway left (%s); they stay held and the next "
                  "start tries again", PENDING_RECOVERED, exc)
        return 0


def _too_late(config: GatewayConfig, answer: Answer, age: float) -> None:
    text = (f":warning: Your {answer.decision} for run {answer.run_id} was received {age / 60:.0f} minutes ago, but "
            "the gateway stopped before applying it; it was not applied. Answer again if it still stands.")
    audit.record(audit.gate_refused(run_id=answer.run_id, reason="gateway_stopped", via="slack", who=answer.reviewer,
                                    outcome="not_applied", message=text, decision=answer.decision, gate=answer.gate,
                                    slack_user_id=answer.user_id))
    _post_back(config, replace(answer, response_url=None), text)  # response_url is dead by then: postEphemeral


@router.post("/interactions", summary="Slack interactivity (block_actions)")
async def interactions(body: SlackBody, config: Config, background: BackgroundTasks) -> Response:
    change = slack_changes.parse(body)  # a tracked change's Accept / Reject / Counter…, or the counter modal
    if change is not None:
        return await slack_changes.handle(change, config, background)
    answer = parse_click(body)
    if answer is not None:  # written to the Prefect server before Slack is told it arrived
        held = await slack_state.hold(asdict(answer))
        background.add_task(answer_in_background, config, answer, held)
    return Response(status_code=status.HTTP_200_OK)


def parse_command(fields: dict[str, str]) -> tuple[Answer | None, str | None]:
    """(answer, None) for a valid ``/resolve``; (None, usage message) otherwise."""
    text = fields.get("text", "").strip()
    parts = text.split(maxsplit=2)
    if len(parts) < 2 or parts[0].lower() in ("help", "-h", "--help"):
        return None, USAGE
    user = {"id": fields["user_id"], "username": fields.get("user_name")}
    if tracked_changes.CHANGE_TOKEN.match(parts[1]):  # /resolve RUN C1=accept C2=counter:"…": the CLI's parser
        specs = tracked_changes.split_changes(text.split(maxsplit=1)[1])
        try:
            changes = tracked_changes.parse_changes(specs)
        except ClauseGateError as error:
            return None, f":warning: {error}"
        return Answer(run_id=parts[0], decision=tracked_changes.as_decision(changes), user_id=fields["user_id"],
                      reviewer=_reviewer(user), comment="", response_url=fields.get("response_url") or None,
                      channel_id=fields.get("channel_id") or None, channel_name=fields.get("channel_name") or None,
                      changes=tuple(specs)), None
    finding = None
    if FINDING_ID.match(parts[1]):  # /resolve RUN F2 approve [comment]
        finding = parts[1].upper()
        rest = parts[2].split(maxsplit=1) if len(parts) > 2 else []
        if not rest:
            return None, f"what about {finding}? {USAGE}"
        parts = [parts[0], *rest]
    common = dict(run_id=parts[0], user_id=fields["user_id"], reviewer=_reviewer(user),
                  response_url=fields.get("response_url") or None, channel_id=fields.get("channel_id") or None,
                  channel_name=fields.get("channel_name") or None, finding=finding)
    word = parts[1].lower()
    if word in ("ack", "extend", "reassign"):
        target = parts[2].split()[0] if len(parts) > 2 and parts[2].split() else None
        if word == "reassign" and (finding is None or target is None):
            return None, f"reassign needs a finding and a person. {USAGE}"
        return Answer(decision=word, comment="", action=word, target=target, **common), None
    decision = normalise_decision(parts[1])
    if decision is None:
        return None, f"'{parts[1]}' is not a decision. {USAGE}"
    return Answer(decision=decision, comment=parts[2] if len(parts) > 2 else "", **common), None


async def _refused_at_once(config: GatewayConfig, answer: Answer) -> str | None:
    """The refusal of a ``/resolve`` nobody may give here (``clausegate.gates.actions.precheck``: a DM, a person
    outside the gate's reviewers or the finding's role), within ``PRECHECK_SECONDS`` so Slack gets its answer in
    time; None when it may count, or when the check could not finish (the answer is then applied, or refused,
    in the background as before)."""
    from clausegate.gates.actions import precheck  # local import: Prefect client; keeps the app's import lean

    def check() -> str | None:
        return precheck(answer.run_id, answer.decision, user_id=answer.user_id, channel=answer.channel_id,
                        channel_name=answer.channel_name, settings=config.slack, reviewer=answer.reviewer,
                        finding=answer.finding)

    try:
        return await asyncio.wait_for(run_in_threadpool(check), timeout=PRECHECK_SECONDS)
    except Exception as exc:  # slow or unreachable Prefect API: the background path decides and reports
        log.info("run %s: /resolve not checked at once (%s); applying it in the background", answer.run_id,
                 type(exc).__name__)
        return None


@router.post("/commands", summary="Slash command /resolve")
async def commands(body: SlackBody, config: Config, background: BackgroundTasks) -> JSONResponse:
    fields = _form(body)
    if not fields.get("command") or not fields.get("user_id"):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "not a slash command request")
    answer, problem = parse_command(fields)
    if answer is None:
        return JSONResponse({"response_type": "ephemeral", "text": problem})
    # answers on tracked changes are checked when applied (clausegate.gates.findings.fillable_changes), as a click's
    refused = None if answer.changes else await _refused_at_once(config, answer)
    if refused is not None:
        return JSONResponse({"response_type": "ephemeral", "text": f":no_entry: {refused}"})
    held = await slack_state.hold(asdict(answer))  # written to the Prefect server before Slack is told it arrived
    background.add_task(answer_in_background, config, answer, held)
    what = f"{answer.finding} " if answer.finding else ""
    said = " ".join(answer.changes) if answer.changes else f"{what}*{answer.decision}*"
    return JSONResponse({"response_type": "ephemeral", "text": f"Resolving run {answer.run_id}: {said[:300]}…"})
