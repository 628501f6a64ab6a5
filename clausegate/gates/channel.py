"""The seam between a gate and the ways it reaches people: one protocol, one implementation per channel.

    for channel in channels.configured():           # the registered channels with a block (clausegate.gates.channels)
        channel.post(record)                         # when the gate opens: ask
        channel.remind(gate, people, 50)            # a ladder rung, 50% of the SLA in (clausegate.ops.reminders)

A channel asks (``post``), shows progress (``update``), reminds and escalates along the gate's ladder,
and ``verify``s the evidence of who answered (one channel: the signed request's user id; another: the
signed link's address). It never decides who *may* answer: that is the Deciders block's people, fixed on
the gate record, and the one slot check :func:`clausegate.gates.findings.why_not` every channel's answers
go through (``resolve_gate(..., via=channel.name)``). The implementations are listed in
:data:`clausegate.gates.channels.CHANNELS`. A channel may name its own notice codes (``undelivered``,
``not_updated``); one that does not gets the generic ``CG-CHANNEL-UNDELIVERED`` / ``CG-CHANNEL-NOT-UPDATED``,
whose messages name the channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from clausegate.errors import ClauseGateError
from clausegate.gates.model import RECORD_PREFIX, DecisionInfo, GateRecord
from clausegate.review.schemas import NON_CHANNEL_VIAS

if TYPE_CHECKING:  # the slot check (findings) imports this module; listing imports findings
    from clausegate.gates.listing import WaitingGate

UNDELIVERED, NOT_UPDATED = "CG-CHANNEL-UNDELIVERED", "CG-CHANNEL-NOT-UPDATED"  # a channel without codes of its own


class ChannelUndelivered(ClauseGateError):
    """A channel could not deliver a notice (the decision or the escalation stands; the review says so)."""

    code = "CG-GATE-ESCALATION-UNDELIVERED"


@runtime_checkable
class Channel(Protocol):
    name: str  # the Via its answers are recorded with
    ref: ClassVar[type[BaseModel]]  # what ``post`` returns (``ok``, ``error``), stored once on the run

    def post(self, record: GateRecord) -> BaseModel:
        """Ask the gate's people; the ref says where, or why not (the gate waits either way)."""

    def update(self, record: GateRecord) -> str | None:
        """Show the gate's current state (who answered, a decided gate's outcome); None, or why it failed."""

    def remind(self, gate: WaitingGate, people: list[str], percent: int) -> bool:
        """Remind ``people`` (identities) who still have to answer, ``percent`` of the SLA in; True when delivered."""

    def escalate(self, record: GateRecord, people: list[str], note: str, decided: DecisionInfo | None = None) -> bool:
        """Tell ``people`` (a role's identities; empty: the channel's escalation place) that the gate is late
        (``decided`` None: a ladder rung) or was escalated (by the SLA or a person). True when delivered, False when
        the channel has nobody to tell; raises :class:`ChannelUndelivered` when delivery failed."""

    def verify(self, evidence) -> str | None:
        """The identity the evidence of an answer proves, or None when it proves nobody."""


def undelivered_code(channel) -> str:
    """The review's notice code when the channel's question was not delivered: its own, or the generic one."""
    return getattr(channel, "undelivered", None) or UNDELIVERED


def not_updated_code(channel) -> str:
    """The review's notice code when the channel's view still asks after a decision: its own, or the generic one."""
    return getattr(channel, "not_updated", None) or NOT_UPDATED


def proves_person(via: str) -> bool:
    """An answer through a channel proves who gave it (the channel's ``verify``); the form, the CLI and the sweeper
    do not. Only ``resolve_gate`` (which accepts the table's names, ``cli`` and ``sla``) and its signed receipts
    produce a ``via``."""
    return via not in NON_CHANNEL_VIAS


def ref_key(channel: str, key: str) -> str:
    """The flow-run input a channel's ref of gate ``key`` is stored under (``clausegate-<channel>-<gate>``)."""
    return f"{RECORD_PREFIX}{channel}-{key}"


def reaches(identities: list[str], kind: str) -> list[str]:
    """The identities a channel can reach: ``email`` the addresses, any other channel the user ids."""
    return [i for i in identities if ("@" in i) == (kind == "email")]


def update_all(record: GateRecord, channels: list, logger) -> list[tuple[str, str, str]]:
    """Show the gate's state in every channel: (channel, its notice code, why not) for each that failed."""
    failed = []
    for channel in channels:
        try:
            error = channel.update(record)
        except Exception as exc:  # a channel's failure never changes the decision
            error = str(exc)
        if error:
            logger.warning("gate %s: the %s view was not updated: %s", record.key, channel.name, error)
            failed.append((channel.name, not_updated_code(channel), error))
    return failed


def escalate_all(record: GateRecord, channels: list, note: str, decided: DecisionInfo | None = None,
                 people: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Tell every channel's escalation place; (channels that delivered, errors of those that failed)."""
    delivered, errors = [], []
    for channel in channels:
        try:
            if channel.escalate(record, list(people or []), note, decided):
                delivered.append(channel.name)
        except ChannelUndelivered as exc:
            errors.append(f"{channel.name}: {exc.message}")
    return delivered, errors
