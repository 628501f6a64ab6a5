"""Play Slack towards the gateway: signed block_actions clicks and /resolve commands, shaped like Slack's.

    slack = SlackTestClient(gateway_url, signing_secret, response_base="http://fake/actions")
    response = slack.click(message, "approve", user=("U0DANA", "dana"))   # built from the posted message's button
    response = slack.command("/resolve", f"{run_id} changes fix clause 7")
    slack.send(body, slack.headers(body, secret="wrong"))                 # forged
    slack.send(body, slack.headers(body, timestamp=time.time() - 600))    # stale
    slack.send(*slack.last)                                               # replay the last request byte for byte

Signing is Slack's v0 scheme: ``v0=`` + hex HMAC-SHA256(secret, ``v0:{timestamp}:{raw body}``).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

import httpx

FORM = "application/x-www-form-urlencoded"
_counter = itertools.count(1)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


class SlackTestClient:
    def __init__(self, gateway_url: str, signing_secret: str, *, response_base: str = "https://hooks.slack.com/actions",
                 team: str = "T0FAKE", channel: str = "C0GATES", timeout: float = 10.0) -> None:
        self.gateway_url = gateway_url.rstrip("/")
        self.secret = signing_secret
        self.response_base = response_base.rstrip("/")
        self.team = team
        self.channel = channel
        self.timeout = timeout
        self.last: tuple[bytes, dict[str, str], str] | None = None

    # -- signing and sending -------------------------------------------------------------------
    def headers(self, body: bytes, *, secret: str | None = None,
                timestamp: float | str | None = None) -> dict[str, str]:
        ts = str(int(time.time() if timestamp is None else float(timestamp)))
        return {"Content-Type": FORM, "X-Slack-Request-Timestamp": ts,
                "X-Slack-Signature": sign(secret or self.secret, ts, body)}

    def send(self, body: bytes, headers: dict[str, str], path: str = "/slack/interactions") -> httpx.Response:
        self.last = (body, headers, path)
        return httpx.post(self.gateway_url + path, content=body, headers=headers, timeout=self.timeout)

    def replay(self) -> httpx.Response:
        assert self.last is not None, "nothing sent yet"
        body, headers, path = self.last
        return httpx.post(self.gateway_url + path, content=body, headers=headers, timeout=self.timeout)

    # -- bodies shaped like Slack's ---------------------------------------------------------------
    def response_url(self) -> str:
        return f"{self.response_base}/click-{next(_counter)}"

    def block_actions_body(self, message: dict[str, Any], decision: str, *, user: tuple[str, str] = ("U0DANA", "dana"),
                           channel: str | None = None, response_url: str | None = None,
                           value_override: str | None = None, finding: str | None = None) -> bytes:
        """The form body Slack sends when ``user`` clicks the ``decision`` button of ``message`` (``finding``: the
        one in that finding's row of a per-finding gate; ``decision`` ``ack``: the *I'm on it* button)."""
        button = find_button(message, decision, finding)
        action_ts = f"{time.time():.6f}"
        channel = channel or self.channel
        payload = {
            "type": "block_actions",
            "user": {"id": user[0], "username": user[1], "name": user[1], "team_id": self.team},
            "api_app_id": "A0CLAUSEGATE",
            "token": "legacy-verification-token-unused",
            "container": {"type": "message", "message_ts": message.get("ts"), "channel_id": channel,
                          "is_ephemeral": False},
            "trigger_id": f"{next(_counter)}.{int(time.time())}.abcdef",
            "team": {"id": self.team, "domain": "fake-clausegate"},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": "contract-review"},
            "message": message,
            "state": {"values": {}},
            "response_url": response_url or self.response_url(),
            "actions": [{
                "action_id": button["action_id"],
                "block_id": button["_block_id"],
                "text": {**button["text"], "emoji": True},
                "value": value_override if value_override is not None else button["value"],
                **({"style": button["style"]} if "style" in button else {}),
                "type": "button",
                "action_ts": action_ts,
            }],
        }
        return urlencode({"payload": json.dumps(payload)}).encode()

    def command_body(self, command: str, text: str, *, user: tuple[str, str] = ("U0DANA", "dana"),
                     response_url: str | None = None, channel: tuple[str, str] | None = None) -> bytes:
        """``channel``: (id, name) where the command is typed; a direct message is ``("D0…", "directmessage")``."""
        channel_id, channel_name = channel or (self.channel, "contract-review")
        fields = {
            "token": "legacy-verification-token-unused", "team_id": self.team, "team_domain": "fake-clausegate",
            "channel_id": channel_id, "channel_name": channel_name, "user_id": user[0], "user_name": user[1],
            "command": command, "text": text, "api_app_id": "A0CLAUSEGATE", "is_enterprise_install": "false",
            "response_url": response_url or self.response_url(),
            "trigger_id": f"{next(_counter)}.{int(time.time())}.abcdef",
        }
        return urlencode(fields).encode()

    # -- convenience -----------------------------------------------------------------------------
    def click(self, message: dict[str, Any], decision: str, **kw) -> httpx.Response:
        body = self.block_actions_body(message, decision, **kw)
        return self.send(body, self.headers(body))

    def command(self, command: str, text: str, **kw) -> httpx.Response:
        body = self.command_body(command, text, **kw)
        return self.send(body, self.headers(body), path="/slack/commands")


def find_button(message: dict[str, Any], decision: str, finding: str | None = None) -> dict[str, Any]:
    for block in message.get("blocks") or []:
        if block.get("type") != "actions":
            continue
        if finding is not None and not str(block.get("block_id", "")).endswith(f"_{finding}"):
            continue
        for element in block.get("elements") or []:
            if element.get("action_id", "").endswith(decision):
                return {**element, "_block_id": block.get("block_id")}
    raise LookupError(f"no '{decision}' button in the message (was it already decided?)")
