"""Who may decide a gate from Slack: the rules ``resolve_gate`` applies to every answer the gateway received.

An answer through Slack (a button click or ``/resolve``, signature already verified by the gateway)
is applied only when all of these hold (docs/security.md §5, "Who may decide a gate"):

1. **The gate's channel.** Slack says (in the signed request) where the answer was given; it must be
   the channel the gate's message was posted to (a thread under it reports the same channel), or,
   when the message was never posted, the block's ``channel``. A direct message, another channel or
   a request that names no channel is refused: ``wrong_channel``.
2. **The gate's reviewers.** When the gate has allowed reviewers (``allowed_reviewer_ids`` plus the
   ``category_reviewer_ids`` of its categories, fixed on the gate when it opened), only they may
   answer: ``not_allowed_reviewer``.
3. **Not the submitter.** The Slack users the block maps to the inbox sender that submitted the
   contract (``submitter_slack_ids``; the sender is the run's ``inbox-sender:`` tag) may not approve
   it: ``own_contract``. They may still request changes or escalate: both keep the contract from
   proceeding.

The Slack user id and channel come from the request Slack signed; nothing here trusts the answer's text.
"""

from __future__ import annotations

from typing import NamedTuple

from clausegate.config import load_deciders
from clausegate.gates.deciders import legacy_warning, who_decides
from clausegate.gates.model import GateRecord, SlackRef
from clausegate.runs.tags import read_tag

SENDER_TAG = "inbox-sender"  # clausegate.inbox.status.tag("sender", ...): the inbox sender of a run


class Refusal(NamedTuple):
    """Why a Slack answer may not decide this gate: the audit's reason and the sentence the person sees."""

    reason: str
    message: str


def gate_channels(ref: SlackRef | None, settings) -> set[str]:
    """Where answers to this gate count: the channel its message is in, else the block's gate channel."""
    if ref is not None and ref.ok and ref.channel:
        return {ref.channel}
    configured = getattr(settings, "channel", None)
    return {configured} if configured else set()


def submitter_ids(tags: list[str], settings, record: GateRecord | None = None) -> tuple[str | None, list[str]]:
    """(the inbox sender of the run, its people's identities): fixed on the gate when it opened (the Deciders
    block), else the SlackSettings block's older ``submitter_slack_ids``."""
    sender = read_tag(list(tags or []), SENDER_TAG)
    if record is not None and record.submitters:
        return sender, list(record.submitters)
    return sender, who_decides(None, settings).submitter_ids(sender)


def slack_refusal(record: GateRecord, ref: SlackRef | None, *, decision: str, slack_user_id: str | None,
                  channel: str | None, channel_name: str | None, tags: list[str], settings) -> Refusal | None:
    """None when this Slack answer may decide the gate; else why not (see the module docstring)."""
    where = gate_channels(ref, settings)
    given = {channel, f"#{channel_name.lstrip('#')}" if channel_name else None} - {None}
    if not given & where:
        shown = ", ".join(sorted(where)) or "none: its message was never posted"
        return Refusal("wrong_channel", f"{record.filename}: answers to this gate count only in its channel "
                                        f"({shown}), not here. Nothing was changed.")
    if record.allowed_reviewers and slack_user_id not in record.allowed_reviewers:
        return Refusal("not_allowed_reviewer", f"{record.filename}: you are not one of the reviewers allowed to "
                                               "decide this gate. Nothing was changed.")
    sender, ids = submitter_ids(tags, settings, record)
    if decision == "approve" and slack_user_id in ids:
        return Refusal("own_contract", f"{record.filename}: you submitted this contract (inbox sender '{sender}'), "
                                       "so you cannot approve it; another reviewer must. Nothing was changed.")
    return None


def trust_warnings(settings, deciders=None) -> list[str]:
    """What ``clausegate up`` says about a real workspace where anyone in the channel can decide, or where who decides
    still lives in the Slack block (``deciders``: the Deciders block; None: loaded, if there is one)."""
    who = who_decides(deciders if deciders is not None else load_deciders(), settings)
    out = [warning] if (warning := legacy_warning(who)) else []
    if not who.reviewers and not any(who.category_reviewers.values()):
        out.append("CG-SLACK-OPEN-REVIEWERS: no reviewers or category reviewers are named (Deciders block, or the "
                   "SlackSettings block's allowed_reviewer_ids), so anyone in the gate channel "
                   f"({settings.channel}) can decide every gate. Name them (docs/slack.md).")
    if not who.submitters:
        out.append("CG-SLACK-OPEN-REVIEWERS: no inbox sender is mapped to its people (Deciders block submitters, or "
                   "the SlackSettings block's submitter_slack_ids), so a submitter who is in the gate channel is not "
                   "recognised and could approve their own contract. Map each sender to its people (docs/slack.md).")
    return out
