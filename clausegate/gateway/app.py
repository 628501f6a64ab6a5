"""The gateway's FastAPI app: one router per concern, settings through ``get_config``.

    app = create_app(GatewayConfig(slack=SlackSettings.load("clausegate"), inbox=Inbox(InboxSettings())))
    uvicorn.run(app, host="127.0.0.1", port=8787)          # or: clausegate gateway

Without a config the app builds one at startup (``load_config``): the SlackSettings block named by
``CLAUSEGATE_SLACK_BLOCK`` when it exists, and the inbox from ``CLAUSEGATE_INBOX_*``.  OpenAPI docs
are at ``/docs``.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from clausegate.gateway import inbox, slack
from clausegate.gateway.config import GatewayConfig
from clausegate.inbox.errors import InboxError

log = logging.getLogger("clausegate.gateway")


def load_config(block_name: str | None, *, require_slack: bool = False, with_inbox: bool = True) -> GatewayConfig:
    from clausegate.errors import ConfigurationError
    from clausegate.gates import load_slack_settings, slack_block_name
    from clausegate.inbox.service import Inbox
    from clausegate.inbox.settings import InboxSettings

    settings = load_slack_settings(block_name)
    if settings is None and require_slack:
        raise ConfigurationError(f"no SlackSettings block named '{block_name or slack_block_name()}'",
                                 hint="create one (see docs/slack.md) or pass --block")
    box = None
    if with_inbox:
        from prefect.settings import PREFECT_UI_URL

        box = Inbox(InboxSettings(), ui_url=PREFECT_UI_URL.value())
    return GatewayConfig(slack=settings, inbox=box)


def create_app(config: GatewayConfig | None = None, *, block_name: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if getattr(app.state, "config", None) is None:
            app.state.config = load_config(block_name)
        yield

    app = FastAPI(title="ClauseGate gateway", version="1", lifespan=lifespan,
                  description="The inbox for review tasks (`/inbox`), and Slack interactivity and slash commands "
                              "for ClauseGate's human gates (`/slack`).")
    app.state.config = config
    app.include_router(inbox.router)
    app.include_router(slack.router)

    @app.exception_handler(InboxError)
    async def inbox_error(request: Request, error: InboxError) -> JSONResponse:
        if error.http_status >= 500:
            log.error("%s %s %s: %s", error.code, request.method, request.url.path, error)
        return JSONResponse(status_code=error.http_status, content={"detail": error.as_dict()}, headers=error.headers)

    @app.exception_handler(httpx.TransportError)
    async def prefect_unreachable(request: Request, error: httpx.TransportError) -> JSONResponse:
        log.error("CG-INBOX-UNAVAILABLE %s %s: the Prefect API did not answer (%s). Next step: `clausegate status`",
                  request.method, request.url.path, error)
        return JSONResponse(status_code=503, headers={"Retry-After": "5"}, content={"detail": {
            "code": "CG-INBOX-UNAVAILABLE", "message": "the Prefect API (the inbox's store) did not answer; nothing "
            "was changed", "hint": "try again shortly; operators: check the Prefect server (`clausegate status`)"}})

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
