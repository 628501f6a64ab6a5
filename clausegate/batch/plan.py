"""What a batch reviews: one :class:`Candidate` per new contract, one :class:`ContractOutcome` row per file.

``plan_batch`` fingerprints every file (sha256 = contract id) and decides per contract: review it, or
skip it because a report with that content hash + playbook already exists in ``out_dir`` (status not
failed), because a contract-review run for it is still in flight (scheduled, running, waiting at a gate:
``in_flight_reviews``), or because the same bytes appear twice in this batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import StateType
from pydantic import BaseModel, Field

from clausegate.errors import ClauseGateError
from clausegate.review.document.sandbox import fingerprint
from clausegate.runs.tags import playbook_tag, read_tag

REVIEW_FLOW_NAME = "contract-review"
# Review statuses that count as "already reviewed".  A failed review is tried again next time (unless
# retry_failed is off); so is ``pending_decision``: a review whose gate could not ask a person (no
# contract-review deployment to send it to); the next batch sends it again.
DONE_STATUSES = frozenset({"complete", "needs_legal", "changes_requested"})

RowStatus = Literal["reviewed", "failed", "waiting", "skipped", "in-flight", "duplicate", "not-submitted", "unfinished"]


class Candidate(BaseModel):
    path: str
    filename: str
    contract_id: str
    size_bytes: int = 0


class ContractOutcome(BaseModel):
    """One row of the batch summary."""

    file: str
    contract_id: str = ""
    status: RowStatus
    review_status: str = ""
    clauses: int | None = None
    gates_waiting: int = 0
    cost_eur: float = 0.0
    error_code: str = ""
    detail: str = ""
    flow_run_id: str = ""
    flow_run_name: str = ""
    worker: str = ""
    seconds: float | None = None
    # Where a review's time went (step -> seconds; reviews as tasks of a batch run: clausegate/runs/timing.py).
    step_seconds: dict[str, float] = Field(default_factory=dict)


def reviewed_index(out_dir: str | Path, playbook: str) -> dict[str, str]:
    """contract_id -> review status of every report of ``playbook`` in ``out_dir`` (not recursive)."""
    index: dict[str, str] = {}
    folder = Path(out_dir)
    if not folder.is_dir():
        return index
    for path in folder.glob(f"*-{playbook}.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("playbook") == playbook and "contract_id" in data:
            index[data["contract_id"]] = str(data.get("status", ""))
    return index


def read_report(out_dir: str | Path, contract_id: str, playbook: str) -> dict[str, Any] | None:
    """The JSON report a review wrote for this contract + playbook (by name), if any."""
    for path in Path(out_dir).glob(f"*-{contract_id[:12]}-{playbook}.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("contract_id") == contract_id:
            return data
    return None


def plan_batch(
    files: Iterable[Path],
    *,
    playbook: str,
    out_dir: str | Path,
    max_file_mb: float = 50,
    retry_failed: bool = True,
    in_flight: dict[str, Any] | None = None,
    limit: int | None = None,
) -> tuple[list[Candidate], list[ContractOutcome]]:
    """Split ``files`` into contracts to review and rows already decided (skipped, duplicate,
    in flight, unreadable).  ``playbook`` is the playbook's name; ``in_flight`` maps
    contract_id[:16] -> a description of the run (e.g. its state name) for runs not yet final."""
    done = reviewed_index(out_dir, playbook)
    in_flight = in_flight or {}
    todo: list[Candidate] = []
    rows: list[ContractOutcome] = []
    seen: dict[str, str] = {}
    for path in files:
        path = Path(path)
        try:
            src = fingerprint(path, max_bytes=int(max_file_mb * 1024 * 1024))
        except ClauseGateError as error:
            rows.append(ContractOutcome(file=path.name, status="not-submitted", error_code=error.code,
                                        detail=str(error)))
            continue
        cid = src.contract_id
        if cid in seen:
            rows.append(ContractOutcome(file=src.filename, contract_id=cid[:12], status="duplicate",
                                        detail=f"same bytes as {seen[cid]}"))
            continue
        seen[cid] = src.filename
        status = done.get(cid)
        if status is not None and (status in DONE_STATUSES or (not retry_failed and status != "pending_decision")):
            rows.append(ContractOutcome(file=src.filename, contract_id=cid[:12], status="skipped",
                                        review_status=status, detail="already reviewed (same content hash)"))
            continue
        if cid[:16] in in_flight:
            state = str(in_flight[cid[:16]])
            rows.append(ContractOutcome(file=src.filename, contract_id=cid[:12], status="in-flight",
                                        gates_waiting=1 if state in ("Suspended", "Paused") else 0,
                                        detail=f"a run for it is already {state}"))
            continue
        if limit is not None and len(todo) >= limit:
            continue
        todo.append(Candidate(path=src.path, filename=src.filename, contract_id=cid, size_bytes=src.size_bytes))
    return todo, rows


def in_flight_reviews(playbook: str, flow_name: str = REVIEW_FLOW_NAME) -> dict[str, str]:
    """contract_id[:16] -> state name of contract-review runs of ``playbook`` (by name) not yet final
    (batch gate runs and inbox submissions alike: both carry the same tags)."""
    waiting = [StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED, StateType.CANCELLING]
    found: dict[str, str] = {}
    with get_client(sync_client=True) as client:
        offset = 0
        while True:
            runs = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=waiting)),
                                              tags=FlowRunFilterTags(all_=[playbook_tag(playbook)])),
                limit=200, offset=offset)
            for run in runs:
                contract = read_tag(run.tags, "contract")
                if contract:
                    found[contract] = run.state_name or ""
            if len(runs) < 200:
                return found
            offset += 200
