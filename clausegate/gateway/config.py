"""Gateway settings and shared state, handed to routes through a FastAPI dependency (``get_config``)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from fastapi import Request
from slack_sdk.signature import SignatureVerifier

if TYPE_CHECKING:
    from blocks.slack import SlackSettings
    from clausegate.inbox.service import Inbox

SIGNATURE_WINDOW_SECONDS = 60 * 5  # Slack's (and slack-sdk's) 5-minute window
SLACK_PATHS = frozenset({"/slack/interactions", "/slack/commands"})
SUBMIT_PATH = "/inbox/tasks"


@dataclass(frozen=True)
class BodyLimit:
    """A route's body cap: bytes, the error code of the 413, and the next step it names."""

    max_bytes: int
    code: str
    hint: str


class ReplayGuard:
    """Remembers request signatures seen within the signature window; a second sighting is a replay.

    In memory, per process: run one gateway process (or put this in a shared store) — a replay
    sent to another replica would not be caught.
    """

    def __init__(self, window_seconds: float = SIGNATURE_WINDOW_SECONDS, clock: Callable[[], float] = time.time):
        self.window = window_seconds
        self.clock = clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def first_time(self, signature: str) -> bool:
        now = self.clock()
        with self._lock:
            for sig, seen_at in list(self._seen.items()):
                if now - seen_at > 2 * self.window:  # a request older than the window fails verification anyway
                    del self._seen[sig]
            if signature in self._seen:
                return False
            self._seen[signature] = now
            return True


@dataclass
class GatewayConfig:
    """What the gateway's routes need: the Slack app's settings block, the inbox, shared state.

    Either may be absent: without Slack settings the Slack routes answer 503; without an inbox the
    inbox routes do.
    """

    slack: "SlackSettings | None" = None
    inbox: "Inbox | None" = None
    resolver: Callable | None = None  # default: clausegate.gates.resolve_gate (tests may inject)
    http_timeout_seconds: float = 10.0
    max_body_bytes: int = 256 * 1024  # Slack requests (interactions, commands)
    max_other_body_bytes: int = 16 * 1024  # every other route (none of them reads a body today)
    form_overhead_bytes: int = 64 * 1024  # an inbox submission: the upload limit plus this for the form
    replays: ReplayGuard = field(default_factory=ReplayGuard)
    verifier: SignatureVerifier | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.slack is not None:
            self.verifier = SignatureVerifier(self.slack.signing_secret.get_secret_value())

    @property
    def slack_body_limit(self) -> BodyLimit:
        return BodyLimit(self.max_body_bytes, "CG-GATEWAY-TOO-LARGE", "Slack requests are small; this one is "
                         "not from Slack (or the gateway's max_body_bytes is too low)")

    def body_limit(self, method: str, path: str) -> BodyLimit:
        """The largest request body the route at ``path`` accepts, enforced while the body streams in."""
        if path in SLACK_PATHS:
            return self.slack_body_limit
        if path == SUBMIT_PATH and method == "POST" and self.inbox is not None:
            limit = self.inbox.settings.max_upload_bytes
            return BodyLimit(limit + self.form_overhead_bytes, "CG-INBOX-TOO-LARGE",
                             "split the document or ask the operator to raise CLAUSEGATE_INBOX_MAX_UPLOAD_MB "
                             f"(now {limit / 1024 / 1024:g} MB)")
        return BodyLimit(self.max_other_body_bytes, "CG-INBOX-TOO-LARGE" if path.startswith("/inbox/") else
                         "CG-GATEWAY-TOO-LARGE", "this route takes no (or only a small) request body")

    def resolve(self, *args, **kwargs):
        if self.resolver is not None:
            return self.resolver(*args, **kwargs)
        from clausegate.gates import resolve_gate

        return resolve_gate(*args, **kwargs)


def get_config(request: Request) -> GatewayConfig:
    """FastAPI dependency: the app's configuration (set by ``create_app``)."""
    return request.app.state.config
