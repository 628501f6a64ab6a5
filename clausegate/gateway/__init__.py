"""ClauseGate's HTTP gateway (FastAPI): Slack interactivity and slash commands; ``create_app()``."""

from clausegate.gateway.app import create_app
from clausegate.gateway.config import GatewayConfig, ReplayGuard, get_config

__all__ = ["GatewayConfig", "ReplayGuard", "create_app", "get_config"]
