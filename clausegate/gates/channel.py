"""The seam between a gate and the ways it reaches people: one protocol, one implementation per channel.

    for channel in gate_channels(slack_settings, smtp_settings):
        channel.post(record)                         # when the gate opens: ask
        channel.remind(gate, people, 50)            # a ladder rung, 50% of the SLA in (clausegate.ops.reminders)

A channel asks (``post``), shows progress (``update``), reminds and escalates along the gate's ladder,
and ``verify``s the evidence of who answered (Slack: the signed request's user id; e-mail: the signed
link's address). It never decides who *may* answer: that is the Deciders block's people, fixed on the
gate record, and the one slot check :func:`clausegate.gates.findings.why_not` every channel's answers
go through (``resolve_gate(..., via=channel.name)``). Implementations: :class:`SlackChannel`
(``clausegate.gates.slack_channel``) and :class:`EmailChannel` (``clausegate.gates.email_channel``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from clausegate.gates.listing import WaitingGate
from clausegate.gates.model import GateRecord


@runtime_checkable
class Channel(Protocol):
    name: str  # the Via its answers are recorded with

    def post(self, record: GateRecord) -> str | None:
        """Ask the gate's people; returns None when delivered, else why not (the gate waits either way)."""

    def update(self, record: GateRecord) -> None:
        """Show the gate's current state (who answered, who still has to)."""

    def remind(self, gate: WaitingGate, people: list[str], percent: int) -> bool:
        """Remind ``people`` (identities) who still have to answer, ``percent`` of the SLA in; True when delivered."""

    def escalate(self, gate: WaitingGate, people: list[str], note: str) -> bool:
        """Tell ``people`` (a role's identities; empty: the channel's escalation place) that the gate is late."""

    def verify(self, evidence) -> str | None:
        """The identity the evidence of an answer proves, or None when it proves nobody."""


def reaches(identities: list[str], kind: str) -> list[str]:
    """The identities a channel can reach: ``email`` the addresses, ``slack`` the user ids."""
    return [i for i in identities if ("@" in i) == (kind == "email")]
