"""The counterparty's tracked changes at a gate: each pending change inside a gated finding is a decision item.

    record.changes = of_review(review, record.findings)      # C1, C2, … each tied to the finding (F1, …) it is in
    answers = answer_changes(stored_answer)                  # {"C1": ChangeAnswer(decision="counter", counter=…)}
    change_id, answer = parse_change('C1=counter:"12 months"')  # one answer
    answers = parse_changes(split_changes('C1=accept C2=counter:"12 months"'))  # --change values, /resolve's text

A .docx is reviewed with its pending changes accepted (``Review.revisions``; ``clausegate.review.locate`` flags the
ones inside a gated or high-risk finding). A high-risk finding the playbook does not gate gets a gate of its own for
its changes (reason ``tracked_change``): it is shown with them, not asked (:func:`split_findings`). At a gate, each
pending change inside one of the gate's findings asks
*accept*, *reject* or *counter* (with the counter-proposal's text) of its own. The answer travels like a finding's:
run-input fields ``C1`` (the choice) and ``C1_counter`` (the text) on a resume round of the per-finding gate
(:mod:`clausegate.gates.rounds`), signed in the decision receipt (:func:`summary`), attributed by
:func:`clausegate.gates.receipts.attribute`. Who may decide a change: whoever may decide its finding
(:func:`clausegate.gates.findings.why_not`); the first answer per change wins; a gate with an undecided change does
not complete (the SLA sweeper's escalation closes it with the change left undecided, never accepted).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from clausegate.errors import ClauseGateError
from clausegate.gates.model import Finding, findings_of, text_sha256
from clausegate.review.gate_reasons import change_only_categories
from clausegate.review.redact import SEALED_TEXT
from clausegate.review.schemas import GateDecision, Review
from clausegate.review.tracked_changes import ChangeAnswer, ChangeDecision, DecidedChange, TrackedChange

CODE = "CG-GATE-CHANGE-ANSWER"
CHANGE_ID = re.compile(r"^C\d+$")
CHANGE_TOKEN = re.compile(r"^[Cc]\d+=")  # where an answer on a change starts (``C1=…``)
_NEXT_TOKEN = re.compile(r"\s+(?=[Cc]\d+=)")
_OPENERS, _CLOSERS = "\"'\u201c\u2018", "\"'\u201d\u2019"  # straight quotes, and the curly ones Slack may send
COUNTER_SUFFIX = "_counter"
CHANGE_DECISIONS: tuple[str, ...] = ("accept", "reject", "counter")
CHANGE_PAST = {"accept": "accepted", "reject": "rejected", "counter": "countered"}
# what a change's answer means for the review's status: rejecting or countering it sends the draft back
AS_DECISION = {"accept": "approve", "reject": "changes", "counter": "changes"}
QUOTE = 160


def of_review(review: Review, findings: list[Finding], *, strict: bool = False) -> list[TrackedChange]:
    """The pending tracked changes that fall in the clause of one of ``findings`` (matched by category and clause
    hash), numbered C1, C2, … in the findings' order; ``strict`` (strict text mode): the changed text sealed."""
    by_clause = {(f.category, f.text_sha256): f.id for f in findings if f.id and f.text_sha256}
    out: list[TrackedChange] = []
    seen: set[tuple[int, str, str]] = set()
    for clause in review.clauses:
        fid = by_clause.get((clause.category, text_sha256(clause.text)))
        if fid is None or clause.span is None:
            continue
        start, end = clause.span
        for rev in sorted(review.revisions, key=lambda r: r.start):
            place = (rev.start, rev.kind, rev.text)
            if clause.category not in rev.flagged or not start <= rev.start <= end or place in seen:
                continue
            seen.add(place)
            out.append(TrackedChange(id=f"C{len(out) + 1}", finding=fid, category=clause.category, kind=rev.kind,
                                     author=rev.author, date=rev.date, text=SEALED_TEXT if strict else rev.text,
                                     paragraph=rev.paragraph, start=rev.start))
    return out


def split_findings(review: Review, categories: list[str], *, strict: bool = False) -> tuple[list[Finding],
                                                                                             list[Finding]]:
    """(the findings a gate asks about, the high-risk findings only their tracked changes are asked about:
    ``GateRecord.change_findings``, numbered after the first); a category whose only reason is a tracked change in a
    high-risk clause (:func:`clausegate.review.gate_reasons.with_tracked_change_gates`) is the second kind."""
    only = change_only_categories(review.gate_reasons)
    asked = findings_of(review, [c for c in categories if c not in only], strict=strict)
    shown = findings_of(review, [c for c in categories if c in only], strict=strict)
    return asked, [f.model_copy(update={"id": f"F{len(asked) + i}"}) for i, f in enumerate(shown, 1)]


def answer_changes(answer: dict) -> dict[str, ChangeAnswer]:
    """The valid answers on changes in a stored run input (``C1``: the choice, ``C1_counter``: its text).

    An invalid one (a counter without text) is left out: it decides nothing, the change stays open."""
    out: dict[str, ChangeAnswer] = {}
    for key, value in answer.items():
        if not CHANGE_ID.match(str(key)) or value not in CHANGE_DECISIONS:
            continue
        text = (answer.get(f"{key}{COUNTER_SUFFIX}") or "") if value == "counter" else ""
        try:
            out[key] = ChangeAnswer(decision=value, counter=str(text))
        except ValidationError:
            continue
    return out


def as_decision(changes: dict[str, ChangeAnswer]) -> str:
    """The gate decision that answers on changes amount to (any reject or counter: changes)."""
    return "changes" if any(AS_DECISION[a.decision] == "changes" for a in changes.values()) else "approve"


def run_input(changes: dict[str, ChangeAnswer]) -> dict[str, str]:
    """The run-input fields of these answers (what the form would send)."""
    fields: dict[str, str] = {}
    for cid, ans in changes.items():
        fields[cid] = ans.decision
        if ans.decision == "counter":
            fields[f"{cid}{COUNTER_SUFFIX}"] = ans.counter
    return fields


def summary(changes: dict[str, ChangeAnswer]) -> str:
    """Canonical text of the answers on changes (what a receipt signs, with a counter's text as its sha256):
    ``C1=accept;C2=counter#<sha256 of the text>``."""
    def one(ans: ChangeAnswer) -> str:
        if ans.decision != "counter":
            return ans.decision
        return f"counter#{hashlib.sha256(' '.join(ans.counter.split()).encode('utf-8')).hexdigest()}"
    return ";".join(f"{k}={one(changes[k])}" for k in sorted(changes, key=lambda k: int(k[1:])))


def parse_change(spec: str) -> tuple[str, ChangeAnswer]:
    """``C1=accept`` / ``C1=reject`` / ``C1=counter:"text"`` → (``C1``, the answer); else CG-GATE-CHANGE-ANSWER."""
    usage = 'use C1=accept, C1=reject or C1=counter:"your wording"'
    cid, sep, rest = spec.partition("=")
    cid = cid.strip().upper()
    if not sep or not CHANGE_ID.match(cid):
        raise ClauseGateError(f"'{spec[:60]}' does not name a tracked change.", hint=usage, code=CODE)
    word, _, text = rest.partition(":")
    word = word.strip().lower()
    if word not in CHANGE_DECISIONS:
        raise ClauseGateError(f"{cid}: '{word[:20]}' is not accept, reject or counter.", hint=usage, code=CODE)
    text = text.strip()
    if len(text) >= 2 and text[0] in _OPENERS and text[-1] in _CLOSERS:
        text = text[1:-1].strip()
    if word == "counter" and not text:
        raise ClauseGateError(f"{cid}: a counter needs the counter-proposal's text.", hint=usage, code=CODE)
    if word != "counter" and text:
        raise ClauseGateError(f"{cid}: only a counter carries a text ({word} does not).", hint=usage, code=CODE)
    try:
        return cid, ChangeAnswer(decision=word, counter=text)
    except ValidationError as exc:  # e.g. a counter text over 3000 characters
        raise ClauseGateError(f"{cid}: {exc.errors()[0]['msg']}", hint=usage, code=CODE) from None


def parse_changes(specs: Iterable[str]) -> dict[str, ChangeAnswer]:
    """Several answers (the CLI's ``--change`` values, a ``/resolve``'s tokens) → ``{"C1": answer}``; a bad one, or
    a change answered twice, raises CG-GATE-CHANGE-ANSWER."""
    answers: dict[str, ChangeAnswer] = {}
    for spec in specs:
        cid, answer = parse_change(spec)
        if cid in answers:
            raise ClauseGateError(f"{cid} is answered twice.", hint="give each change one answer", code=CODE)
        answers[cid] = answer
    return answers


def split_changes(text: str) -> list[str]:
    """A text of answers cut before each ``C1=`` (a counter's text may hold spaces):
    ``C1=accept C2=counter:"the fees of 12 months"`` → ``['C1=accept', 'C2=counter:"the fees of 12 months"']``."""
    return [part for part in _NEXT_TOKEN.split(text.strip()) if part]


class ChangeSlot(BaseModel):
    """Who answered one change, how and when."""

    model_config = ConfigDict(frozen=True)

    decision: ChangeDecision
    counter: str = ""
    reviewer: str
    via: str
    decided_at: datetime
    comment: str = ""
    verified_user: str | None = None
    round: int = 0


class ChangeProgress(BaseModel):
    change: TrackedChange
    answer: ChangeSlot | None = None

    @property
    def done(self) -> bool:
        return self.answer is not None


def label(change: TrackedChange) -> str:
    """``C1 (F2): inserted “…” by Counsel``: which change, where, by whom."""
    kind = "inserted" if change.kind == "insertion" else "deleted"
    text = " ".join(change.text.split())
    text = text if len(text) <= QUOTE else text[: QUOTE - 1].rstrip() + "…"
    return f"{change.id} ({change.finding}, ¶ {change.paragraph}): {kind} “{text}” by {change.author or 'unknown'}"


def describe(cp: ChangeProgress) -> str:
    a = cp.answer
    if a is None:
        return "waiting"
    counter = f": “{a.counter}”" if a.decision == "counter" else ""
    return f"{CHANGE_PAST[a.decision]} by {a.reviewer} via {a.via} at {a.decided_at:%Y-%m-%d %H:%M} UTC{counter}"


# The form's choice: optional, one drop-down (see clausegate.gates.findings.FindingDecision for why no default).
ChangeChoice = Annotated[ChangeDecision | None, WithJsonSchema({"type": "string", "enum": list(CHANGE_DECISIONS)})]


def _no_default(schema: dict) -> None:
    schema.pop("default", None)


def form_fields(changes: list[TrackedChange], role_findings: set[str]) -> dict:
    """Per change, a choice field (``C1``) and the counter-proposal's text (``C1_counter``), for ``create_model``;
    ``role_findings``: findings a role must decide (their changes too: this form cannot prove who answers)."""
    fields: dict = {}
    for c in changes:
        note = ("Its finding's role must decide this in Slack: an answer here is not counted."
                if c.finding in role_findings else
                "accept, reject or counter (then write the counter-proposal below); leave empty to decide later.")
        fields[c.id] = (ChangeChoice, Field(None, title=label(c), description=note, json_schema_extra=_no_default))
        fields[f"{c.id}{COUNTER_SUFFIX}"] = (str, Field("", max_length=3000, title=f"{c.id} counter-proposal",
                                                         description=f"counter: your wording instead of {c.id} "
                                                                     "(required with counter)"))
    return fields


def describe_lines(changes: list[ChangeProgress], context: Sequence[Finding] = ()) -> list[str]:
    """Markdown lines for the Prefect UI form's description: each change, its finding, what is decided;
    ``context``: the high-risk findings (not asked) whose clause holds some of them, quoted once each."""
    if not changes:
        return []
    lines = ["", f"**Tracked changes by the other side** ({len(changes)}): accept, reject or counter each one "
                 f"(a counter needs your wording in its `{COUNTER_SUFFIX[1:]}` field)."]
    for f in context:
        lines += ["", f"*{f.id} · {f.category}*: a high-risk clause; only its tracked changes are asked.", "",
                  f"> {' '.join(f.text.split())}"]
    for cp in changes:
        lines += ["", f"- **{label(cp.change)}** · {describe(cp)}"]
    return lines


def still_open(changes: list[ChangeProgress]) -> list[str]:
    """The ids of the changes nobody has decided yet (``C1``, ``C2``)."""
    return [cp.change.id for cp in changes if not cp.done]


def waiting_text(open_roles: set[str], changes: list[ChangeProgress]) -> str:
    """What a per-finding gate still waits for: the roles with an open finding, then the undecided changes."""
    parts = sorted(open_roles)
    if (ids := still_open(changes)):
        parts.append(f"tracked change{'s' if len(ids) > 1 else ''} {', '.join(ids)} (accept, reject or counter)")
    return ", ".join(parts) or "-"


def gate_decisions(gate_key: str, changes: list[ChangeProgress]) -> list[GateDecision]:
    """One ``GateDecision`` per decided change (gate ``<key>/C1``), for the report and the audit."""
    out = []
    for cp in changes:
        a = cp.answer
        if a is None:
            continue
        out.append(GateDecision(gate=f"{gate_key}/{cp.change.id}", categories=[cp.change.category],
                                decision=AS_DECISION[a.decision], reviewer=a.reviewer, comment=a.comment, via=a.via,
                                decided_at=a.decided_at, finding=cp.change.finding,
                                change=DecidedChange(change=cp.change, decision=a.decision, counter=a.counter)))
    return out
