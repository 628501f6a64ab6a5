"""How a batch's contracts get reviewed, and the loop that keeps at most ``max_in_flight`` open.

Dispatchers (no ``import flows``: each is handed what it runs):

``TaskDispatcher(review=...)``
    Calls ``review(path)`` in the calling flow run, so a contract's steps are tasks of that run: no flow
    run and no process per contract (the batch's default path).  ``review`` is e.g.
    ``partial(review_contract, playbook=..., ask_person=False)``.
``DeploymentDispatcher(deployment=...)``
    Creates runs of a deployment (``run_deployment(..., timeout=0)``) and polls them: how the batch
    sends a contract that needs a person to its own contract-review run, which suspends at the gate.

``run_batch`` starts candidates keeping at most ``max_in_flight`` open; a contract that finishes, fails,
or reaches a human gate (Suspended/Paused: "waiting", not a failure) frees its slot.  One contract
failing, or failing to start, never stops the batch.

Error codes (runbook: docs/runbook.md): ``CG-BATCH-SUBMIT``, ``CG-BATCH-NO-DEPLOYMENT``,
``CG-BATCH-TIMEOUT``; run outcomes use the ``CG-RUN-*`` codes of :mod:`clausegate.runs.states`.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run
from prefect.states import State
from pydantic import BaseModel

import clausegate.security.at_rest  # noqa: F401 - registers the serializer that seals review results
from clausegate.batch.plan import Candidate, ContractOutcome, read_report
from clausegate.batch.review_events import emit_review_event
from clausegate.batch.sources import BatchError
from clausegate.runs.states import RUN_CANCELLED, RUN_CRASHED, RUN_FAILED, error_code_from_message, settled_runs
from clausegate.runs.tags import CLAUSEGATE, batch_tag, contract_tag, playbook_tag
from clausegate.runs.timing import collect_step_times

SUBMIT_FAILED = "CG-BATCH-SUBMIT"
NO_DEPLOYMENT = "CG-BATCH-NO-DEPLOYMENT"
BATCH_TIMEOUT = "CG-BATCH-TIMEOUT"
DEFAULT_DEPLOYMENT = "contract-review/contract-review"

ProgressFn = Callable[[str, Candidate | None, ContractOutcome | None], None]


def outcome_from_state(candidate: Candidate, *, state_type: str, state_name: str, message: str | None,
                       review: dict[str, Any] | None, seconds: float | None = None, **extra: Any) -> ContractOutcome:
    """A summary row from a review's final (or waiting) state and the review it wrote, if any."""
    base = dict(file=candidate.filename, contract_id=candidate.contract_id[:12], seconds=seconds, **extra)
    if review:
        base.update(review_status=str(review.get("status", "")),
                    clauses=len(review.get("clauses") or []),
                    cost_eur=float((review.get("cost") or {}).get("eur", 0.0)))
    if state_type == "PAUSED":  # Suspended (run released its worker) or Paused: a person must decide
        return ContractOutcome(status="waiting", gates_waiting=1, detail=f"{state_name}: waiting at a human gate",
                               **base)
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


class Dispatcher(Protocol):
    def start(self, candidate: Candidate) -> Any: ...

    def poll(self, tokens: list[Any], timeout: float) -> dict[Any, ContractOutcome]: ...

    def close(self) -> None: ...


@dataclass
class TaskDispatcher:
    """Reviews each contract with ``review(path)`` inside the calling flow run (its steps are tasks of
    that run).  ``review`` returns the review, or a Failed state (a step stopped it).  One at a time runs
    in the calling thread (Prefect task timeouts only interrupt there); ``threads`` > 1 runs that many in
    threads, each in a copy of the caller's context (Prefect settings live in context variables).
    Each finished review emits one ``clausegate.review.*`` event (:mod:`clausegate.batch.review_events`:
    what the failure-rate alert counts); ``playbook`` is the playbook name it carries."""

    review: Callable[[str], Any]
    threads: int = 1
    worker: str = "in-process"
    playbook: str = ""
    _pool: ThreadPoolExecutor | None = None
    _candidates: dict[Future, Candidate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.threads > 1:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="clausegate-batch")

    def _run(self, candidate: Candidate) -> ContractOutcome:
        started = time.monotonic()
        with collect_step_times() as steps:
            result = self.review(candidate.path)
        state_type, message, review = "COMPLETED", "", result
        if isinstance(result, State):
            state_type, message, review = result.type.value, result.message or "", result.data
        data = review.model_dump(mode="json") if isinstance(review, BaseModel) else None
        return outcome_from_state(candidate, state_type=state_type, state_name=state_type.title(), message=message,
                                  review=data, seconds=round(time.monotonic() - started, 2),
                                  flow_run_id=str(flow_run.id or ""), worker=self.worker,
                                  step_seconds={k: round(v, 3) for k, v in steps.items()})

    def start(self, candidate: Candidate) -> Future:
        future: Future = Future()
        if self._pool is not None:
            future = self._pool.submit(contextvars.copy_context().run, self._run, candidate)
        self._candidates[future] = candidate
        return future

    def poll(self, tokens: list[Future], timeout: float) -> dict[Future, ContractOutcome]:
        if self._pool is None:  # in the calling thread: run the oldest started contract now
            future = tokens[0]
            try:
                future.set_result(self._run(self._candidates[future]))
            except Exception as exc:  # carried by the future, as a pool thread would
                future.set_exception(exc)
        done, _ = wait(tokens, timeout=timeout, return_when=FIRST_COMPLETED)
        results: dict[Future, ContractOutcome] = {}
        for future in done:
            candidate = self._candidates.pop(future)
            try:
                results[future] = future.result()
            except Exception as exc:  # one contract never stops the batch
                results[future] = ContractOutcome(file=candidate.filename, contract_id=candidate.contract_id[:12],
                                                  status="failed", error_code=getattr(exc, "code", RUN_FAILED),
                                                  detail=str(exc)[:300])
            emit_review_event(results[future], contract_id=candidate.contract_id, playbook=self.playbook)
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class DeploymentDispatcher:
    """Creates runs of ``deployment`` (parameters ``source``, ``playbook``, ``out_dir``, ``extractor``) and
    polls them.  Runs are top-level, never subflows (Prefect refuses to suspend a subflow), tagged
    ``clausegate``, ``batch``, ``contract:…``, ``playbook:…`` and ``batch:<batch_id>``; the idempotency key
    (batch id + contract id) makes a retried batch reuse the runs it already created."""

    deployment: str
    playbook: str
    playbook_name: str
    out_dir: str
    extractor: str | None = None
    work_queue: str | None = None
    batch_id: str = ""
    _candidates: dict[Any, Candidate] = field(default_factory=dict)
    _started: dict[Any, float] = field(default_factory=dict)

    def check_deployment(self) -> Any:
        with get_client(sync_client=True) as client:
            try:
                return client.read_deployment_by_name(self.deployment)
            except ObjectNotFound:
                raise BatchError(f"deployment {self.deployment!r} does not exist on {client.api_url}.",
                                 hint="run `clausegate up` (or `prefect deploy --all --no-prompt`) first",
                                 code=NO_DEPLOYMENT) from None

    def start(self, candidate: Candidate) -> Any:
        parameters: dict[str, Any] = {"source": candidate.path, "playbook": self.playbook, "out_dir": self.out_dir}
        if self.extractor:
            parameters["extractor"] = self.extractor
        run = run_deployment(
            self.deployment, parameters=parameters, timeout=0, work_queue_name=self.work_queue, as_subflow=False,
            tags=[CLAUSEGATE, "batch", contract_tag(candidate.contract_id), playbook_tag(self.playbook_name),
                  *([batch_tag(self.batch_id)] if self.batch_id else [])],
            idempotency_key=f"{self.batch_id}:{candidate.contract_id}:{self.playbook}" if self.batch_id else None,
        )
        self._candidates[run.id] = candidate
        self._started[run.id] = time.monotonic()
        return run.id

    def poll(self, tokens: list[Any], timeout: float) -> dict[Any, ContractOutcome]:
        results: dict[Any, ContractOutcome] = {}
        for run_id, run in settled_runs(tokens, paused_counts=True).items():
            state = run.state
            candidate = self._candidates.pop(run_id)
            started = self._started.pop(run_id, None)
            review = read_report(self.out_dir, candidate.contract_id, self.playbook_name)
            if review is None and state.is_completed():
                review = _result_of(state)
            results[run_id] = outcome_from_state(
                candidate, state_type=state.type.value, state_name=state.name, message=state.message, review=review,
                seconds=round(time.monotonic() - started, 2) if started else None,
                flow_run_id=str(run_id), flow_run_name=run.name,
                worker=str((run.labels or {}).get("prefect.worker.name", "")),
            )
        if not results and timeout > 0:
            time.sleep(timeout)
        return results

    def close(self) -> None:
        pass


def _result_of(state: State) -> dict[str, Any] | None:
    try:
        data = state.result(raise_on_failure=False)
    except Exception:  # results may live on another machine's disk
        return None
    return data.model_dump(mode="json") if isinstance(data, BaseModel) else None


def run_batch(
    candidates: list[Candidate],
    dispatcher: Dispatcher,
    *,
    max_in_flight: int = 4,
    poll_seconds: float = 2.0,
    timeout_seconds: float | None = None,
    on_progress: ProgressFn | None = None,
    claim: Callable[[Candidate], bool] | None = None,
) -> list[ContractOutcome]:
    """Start ``candidates`` keeping at most ``max_in_flight`` unfinished; return one row each.  ``claim``: start
    only the candidates it returns True for (the others are another run's: no row; clausegate/batch/claims.py)."""
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
                if claim is not None and not claim(candidate):
                    continue
                try:
                    token = dispatcher.start(candidate)
                except Exception as exc:  # a contract that cannot be started is one row
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
            except Exception as exc:  # e.g. the API blinked: try again next round
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
