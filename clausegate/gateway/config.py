"""The gateway's runtime state, handed to routes through a FastAPI dependency (``get_config``): the Slack
block and the inbox it serves, the body limit of each route, the replay guard (kept in the Prefect
server: ``clausegate.gateway.slack_state``).

Its settings (``CLAUSEGATE_GATEWAY_*``, the Slack block's name, the inbox's) come from
:func:`clausegate.config.settings`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import Request
from slack_sdk.signature import SignatureVerifier

from clausegate.config import GatewaySettings, SlackSettings, settings
from clausegate.gates import resolve_gate
from clausegate.gateway.slack_state import ReplayGuard
from clausegate.inbox.errors import TooLarge
from clausegate.inbox.service import Inbox

SLACK_PATHS = frozenset({"/slack/interactions", "/slack/commands", "/slack/events"})
SUBMIT_PATH = "/inbox/tasks"
GATEWAY_TOO_LARGE = "CG-GATEWAY-TOO-LARGE"  # a request body over its route's limit (inbox routes: CG-INBOX-TOO-LARGE)


@dataclass(frozen=True)
class BodyLimit:
    """A route's body cap: bytes, the error code of the 413, and the next step it names."""

    max_bytes: int
    code: str
    hint: str


@dataclass
class GatewayConfig:
    """What the gateway's routes need: the Slack app's settings block, the inbox, limits, shared state.

    Either may be absent: without Slack settings the Slack routes answer 503; without an inbox the
    inbox routes do.  ``limits`` default to ``settings().gateway`` (``CLAUSEGATE_GATEWAY_*``).
    """

    slack: SlackSettings | None = None
    inbox: Inbox | None = None
    resolver: Callable | None = None  # default: clausegate.gates.resolve_gate (tests may inject)
    limits: GatewaySettings = field(default_factory=lambda: settings().gateway)
    replays: ReplayGuard = field(default_factory=ReplayGuard)
    verifier: SignatureVerifier | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.slack is not None:
            self.verifier = SignatureVerifier(self.slack.signing_secret.get_secret_value())

    @property
    def slack_body_limit(self) -> BodyLimit:
        return BodyLimit(self.limits.max_body_bytes, GATEWAY_TOO_LARGE, "Slack requests are small; this one is "
                         "not from Slack (or CLAUSEGATE_GATEWAY_MAX_BODY_BYTES is too low)")

    def body_limit(self, method: str, path: str) -> BodyLimit:
        """The largest request body the route at ``path`` accepts, enforced while the body streams in."""
        if path in SLACK_PATHS:
            return self.slack_body_limit
        if path == SUBMIT_PATH and method == "POST" and self.inbox is not None:
            inbox = self.inbox.settings  # an e-mail may be larger than one document (its own cap, per upload)
            limit = max(inbox.max_upload_bytes, inbox.max_message_bytes)
            return BodyLimit(limit + self.limits.form_overhead_bytes, TooLarge.code,
                             "split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB "
                             f"(now {inbox.max_upload_mb:g} MB; e-mails: CLAUSEGATE_INBOX_MAX_MESSAGE_MB, "
                             f"{inbox.max_message_bytes / 1024 / 1024:g} MB)")
        return BodyLimit(self.limits.max_other_body_bytes, TooLarge.code if path.startswith("/inbox/") else
                         GATEWAY_TOO_LARGE, "this route takes no (or only a small) request body")

    def resolve(self, *args, **kwargs):
        if self.resolver is not None:
            return self.resolver(*args, **kwargs)
        return resolve_gate(*args, **kwargs)


def get_config(request: Request) -> GatewayConfig:
    """FastAPI dependency: the app's configuration (set by ``create_app``)."""
    return request.app.state.config
