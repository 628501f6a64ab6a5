"""The gate channels ClauseGate has, as one table, and what the gate step, the rounds and the sweep do with them.

    CHANNELS = (SlackChannel, EmailChannel)      # each row: its Via name, its block, its router, its notice codes
    for channel in configured(): ...             # the channels whose block is saved

A row is a class implementing :class:`clausegate.gates.channel.Channel` that also declares ``block`` (the Prefect
block holding its credentials), ``load(block_name)`` (None without that block), ``routers`` (the gateway modules
whose ``router`` serves its answers) and ``ref`` (the model ``post`` returns). Optional: ``undelivered`` and
``not_updated`` (its own notice codes, registered in ``clausegate.errors``; without them the generic
``CG-CHANNEL-*`` codes, naming the channel), ``posts_when_absent`` and ``absent_ref()`` (without its block the gate
still records why the question was not sent). Its ``name`` is its answers' ``Via``: :func:`names` is what
``resolve_gate`` accepts. Adding a channel: its module, its block (``blocks/`` and the loader in
``clausegate.config``), a row here and its gateway routes (docs/slack.md, "Channels are one table").
"""

from __future__ import annotations

from prefect.client.orchestration import get_client

from clausegate.gates import store
from clausegate.gates.channel import escalate_all, ref_key, undelivered_code, update_all
from clausegate.gates.email_channel import EmailChannel
from clausegate.gates.model import GateRecord
from clausegate.gates.slack_channel import SlackChannel
from clausegate.review.schemas import Notice

CHANNELS = (SlackChannel, EmailChannel)


def gateway_routers() -> list[str]:
    """The gateway modules the channels' answers come in through (the gateway includes each one's ``router``)."""
    return [module for row in CHANNELS for module in row.routers]


def names() -> tuple[str, ...]:
    """The channels' names: the ``via`` of the answers each receives (read when asked, so the table is the list)."""
    return tuple(row.name for row in CHANNELS)


def configured(block_name: str | None = None) -> list:
    """An instance of every registered channel whose block is saved (in table order)."""
    return [c for c in (row.load(block_name) for row in CHANNELS) if c is not None]


def named(channels: list, name: str):
    return next((c for c in channels if c.name == name), None)


def post_all(client, record: GateRecord, channels: list, logger) -> dict:
    """When the gate opens: ask through every channel once (each ref is written once on the run); name → ref."""
    by_name = {c.name: c for c in channels}
    refs = {}
    for row in CHANNELS:
        key = ref_key(row.name, record.key)
        ref = store.read_model(client, record.flow_run_id, key, row.ref)
        if ref is None:
            channel = by_name.get(row.name)
            if channel is None and not getattr(row, "posts_when_absent", False):
                continue
            ref = channel.post(record) if channel is not None else row.absent_ref()
            if not store.write_once(client, record.flow_run_id, key, ref):
                ref = store.read_model(client, record.flow_run_id, key, row.ref) or ref
        if not ref.ok:
            logger.warning("gate %s: %s: the %s question was not delivered (%s); the gate waits anyway and can be "
                           "answered through another channel, the Prefect UI or `clausegate resolve`",
                           record.key, undelivered_code(row), row.name, ref.error)
        refs[row.name] = ref
    return refs


def undelivered_notices(record: GateRecord, answered_via: str | None = None) -> list[Notice]:
    """The review's notices for the channels whose question was not delivered."""
    notices = []
    with get_client(sync_client=True) as client:
        refs = [(row, store.read_model(client, record.flow_run_id, ref_key(row.name, record.key), row.ref))
                for row in CHANNELS]
    for row, ref in refs:
        if ref is None or ref.ok:
            continue
        sent = getattr(ref, "sent_to", None)
        message = f"The gate's {row.name} question was not delivered ({(ref.error or '')[:300]})"
        message += f"; sent to: {', '.join(sent) or 'nobody'}." if sent is not None else "."
        if answered_via:
            message += f" The gate was answered via {answered_via}."
        notices.append(Notice(code=undelivered_code(row), message=message))
    return notices


def legacy_deciders(channels: list):
    """The settings of the first channel whose block still says who decides (older blocks), or None."""
    return next((c.legacy_deciders for c in channels if getattr(c, "legacy_deciders", None) is not None), None)


def alert_settings(channels: list):
    """The block of the first channel with an alert place (failures the sweep could not handle), or None."""
    return next((c.alert_settings for c in channels if getattr(c, "alert_settings", None) is not None), None)


__all__ = ["CHANNELS", "alert_settings", "configured", "escalate_all", "gateway_routers", "legacy_deciders",
           "named", "names", "post_all", "undelivered_notices", "update_all"]
