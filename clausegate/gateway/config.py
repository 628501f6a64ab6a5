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
    max_body_bytes: int = 256 * 1024
    replays: ReplayGuard = field(default_factory=ReplayGuard)
    verifier: SignatureVerifier | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.slack is not None:
            self.verifier = SignatureVerifier(self.slack.signing_secret.get_secret_value())

    def resolve(self, *args, **kwargs):
        if self.resolver is not None:
            return self.resolver(*args, **kwargs)
        from clausegate.gates import resolve_gate

        return resolve_gate(*args, **kwargs)


def get_config(request: Request) -> GatewayConfig:
    """FastAPI dependency: the app's configuration (set by ``create_app``)."""
    return request.app.state.config
