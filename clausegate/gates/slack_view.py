"""Block Kit views of a gate: the question (with buttons), the decided view, escalation and outcomes.

Plain functions returning ``(fallback text, blocks)``; nothing here talks to Slack.

Buttons are *value* buttons (``action_id`` ``clausegate_<decision>``, value JSON ``{"run", "gate",
"decision"}``); the link to the Prefect UI is a link in the text, not a URL button (URL buttons
also send an interaction and confuse users). After a decision the message is replaced by the
decided view, which has no buttons. Above the findings: the contract's *Key terms* (one field each, "not found"
where not found); under the findings table, an *Open the clause* link per finding to the annotated copy (a
signed, expiring link, clausegate.gates.annotated_links) with its page or § and ¶. A message stays within Slack's
50 blocks and 3000 characters per text: what would pass them is cut with "…and N more".
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock

from clausegate.gates.annotated_links import link_hours, record_link
from clausegate.gates.gate_terms import place
from clausegate.gates.model import DECISION_LABELS, DECISIONS, DecisionInfo, Finding, GateRecord
from clausegate.review.key_terms.render import cite, value_text
from clausegate.review.key_terms.terms import LABELS
from clausegate.review.money import eur_text

ACTION_PREFIX = "clausegate_"
ACTIONS_BLOCK_ID = "clausegate_gate"
MAX_ROWS = 12
SECTION_LIMIT = 3000
MAX_BLOCKS = 50  # Slack's limit per message
FIELD_CHARS = 300  # a key term's field (Slack allows 2000)
ICONS = {"approve": ":white_check_mark:", "changes": ":pencil2:", "escalate": ":rotating_light:"}
STYLES = {"approve": "primary", "escalate": "danger"}


def _when(dt) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _escape(text: str) -> str:
    """Slack mrkdwn control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, width: int) -> str:
    """One line: whitespace (line breaks too) collapsed, cut to ``width``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)].rstrip() + "…"


def _fit(text: str, limit: int) -> str:
    """Multi-line mrkdwn cut to ``limit``: its line breaks stay (Slack renders a "\n" in a section's text as
    a line break; collapsing them ran the reason bullets and the SLA line together)."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def findings_table(findings: list[Finding], *, width: int = 100, max_rows: int = MAX_ROWS) -> str:
    """A fixed-width table (for a code block): category, page, confidence, clause cut to fit."""
    cat_w = min(max([len("Category"), *(len(f.category) for f in findings)]), 24)
    page_w = max([len("Page"), *(len(",".join(map(str, f.pages[:3]))) for f in findings)])
    text_w = max(width - cat_w - page_w - 4 - 6, 20)
    lines = [f"{'Category':<{cat_w}}  {'Page':<{page_w}}  Conf  Clause"]
    for f in findings[:max_rows]:
        pages = ",".join(map(str, f.pages[:3]))
        lines.append(f"{_cut(f.category, cat_w):<{cat_w}}  {pages:<{page_w}}  {f.confidence:.2f}  "
                     f"{_cut(f.text, text_w)}")
        if f.why:  # why it needs a person (clausegate.review.gate_reasons)
            lines.append(f"{'':<{cat_w}}  ↳ {_cut(f.why, max(width - cat_w - 4, 20))}")
        if f.position:  # against the playbook's position (clausegate/review/positions.py)
            lines.append(f"{'':<{cat_w}}  ↳ {_cut(f.position, max(width - cat_w - 4, 20))}")
    if len(findings) > max_rows:
        lines.append(f"… and {len(findings) - max_rows} more finding(s): see the run in Prefect")
    return "\n".join(lines)


def _table_block(findings: list[Finding]) -> dict[str, Any]:
    width = 100
    while True:  # shrink the clause column until the section fits Slack's limit
        text = "```" + _escape(findings_table(findings, width=width)) + "```"
        if len(text) <= SECTION_LIMIT or width <= 50:
            break
        width -= 10
    if len(text) > SECTION_LIMIT:
        text = "```" + _escape(findings_table(findings, width=50, max_rows=6)) + "```"
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _cleared_blocks(record: GateRecord) -> list[dict[str, Any]]:
    """Listed, not asked: possible findings of gated categories (``possible_findings: note``), and the findings a
    model took off the gate with its reasons, so a person can overturn them."""
    blocks = []
    for title, found in (("*Listed, not asked* (possible findings in gated categories)", record.noted),
                         ("*Cleared by the model* (not asked; overturn with Request changes)", record.cleared)):
        if not found:
            continue
        lines = [f"• *{_escape(f.category)}* (p. {','.join(map(str, f.pages)) or '-'}, {f.confidence:.2f})"
                 + (f": {_escape(_cut(f.why, 200))}" if f.why and found is record.cleared else "")
                 + f"\n   > {_escape(_cut(f.text, 200))}" for f in found]
        blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                                   "text": _fit(title + "\n" + "\n".join(lines), SECTION_LIMIT)}})
    return blocks


def _suggestion_blocks(record: GateRecord) -> list[dict[str, Any]]:
    """Suggested redlines and counterparty questions (generation step), when there are any."""
    if not record.suggestions:
        return []
    lines = [f"*{_escape(x.category)}* (p. {','.join(map(str, x.pages))}): {_escape(_cut(x.redline, 300))}"
             + "".join(f"\n   ? {_escape(_cut(q, 150))}" for q in x.questions[:3]) for x in record.suggestions]
    return [{"type": "section", "text": {"type": "mrkdwn",
                                         "text": _fit("*Suggested redlines*\n" + "\n".join(lines), SECTION_LIMIT)}}]


def key_terms_block(record: GateRecord) -> SectionBlock | None:
    """*Key terms*: one field per term (value and where; "not found" where not found), then the renewal notice
    deadline (Slack shows fields in two columns, at most 10); None when the record has none."""
    terms = record.contract_terms
    if terms is None:
        return None
    fields = []
    for term in terms.terms:
        where = cite(term)
        value = _cut(value_text(term), FIELD_CHARS - 60)  # one line: the label, then the value and where
        fields.append(f"*{LABELS[term.name]}*\n{_escape(value)}" + (f" ({where})" if where else ""))
    if terms.renewal is not None and terms.renewal.notice_deadline:
        fields.append(f"*Notice deadline*\n{terms.renewal.notice_deadline} (term ends {terms.renewal.term_end})")
    return SectionBlock(text=MarkdownTextObject(text="*Key terms*"),
                        fields=[MarkdownTextObject(text=_fit(f, FIELD_CHARS)) for f in fields[:10]])


def open_clause(link: str | None, finding: Finding) -> str:
    """"<link|Open the clause> § 8.5, ¶ 41": the annotated copy, and where in it; "" without a link or a place."""
    where = place(finding)
    if not link or not where:
        return ""
    return f":page_facing_up: <{link}|Open the clause> {_escape(where)}"


def _links_block(record: GateRecord, link: str | None) -> list[dict[str, Any]]:
    """The one-decision view's links: a line per finding (the table above is a code block, where links do not
    work), cut with "…and N more" to fit one section."""
    lines = [f"{open_clause(link, f)} · {f.id} {_escape(f.category)}" for f in record.findings if open_clause(link, f)]
    if not lines:
        return []
    head = (f"*The annotated contract* (a comment or highlight on each finding; the link is valid "
            f"{link_hours(record.sla_hours):g} h)")
    shown = len(lines)
    while shown and len("\n".join([head, *lines[:shown], f"…and {len(lines)} more"])) > SECTION_LIMIT:
        shown -= 1
    tail = [f"…and {len(lines) - shown} more"] if shown < len(lines) else []
    return [{"type": "section", "text": {"type": "mrkdwn", "text": "\n".join([head, *lines[:shown], *tail])}}]


def fit_blocks(blocks: list[dict[str, Any]], keep_last: int = 2) -> list[dict[str, Any]]:
    """At most :data:`MAX_BLOCKS`: blocks past the limit are left out before the last ``keep_last`` (the buttons
    and how to answer), and a line says how many."""
    if len(blocks) <= MAX_BLOCKS:
        return blocks
    head, tail = blocks[:len(blocks) - keep_last], blocks[len(blocks) - keep_last:]
    room = MAX_BLOCKS - keep_last - 1
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"…and {len(head) - room} more block(s): "
                                                                         "see the run in Prefect"}]}
    return head[:room] + [note] + tail


def _summary_blocks(record: GateRecord, run_url: str) -> list[dict[str, Any]]:
    cats = ", ".join(record.categories)
    reasons = "".join(f"\n• *{_escape(c)}*: {_escape(_cut(r, 500))}" for c, r in record.reasons.items() if r)
    return [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(f"Decision needed: {record.filename}", 150)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _fit(
            f"*{_escape(record.filename)}* (playbook `{record.playbook}`): {len(record.findings)} finding(s) "
            f"that need a person: {_escape(cats)}.{reasons}\n*SLA:* decide by {_when(record.sla_deadline)} "
            f"({record.sla_hours:g} h); then it escalates to legal.", SECTION_LIMIT)}},
        *([terms.to_dict()] if (terms := key_terms_block(record)) else []),
        _table_block(record.findings),
        *_links_block(record, record_link(record)),
        *_cleared_blocks(record),
        *_suggestion_blocks(record),
        {"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"Cost so far: {eur_text(record.cost_eur)}"},
            {"type": "mrkdwn", "text": f"Run `{record.flow_run_id}`"},
            {"type": "mrkdwn", "text": f"<{run_url}|Open the run in Prefect>"},
        ]},
    ]


def button_value(record: GateRecord, decision: str) -> str:
    return json.dumps({"run": record.flow_run_id, "gate": record.key, "decision": decision}, separators=(",", ":"))


def gate_message(record: GateRecord, run_url: str) -> tuple[str, list[dict[str, Any]]]:
    """The question: findings, SLA, buttons Approve / Request changes / Escalate."""
    buttons = []
    for decision in DECISIONS:
        button = {"type": "button", "action_id": f"{ACTION_PREFIX}{decision}",
                  "text": {"type": "plain_text", "text": DECISION_LABELS[decision]},
                  "value": button_value(record, decision)}
        if decision in STYLES:
            button["style"] = STYLES[decision]
        buttons.append(button)
    blocks = _summary_blocks(record, run_url) + [
        {"type": "actions", "block_id": ACTIONS_BLOCK_ID, "elements": buttons},
        {"type": "context", "elements": [{"type": "mrkdwn", "text":
            f"Or `/resolve {record.flow_run_id} approve|changes|escalate [comment]` in Slack, "
            f"`clausegate resolve {record.flow_run_id} approve` or the form in the Prefect UI."}]},
    ]
    text = f"ClauseGate: {record.filename} needs a decision ({', '.join(record.categories)})"
    return text, fit_blocks(blocks)


def decided_message(record: GateRecord, decision: DecisionInfo, run_url: str) -> tuple[str, list[dict[str, Any]]]:
    """The same summary, buttons replaced by who decided what (used with ``chat.update``)."""
    comment = f"\n> {_escape(_cut(decision.comment, 500))}" if decision.comment else ""
    stamp = (f"{ICONS[decision.decision]} *{DECISION_LABELS[decision.decision]}*: {_escape(decision.reviewer)} "
             f"via {decision.via} at {_when(decision.decided_at)}{comment}")
    blocks = _summary_blocks(record, run_url) + [{"type": "section", "text": {"type": "mrkdwn", "text": stamp}}]
    blocks[0] = {"type": "header", "text": {"type": "plain_text", "text": _cut(f"Decided: {record.filename}", 150)}}
    text = f"ClauseGate: {record.filename}: {decision.describe()}"
    return text, fit_blocks(blocks, keep_last=1)


def escalation_message(record: GateRecord, run_url: str, outcome_text: str) -> tuple[str, list[dict[str, Any]]]:
    """Posted to the escalation channel when the SLA passes without a decision."""
    text = (f":rotating_light: SLA passed: *{_escape(record.filename)}* had no decision within "
            f"{record.sla_hours:g} h ({', '.join(record.categories)}); escalated to legal. {outcome_text} "
            f"<{run_url}|Open the run>")
    return _cut(text, 3000), [{"type": "section", "text": {"type": "mrkdwn", "text": _cut(text, SECTION_LIMIT)}}]


def person_escalation_message(record: GateRecord, decision: DecisionInfo,
                              run_url: str) -> tuple[str, list[dict[str, Any]]]:
    """Posted to the escalation channel when a person chose Escalate (any path: Slack, CLI, Prefect UI)."""
    comment = f" \u201c{_escape(_cut(decision.comment, 500))}\u201d" if decision.comment else ""
    text = (f":rotating_light: Escalated to legal: *{_escape(record.filename)}* ({', '.join(record.categories)}) by "
            f"{_escape(decision.reviewer)} via {decision.via} at {_when(decision.decided_at)}.{comment} "
            f"<{run_url}|Open the run>")
    return _cut(text, 3000), [{"type": "section", "text": {"type": "mrkdwn", "text": _cut(text, SECTION_LIMIT)}}]
