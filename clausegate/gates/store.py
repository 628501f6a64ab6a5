"""Read and write the gate's records on the flow run (Prefect flow-run inputs), with a sync client."""

from __future__ import annotations

import json
import logging
from typing import TypeVar
from uuid import UUID

import httpx
from prefect.client.schemas.objects import FlowRun
from pydantic import BaseModel, ValidationError

from clausegate.gates import receipts
from clausegate.gates.model import (
    RECORD_PREFIX,
    DecisionInfo,
    GateRecord,
    SlackRef,
    ack_key,
    assign_key,
    base_key,
    extend_key,
    receipt_key,
    record_key,
    remind_key,
    response_key,
    round_key,
    slack_key,
    stamp_key,
)

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)
MAX_ROUNDS = 200  # answer rounds of one gate (each answer is one); far above any gate's findings x roles


def _conflict(exc: Exception) -> bool:
    response = getattr(exc, "response", None)
    return response is not None and getattr(response, "status_code", None) == 409


def write_once(client, flow_run_id: UUID | str, key: str, value: BaseModel | dict) -> bool:
    """Store ``value`` under ``key`` unless the key exists (first write wins). True if written."""
    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    try:  # NaN / Infinity would be stored but never read back (Prefect decodes inputs as strict JSON): refuse here
        text = json.dumps(data, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"{key}: not stored, it holds a non-finite number ({exc})") from None
    try:
        client.create_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key=key, value=text)
    except httpx.HTTPStatusError as exc:
        if _conflict(exc):
            return False
        raise
    return True


def read_model(client, flow_run_id: UUID | str, key: str, model: type[M]) -> M | None:
    found = client.filter_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key_prefix=key, limit=5,
                                         exclude_keys=set())
    for item in found:
        if item.key == key:
            try:
                return model.model_validate(item.decoded_value)
            except (ValidationError, ValueError) as exc:  # said, not swallowed: a gate that cannot be read
                log.warning("run %s: the stored %s under %s cannot be read (%s, %d characters): %s", flow_run_id,
                            model.__name__, key, type(exc).__name__, len(item.value or ""), str(exc)[:300])
                return None
    return None


def read_record(client, flow_run_id: UUID | str, key: str) -> GateRecord | None:
    return read_model(client, flow_run_id, record_key(key), GateRecord)


def read_slack_ref(client, flow_run_id: UUID | str, key: str) -> SlackRef | None:
    return read_model(client, flow_run_id, slack_key(key), SlackRef)


def is_stamped(client, flow_run_id: UUID | str, key: str) -> bool:
    found = client.filter_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key_prefix=stamp_key(key), limit=1,
                                         exclude_keys=set())
    return any(item.key == stamp_key(key) for item in found)


def _read_value(client, flow_run_id: UUID | str, key: str):
    found = client.filter_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key_prefix=key, limit=5,
                                         exclude_keys=set())
    for item in found:
        if item.key == key:
            return item
    return None


def read_value(client, flow_run_id: UUID | str, key: str):
    """The decoded value stored under ``key`` on the run, or None."""
    item = _read_value(client, flow_run_id, key)
    try:
        return item.decoded_value if item is not None else None
    except ValueError:
        return None


def read_decision(client, flow_run_id: UUID | str, key: str) -> DecisionInfo | None:
    """The accepted answer of gate ``key`` (Prefect's response input) with the time it was stored and
    ClauseGate's attribution: ``via``/reviewer from a verified receipt, else ``ui`` and unverified
    (``clausegate.gates.receipts``). Whatever ``via`` the answer itself claims is ignored."""
    item = _read_value(client, flow_run_id, response_key(key))
    if item is None:
        return None
    try:
        value = item.decoded_value
    except ValueError:
        return None

    def lookup(nonce: str):
        found = _read_value(client, flow_run_id, receipt_key(key, nonce))
        try:
            return found.decoded_value if found is not None else None
        except ValueError:
            return None

    return receipts.attribute(value, flow_run_id=str(flow_run_id), gate=key, stored_at=item.created, lookup=lookup)


def write_receipt(client, receipt: receipts.DecisionReceipt) -> bool:
    """Store a decision receipt on its run (before the resume that names it)."""
    return write_once(client, receipt.flow_run_id, receipt_key(receipt.gate, receipt.nonce), receipt)


def delete_receipt(client, receipt: receipts.DecisionReceipt) -> None:
    """Withdraw the receipt of an answer that was not applied (best effort), so it cannot be reused."""
    try:
        client.delete_flow_run_input(flow_run_id=UUID(receipt.flow_run_id),
                                     key=receipt_key(receipt.gate, receipt.nonce))
    except Exception:  # a leftover receipt expires (receipts.MAX_AGE_SECONDS) and names one answer
        pass


def pause_key_of(flow_run: FlowRun) -> str | None:
    """The pause key the run waits at (a per-finding gate's answer round: ``<gate>-a<n>``), if any."""
    state = flow_run.state
    if state is not None and state.is_paused():
        return state.state_details.pause_key
    return None


def gate_key_of(flow_run: FlowRun) -> str | None:
    """The key of the gate the run waits at (its Suspended state's pause key, without a round suffix), if any."""
    key = pause_key_of(flow_run)
    return base_key(key) if key else None


def read_rounds(client, flow_run_id: UUID | str, key: str) -> list[DecisionInfo | None]:
    """A per-finding gate's answers in order, one per resume round (``model.round_key``), attributed."""
    out: list[DecisionInfo | None] = []
    for n in range(MAX_ROUNDS):
        rkey = round_key(key, n)
        if _read_value(client, flow_run_id, response_key(rkey)) is None:
            break
        out.append(read_decision(client, flow_run_id, rkey))
    return out


class GateExtras(BaseModel):
    """What happened at a gate besides answers: acknowledgements, reassignments, the SLA extension, reminders."""

    acks: list[dict] = []  # {"user", "reviewer", "via", "at"}, first per user
    assignments: dict[tuple[str, str], str] = {}  # (finding id, role) -> Slack user id, the latest reassignment
    assignment_log: list[dict] = []
    extension: dict | None = None  # {"hours", "by", "via", "at"}
    reminders: list[int] = []  # percentages of the SLA a reminder was sent at

    def extra_hours(self) -> float:
        return float(self.extension["hours"]) if self.extension else 0.0


def _values(client, flow_run_id, prefix: str) -> list[tuple[str, object]]:
    found = client.filter_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key_prefix=prefix, limit=200,
                                         exclude_keys=set())
    out = []
    for item in found:
        try:
            out.append((item.key, item.decoded_value))
        except ValueError:
            continue
    return out


def read_extras(client, flow_run_id: UUID | str, key: str) -> GateExtras:
    acks = [v for _, v in _values(client, flow_run_id, ack_key(key, "")) if isinstance(v, dict)]
    log = sorted((v for _, v in _values(client, flow_run_id, assign_key(key, "", "", 0)[:-len("--0")])
                  if isinstance(v, dict)), key=lambda v: (v.get("at", ""), v.get("n", 0)))
    assignments = {(v["finding"], v["role"]): v["to"] for v in log if {"finding", "role", "to"} <= v.keys()}
    ext = [v for k, v in _values(client, flow_run_id, extend_key(key)) if k == extend_key(key)]
    reminders = sorted(int(v.get("percent", 0)) for _, v in _values(client, flow_run_id, remind_key(key, 0)[:-1])
                       if isinstance(v, dict))
    return GateExtras(acks=sorted(acks, key=lambda v: v.get("at", "")), assignments=assignments, assignment_log=log,
                      extension=ext[0] if ext and isinstance(ext[0], dict) else None, reminders=reminders)


def current_record(client, flow_run: FlowRun) -> GateRecord | None:
    """The gate the run waits at, or (not waiting) its latest gate."""
    key = gate_key_of(flow_run)
    if key is not None:
        return read_record(client, flow_run.id, key)
    records = all_records(client, flow_run.id)
    return max(records, key=lambda r: r.opened_at) if records else None


def all_records(client, flow_run_id: UUID | str) -> list[GateRecord]:
    """Every gate the run opened (one per attempt that reached a gate), oldest first; unreadable ones left out."""
    found = client.filter_flow_run_input(flow_run_id=UUID(str(flow_run_id)), key_prefix=f"{RECORD_PREFIX}gate-",
                                         limit=50, exclude_keys=set())
    records = []
    for item in found:
        try:
            records.append(GateRecord.model_validate(item.decoded_value))
        except (ValidationError, ValueError):
            continue
    return records
