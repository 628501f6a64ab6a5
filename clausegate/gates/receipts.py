"""Decision receipts: a decision is attributed by the path that received it, never by the caller.

``resolve_gate`` (Slack through the gateway, the CLI, the SLA sweeper) writes a **receipt** on the
run *before* it resumes it: which path received the answer (``via``), who the path verified (the
Slack user id from the signed request, the CLI's login, the sweeper), the answer itself, the run,
the gate and a fresh nonce, signed with HMAC-SHA256. The resume's run input carries the nonce
(field ``clausegate_receipt``; the form ignores it). When the flow resumes, and whenever a
decision is read (``store.read_decision``), :func:`attribute` accepts the receipt only if

* the receipt named by the answer's nonce exists on this run (``clausegate-receipt-<gate>-<nonce>``),
* its signature verifies under the receipt key,
* it names this run and this gate, and the same decision, reviewer and comment as the stored answer,
* it was issued shortly before the answer was stored (``MAX_AGE``; a stale receipt is not reusable).

Otherwise the answer came through the Prefect UI / API: ``via`` is ``ui`` and the reviewer is the
name typed into the form, marked "as stated …, unverified". A ``via`` in the run input is ignored
(kept as ``claimed_via`` for the audit). A valid receipt proves the path and the user it names;
the reviewer is verified only when the path proves that name too (:func:`proves_reviewer`: a
``clausegate resolve --reviewer`` other than the login is recorded as stated, unverified).

Why signed: whoever can answer through the Prefect API (the UI credential) can also write flow-run
inputs, so an unsigned receipt would be forgeable by exactly the caller it must be told apart
from. The key is derived from ClauseGate's at-rest key (``clausegate.security.credentials``: an owner-only
file or ``CLAUSEGATE_AT_REST_KEY``), which lives with the processes that run ClauseGate (worker,
gateway, CLI, sweeper), never in Prefect.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from clausegate.gates import changes, findings
from clausegate.gates.model import (
    CLI_STATED_MARK,
    RECEIPT_FIELD,
    DecisionInfo,
    GateInput,
    GateRecord,
    unverified_reviewer,
)
from clausegate.review.schemas import Via
from clausegate.security import credentials


def _received(via: str) -> str:
    if via == "ui":
        raise ValueError("the Prefect form's answers have no receipt")
    return via


ReceivedVia = Annotated[Via, AfterValidator(_received)]  # resolve_gate's paths: the channels, the CLI, the sweeper
MAX_AGE_SECONDS = 600.0  # issued → answer stored; a resume follows its receipt within a second or two
MAX_SKEW_SECONDS = 120.0  # clock difference between the receiving process and the Prefect server
NONCE = re.compile(r"^[0-9a-f]{32}$")
KEY_CONTEXT = b"clausegate/decision-receipt/v1"
EVIDENCE_FIELDS = ("clause_sha256", "contract_sha256", "playbook_sha256", "model_version")


class DecisionReceipt(BaseModel):
    """What ``resolve_gate`` saw before it resumed the run (stored as a flow-run input, signed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    nonce: str
    flow_run_id: str
    gate: str
    decision: str
    reviewer: str
    comment: str = ""
    via: ReceivedVia
    verified_user: str | None = None
    issued_ms: int
    # what exactly was decided: sha256 of each decided finding's whole normalised clause text,
    # the contract (file bytes), the playbook, and the extractor/model version; empty on older receipts
    clause_sha256: dict[str, str] = {}
    contract_sha256: str = ""
    playbook_sha256: str = ""
    model_version: str = ""
    signature: str = ""

    def signed_bytes(self) -> bytes:
        body = self.model_dump(mode="json", exclude={"signature"})
        for name in EVIDENCE_FIELDS:  # an older receipt (without them) keeps verifying
            if not body.get(name):
                body.pop(name, None)
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def signing_key() -> bytes:
    """The receipt key: derived from the at-rest key (raises ConfigurationError if it is unreadable)."""
    base = credentials.at_rest_key(create=True)
    return hmac.new(str(base).encode(), KEY_CONTEXT, hashlib.sha256).digest()


def _sign(receipt: DecisionReceipt, key: bytes) -> str:
    return hmac.new(key, receipt.signed_bytes(), hashlib.sha256).hexdigest()


def new_nonce() -> str:
    return secrets.token_hex(16)


def issue(*, flow_run_id: str, gate: str, decision: str, reviewer: str, comment: str, via: ReceivedVia,
          verified_user: str | None, key: bytes | None = None,
          evidence: dict[str, Any] | None = None) -> DecisionReceipt:
    """``evidence``: the EVIDENCE_FIELDS (see :func:`evidence_of`)."""
    unsigned = DecisionReceipt(nonce=new_nonce(), flow_run_id=str(flow_run_id), gate=gate, decision=decision,
                               reviewer=reviewer, comment=comment, via=via, verified_user=verified_user,
                               issued_ms=int(time.time() * 1000), **(evidence or {}))
    return unsigned.model_copy(update={"signature": _sign(unsigned, key or signing_key())})


def evidence_of(record: GateRecord, finding_ids: list[str] | None = None) -> dict[str, Any]:
    """What the receipt proves was decided: the decided findings' clause hashes (all of the gate's for a
    one-decision gate), the contract hash (the file's sha256 = its id), the playbook hash and the model version."""
    wanted = None if finding_ids is None else set(finding_ids)
    clauses = {f.id or f"#{i}": f.text_sha256 for i, f in enumerate(record.findings, 1)
               if f.text_sha256 and (wanted is None or f.id in wanted)}
    return {"clause_sha256": clauses, "contract_sha256": record.contract_id, "playbook_sha256": record.playbook_sha256,
            "model_version": record.model_version}


def answer_decision(answer: dict[str, Any]) -> str | None:
    """The decision text a receipt signs: the one decision, or a per-finding answer's canonical summary."""
    if "decision" in answer:
        return answer.get("decision")
    return signed_summary(findings.answer_findings(answer), changes.answer_changes(answer))


def signed_summary(decided: dict[str, str], changed: dict) -> str:
    """A per-finding answer's canonical text: its findings' decisions, then its answers on tracked changes."""
    return ";".join(part for part in (findings.summary(decided), changes.summary(changed)) if part)


def signature_valid(value: Any, *, key: bytes | None = None) -> DecisionReceipt | None:
    """``value`` as a receipt when it is one and its signature verifies under the receipt key, else None (what a
    carried decision, or ``clausegate receipts verify``, checks; :func:`verify` checks an answer's receipt)."""
    try:
        receipt = DecisionReceipt.model_validate(value)
    except (ValidationError, ValueError, TypeError):
        return None
    return receipt if hmac.compare_digest(receipt.signature, _sign(receipt, key or signing_key())) else None


def verify(value: Any, *, flow_run_id: str, gate: str, nonce: str, answer: dict[str, Any], stored_at: datetime,
           key: bytes) -> tuple[DecisionReceipt | None, str | None]:
    """(receipt, None) when ``value`` is a valid receipt for this answer; else (None, why not)."""
    try:
        receipt = DecisionReceipt.model_validate(value)
    except (ValidationError, ValueError, TypeError):
        return None, "receipt is malformed"
    if not hmac.compare_digest(receipt.signature, _sign(receipt, key)):
        return None, "receipt signature does not verify"
    if receipt.nonce != nonce or receipt.flow_run_id != str(flow_run_id) or receipt.gate != gate:
        return None, "receipt is for another run, gate or answer"
    if (receipt.decision, receipt.reviewer, receipt.comment) != (answer_decision(answer), answer.get("reviewer"),
                                                                  answer.get("comment", "")):
        return None, "receipt does not match the stored answer"
    age = stored_at.timestamp() - receipt.issued_ms / 1000
    if not -MAX_SKEW_SECONDS <= age <= MAX_AGE_SECONDS:
        return None, f"receipt was issued {age:.0f} s before the answer was stored (allowed: {MAX_AGE_SECONDS:g} s)"
    return receipt, None


def proves_reviewer(receipt: DecisionReceipt) -> bool:
    """Whether the receiving path vouches for the reviewer named, not only for itself.

    Slack: the reviewer is built by the gateway from the signed request (``name (U…)``) and the
    receipt carries that user id. The SLA sweeper: itself. The CLI proves only the login that ran it,
    so a ``--reviewer`` other than that login is a stated name, not a verified one.
    """
    if receipt.via == "cli":
        return receipt.verified_user is not None and receipt.reviewer == receipt.verified_user
    return receipt.verified_user is not None


def stated_to_cli(stated: str, login: str | None) -> str:
    """A reviewer name typed into ``clausegate resolve --reviewer``, marked with the login that ran it."""
    return f"{stated} ({CLI_STATED_MARK} by login {login or 'unknown'}, unverified)"


def attribute(answer: Any, *, flow_run_id: str, gate: str, stored_at: datetime,
              lookup: Callable[[str], Any]) -> DecisionInfo | None:
    """The accepted answer (Prefect's response input, raw) with ClauseGate's attribution; None if not an answer.

    ``lookup(nonce)``: the stored receipt value for that nonce on this run and gate, or None.
    """
    if not isinstance(answer, dict):
        return None
    decided: dict[str, str] = {}
    changed: dict = {}
    try:
        if "decision" in answer:
            form = GateInput.model_validate(answer)
        else:  # a per-finding gate's answer (clausegate.gates.findings)
            decided = findings.answer_findings(answer)
            changed = changes.answer_changes(answer)
            if not decided and not changed:
                return None
            as_decisions = [*decided.values(), *(changes.AS_DECISION[a.decision] for a in changed.values())]
            form = GateInput(decision=findings.strictest(as_decisions), reviewer=answer.get("reviewer"),
                             comment=answer.get("comment") or "")
    except (ValidationError, ValueError, TypeError):
        return None
    claimed = answer.get("via")
    claimed_via = str(claimed)[:40] if claimed is not None else None
    nonce = answer.get(RECEIPT_FIELD)
    receipt, problem = None, None
    if nonce is not None:
        if not isinstance(nonce, str) or not NONCE.match(nonce):
            problem = "receipt nonce is malformed"
        else:
            value = lookup(nonce)
            if value is None:
                problem = "no receipt with that nonce on this run"
            else:
                try:
                    key = signing_key()
                except Exception as exc:  # no key: cannot verify, so not verified
                    problem = f"receipt key unavailable: {exc}"
                else:
                    receipt, problem = verify(value, flow_run_id=flow_run_id, gate=gate, nonce=nonce,
                                              answer=answer, stored_at=stored_at, key=key)
    common = dict(decision=form.decision, comment=form.comment, decided_at=stored_at, stated_reviewer=form.reviewer,
                  claimed_via=claimed_via, receipt_problem=problem, findings=decided, changes=changed)
    if receipt is not None and proves_reviewer(receipt):
        return DecisionInfo(via=receipt.via, reviewer=form.reviewer, reviewer_verified=True,
                            verified_user=receipt.verified_user, **common)
    if receipt is not None:  # the path is proven, the name is not: recorded as stated, with the login that ran it
        return DecisionInfo(via=receipt.via, reviewer=stated_to_cli(form.reviewer, receipt.verified_user),
                            reviewer_verified=False, verified_user=receipt.verified_user, **common)
    return DecisionInfo(via="ui", reviewer=unverified_reviewer(form.reviewer), reviewer_verified=False, **common)
