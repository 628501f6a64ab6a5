"""The gateway's FastAPI app: one router per concern, settings through ``get_config``.

    app = create_app(GatewayConfig(slack=SlackSettings.load("clausegate")))
    uvicorn.run(app, host="127.0.0.1", port=8787)          # or: clausegate gateway

Without a config the app loads the SlackSettings block named by ``CLAUSEGATE_SLACK_BLOCK`` at
startup. Another router (e.g. an inbox) is added with ``app.include_router`` in ``create_app``;
its routes get the same configuration via ``Depends(get_config)``.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from clausegate.gateway import slack
from clausegate.gateway.config import GatewayConfig


def load_config(block_name: str | None) -> GatewayConfig:
    from clausegate.errors import ConfigurationError
    from clausegate.gates import load_slack_settings, slack_block_name

    settings = load_slack_settings(block_name)
    if settings is None:
        raise ConfigurationError(f"no SlackSettings block named '{block_name or slack_block_name()}'",
                                 hint="create one (see docs/slack.md) or pass --block")
    return GatewayConfig(slack=settings)


def create_app(config: GatewayConfig | None = None, *, block_name: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if getattr(app.state, "config", None) is None:
            app.state.config = load_config(block_name)
        yield

    app = FastAPI(title="ClauseGate gateway", version="1", lifespan=lifespan,
                  description="Slack interactivity and slash commands for ClauseGate's human gates.")
    app.state.config = config
    app.include_router(slack.router)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
