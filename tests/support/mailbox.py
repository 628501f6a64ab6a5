"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps every message it receives: the e-mail gate tests' inbox.

    with Mailbox() as box:                       # box.port: where to send
        ...; box.wait_for(2)                      # the first two messages (email.message.Message)
        box.links("lou@example.com")             # {(finding, decision): url} from the messages to that address
"""

from __future__ import annotations

import re
import threading
from email import message_from_bytes, policy

from aiosmtpd.controller import Controller

from tests.support.prefect_server import free_port
from tests.support.waiting import wait_until

LINK = re.compile(r"^\s+(Approve|Request changes|Escalate): (\S+)$", re.MULTILINE)
DECISION_OF = {"Approve": "approve", "Request changes": "changes", "Escalate": "escalate"}


class Mailbox:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.messages: list = []
        self._lock = threading.Lock()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        with self._lock:
            self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted for delivery"

    def __enter__(self) -> Mailbox:
        self.controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self.controller.stop()

    def wait_for(self, count: int, timeout: float = 30.0) -> list:
        return wait_until(lambda: list(self.messages) if len(self.messages) >= count else None, timeout,
                          what=f"{count} e-mail(s) at the local SMTP server")

    def to(self, address: str) -> list:
        return [m for m in list(self.messages) if address in str(m["To"])]

    def links(self, address: str) -> dict[tuple[str, str], str]:
        """The decision links of the newest message to ``address``: (finding id, or "gate" for a one-decision
        gate's, decision) -> URL."""
        found: dict[tuple[str, str], str] = {}
        body = self.to(address)[-1].get_content()
        finding = None
        for line in body.splitlines():
            head = re.match(r"^(F\d+) · ", line)
            if head:
                finding = head.group(1)
            elif line.startswith("Your decision on the whole contract"):  # a one-decision gate's links
                finding = "gate"
            match = LINK.match(line)
            if match and finding:
                found[(finding, DECISION_OF[match.group(1)])] = match.group(2)
        return found
