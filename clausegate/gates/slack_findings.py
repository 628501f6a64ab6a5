"""Block Kit view of a per-finding gate (slack-sdk's Block Kit models): one section + buttons per finding.

    text, blocks = findings_message(record, progress, extras, run_url)

Each finding: a section (id, category, page, clause, who must decide and what each role decided) and,
while it is open, an actions block with *Approve* / *Request changes* / *Escalate* (action_id
``clausegate_<decision>``, value JSON ``{"run", "gate", "decision", "finding"}``). Above them an
*I'm on it* button (``clausegate_ack``) and who acknowledged; after the last answer the buttons are
gone and the header says *Decided*. Under the summary, the contract's *Key terms* (one field each), and in each
finding an *Open the clause* link to the annotated copy (a signed, expiring link: clausegate.gates.annotated_links)
with its page or § and ¶. With 12 findings the message is 30 blocks (Slack allows 50; findings that would pass it
are left out with "… and N more"); slack-sdk's models check each text's length when the message is built.
"""

from __future__ import annotations

import json
from datetime import UTC, timedelta
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from clausegate.gates.annotated_links import record_link
from clausegate.gates.changes import still_open, waiting_text
from clausegate.gates.findings import ANY_ROLE, Progress, describe_slots
from clausegate.gates.model import DECISION_LABELS, DECISION_PAST, DECISIONS, GateRecord
from clausegate.gates.slack_changes import change_blocks
from clausegate.gates.slack_view import (
    ACTION_PREFIX,
    ICONS,
    MAX_BLOCKS,
    STYLES,
    _cut,
    _escape,
    _fit,
    key_terms_block,
    open_clause,
)
from clausegate.gates.store import GateExtras

ACK_ACTION = f"{ACTION_PREFIX}ack"
MAX_FINDINGS = 20  # 2 blocks each + 8 others stays under Slack's 50 (the loop checks it too)
CLAUSE_WIDTH = 600


def _when(dt) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def finding_value(record: GateRecord, decision: str, finding: str) -> str:
    return json.dumps({"run": record.flow_run_id, "gate": record.key, "decision": decision, "finding": finding},
                      separators=(",", ":"))


def _finding_text(record: GateRecord, fp, link: str | None = None) -> str:
    f = fp.finding
    pages = ",".join(map(str, f.pages)) or "-"
    who = " and ".join(fp.roles) if fp.roles else "anyone allowed"
    state = []
    for role in fp.slots:
        answer = fp.answers.get(role)
        label = "" if role == ANY_ROLE else f"*{_escape(role)}*: "
        if answer is None:
            assignee = f" (assigned to <@{fp.assignees[role]}>)" if role in fp.assignees else ""
            state.append(f"{label}:hourglass: waiting{assignee}")
        else:
            comment = f" “{_escape(_cut(answer.comment, 150))}”" if answer.comment else ""
            state.append(f"{label}{ICONS[answer.decision]} {DECISION_PAST[answer.decision].capitalize()} by "
                         f"{_escape(answer.reviewer)} via {answer.via} at {_when(answer.decided_at)}{comment}")
    head = f"*{f.id} · {_escape(f.category)}* · p. {pages} · conf {f.confidence:.2f} · decides: {_escape(who)}"
    why = f"\n_Why:_ {_escape(_cut(f.why, 300))}" if f.why else ""
    clause = f"\n{opened}" if (opened := open_clause(link, f)) else ""
    return _fit(f"{head}{clause}\n> {_escape(_cut(f.text, CLAUSE_WIDTH))}{why}\n" + "\n".join(state), 3000)


def findings_message(record: GateRecord, prog: Progress, extras: GateExtras,
                     run_url: str) -> tuple[str, list[dict[str, Any]]]:
    """The gate message in its current state (``chat.postMessage`` first, then ``chat.update`` per answer)."""
    done = prog.complete
    deadline = record.sla_deadline
    extended = ""
    if extras.extension:
        deadline = deadline + timedelta(hours=extras.extra_hours())
        extended = f" (extended once by {extras.extra_hours():g} h by {_escape(str(extras.extension.get('by')))})"
    reasons = "".join(f"\n• *{_escape(c)}*: {_escape(_cut(r, 300))}" for c, r in record.reasons.items() if r)
    title = f"Decided: {record.filename}" if done else f"Decision needed: {record.filename}"
    blocks: list = [
        HeaderBlock(text=PlainTextObject(text=_cut(title, 150))),
        SectionBlock(text=MarkdownTextObject(text=_fit(
            f"*{_escape(record.filename)}* (playbook `{record.playbook}`): {len(record.findings)} finding(s), a "
            f"decision on each.{reasons}\n*SLA:* decide by {_when(deadline)}{extended}; reminders at 50% and 80%, "
            "then it escalates to legal.", 3000))),
    ]
    if (terms := key_terms_block(record)) is not None:
        blocks.append(terms)
    acks = ", ".join(f"{_escape(str(a.get('reviewer')))} at {str(a.get('at', ''))[:16].replace('T', ' ')} UTC"
                     for a in extras.acks[:8])
    if not done:
        blocks.append(ActionsBlock(block_id="clausegate_ack", elements=[ButtonElement(
            text=PlainTextObject(text="I'm on it"), action_id=ACK_ACTION,
            value=json.dumps({"run": record.flow_run_id, "gate": record.key}, separators=(",", ":")))]))
    blocks.append(ContextBlock(elements=[MarkdownTextObject(
        text=_cut(f":eyes: Acknowledged by {acks}" if acks else "Not acknowledged yet.", 2000))]))
    shown, link = [], record_link(record)
    for fp in prog.findings[:MAX_FINDINGS]:
        if len(blocks) + (1 if fp.done else 2) + 1 > MAX_BLOCKS:  # Slack's limit, with the last line below
            break
        shown.append(fp)
        blocks.append(SectionBlock(block_id=f"clausegate_finding_{fp.finding.id}",
                                   text=MarkdownTextObject(text=_finding_text(record, fp, link))))
        if not fp.done:
            buttons = [ButtonElement(text=PlainTextObject(text=DECISION_LABELS[d]), action_id=f"{ACTION_PREFIX}{d}",
                                     value=finding_value(record, d, fp.finding.id), style=STYLES.get(d))
                       for d in DECISIONS]
            blocks.append(ActionsBlock(block_id=f"clausegate_gate_{fp.finding.id}", elements=buttons))
    blocks += change_blocks(record, prog, MAX_BLOCKS - len(blocks) - 1)  # the other side's tracked changes
    more = len(prog.findings) - len(shown)
    outcome = f"Outcome: *{prog.status}*." if done else (
        f"Waiting for: {waiting_text(prog.open_roles(), prog.changes)}.")
    how = "" if done else f"Or `/resolve {record.flow_run_id} F1 approve|changes|escalate [comment]`; "
    if not done and (ids := still_open(prog.changes)):
        how += f"`/resolve {record.flow_run_id} {ids[0]}=accept|reject|counter:\"your wording\"`; "
    tail = (f"{outcome} {'… and ' + str(more) + ' more finding(s) in Prefect. ' if more else ''}"
            f"{how}run `{record.flow_run_id}` · <{run_url}|Open the run in Prefect>")
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=_cut(tail, 2000))]))
    text = (f"ClauseGate: {record.filename}: " + (f"decided ({prog.status})" if done else
            f"needs a decision per finding ({', '.join(record.categories)})"))
    return text, [b.to_dict() for b in blocks]


def reminder_text(record: GateRecord, prog: Progress, percent: int, people: list[str], left: str) -> str:
    """The thread reply of a reminder at ``percent`` of the SLA, mentioning whoever still has to answer."""
    who = " ".join(f"<@{p}>" for p in people) or "reviewers"
    waiting = "; ".join([f"{fp.finding.id} {fp.finding.category}: {describe_slots(fp)}"
                         for fp in prog.findings if not fp.done] + ([f"tracked changes {', '.join(ids)} undecided"]
                                                                    if (ids := still_open(prog.changes)) else []))
    return _cut(f":alarm_clock: {who}: {percent}% of the SLA for *{_escape(record.filename)}* has passed "
                f"({left} left). Still open: {_escape(waiting)}", 3000)
