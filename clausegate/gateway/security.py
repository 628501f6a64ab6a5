"""Slack request verification as a FastAPI dependency: signature (v0 HMAC, 5-minute window), replays."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from clausegate.gateway.config import GatewayConfig, get_config


async def verified_slack_body(request: Request, config: Annotated[GatewayConfig, Depends(get_config)]) -> bytes:
    """The raw body of a request Slack really sent (403 otherwise). Verified before anything is parsed."""
    if config.verifier is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "Slack is not configured on this gateway "
                            "(no SlackSettings block; see docs/slack.md)")
    timestamp = request.headers.get("x-slack-request-timestamp")
    signature = request.headers.get("x-slack-signature")
    if not timestamp or not signature:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "missing Slack signature headers")
    if not timestamp.isdigit() or not signature.startswith("v0="):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "malformed Slack signature headers")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > config.max_body_bytes:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, "request body too large")
    body = await request.body()
    if len(body) > config.max_body_bytes:
        raise HTTPException(status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, "request body too large")
    try:
        body.decode("utf-8")  # Slack sends UTF-8; the verifier would fail on anything else
    except UnicodeDecodeError:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not UTF-8") from None
    # SignatureVerifier: HMAC-SHA256 over v0:{timestamp}:{body}, constant-time compare, 5-minute window.
    try:
        valid = config.verifier.is_valid(body=body, timestamp=timestamp, signature=signature)
    except ValueError:
        valid = False
    if not valid:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid or expired Slack signature")
    if not config.replays.first_time(signature):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "replayed Slack request")
    return body


SlackBody = Annotated[bytes, Depends(verified_slack_body)]
