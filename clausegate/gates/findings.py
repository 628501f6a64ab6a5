"""Per-finding gates: a decision per finding and per required role, and the review status that follows.

A playbook gate that names ``roles`` (``gates[].roles``) makes the gate ask per finding: each
finding has one **slot** per required role (``legal``; ``legal`` and ``finance`` for both), or one
``any`` slot when its category names no role. An answer (one resume round, see
:func:`clausegate.gates.model.round_key`) fills every open slot its answerer may fill:

* a role's slot only by an answer through a channel, which proves the person (:func:`~clausegate.gates.channel.
  proves_person`: Slack's signed request names the user id, an e-mail link's signature the address) of one of the
  role's people
  (``role_members``: their Slack ids and addresses; after a reassignment, only the assignee), or by the
  SLA sweeper;
* an ``any`` slot by every path.

A path that cannot prove who answers (the Prefect UI form, the CLI: its login is the operator
account, not a person) never fills a role's slot: the answer is refused for that finding and the
refusal says to answer in Slack or by the e-mail link. :func:`why_not` is the one check, every channel's
answers go through it. The first answer per slot wins.

The gate is complete when every slot is filled; its status: any *escalate* → ``needs_legal``, else
any *changes* → ``changes_requested``, else (all approved) ``complete``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from prefect.input import RunInput
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from clausegate.gates import changes as tracked
from clausegate.gates.channel import proves_person
from clausegate.gates.model import (
    DECISION_PAST,
    DECISIONS,
    STATUS_BY_DECISION,
    Decision,
    DecisionInfo,
    Finding,
    GateRecord,
)

ANY_ROLE = "any"
RANK = {"approve": 0, "changes": 1, "escalate": 2}
FINDING_FIELD = r"^F\d+$"


def strictest(decisions) -> str:
    """escalate > changes > approve."""
    return max(decisions, key=lambda d: RANK[d])


class SlotAnswer(BaseModel):
    """Who filled one (finding, role) slot, how and when."""

    model_config = ConfigDict(frozen=True)

    role: str
    decision: Decision
    reviewer: str
    via: str
    decided_at: datetime
    comment: str = ""
    verified_user: str | None = None
    round: int = 0


class FindingProgress(BaseModel):
    finding: Finding
    roles: list[str]
    answers: dict[str, SlotAnswer] = {}
    assignees: dict[str, str] = {}  # role -> the one person (Slack user id) it was reassigned to

    @property
    def slots(self) -> list[str]:
        return self.roles or [ANY_ROLE]

    @property
    def open_slots(self) -> list[str]:
        return [s for s in self.slots if s not in self.answers]

    @property
    def done(self) -> bool:
        return not self.open_slots

    @property
    def outcome(self) -> str | None:
        return strictest([a.decision for a in self.answers.values()]) if self.done else None


class Progress(BaseModel):
    findings: list[FindingProgress]
    refused: list[tuple[int, str, str]] = []  # (round, finding id, why) of answers that filled nothing
    changes: list[tracked.ChangeProgress] = []  # the tracked changes inside the findings (clausegate.gates.changes)
    context: list[FindingProgress] = []  # record.change_findings: who may decide their changes, never asked
    swept: bool = False  # the SLA sweeper answered: the gate closes with any undecided change left undecided

    @property
    def complete(self) -> bool:
        return all(f.done for f in self.findings) and (self.swept or all(c.done for c in self.changes))

    @property
    def status(self) -> str:
        changed = [tracked.AS_DECISION[c.answer.decision] for c in self.changes if c.answer is not None]
        undecided = ["escalate"] if self.swept and any(c.answer is None for c in self.changes) else []  # SLA passed
        return STATUS_BY_DECISION[strictest([f.outcome for f in self.findings if f.outcome] + changed + undecided)]

    def get_change(self, change_id: str) -> tracked.ChangeProgress | None:
        wanted = change_id.strip().upper()
        return next((c for c in self.changes if c.change.id == wanted), None)

    def get(self, finding_id: str) -> FindingProgress | None:
        wanted = finding_id.strip().upper()
        return next((f for f in self.findings if f.finding.id == wanted), None)

    def open_roles(self) -> set[str]:
        return {s for f in self.findings for s in f.open_slots}


def slot_people(record: GateRecord, fp: FindingProgress, role: str) -> list[str]:
    """Who may fill ``role``'s slot of this finding: its assignee after a reassignment, else the role's people."""
    if role in fp.assignees:
        return [fp.assignees[role]]
    return list(record.role_members.get(role, []))


def why_not(record: GateRecord, fp: FindingProgress, role: str, *, via: str, verified: bool,
            user: str | None) -> str | None:
    """None when an answer through ``via`` by ``user`` may fill this slot; else the sentence saying why not."""
    if role == ANY_ROLE or via == "sla":
        return None
    f = fp.finding
    where = (f"Answer in Slack (the buttons on the gate message, or `/resolve {record.flow_run_id} {f.id} "
             "approve|changes|escalate`) or with the links in your e-mail")
    if not proves_person(via) or not verified or not user:
        return (f"{f.id} ({f.category}) must be decided by role {role}; an answer via {via} cannot prove who gave "
                f"it, so it does not count for {f.id}. {where}.")
    people = slot_people(record, fp, role)
    if user not in people:
        whom = f"it is assigned to {people[0]}" if role in fp.assignees else f"you are not in role {role}"
        return f"{f.id} ({f.category}) must be decided by role {role} and {whom}."
    return None


def progress(record: GateRecord, rounds: list[DecisionInfo | None],
             assignments: dict[tuple[str, str], str] | None = None) -> Progress:
    """Fill the slots from the answer rounds in order (first answer per slot wins); see the module docstring."""
    found = [FindingProgress(finding=f, roles=record.roles_for(f)) for f in record.findings]
    by_id = {fp.finding.id: fp for fp in found}
    changes = [tracked.ChangeProgress(change=c) for c in record.changes]
    context = [FindingProgress(finding=f, roles=record.roles_for(f)) for f in record.change_findings]
    swept = False
    for (fid, role), user in (assignments or {}).items():
        if fid in by_id:
            by_id[fid].assignees[role] = user
    refused: list[tuple[int, str, str]] = []
    for n, info in enumerate(rounds):
        if info is None:
            continue
        swept = swept or info.via == "sla"
        _fill_changes(record, {**{fp.finding.id: fp for fp in context}, **by_id}, changes, refused, info, n)
        for fid, decision in info.findings.items():
            fp = by_id.get(fid)
            if fp is None:
                refused.append((n, fid, f"{fid}: this gate has no such finding"))
                continue
            problems = []
            filled = False
            for role in fp.open_slots:
                problem = why_not(record, fp, role, via=info.via, verified=info.reviewer_verified,
                                  user=info.verified_user)
                if problem is None:
                    fp.answers[role] = SlotAnswer(role=role, decision=decision, reviewer=info.reviewer, via=info.via,
                                                  decided_at=info.decided_at, comment=info.comment,
                                                  verified_user=info.verified_user, round=n)
                    filled = True
                else:
                    problems.append(problem)
            if not filled and problems:
                refused.append((n, fid, problems[0]))
    return Progress(findings=found, refused=refused, changes=changes, swept=swept, context=context)


def _fill_changes(record: GateRecord, by_id: dict[str, FindingProgress], changes: list[tracked.ChangeProgress],
                  refused: list[tuple[int, str, str]], info: DecisionInfo, n: int) -> None:
    """One round's answers on tracked changes: a change counts when the answerer may decide its finding."""
    by_change = {c.change.id: c for c in changes}
    for cid, ans in info.changes.items():
        cp = by_change.get(cid)
        if cp is None:
            refused.append((n, cid, f"{cid}: this gate has no such tracked change"))
            continue
        if cp.done:
            continue
        problem = change_problem(record, by_id.get(cp.change.finding), via=info.via,
                                 verified=info.reviewer_verified, user=info.verified_user)
        if problem is not None:
            refused.append((n, cid, f"{cid}, a tracked change in {problem}"))
            continue
        cp.answer = tracked.ChangeSlot(decision=ans.decision, counter=ans.counter, reviewer=info.reviewer,
                                       via=info.via, decided_at=info.decided_at, comment=info.comment,
                                       verified_user=info.verified_user, round=n)


def change_problem(record: GateRecord, fp: FindingProgress | None, *, via: str, verified: bool,
                   user: str | None) -> str | None:
    """None when this answerer may decide a tracked change in ``fp``'s finding (whoever may fill one of its slots)."""
    if fp is None:
        return "no finding of this gate"
    reasons = [why_not(record, fp, role, via=via, verified=verified, user=user) for role in fp.slots]
    return None if any(r is None for r in reasons) else next(r for r in reasons if r)


def fillable_changes(record: GateRecord, prog: Progress, *, via: str, user: str | None,
                     wanted: list[str]) -> tuple[list[str], list[str]]:
    """(change ids of ``wanted`` this answerer would decide now, why each other would not count)."""
    by_id = {fp.finding.id: fp for fp in [*prog.context, *prog.findings]}
    ids, problems = [], []
    for cid in wanted:
        cp = prog.get_change(cid)
        if cp is None:
            problems.append(f"{cid}: this gate has no such tracked change "
                            f"(its changes: {', '.join(c.change.id for c in prog.changes) or 'none'}).")
        elif cp.done:
            problems.append(f"{cp.change.id} is already decided: {tracked.describe(cp)}.")
        elif (why := change_problem(record, by_id.get(cp.change.finding), via=via, verified=True, user=user)):
            problems.append(f"{cp.change.id}, a tracked change in {why}")
        else:
            ids.append(cp.change.id)
    return ids, problems


def fillable(record: GateRecord, prog: Progress, *, via: str, user: str | None,
             finding: str | None) -> tuple[list[str], list[str]]:
    """(finding ids this answerer would decide now, why each other target would not count).

    ``finding`` None: every finding with an open slot this answerer may fill (``/resolve RUN approve``)."""
    targets = [prog.get(finding)] if finding else prog.findings
    ids, problems = [], []
    for fp in targets:
        if fp is None:
            continue
        if fp.done:
            if finding:
                problems.append(f"{fp.finding.id} is already decided: {describe_slots(fp)}.")
            continue
        reasons = [why_not(record, fp, role, via=via, verified=True, user=user) for role in fp.open_slots]
        if any(r is None for r in reasons):
            ids.append(fp.finding.id)
        elif finding or not proves_person(via):
            problems.append(next(r for r in reasons if r))
    return ids, problems


def describe_slots(fp: FindingProgress) -> str:
    parts = []
    for role in fp.slots:
        a = fp.answers.get(role)
        label = "" if role == ANY_ROLE else f"{role}: "
        if a is None:
            who = f" (assigned to {fp.assignees[role]})" if role in fp.assignees else ""
            parts.append(f"{label}waiting{who}")
        else:
            parts.append(f"{label}{DECISION_PAST[a.decision]} by {a.reviewer} via {a.via} at "
                         f"{a.decided_at:%Y-%m-%d %H:%M} UTC")
    return "; ".join(parts)


# A finding's field: optional, but in the form one drop-down of the decisions (not a `str | None` union, which the
# Prefect UI renders as two tabs with "None" picked). Its schema has no default: the UI leaves an unanswered
# field out of the answer (with `"default": null` it sends null, which the drop-down's schema refuses).
FindingDecision = Annotated[Decision | None, WithJsonSchema({"type": "string", "enum": list(DECISIONS)})]


def _no_default(schema: dict) -> None:
    schema.pop("default", None)


class FindingsInput(RunInput):
    """Base of a per-finding gate's form (see :func:`findings_form`); unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")


def findings_form(record: GateRecord):
    """The RunInput class of this gate's form: reviewer, comment and one optional decision field per finding.

    Built per gate (pydantic ``create_model`` on Prefect's ``RunInput``), so the Prefect UI renders one
    select per finding. A role-restricted finding's field says the form cannot decide it (the flow
    refuses such an answer for that finding; see :func:`why_not`)."""
    fields: dict = {
        "reviewer": (str, Field(min_length=1, max_length=200, description="Who decides (your name or e-mail).")),
        "comment": (str, Field("", max_length=3000, description="Why, or which changes (optional).")),
    }
    for f in record.findings:
        roles = record.roles_for(f)
        pages = ", ".join(map(str, f.pages)) or "-"
        if roles:
            note = (f"Role {' and '.join(roles)} must decide this in Slack: this form cannot prove who you are, "
                    "so an answer here is not counted.")
        else:
            note = "approve, changes or escalate; leave empty to decide it later."
        fields[f.id] = (FindingDecision, Field(None, title=f"{f.id} · {f.category} (p. {pages})", description=note,
                                                   json_schema_extra=_no_default))
    fields.update(tracked.form_fields(record.changes, {f.id for f in record.findings if record.roles_for(f)}))
    return create_model("GateFindingsInput", __base__=FindingsInput, **fields)


def answer_findings(answer: dict) -> dict[str, str]:
    """The per-finding decisions in a stored answer (fields ``F1``, ``F2``… with a decision)."""
    return {k: v for k, v in answer.items() if k[:1] == "F" and k[1:].isdigit() and v in RANK}


def summary(findings: dict[str, str]) -> str:
    """Canonical text of per-finding decisions (what a receipt signs): ``F1=approve;F2=changes``."""
    return ";".join(f"{k}={findings[k]}" for k in sorted(findings, key=lambda k: int(k[1:])))
