"""Batch review logic (no flow here): find new contracts, skip reviewed ones, fan out, summarise.

Used by the ``nightly-batch`` flow (fan-out as ``contract-review`` deployment runs that any
worker may pick up) and by ``clausegate batch DIR`` (the same, or plain in-process flow calls
when no deployment/worker is available).

Pieces
------
``load_source(spec)``
    Pluggable contract source: a folder path (default, ``*.pdf`` recursively),
    ``python:package.module:factory`` returning any object with ``name`` and ``discover()``
    (an iterable of local file paths), or ``list:MANIFEST`` (one path per line; used for chunks).
``plan_batch(...)``
    Fingerprints every file (sha256 = contract id) and decides per contract: review it, or skip it
    because a report with that content hash + playbook already exists in ``out_dir`` (status not
    failed), because a run for it is still in flight (scheduled, running, waiting at a gate), or
    because the same bytes appear twice in this batch.
``run_batch(...)``
    Keeps at most ``max_in_flight`` contracts submitted at once; a run that finishes, fails, or
    reaches a human gate (Suspended/Paused: "gate waiting", not a failure) frees its slot.  One
    contract failing, or failing to submit, never stops the batch.
``BatchSummary``
    Per-contract rows (status, clauses found, gates waiting, cost, error code) and totals;
    ``write_summary`` writes CSV + JSON, ``summary_markdown`` renders the artifact text.

Error codes owned here (runbook: docs/runbook.md): ``CG-BATCH-SOURCE``, ``CG-BATCH-SUBMIT``,
``CG-BATCH-NO-DEPLOYMENT``, ``CG-BATCH-TIMEOUT``, ``CG-RUN-CRASHED``, ``CG-RUN-CANCELLED``,
``CG-RUN-FAILED`` (a failed run whose message names no code).
"""

from __future__ import annotations

import contextvars
import csv
import importlib
import json
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

import clausegate.security.at_rest  # noqa: F401 - registers the encrypted result serializer (reviews are sealed run results)
from clausegate.errors import ClauseGateError
from clausegate.review.money import eur_digits, eur_text

SOURCE_ERROR = "CG-BATCH-SOURCE"
SUBMIT_FAILED = "CG-BATCH-SUBMIT"
NO_DEPLOYMENT = "CG-BATCH-NO-DEPLOYMENT"
BATCH_TIMEOUT = "CG-BATCH-TIMEOUT"
RUN_CRASHED = "CG-RUN-CRASHED"
RUN_CANCELLED = "CG-RUN-CANCELLED"
RUN_FAILED = "CG-RUN-FAILED"

DEFAULT_DEPLOYMENT = "contract-review/contract-review"
REVIEW_FLOW_NAME = "contract-review"
# Review statuses that count as "already reviewed".  A failed review is tried again next time (unless
# retry_failed is off); so is ``pending_decision`` — a review run without a deployment (CLI, inline
# batch) that could not ask its gate; as a deployment run it suspends and asks.
DONE_STATUSES = frozenset({"complete", "needs_legal", "changes_requested"})
_CODE = re.compile(r"\bCG-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")

RowStatus = Literal["reviewed", "failed", "waiting", "skipped", "in-flight", "duplicate", "not-submitted", "unfinished"]


class BatchError(ClauseGateError):
    code = SOURCE_ERROR


# ------------------------------------------------------------------------------------ sources
class ContractSource(Protocol):
    """Anything that lists contract files.  ``discover`` returns local paths (a worker on another
    machine must see the same path: use a shared folder, or a source that downloads to one)."""

    name: str

    def discover(self) -> Iterable[Path]: ...


@dataclass
class FolderSource:
    """Every PDF under ``folder`` (recursively, sorted, hidden files and folders skipped)."""

    folder: Path
    patterns: tuple[str, ...] = ("*.pdf", "*.PDF")
    recursive: bool = True

    @property
    def name(self) -> str:
        return f"folder:{self.folder}"

    def discover(self) -> list[Path]:
        folder = Path(self.folder).expanduser()
        if not folder.is_dir():
            raise BatchError(f"contract source folder {folder} does not exist or is not a folder.",
                             hint="create it, or pass another folder as the batch's `source` parameter")
        found: set[Path] = set()
        for pattern in self.patterns:
            matches = folder.rglob(pattern) if self.recursive else folder.glob(pattern)
            found.update(p for p in matches if p.is_file()
                         and not any(part.startswith(".") for part in p.relative_to(folder).parts))
        return sorted(found)


@dataclass
class ListSource:
    """The files named in a manifest (one path per line): how a batch hands a chunk to another run."""

    manifest: Path

    @property
    def name(self) -> str:
        return f"list:{self.manifest}"

    def discover(self) -> list[Path]:
        try:
            lines = Path(self.manifest).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise BatchError(f"cannot read the contract list {self.manifest}: {exc.strerror or exc}",
                             hint="the manifest must be on storage every worker can read") from None
        return [Path(line) for line in lines if line.strip()]


def write_manifest(folder: str | Path, name: str, candidates: list["Candidate"]) -> Path:
    path = Path(folder) / f"{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{c.path}\n" for c in candidates), encoding="utf-8")
    return path


def load_source(spec: str | Path, base_dir: Path | None = None) -> ContractSource:
    """``folder`` / ``folder:PATH`` -> :class:`FolderSource`; ``python:module:attr`` -> ``attr()``
    (or ``attr`` itself when it already has ``discover``).  Relative folders are read from
    ``base_dir`` (default: the current directory)."""
    text = str(spec)
    if text.startswith("python:"):
        target = text[len("python:"):]
        module_name, _, attr = target.partition(":")
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise BatchError(f"cannot load contract source {text!r}: {exc}",
                             hint="use 'python:package.module:factory' with an importable factory") from None
        source = obj() if isinstance(obj, type) or not hasattr(obj, "discover") else obj
        if not hasattr(source, "discover"):
            raise BatchError(f"contract source {text!r} has no discover() method.",
                             hint="return an object with `name` and `discover() -> paths`")
        return source
    if text.startswith("list:"):
        return ListSource(Path(text[len("list:"):]))
    if text.startswith("folder:"):
        text = text[len("folder:"):]
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return FolderSource(path)


# ------------------------------------------------------------------------------------ rows
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


class BatchTotals(BaseModel):
    contracts: int = 0
    submitted: int = 0
    reviewed: int = 0
    failed: int = 0
    waiting: int = 0
    skipped: int = 0
    unfinished: int = 0
    clauses: int = 0
    gates_waiting: int = 0
    cost_eur: float = 0.0
    wall_seconds: float = 0.0
    contracts_per_minute: float = 0.0


class BatchSummary(BaseModel):
    source: str
    playbook: str
    mode: Literal["deployments", "local"]
    started_at: datetime
    finished_at: datetime | None = None
    rows: list[ContractOutcome] = Field(default_factory=list)

    @property
    def totals(self) -> BatchTotals:
        rows = self.rows
        by = {s: sum(1 for r in rows if r.status == s) for s in ("reviewed", "failed", "waiting", "unfinished")}
        finished = by["reviewed"] + by["failed"] + by["waiting"]
        wall = ((self.finished_at or datetime.now(timezone.utc)) - self.started_at).total_seconds()
        return BatchTotals(
            contracts=len(rows),
            submitted=finished + by["unfinished"],
            reviewed=by["reviewed"],
            failed=by["failed"] + sum(1 for r in rows if r.status == "not-submitted"),
            waiting=by["waiting"],
            skipped=sum(1 for r in rows if r.status in ("skipped", "in-flight", "duplicate")),
            unfinished=by["unfinished"],
            clauses=sum(r.clauses or 0 for r in rows if r.status in ("reviewed", "failed", "waiting")),
            gates_waiting=sum(r.gates_waiting for r in rows),
            cost_eur=round(sum(r.cost_eur for r in rows if r.status in ("reviewed", "failed", "waiting")), 6),
            wall_seconds=round(wall, 2),
            contracts_per_minute=round(finished / (wall / 60), 2) if wall > 0 and finished else 0.0,
        )

    def as_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "totals": self.totals.model_dump(mode="json")}


# ------------------------------------------------------------------------------------ planning
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
    """The JSON report a contract-review run wrote for this contract + playbook, if any."""
    for path in Path(out_dir).glob(f"*-{contract_id[:12]}-{playbook}.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("contract_id") == contract_id:
            return data
    return None


def contract_tag(contract_id: str) -> str:
    return f"contract:{contract_id[:16]}"


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
    in flight, unreadable).  ``in_flight`` maps contract_id[:16] -> a description of the run
    (e.g. its state name) for runs of this playbook not yet final."""
    from clausegate.review.document.sandbox import fingerprint

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
            rows.append(ContractOutcome(file=path.name, status="not-submitted", error_code=error.code, detail=str(error)))
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


# ------------------------------------------------------------------------------------ outcomes
def error_code_from_message(message: str | None, default: str = RUN_FAILED) -> str:
    match = _CODE.search(message or "")
    return match.group(0) if match else default


def outcome_from_state(candidate: Candidate, *, state_type: str, state_name: str, message: str | None,
                       review: dict[str, Any] | None, seconds: float | None = None, **extra: Any) -> ContractOutcome:
    """A summary row from a run's final (or waiting) state and the review it wrote, if any."""
    base = dict(file=candidate.filename, contract_id=candidate.contract_id[:12], seconds=seconds, **extra)
    if review:
        base.update(review_status=str(review.get("status", "")),
                    clauses=len(review.get("clauses") or []),
                    cost_eur=float((review.get("cost") or {}).get("eur", 0.0)))
    if state_type == "PAUSED":  # Suspended (run released its worker) or Paused: a person must decide
        return ContractOutcome(status="waiting", gates_waiting=1, detail=f"{state_name}: waiting at a human gate", **base)
    if state_type == "COMPLETED":
        gates = 0
        if review and review.get("status") == "pending_decision":
            gates = len(review.get("gated_categories") or [])
        return ContractOutcome(status="reviewed", gates_waiting=gates, **base)
    if state_type == "CRASHED":
        return ContractOutcome(status="failed", error_code=RUN_CRASHED, detail=(message or "")[:300], **base)
    if state_type == "CANCELLED":
        return ContractOutcome(status="failed", error_code=RUN_CANCELLED, detail=(message or "")[:300], **base)
    code = ((review or {}).get("failure") or {}).get("code") or error_code_from_message(message)
    return ContractOutcome(status="failed", error_code=code, detail=(message or "")[:300], **base)


# ------------------------------------------------------------------------------------ dispatchers
class Dispatcher(Protocol):
    mode: str

    def start(self, candidate: Candidate) -> Any: ...

    def poll(self, tokens: list[Any], timeout: float) -> dict[Any, ContractOutcome]: ...

    def close(self) -> None: ...


@dataclass
class LocalDispatcher:
    """In-process reviews (no deployment, no worker needed): each contract as a contract-review
    subflow, or (``as_tasks``) as the review steps run as tasks of the calling flow run, which
    skips the subflow's synchronous API writes (the batch chunk runs' fast path; gates deferred)."""

    playbook: str
    out_dir: str
    extractor: str | None = None
    workers: int = 1
    mode: str = "local"
    as_tasks: bool = False
    _pool: ThreadPoolExecutor | None = None
    _candidates: dict[Future, Candidate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # One at a time runs in the calling thread (Prefect task timeouts only interrupt there);
        # more run in threads, each in a copy of the caller's context.
        if self.workers > 1:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clausegate-batch")

    def _run(self, candidate: Candidate) -> ContractOutcome:
        if self.as_tasks:
            return self._run_as_tasks(candidate)
        from flows.contract_review import contract_review

        started = time.monotonic()
        state = contract_review(candidate.path, playbook=self.playbook, extractor=self.extractor,
                                out_dir=self.out_dir, return_state=True)
        review = None
        try:
            data = state.result(raise_on_failure=False)
            if isinstance(data, BaseModel):
                review = data.model_dump(mode="json")
        except Exception:  # noqa: BLE001 - a missing result leaves the row without counts
            review = None
        review = review or read_report(self.out_dir, candidate.contract_id, _playbook_name(self.playbook))
        return outcome_from_state(candidate, state_type=state.type.value, state_name=state.name, message=state.message,
                                  review=review, seconds=round(time.monotonic() - started, 2),
                                  flow_run_id=str(state.state_details.flow_run_id or ""), worker="in-process")

    def _run_as_tasks(self, candidate: Candidate) -> ContractOutcome:
        from prefect.runtime import flow_run
        from prefect.states import State

        from clausegate.pipeline.review import review_contract

        started = time.monotonic()
        result = review_contract(candidate.path, self.playbook, self.extractor, self.out_dir, ask_person=False)
        state_type, message, review = "COMPLETED", "", result
        if isinstance(result, State):
            state_type, message, review = result.type.value, result.message or "", result.data
        data = review.model_dump(mode="json") if isinstance(review, BaseModel) else None
        return outcome_from_state(candidate, state_type=state_type, state_name=state_type.title(), message=message,
                                  review=data, seconds=round(time.monotonic() - started, 2),
                                  flow_run_id=str(flow_run.id or ""), worker="in-process")

    def start(self, candidate: Candidate) -> Future:
        future: Future = Future()
        if self._pool is not None:
            # Run in a copy of this context: Prefect settings (e.g. the API URL) live in context variables.
            future = self._pool.submit(contextvars.copy_context().run, self._run, candidate)
        self._candidates[future] = candidate
        return future

    def poll(self, tokens: list[Future], timeout: float) -> dict[Future, ContractOutcome]:
        if self._pool is None:  # inline: run the oldest submitted contract now
            future = tokens[0]
            try:
                future.set_result(self._run(self._candidates[future]))
            except Exception as exc:  # noqa: BLE001
                future.set_exception(exc)
        done, _ = wait(tokens, timeout=timeout, return_when=FIRST_COMPLETED)
        results: dict[Future, ContractOutcome] = {}
        for future in done:
            candidate = self._candidates.pop(future)
            try:
                results[future] = future.result()
            except Exception as exc:  # noqa: BLE001 - one contract never stops the batch
                code = getattr(exc, "code", RUN_FAILED)
                results[future] = ContractOutcome(file=candidate.filename, contract_id=candidate.contract_id[:12],
                                                  status="failed", error_code=code, detail=str(exc)[:300])
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def batch_tag(batch_id: str) -> str:
    """Tag of every contract-review run a batch started (the batch's flow-run id)."""
    return f"batch:{batch_id}"


@dataclass
class DeploymentDispatcher:
    """Creates contract-review deployment runs (``run_deployment(..., timeout=0)``) and polls them.

    Runs are tagged ``clausegate``, ``batch``, ``contract:<sha256[:16]>`` and
    ``playbook:<name>``; the idempotency key (batch id + contract id) makes a retried batch
    reuse the runs it already created instead of reviewing a contract twice."""

    playbook: str
    out_dir: str
    extractor: str | None = None
    deployment: str = DEFAULT_DEPLOYMENT
    work_queue: str | None = None
    batch_id: str = ""
    # Top-level runs, never subflows: Prefect refuses to suspend a subflow, and a review that cannot
    # suspend at its gate fails (CG-GATE-CANNOT-SUSPEND). The batch finds its runs by the batch tag.
    as_subflow: bool = False
    mode: str = "deployments"
    _candidates: dict[Any, Candidate] = field(default_factory=dict)
    _started: dict[Any, float] = field(default_factory=dict)

    def check_deployment(self) -> Any:
        from prefect.client.orchestration import get_client
        from prefect.exceptions import ObjectNotFound

        with get_client(sync_client=True) as client:
            try:
                return client.read_deployment_by_name(self.deployment)
            except ObjectNotFound:
                raise BatchError(f"deployment {self.deployment!r} does not exist on {client.api_url}.",
                                 hint="run `clausegate up` (or `prefect deploy --all --no-prompt`) first, "
                                      "or use `clausegate batch --local`", code=NO_DEPLOYMENT) from None

    def start(self, candidate: Candidate) -> Any:
        from prefect.deployments import run_deployment

        parameters: dict[str, Any] = {"source": candidate.path, "playbook": self.playbook, "out_dir": self.out_dir}
        if self.extractor:
            parameters["extractor"] = self.extractor
        run = run_deployment(
            self.deployment, parameters=parameters, timeout=0, work_queue_name=self.work_queue,
            tags=["clausegate", "batch", contract_tag(candidate.contract_id), f"playbook:{_playbook_name(self.playbook)}",
                  *([batch_tag(self.batch_id)] if self.batch_id else [])],
            idempotency_key=f"{self.batch_id}:{candidate.contract_id}:{self.playbook}" if self.batch_id else None,
            as_subflow=self.as_subflow,
        )
        self._candidates[run.id] = candidate
        self._started[run.id] = time.monotonic()
        return run.id

    def poll(self, tokens: list[Any], timeout: float) -> dict[Any, ContractOutcome]:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(tokens))),
                                         limit=len(tokens))
        results: dict[Any, ContractOutcome] = {}
        for run in runs:
            state = run.state
            if state is None or not (state.is_final() or state.is_paused()):
                continue
            candidate = self._candidates.pop(run.id)
            started = self._started.pop(run.id, None)
            review = read_report(self.out_dir, candidate.contract_id, _playbook_name(self.playbook))
            if review is None and state.is_completed():
                review = _result_of(state)
            results[run.id] = outcome_from_state(
                candidate, state_type=state.type.value, state_name=state.name, message=state.message, review=review,
                seconds=round(time.monotonic() - started, 2) if started else None,
                flow_run_id=str(run.id), flow_run_name=run.name,
                worker=str((run.labels or {}).get("prefect.worker.name", "")),
            )
        if not results and timeout > 0:
            time.sleep(timeout)
        return results

    def close(self) -> None:
        pass


def _result_of(state) -> dict[str, Any] | None:
    try:
        data = state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001 - results may live on another machine's disk
        return None
    return data.model_dump(mode="json") if isinstance(data, BaseModel) else None


def _playbook_name(playbook: str) -> str:
    from clausegate.review.playbook import load_playbook

    return load_playbook(playbook).name


def in_flight_reviews(playbook: str, flow_name: str = REVIEW_FLOW_NAME) -> dict[str, str]:
    """contract_id[:16] -> state name of contract-review runs (this playbook) not yet final."""
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

    waiting = [StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED, StateType.CANCELLING]
    found: dict[str, str] = {}
    with get_client(sync_client=True) as client:
        offset = 0
        while True:
            runs = client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
                flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=waiting)),
                                              tags=FlowRunFilterTags(all_=[f"playbook:{_playbook_name(playbook)}"])),
                limit=200, offset=offset)
            for run in runs:
                for tag in run.tags:
                    if tag.startswith("contract:"):
                        found[tag.split(":", 1)[1]] = run.state_name or ""
            if len(runs) < 200:
                return found
            offset += 200


# ------------------------------------------------------------------------------------ the loop
ProgressFn = Callable[[str, Candidate | None, ContractOutcome | None], None]


def run_batch(
    candidates: list[Candidate],
    dispatcher: Dispatcher,
    *,
    max_in_flight: int = 8,
    poll_seconds: float = 2.0,
    timeout_seconds: float | None = None,
    on_progress: ProgressFn | None = None,
) -> list[ContractOutcome]:
    """Submit ``candidates`` keeping at most ``max_in_flight`` unfinished; return one row each."""
    notify = on_progress or (lambda *_: None)
    queue = list(candidates)
    queue.reverse()
    in_flight: dict[Any, Candidate] = {}
    rows: list[ContractOutcome] = []
    deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
    try:
        while queue or in_flight:
            while queue and len(in_flight) < max(1, max_in_flight):
                candidate = queue.pop()
                try:
                    token = dispatcher.start(candidate)
                except Exception as exc:  # noqa: BLE001 - a contract that cannot be submitted is one row
                    row = ContractOutcome(file=candidate.filename, contract_id=candidate.contract_id[:12],
                                          status="not-submitted", error_code=getattr(exc, "code", SUBMIT_FAILED),
                                          detail=str(exc)[:300])
                    rows.append(row)
                    notify("done", candidate, row)
                    continue
                in_flight[token] = candidate
                notify("started", candidate, None)
            if not in_flight:
                continue
            try:
                finished = dispatcher.poll(list(in_flight), poll_seconds)
            except Exception as exc:  # noqa: BLE001 - e.g. the API blinked: try again next round
                notify("poll-error", None, ContractOutcome(file="", status="unfinished", detail=str(exc)[:300]))
                time.sleep(poll_seconds)
                finished = {}
            for token, row in finished.items():
                candidate = in_flight.pop(token)
                rows.append(row)
                notify("done", candidate, row)
            if deadline and time.monotonic() > deadline:
                for token, candidate in in_flight.items():
                    row = ContractOutcome(file=candidate.filename, contract_id=candidate.contract_id[:12],
                                          status="unfinished", error_code=BATCH_TIMEOUT, flow_run_id=str(token),
                                          detail="still running when the batch's timeout ran out; it keeps running")
                    rows.append(row)
                    notify("done", candidate, row)
                for candidate in reversed(queue):
                    rows.append(ContractOutcome(file=candidate.filename, contract_id=candidate.contract_id[:12],
                                                status="unfinished", error_code=BATCH_TIMEOUT,
                                                detail="not submitted before the batch's timeout"))
                in_flight.clear()
                queue.clear()
    finally:
        dispatcher.close()
    return rows


# ------------------------------------------------------------------------------------ output
CSV_FIELDS = ["file", "contract_id", "status", "review_status", "clauses", "gates_waiting", "cost_eur",
              "error_code", "detail", "flow_run_name", "flow_run_id", "worker", "seconds"]


def write_summary(summary: BatchSummary, folder: str | Path, stem: str | None = None) -> tuple[Path, Path]:
    """``<stem>.csv`` (one row per contract, then a TOTAL row) and ``<stem>.json`` (rows + totals)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or f"batch-{summary.started_at:%Y%m%dT%H%M%S}"
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    totals = summary.totals
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in summary.rows:
            writer.writerow(row.model_dump(mode="json"))
        writer.writerow({"file": "TOTAL", "contract_id": f"{totals.contracts} contracts",
                         "status": f"{totals.reviewed} reviewed / {totals.failed} failed / {totals.waiting} waiting / "
                                   f"{totals.skipped} skipped",
                         "clauses": totals.clauses, "gates_waiting": totals.gates_waiting,
                         "cost_eur": totals.cost_eur, "seconds": totals.wall_seconds})
    json_path.write_text(json.dumps(summary.as_json(), indent=2) + "\n", encoding="utf-8")
    return csv_path, json_path


def table_rows(summary: BatchSummary) -> list[dict[str, Any]]:
    """Rows for ``create_table_artifact`` (the per-contract table; totals go in the Markdown)."""
    return [{"contract": r.file, "status": r.status + (f" ({r.review_status})" if r.review_status else ""),
             "clauses found": "" if r.clauses is None else r.clauses, "gates waiting": r.gates_waiting,
             "cost (EUR)": eur_digits(r.cost_eur), "error code": r.error_code, "worker": r.worker}
            for r in summary.rows]


def summary_markdown(summary: BatchSummary, files: Iterable[Path] = ()) -> str:
    t = summary.totals
    lines = [
        f"# Batch review: {summary.source}",
        "",
        f"- **Playbook:** {summary.playbook} · **Mode:** {summary.mode}",
        f"- **Contracts:** {t.contracts} — {t.reviewed} reviewed, {t.failed} failed, {t.waiting} waiting at a gate, "
        f"{t.skipped} skipped (already reviewed / in flight / duplicate), {t.unfinished} unfinished",
        f"- **Clauses found:** {t.clauses} · **Gates waiting:** {t.gates_waiting} · **Cost:** {eur_text(t.cost_eur)}",
        f"- **Wall time:** {t.wall_seconds:.1f} s ({t.contracts_per_minute:.1f} contracts/minute)",
    ]
    failed = [r for r in summary.rows if r.status in ("failed", "not-submitted", "unfinished")]
    if failed:
        lines += ["", "## Failed or unfinished", "", "| Contract | Code | Detail |", "|---|---|---|"]
        lines += [f"| {r.file} | `{r.error_code}` | {r.detail.replace('|', '/')[:160]} |" for r in failed]
    files = list(files)
    if files:
        lines += ["", "Summary files: " + ", ".join(f"`{f}`" for f in files)]
    return "\n".join(lines) + "\n"
