"""Request bodies are judged before they are read, and Slack requests are verified before they are parsed.

* ``BodyLimitMiddleware`` (pure ASGI): every route has a body cap (``GatewayConfig.body_limit``: Slack
  256 KB, an inbox submission its upload limit plus the form, anything else 16 KB).  A declared
  ``Content-Length`` over it is answered 413 before a byte is read; a chunked (or lying) body is
  counted while it streams and answered 413 the moment the cap is crossed, without reading the rest.
  Any answer given before the body was read to its end closes the connection, so an unread upload is
  never drained either (e.g. the 401 for an upload without a valid key).
* ``verified_slack_body``: the Slack headers and timestamp window first, then the body (capped while it
  streams), then the v0 HMAC signature over the raw bytes and the replay check; only a verified body
  is ever parsed.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, status
from starlette.datastructures import Headers

from clausegate.gates.slack_channel import SlackChannel
from clausegate.gateway.config import BodyLimit, GatewayConfig, get_config
from clausegate.gateway.slack_state import SIGNATURE_WINDOW_SECONDS
from clausegate.inbox.errors import clip

log = logging.getLogger("clausegate.gateway")


def _size(limit: int) -> str:
    return f"{limit / 1024:.0f} KB" if limit < 1024 * 1024 else f"{limit / 1024 / 1024:.1f} MB"


def too_large(limit: BodyLimit) -> dict[str, str]:
    """The documented error body of a 413 (``{"detail": …}`` holds this)."""
    return {"code": limit.code,
            "message": f"the request body is larger than this route's limit of {_size(limit.max_bytes)}",
            "hint": limit.hint}


def declared_length(headers: Headers) -> int | None:
    """The Content-Length a request announces (None without one); absurdly long numbers count as huge."""
    value = headers.get("content-length", "").strip()
    if not value.isdigit():
        return None
    return int(value) if len(value) <= 18 else 10**18


class BodyTooLarge(Exception):
    """Raised into the app by the capped ``receive`` once the route's cap is crossed (the 413 is already sent)."""


class BodyLimitMiddleware:
    """Caps every request body while it streams (chunked included), per route; see the module docstring."""

    def __init__(self, app) -> None:
        self.app = app

    def limit_for(self, scope) -> BodyLimit:
        app = scope.get("app")
        config: GatewayConfig | None = getattr(getattr(app, "state", None), "config", None)
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        path = path.rstrip("/") or "/"
        return (config or GatewayConfig()).body_limit(scope.get("method", "GET"), path)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        headers = Headers(scope=scope)
        declared = declared_length(headers)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if declared is not None and declared > limit.max_bytes:
            log.warning("413 %s %s: declared body of %s bytes over the cap of %s", scope.get("method"),
                        clip(scope.get("path", "")), declared, limit.max_bytes)
            await self._reject(send, limit)
            return
        state: dict[str, Any] = {"received": 0, "done": not (chunked or (declared or 0) > 0),
                                 "started": False, "rejected": False}

        async def capped_receive():
            if state["rejected"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                if not message.get("more_body", False):
                    state["done"] = True
                if state["received"] > limit.max_bytes:
                    state["rejected"] = True
                    log.warning("413 %s %s: body over the cap of %s bytes while streaming", scope.get("method"),
                                clip(scope.get("path", "")), limit.max_bytes)
                    if not state["started"]:
                        state["started"] = True
                        await self._reject(send, limit)
                    raise BodyTooLarge(limit.max_bytes)
            return message

        async def guarded_send(message) -> None:
            if state["rejected"]:
                return  # the 413 went out already; whatever the app answers after it is dropped
            if message["type"] == "http.response.start":
                state["started"] = True
                if not state["done"]:  # answered before the body was read to its end: do not drain it
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, capped_receive, guarded_send)
        except Exception:
            if state["rejected"]:
                return  # BodyTooLarge (or what the app made of it) after the 413
            raise

    @staticmethod
    async def _reject(send, limit: BodyLimit) -> None:
        body = json.dumps({"detail": too_large(limit)}).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


async def read_capped_body(request: Request, limit: BodyLimit) -> bytes:
    """The raw body, read chunk by chunk and refused (413) as soon as it exceeds ``limit``."""
    declared = declared_length(request.headers)
    if declared is not None and declared > limit.max_bytes:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, too_large(limit))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit.max_bytes:
            raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, too_large(limit))
    return bytes(body)


async def verified_slack_body(request: Request, config: Annotated[GatewayConfig, Depends(get_config)]) -> bytes:
    """The raw body of a request Slack really sent (403 otherwise). Verified before anything is parsed."""
    if config.verifier is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "Slack is not configured on this gateway "
                            "(no SlackSettings block; see docs/slack.md)")
    timestamp = request.headers.get("x-slack-request-timestamp")
    signature = request.headers.get("x-slack-signature")
    if not timestamp or not signature:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "missing Slack signature headers")
    if not timestamp.isdigit() or len(timestamp) > 12 or not signature.startswith("v0=") or len(signature) > 128:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "malformed Slack signature headers")
    if abs(config.replays.clock() - int(timestamp)) > SIGNATURE_WINDOW_SECONDS:  # stale: refused before reading
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid or expired Slack signature")
    body = await read_capped_body(request, config.slack_body_limit)
    try:
        body.decode("utf-8")  # Slack sends UTF-8; the verifier would fail on anything else
    except UnicodeDecodeError:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not UTF-8") from None
    # The Slack channel's verify: slack-sdk's SignatureVerifier (HMAC-SHA256 over v0:{timestamp}:{body},
    # constant-time compare, 5-minute window); None when Slack did not sign it.
    if SlackChannel(config.slack, clock=config.replays.clock).verify((body, timestamp, signature)) is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid or expired Slack signature")
    if not await config.replays.first_time(signature):  # in the Prefect server: across processes and restarts
        raise HTTPException(status.HTTP_403_FORBIDDEN, "replayed Slack request")
    return body


SlackBody = Annotated[bytes, Depends(verified_slack_body)]
