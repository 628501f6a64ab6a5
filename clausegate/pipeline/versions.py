"""A review as the next version of an earlier one: what changed, and the earlier decisions carried by the text.

``carry_step`` runs in the flow body after the review is assembled and BEFORE the gate:

1. the earlier version is the review named by ``revises`` (a contract-review run id, the inbox's task id) or a
   contract file; its document is parsed under the same sandbox and compared clause by clause with this one
   (:func:`clausegate.review.versions.align.compare`: unchanged / changed with its redline / moved / added /
   removed; a .docx change no tracked change covers is flagged untracked);
2. the earlier run's decisions are read with the receipts they stand on (only a decision whose signed receipt
   verifies can carry: a Prefect UI answer has none, so it is asked again);
3. each gated finding of this review is carried only when its clause's hash (``text_sha256``, the hash the
   receipt signs) and the playbook's equal the receipt's (:mod:`clausegate.review.versions.carry`).  A gated
   category all of whose findings carry the same decision leaves the gate with that decision (``carried``: the
   earlier run, the receipt); the others are asked again, and the report shows the earlier decision, its reason
   and the redline.  No text of this contract, no setting and no earlier review without a receipt clears a gate.

A per-finding gate's decisions are read per slot (:func:`slot_decisions`): each role's answer on a finding, with
the receipt of the answer round that filled it, so on a category that names roles each role's slot carries on its
own and the category leaves the gate only when every slot of every finding carries.
"""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path

from prefect import get_client
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run

from clausegate.errors import ConfigurationError
from clausegate.gates import findings as per_finding
from clausegate.gates import receipts, store
from clausegate.gates.model import RECEIPT_FIELD, GateRecord, findings_of, receipt_key, response_key, round_key
from clausegate.gates.step import playbook_sha256
from clausegate.review.document.formats import parse_document
from clausegate.review.document.sandbox import fingerprint
from clausegate.review.playbook import Playbook
from clausegate.review.schemas import GateDecision, GateReason, ParsedDocument, Review
from clausegate.review.versions.align import compare
from clausegate.review.versions.carry import (
    Carried,
    EarlierDecision,
    as_a_whole,
    carry_slots,
    category_carries,
    signed_decision_of,
)
from clausegate.review.versions.catalog import earlier_versions
from clausegate.review.versions.model import CarriedFrom, VersionChange, VersionEntry, VersionFinding, Versions

logger = logging.getLogger("clausegate.pipeline.versions")
STRICTER = {"approve": 0, "changes": 1, "escalate": 2}
STATUS_OF = {"approve": "complete", "changes": "changes_requested", "escalate": "needs_legal"}


def _run_id(revises: str) -> str | None:
    try:
        return str(uuid.UUID(revises.strip()))
    except ValueError:
        return None


def _signed_round(client, record: GateRecord, rkey: str, key: bytes) -> receipts.DecisionReceipt | None:
    """The receipt of the answer stored under pause key ``rkey`` when its signature verifies for this run and key."""
    answer = store.read_value(client, record.flow_run_id, response_key(rkey))
    if not isinstance(answer, dict):
        return None
    value = store.read_value(client, record.flow_run_id, receipt_key(rkey, str(answer.get(RECEIPT_FIELD))))
    receipt = receipts.signature_valid(value, key=key)
    if receipt is None or receipt.flow_run_id != record.flow_run_id or receipt.gate != rkey:
        return None
    return receipt


def slot_decisions(record: GateRecord, prog: per_finding.Progress,
                   signed: dict[int, receipts.DecisionReceipt]) -> list[EarlierDecision]:
    """A per-finding gate's decisions, one per filled slot (finding, role), each standing on the signed receipt
    of the answer round that filled it (``signed``: round number → receipt); a slot whose round has no such
    receipt, or whose receipt does not sign this finding's clause and decision, is left out: it cannot carry."""
    out: list[EarlierDecision] = []
    for fp in prog.findings:
        for slot, answer in fp.answers.items():
            receipt = signed.get(answer.round)
            digest = receipt.clause_sha256.get(fp.finding.id) if receipt else None
            if not digest or answer.via == "ui" or signed_decision_of(receipt.decision, fp.finding.id) != \
                    answer.decision:
                continue
            out.append(EarlierDecision(
                category=fp.finding.category, finding=fp.finding.id, clause_sha256=digest,
                playbook_sha256=receipt.playbook_sha256, clause_text=fp.finding.text, decision=answer.decision,
                reviewer=answer.reviewer, comment=answer.comment, decided_at=answer.decided_at, via=answer.via,
                role="" if slot == per_finding.ANY_ROLE else slot, flow_run_id=record.flow_run_id,
                receipt=receipt.model_dump(mode="json")))
    return out


def _per_finding_decisions(client, record: GateRecord, key: bytes) -> list[EarlierDecision]:
    extras = store.read_extras(client, record.flow_run_id, record.key)
    rounds = store.read_rounds(client, record.flow_run_id, record.key)
    signed = {}
    for n, info in enumerate(rounds):
        if info is not None and not info.receipt_problem and info.via != "ui":
            receipt = _signed_round(client, record, round_key(record.key, n), key)
            if receipt is not None:
                signed[n] = receipt
    return slot_decisions(record, per_finding.progress(record, rounds, extras.assignments), signed)


def earlier_decisions(client, flow_run_id: str) -> list[EarlierDecision]:
    """The decisions of an earlier review's gates, each finding with its receipt's hashes (a per-finding gate's:
    one per slot, :func:`slot_decisions`).  A decision without a receipt that verifies (signature, run, gate) is
    left out: it cannot carry."""
    out: list[EarlierDecision] = []
    key = receipts.signing_key()
    for record in store.all_records(client, flow_run_id):
        if record.per_finding:
            out += _per_finding_decisions(client, record, key)
            continue
        answer = store.read_value(client, flow_run_id, response_key(record.key))
        info = store.read_decision(client, flow_run_id, record.key)
        if not isinstance(answer, dict) or info is None or info.receipt_problem or info.via == "ui":
            continue
        value = store.read_value(client, flow_run_id, receipt_key(record.key, str(answer.get(RECEIPT_FIELD))))
        receipt = receipts.signature_valid(value, key=key)
        if receipt is None or receipt.flow_run_id != flow_run_id or receipt.gate != record.key:
            continue
        for number, finding in enumerate(record.findings, 1):  # keyed as receipts.evidence_of keys them
            digest = receipt.clause_sha256.get(finding.id or f"#{number}")
            if not digest:
                continue
            out.append(EarlierDecision(
                category=finding.category, finding=finding.id, clause_sha256=digest,
                playbook_sha256=receipt.playbook_sha256, clause_text=finding.text,
                decision=info.findings.get(finding.id, info.decision), reviewer=info.reviewer, comment=info.comment,
                decided_at=info.decided_at, via=info.via, flow_run_id=flow_run_id,
                receipt={**receipt.model_dump(mode="json"), "gate": record.key}))
    return out


def _earlier_document(client, revises: str) -> tuple[ParsedDocument, str | None]:
    """(the earlier version parsed, its run id or None for a file)."""
    run_id = _run_id(revises)
    if run_id is not None:
        try:
            run = client.read_flow_run(uuid.UUID(run_id))
        except ObjectNotFound:
            raise ConfigurationError(f"no review {run_id} on this Prefect server (--revises)",
                                     hint="use the id `clausegate versions` lists on the server that ran it, or "
                                          "the earlier contract's file") from None
        source = str((run.parameters or {}).get("source") or "")
        if not Path(source).is_file():
            raise ConfigurationError(f"the review {run_id} that this one revises reviewed '{source}', which is not "
                                     "on this machine any more", hint="name the earlier contract's file instead "
                                     "(--revises FILE): its decisions then are not carried, only compared")
        return parse_document(fingerprint(source)), run_id
    if not Path(revises).is_file():
        raise ConfigurationError(f"--revises '{revises}' is neither a review id (a contract-review run id) nor a "
                                 "file", hint="give the earlier review's run id (clausegate versions lists them) "
                                 "or the earlier contract's file")
    return parse_document(fingerprint(revises)), None


def carry_step(review: Review, document: ParsedDocument | None, book: Playbook,
               revises: str | None) -> tuple[Review, list[GateDecision]]:
    """This review with ``versions`` set and its carried categories off the gate, and the carried decisions
    (module doc).  Without ``revises`` (or without a parsed document) the review is returned as it is."""
    if not revises or document is None:
        return review, []
    with get_client(sync_client=True) as client:
        earlier_doc, run_id = _earlier_document(client, revises)
        earlier = earlier_decisions(client, run_id) if run_id else []
    comparison = compare(earlier_doc, document)
    changes = [VersionChange(status=c.status, old_text=c.old_text, new_text=c.new_text, redline=c.redline,
                             moved=c.moved, untracked=c.untracked) for c in comparison.changes()]
    book_hash = playbook_sha256(book)
    roles_of = {g.category: list(g.roles) for g in book.gates if g.roles}
    findings: list[VersionFinding] = []
    carried: list[GateDecision] = []
    still: list[str] = []
    reasons: list[GateReason] = []
    for category in review.gated_categories:
        outcomes = [o for f in findings_of(review, [category])
                    for o in carry_slots(f.category, f.text, roles_of.get(category, []), earlier, book_hash,
                                         digest=f.text_sha256)]
        leaves = category_carries(outcomes)
        changed = {(o.text_sha256, o.earlier.reviewer, o.earlier.decision): o for o in outcomes
                   if o.outcome == "asked_again" and o.earlier is not None}  # the gate message's reasons
        if not leaves:
            outcomes = as_a_whole(outcomes)
        findings += [VersionFinding(category=o.category, role=o.role, outcome=o.outcome, why=o.why,
                                    redline=o.redline, earlier_decision=o.earlier.decision if o.earlier else None,
                                    earlier_reviewer=o.earlier.reviewer if o.earlier else None,
                                    earlier_decided_at=o.earlier.decided_at if o.earlier else None,
                                    earlier_comment=o.earlier.comment if o.earlier else "") for o in outcomes]
        if leaves:
            carried += [carried_decision(o) for o in (outcomes if any(o.role for o in outcomes) else outcomes[:1])]
        else:
            still.append(category)
            reasons += [_asked_again(o, earlier_doc.filename) for o in changed.values()]
    versions = Versions(revises=run_id or revises, revises_filename=earlier_doc.filename, counts=comparison.counts(),
                        changes=changes, findings=findings, history=_history(review, run_id))
    logger.info("versions: %s against %s; %d gated categories carried, %d asked again", comparison.counts(),
                earlier_doc.filename, len(carried), len(still))
    return review.model_copy(update={"versions": versions, "gated_categories": still,
                                     "gate_reasons": [*reasons, *review.gate_reasons]}), carried


def _history(review: Review, run_id: str | None) -> list[VersionEntry]:
    """The contract's earlier versions in this run's reports folder (its ``out_dir`` parameter, else the flow's
    default ``reports``): the review it revises (``run_id``) and its own earlier ones, and any of the same title and
    parties; each with its status now; [] when the folder cannot be read."""
    folder = Path(str(flow_run.parameters.get("out_dir") or "reports"))
    try:
        return earlier_versions(folder, review.model_dump(mode="json", include={"clauses", "flow_run_id"}),
                               run_id)
    except OSError as error:
        logger.warning("versions: the reports folder %s could not be read for the version list: %s", folder, error)
        return []


def carried_decision(outcome: Carried) -> GateDecision:
    """A carried outcome as the decision it carries (per slot: its finding and role), with its receipt."""
    d = outcome.earlier
    gate = str(d.receipt.get("gate", ""))
    return GateDecision(gate=gate, categories=[outcome.category], decision=d.decision, reviewer=d.reviewer,
                        comment=d.comment, via=d.via, decided_at=d.decided_at, role=outcome.role or None,
                        carried=CarriedFrom(flow_run_id=d.flow_run_id, gate=gate, finding=d.finding, role=d.role,
                                            clause_sha256=d.clause_sha256, playbook_sha256=d.playbook_sha256,
                                            receipt=d.receipt))


def _asked_again(outcome, filename: str) -> GateReason:
    """Why a finding is asked again, for the gate message (which cuts it to a line: the earlier decision and the
    changed words first): who decided what and when, the redline's changes, its comment, the earlier file."""
    d = outcome.earlier
    when = f" ({d.decided_at:%Y-%m-%d})" if d.decided_at else ""
    changed = " ".join(part for part in re.findall(r"~~.*?~~|\*\*.*?\*\*", outcome.redline))
    said = f"; their reason: “{d.comment[:300]}”" if d.comment else ""
    role = f" as {d.role}" if d.role else ""
    return GateReason(category=outcome.category, why="changed",
                      detail=f"changed since {d.reviewer} decided {d.decision}{role}{when}: {changed or 'reworded'}"
                             f"{said}; was decided on {filename}")


def with_carried(carried: list[GateDecision], decisions: list[GateDecision], status: str) -> tuple[list, str]:
    """The gate's decisions with the carried ones, and the status the strictest carried decision allows."""
    if not carried:
        return decisions, status
    strictest = max((d.decision for d in carried), key=STRICTER.__getitem__)
    if status in ("complete", "degraded") and strictest != "approve":
        status = STATUS_OF[strictest]
    return [*carried, *decisions], status
