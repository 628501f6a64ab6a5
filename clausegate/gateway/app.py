"""The gateway's FastAPI app: one router per concern, settings through ``get_config``.

    app = create_app(GatewayConfig(slack=SlackSettings.load("clausegate"), inbox=Inbox(settings().inbox)))
    uvicorn.run(app, host="127.0.0.1", port=8787)          # or: clausegate gateway

Without a config the app builds one at startup (``load_config``): the SlackSettings block named by
``CLAUSEGATE_SLACK_BLOCK`` when it exists, the inbox from ``CLAUSEGATE_INBOX_*`` and the limits from
``CLAUSEGATE_GATEWAY_*`` (all through ``clausegate.config.settings``).  OpenAPI docs
are at ``/docs`` (Swagger UI) and ``/redoc``, their JavaScript and CSS served by the gateway itself from the
``fastapi-offline`` wheel (under ``/static-offline-docs``), so they work with no network.
"""

from __future__ import annotations

import asyncio
import logging
import re
from contextlib import asynccontextmanager
from importlib import import_module

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from prefect.settings import PREFECT_UI_URL

from clausegate.config import load_slack_settings, settings
from clausegate.errors import ConfigurationError
from clausegate.gates.channels import gateway_routers
from clausegate.gateway import annotated, annotated_links, calendar, inbox, slack
from clausegate.gateway.config import GatewayConfig
from clausegate.gateway.security import BodyLimitMiddleware
from clausegate.inbox.errors import ECHO_LIMIT, BadSubmission, InboxError, Unavailable, clip, redact_paths
from clausegate.inbox.service import Inbox

log = logging.getLogger("clausegate.gateway")


def load_config(block_name: str | None, *, require_slack: bool = False, with_inbox: bool = True) -> GatewayConfig:
    """The gateway's configuration from ``settings()``: the Slack block (``block_name`` or
    ``CLAUSEGATE_SLACK_BLOCK``), the inbox (``CLAUSEGATE_INBOX_*``), the limits (``CLAUSEGATE_GATEWAY_*``)."""
    current = settings()
    slack_settings = load_slack_settings(block_name or current.slack_block)
    if slack_settings is None and require_slack:
        raise ConfigurationError(f"no SlackSettings block named '{block_name or current.slack_block}'",
                                 hint="create one (see docs/slack.md) or pass --block")
    box = Inbox(current.inbox, ui_url=PREFECT_UI_URL.value()) if with_inbox else None
    if box is not None:
        box.check_at_rest_key()  # CG-AT-REST-KEY: a gateway with another key than the workers' does not start
    return GatewayConfig(slack=slack_settings, inbox=box, limits=current.gateway)


_QUOTED = re.compile(rf"'([^']{{{ECHO_LIMIT + 20},}})'")
_LONG_TOKEN = re.compile(rf"\S{{{ECHO_LIMIT * 3},}}")


def public_text(request: Request, text: str) -> str:
    """An error text as a client may see it: no server folders, no long runs of what the client sent.

    The messages clip client values themselves (``clip``); this is the net under them: a quoted value or
    an unbroken run of characters that is still too long is cut, and the inbox's folders, the working
    directory, home and temp folders are replaced by neutral names.
    """
    config = getattr(request.app.state, "config", None)
    box = getattr(config, "inbox", None)
    text = box.public(text) if box is not None else redact_paths(text)
    text = _QUOTED.sub(lambda m: f"'{clip(m.group(1))}'", text)
    return _LONG_TOKEN.sub(lambda m: clip(m.group(0), ECHO_LIMIT * 2), text)


def _public_error(error: dict) -> dict:
    loc = [clip(part, 64) if isinstance(part, str) else part for part in error.get("loc", ())]
    item = {"type": error.get("type"), "loc": loc, "msg": clip(error.get("msg", ""), 300)}
    value = error.get("input")
    if isinstance(value, str):
        item["input"] = clip(value)
    elif isinstance(value, (int, float, bool)) or value is None:
        item["input"] = value
    if isinstance(error.get("ctx"), dict):
        item["ctx"] = {k: v if isinstance(v, (int, float, bool)) else clip(v, 200) for k, v in error["ctx"].items()}
    return item


def create_app(config: GatewayConfig | None = None, *, block_name: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if getattr(app.state, "config", None) is None:
            app.state.config = load_config(block_name)
        if app.state.config.slack is not None:  # answers a stopped gateway acknowledged but never applied
            app.state.recovery = asyncio.get_running_loop().run_in_executor(None, slack.recover_quietly,
                                                                            app.state.config)
        try:
            yield
        finally:
            if app.state.config.inbox is not None:
                await app.state.config.inbox.aclose()  # the shared Prefect client (clausegate/inbox/connection.py)

    # FastAPI's documented self-hosting of the docs assets (docs_url=None, get_swagger_ui_html, StaticFiles), done
    # by fastapi-offline with the Swagger UI and ReDoc bundles it ships: no CDN.
    app = FastAPIOffline(title="ClauseGate gateway", version="1", lifespan=lifespan,
                  description="The inbox for review tasks (`/inbox`), and Slack interactivity and slash commands "
                              "for ClauseGate's human gates (`/slack`).")
    app.state.config = config
    app.include_router(inbox.router)
    app.include_router(calendar.router)  # the sender's deadlines feed and a task's .ics
    app.include_router(annotated.router)  # a task's annotated contract (comments, highlights)
    app.include_router(annotated_links.router)  # the same copy behind a gate's signed, expiring link
    for module in gateway_routers():  # each gate channel's routes (clausegate.gates.channels.CHANNELS)
        app.include_router(import_module(module).router)
    app.add_middleware(BodyLimitMiddleware)  # every body capped while it streams, before any route sees it

    @app.exception_handler(InboxError)
    async def inbox_error(request: Request, error: InboxError) -> JSONResponse:
        if error.http_status >= 500:
            log.error("%s %s %s: %s", error.code, request.method, request.url.path, error)
        detail = {k: public_text(request, v) for k, v in error.as_dict().items()}
        return JSONResponse(status_code=error.http_status, content={"detail": detail}, headers=error.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        """FastAPI's own 422 in the documented shape (``detail``: code, message, hint), the field list beside it
        (``errors``); at most ~100 characters of any input are repeated."""
        errors = [_public_error(e) for e in error.errors()]
        fields = "; ".join(f"'{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}' ({e['loc'][0]}): {e['msg']}"
                           for e in errors[:5] if e.get("loc"))
        detail = BadSubmission(f"the request is not valid: {fields or 'see errors'}",
                               hint="fix the named field and send again; every field and its allowed values are "
                                    "listed in the API docs at /docs").as_dict()
        return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})

    @app.exception_handler(httpx.HTTPStatusError)
    async def prefect_refused(request: Request, error: httpx.HTTPStatusError) -> JSONResponse:
        log.error("%s %s %s: the Prefect API answered HTTP %s to %s %s: %s", Unavailable.code, request.method,
                  request.url.path, error.response.status_code, error.request.method, error.request.url.path,
                  error.response.text[:500])
        return JSONResponse(status_code=503, headers={"Retry-After": "5"}, content={"detail": {
            "code": Unavailable.code, "message": f"the Prefect API (the inbox's store) refused the gateway's "
            f"request (HTTP {error.response.status_code}); nothing was changed",
            "hint": "try again shortly; operators: the gateway log has the details (`clausegate status`)"}})

    @app.exception_handler(httpx.TransportError)
    async def prefect_unreachable(request: Request, error: httpx.TransportError) -> JSONResponse:
        log.error("%s %s %s: the Prefect API did not answer (%s). Next step: `clausegate status`", Unavailable.code,
                  request.method, request.url.path, error)
        return JSONResponse(status_code=503, headers={"Retry-After": "5"}, content={"detail": {
            "code": Unavailable.code, "message": "the Prefect API (the inbox's store) did not answer; nothing "
            "was changed", "hint": "try again shortly; operators: check the Prefect server (`clausegate status`)"}})

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
