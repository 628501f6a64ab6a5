"""Block Kit for the counterparty's tracked changes at a gate: a section and Accept / Reject / Counter… per change,
and the modal a *Counter…* click opens (``views.open``) for the counter-proposal's text.

    blocks += change_blocks(record, progress, budget)   # in the per-finding gate message

Buttons: action_id ``cgchange_<accept|reject|counter>``, value JSON ``{"run", "gate", "change", "decision"}`` (a
prefix of their own, so a gateway that does not know them ignores them rather than misreading them as a finding's).
The modal: callback_id ``cgchange_counter``, one multiline text input (block ``counter``, action ``text``), its
``private_metadata`` the run, gate, change and the channel the click came from (what the gateway checks the answer
against, as for every Slack answer).
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from clausegate.gates.changes import CHANGE_PAST, ChangeProgress, describe, label
from clausegate.gates.findings import Progress
from clausegate.gates.model import Finding, GateRecord
from clausegate.gates.slack_view import _cut, _escape, _fit

CHANGE_PREFIX = "cgchange_"
COUNTER_CALLBACK = f"{CHANGE_PREFIX}counter"
COUNTER_BLOCK, COUNTER_ACTION = "counter", "text"
LABELS = {"accept": "Accept", "reject": "Reject", "counter": "Counter…"}
STYLES = {"accept": "primary", "reject": "danger"}
CONTEXT_WIDTH = 400
ICONS = {"accept": ":white_check_mark:", "reject": ":x:", "counter": ":leftwards_arrow_with_hook:"}


def change_value(record: GateRecord, change: str, decision: str) -> str:
    return json.dumps({"run": record.flow_run_id, "gate": record.key, "change": change, "decision": decision},
                      separators=(",", ":"))


def _text(cp: ChangeProgress, context: dict[str, Finding]) -> str:
    state = (f"{ICONS[cp.answer.decision]} {_escape(CHANGE_PAST[cp.answer.decision].capitalize())}: "
             f"{_escape(describe(cp))}") if cp.answer else ":hourglass: waiting: accept, reject or counter"
    f = context.get(cp.change.finding)  # a high-risk clause the playbook does not gate: shown here, not asked
    clause = (f"\n_In the high-risk clause {f.id} · {_escape(f.category)} (only its changes are asked):_\n"
              f"> {_escape(_cut(f.text, CONTEXT_WIDTH))}") if f is not None else ""
    return _fit(f"*Tracked change* {_escape(label(cp.change))}{clause}\n{state}", 3000)


def change_blocks(record: GateRecord, prog: Progress, budget: int) -> list:
    """A section per change (and its buttons while open), within ``budget`` blocks; what does not fit is left to
    ``clausegate resolve --change`` and the Prefect UI form (the last line says how many)."""
    blocks: list = []
    context = {f.id: f for f in record.change_findings}
    for n, cp in enumerate(prog.changes):
        need = 1 if cp.done else 2
        if len(blocks) + need > budget - (1 if n < len(prog.changes) - 1 else 0):
            left = len(prog.changes) - n
            blocks.append(SectionBlock(text=MarkdownTextObject(text=f"… and {left} more tracked change(s): "
                                       f"`clausegate resolve {record.flow_run_id} --change C…=accept` or Prefect.")))
            break
        blocks.append(SectionBlock(block_id=f"cgchange_{cp.change.id}",
                                   text=MarkdownTextObject(text=_text(cp, context))))
        if not cp.done:
            blocks.append(ActionsBlock(block_id=f"cgchange_gate_{cp.change.id}", elements=[
                ButtonElement(text=PlainTextObject(text=LABELS[d]), action_id=f"{CHANGE_PREFIX}{d}",
                              value=change_value(record, cp.change.id, d), style=STYLES.get(d))
                for d in ("accept", "reject", "counter")]))
    return blocks


def counter_view(run_id: str, gate: str | None, change: str, shown: str, channel_id: str | None,
                 channel_name: str | None) -> dict[str, Any]:
    """The modal asking for the counter-proposal (``views.open`` with the click's trigger_id); ``shown``: the
    change as the message showed it (its section's text)."""
    meta = json.dumps({"run": run_id, "gate": gate, "change": change, "channel": channel_id,
                       "channel_name": channel_name}, separators=(",", ":"))
    view = View(type="modal", callback_id=COUNTER_CALLBACK, private_metadata=meta,
                title=PlainTextObject(text=f"Counter {change}"[:24]), submit=PlainTextObject(text="Send counter"),
                close=PlainTextObject(text="Cancel"), blocks=[
                    SectionBlock(text=MarkdownTextObject(text=_cut(shown or f"Tracked change {change}", 3000))),
                    InputBlock(block_id=COUNTER_BLOCK, label=PlainTextObject(text="Your wording instead"),
                               element=PlainTextInputElement(action_id=COUNTER_ACTION, multiline=True,
                                                             min_length=1, max_length=3000))])
    return view.to_dict()
