"""The batch job: review every new contract from a source, inside the calling flow run.

One job for the ``nightly-batch`` flow (flows/nightly_batch.py) and ``clausegate batch DIR``:

1. discover the contracts and skip those already reviewed (same content hash + playbook), in flight, or
   duplicated (:mod:`clausegate.batch.plan`);
2. review the rest as *tasks of this run* (``review_contract(..., ask_person=False)``: no flow run and no
   process per contract), ``max_in_flight`` at a time.  When this run is a deployment run and it has more
   contracts than it takes at once, it starts up to ``max_parallel_runs - 1`` chunk runs of its own
   deployment (any worker picks them up) over the same list: each run reviews the contracts it claims first
   (:mod:`clausegate.batch.claims`), so no run sits idle waiting for another's fixed share; then it collects
   their rows;
3. a contract whose review ends ``pending_decision`` (a person must decide) is sent as its own run of
   ``deployment`` (contract-review), which suspends at the gate with every finished step from the cache.
   Without a deployment it stays ``pending_decision`` (notice ``CG-GATE-DEFERRED``) and the next batch
   sends it again;
4. summary: ``<out_dir>/batches/batch-*.csv|json`` and the run's table + Markdown artifacts.
"""

from __future__ import annotations

import math
import shutil
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.runtime import deployment as this_deployment
from prefect.runtime import flow_run
from prefect.states import Failed, State

from clausegate.batch.claims import CLAIMS_LINE, Claims, claims_of_manifest
from clausegate.batch.dispatch import BATCH_TIMEOUT, DEFAULT_DEPLOYMENT, DeploymentDispatcher, TaskDispatcher, run_batch
from clausegate.batch.plan import Candidate, ContractOutcome, in_flight_reviews, plan_batch
from clausegate.batch.sources import load_source, write_manifest
from clausegate.batch.summary import BatchSummary, read_rows, summary_markdown, summary_stem, table_rows, write_summary
from clausegate.errors import ClauseGateError
from clausegate.pipeline.review import review_contract
from clausegate.review.playbook import load_playbook
from clausegate.runs.states import RUN_CRASHED, wait_for_runs
from clausegate.runs.tags import CLAUSEGATE


@task(name="discover-contracts", cache_policy=NO_CACHE)
def discover(source: str, playbook_name: str, out_dir: str, retry_failed: bool, limit: int | None,
             max_file_mb: float) -> tuple[list[Candidate], list[ContractOutcome]]:
    files = load_source(source).discover()
    return plan_batch(files, playbook=playbook_name, out_dir=out_dir, max_file_mb=max_file_mb,
                      retry_failed=retry_failed, in_flight=in_flight_reviews(playbook_name), limit=limit)


@task(name="publish-batch-summary", cache_policy=NO_CACHE)
def publish(summary: BatchSummary, out_dir: str) -> list[str]:
    stem = summary_stem(summary, str(flow_run.id or ""))
    csv_path, json_path = write_summary(summary, Path(out_dir) / "batches", stem)
    create_table_artifact(key="nightly-batch-contracts", table=table_rows(summary),
                          description=f"Nightly batch: one row per contract ({summary.source})")
    markdown = summary_markdown(summary, [csv_path, json_path], reports=out_dir)
    create_markdown_artifact(key="nightly-batch-summary", markdown=markdown, description="Nightly batch totals")
    return [str(csv_path), str(json_path)]


def run_count(contracts: int, max_in_flight: int, max_parallel_runs: int) -> int:
    """How many runs review ``contracts``: this one alone while it takes them all at once, else up to
    ``max_parallel_runs`` (this one and chunk runs), each with at least ``max_in_flight`` contracts."""
    if max_parallel_runs <= 1 or contracts <= max_in_flight:
        return 1
    return min(max_parallel_runs, math.ceil(contracts / max(1, max_in_flight)))


# The one definition of the nightly-batch flow's options (flows/nightly_batch.py, `clausegate batch`).
BATCH_FLOW_OPTIONS = {"name": "nightly-batch", "validate_parameters": True}
# A log record's extra for `clausegate batch`'s progress bar: "more" (PROGRESS_COUNT contracts to go) or "done"
PROGRESS_EXTRA, PROGRESS_COUNT = "clausegate_batch_progress", "clausegate_batch_count"


def review_batch(
    source: str,
    playbook: str = "default",
    out_dir: str = "reports",
    *,
    extractor: str | None = None,
    work_queue: str | None = "low",
    max_in_flight: int = 4,
    max_parallel_runs: int = 2,
    retry_failed: bool = True,
    limit: int | None = None,
    timeout_minutes: float = 360,
    poll_seconds: float = 2.0,
    deployment: str | None = DEFAULT_DEPLOYMENT,
) -> dict[str, Any] | State:
    """The batch (see the module docstring); returns the totals and summary files, or a Failed state when
    the playbook or the source is unusable.  Chunk runs only when this run is a deployment run."""
    logger = get_run_logger()
    started = datetime.now(UTC)
    deadline = time.monotonic() + timeout_minutes * 60
    phases, lap = {}, time.monotonic()  # the run's own phases -> wall seconds (the summary's "Batch run" line)
    try:
        book = load_playbook(playbook)
        out = str(Path(out_dir).expanduser().resolve())
        todo, decided = discover(source, book.name, out, retry_failed, limit, book.steps.parse.max_file_mb)
    except ClauseGateError as error:
        logger.error("%s", error)
        return Failed(message=str(error))
    phases["discover"], lap = round(time.monotonic() - lap, 2), time.monotonic()
    runs = run_count(len(todo), max_in_flight, max_parallel_runs) if this_deployment.id else 1
    logger.info("%d contracts to review, %d skipped/decided; as tasks of %s (%d at a time)", len(todo), len(decided),
                f"this run and {runs - 1} chunk run(s)" if runs > 1 else "this run", max_in_flight,
                extra={PROGRESS_EXTRA: "more", PROGRESS_COUNT: len(todo)})
    review = partial(review_contract, playbook=playbook, extractor=extractor, out_dir=out, ask_person=False)
    claims = _claims(source, runs, Path(out) / "batches")  # runs share the list: each contract to the first claim
    if claims is not None and runs == 1:  # a chunk run: the batch run reports the skipped ones
        decided = []
    chunks = _start_chunks(runs - 1, todo, claims, source_dir=Path(out) / "batches", playbook=playbook, out_dir=out,
                           extractor=extractor, work_queue=work_queue, max_in_flight=max_in_flight,
                           timeout_minutes=timeout_minutes, poll_seconds=poll_seconds, deployment=deployment)
    rows = run_batch(todo, TaskDispatcher(review=review, threads=max_in_flight, worker=_this_worker(),
                                          playbook=book.name),
                     max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                     timeout_seconds=max(1.0, deadline - time.monotonic()), on_progress=partial(_progress, logger),
                     claim=None if claims is None else (lambda c: claims.take(c.contract_id)))
    phases["reviews"], lap = round(time.monotonic() - lap, 2), time.monotonic()
    rows = _ask_people(rows, todo, playbook=playbook, playbook_name=book.name, out=out, extractor=extractor,
                       work_queue=work_queue, max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                       deadline=deadline, deployment=deployment, logger=logger)
    phases["gate runs"], lap = round(time.monotonic() - lap, 2), time.monotonic()
    rows = _merge_chunks(rows, todo, chunks, claims, out=out, poll_seconds=poll_seconds, deadline=deadline)
    if chunks:
        phases["waiting for chunk runs"] = round(time.monotonic() - lap, 2)
    summary = BatchSummary(source=source, playbook=book.name, started_at=started,
                           finished_at=datetime.now(UTC),
                           mode=f"tasks of this run and {runs - 1} chunk run(s)" if runs > 1 else "tasks of this run",
                           rows=[*decided, *rows], extractor=extractor or book.steps.extract.extractor,
                           max_in_flight=max_in_flight, phases=phases)
    files = publish(summary, out)
    totals = summary.totals
    logger.info("batch done: %d reviewed, %d failed, %d waiting at a gate, %d skipped; %.1f contracts/minute, "
                "%.1f reviews at once; %s", totals.reviewed, totals.failed, totals.waiting, totals.skipped,
                totals.contracts_per_minute, summary.breakdown.reviews_at_once, files[0])
    return {**totals.model_dump(mode="json"), "summary_files": files}


def _progress(logger, event: str, candidate: Candidate | None, row: ContractOutcome | None) -> None:
    if event == "done" and row is not None:
        done = {"extra": {PROGRESS_EXTRA: "done"}}  # `clausegate batch` advances its progress bar on these
        if row.status in ("failed", "not-submitted", "unfinished"):
            logger.warning("%s: %s %s %s", row.file, row.status, row.error_code, row.detail[:200], **done)
        else:
            logger.info("%s: %s%s, %s clauses, %d gates waiting (%s)", row.file, row.status,
                        f" ({row.review_status})" if row.review_status else "", row.clauses, row.gates_waiting,
                        row.worker or "-", **done)
    elif event == "poll-error" and row is not None:
        logger.warning("polling failed (will retry): %s", row.detail)


def _this_worker() -> str:
    """The worker that runs this flow run (deployment runs), else "in-process"."""
    if not this_deployment.id or not flow_run.id:
        return "in-process"
    try:
        with get_client(sync_client=True) as client:
            labels = client.read_flow_run(flow_run.id).labels or {}
    except Exception:  # only a label in the summary
        return "in-process"
    return str(labels.get("prefect.worker.name") or "in-process")


def _ask_people(rows: list[ContractOutcome], candidates: list[Candidate], *, playbook: str, playbook_name: str,
                out: str, extractor: str | None, work_queue: str | None, max_in_flight: int, poll_seconds: float,
                deadline: float, deployment: str | None, logger) -> list[ContractOutcome]:
    """Send the contracts whose review ends ``pending_decision`` as runs of ``deployment`` (they suspend at
    the gate); the others' rows stay as they are."""
    pending = [r for r in rows if r.status == "reviewed" and r.review_status == "pending_decision"]
    if not pending:
        return rows
    if not deployment:
        logger.info("%d contract(s) need a person; no contract-review deployment to ask in: they stay "
                    "pending_decision (CG-GATE-DEFERRED) and the next batch sends them again", len(pending))
        return rows
    dispatcher = DeploymentDispatcher(deployment=deployment, playbook=playbook, playbook_name=playbook_name,
                                      out_dir=out, extractor=extractor, work_queue=work_queue,
                                      batch_id=str(flow_run.id or f"batch-{time.time():.0f}"))
    try:
        dispatcher.check_deployment()
    except ClauseGateError as error:
        logger.warning("%d contract(s) need a person, but %s They stay pending_decision.", len(pending), error)
        return rows
    by_id = {c.contract_id[:12]: c for c in candidates}
    again = [by_id[r.contract_id] for r in pending if r.contract_id in by_id]
    logger.info("%d contract(s) need a person: sending them as %s runs", len(again), deployment,
                extra={PROGRESS_EXTRA: "more", PROGRESS_COUNT: len(again)})
    asked = run_batch(again, dispatcher, max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                      timeout_seconds=max(1.0, deadline - time.monotonic()), on_progress=partial(_progress, logger))
    return [r for r in rows if r not in pending] + asked


def _attempt() -> str:
    """``<run id prefix>-<attempt>``: a retried batch run claims afresh (finished steps come from the cache)."""
    return f"{str(flow_run.id)[:8]}-{flow_run.run_count or 1}"


def _claims(source: str, runs: int, folder: Path) -> Claims | None:
    """This run's claims: a batch run with chunk runs makes the folder; a chunk run finds it in its manifest."""
    if runs > 1:
        return Claims(folder / f"claims-{_attempt()}", str(flow_run.id))
    if str(source).startswith("list:"):
        folder = claims_of_manifest(Path(str(source)[len("list:"):]))
        if folder is not None:
            return Claims(folder, str(flow_run.id))
    return None


def _start_chunks(count: int, todo: list[Candidate], claims: Claims | None, *, source_dir: Path,
                  **parameters: Any) -> dict[Any, None]:
    """``count`` runs of this run's deployment (``source: list:<manifest>``, no further splitting), sharing the whole
    list with this run through ``claims`` (clausegate/batch/claims.py)."""
    if count < 1 or claims is None:
        return {}
    me, attempt = str(flow_run.id), _attempt()
    manifest = write_manifest(source_dir, f"chunk-{attempt}", [c.path for c in todo],
                              header=f"{CLAIMS_LINE}{claims.folder}")
    chunks: dict[Any, None] = {}
    for i in range(1, count + 1):
        run = run_deployment(f"{flow_run.flow_name}/{this_deployment.name}", timeout=0,
                             work_queue_name=parameters["work_queue"], idempotency_key=f"{me}:{attempt}:chunk:{i}",
                             tags=[CLAUSEGATE, "batch-chunk"], flow_run_name=f"{flow_run.name}-chunk-{i}",
                             parameters={**parameters, "source": f"list:{manifest}", "max_parallel_runs": 1,
                                         "retry_failed": True})
        chunks[run.id] = None
    return chunks


def _merge_chunks(rows: list[ContractOutcome], todo: list[Candidate], chunks: dict[Any, None], claims: Claims | None,
                  *, out: str, poll_seconds: float, deadline: float) -> list[ContractOutcome]:
    """This run's rows and the chunk runs' (waited for): each contract's row from the run that claimed it, and a
    row for every contract a chunk claimed but never reported (crashed chunk: CG-RUN-CRASHED; still running at the
    deadline: CG-BATCH-TIMEOUT)."""
    if not chunks or claims is None:
        return rows
    final = wait_for_runs(chunks, poll_seconds=poll_seconds, deadline=deadline)
    owners = claims.owners()
    if all(final.get(run_id) is not None for run_id in chunks):  # nobody claims any more: the rows hold it all
        shutil.rmtree(claims.folder, ignore_errors=True)
    me, files = str(flow_run.id), {c.contract_id[:12]: c.filename for c in todo}
    merged = [r for r in rows if owners.get(r.contract_id, me) == me]  # unclaimed: this run's timeout rows
    for run_id in chunks:
        run = final.get(run_id)
        chunk_rows = [r for r in read_rows(Path(out) / "batches", str(run_id))
                      if owners.get(r.contract_id) == str(run_id)]
        seen = {r.contract_id for r in chunk_rows}
        for contract_id, owner in owners.items():
            if owner == str(run_id) and contract_id not in seen:
                chunk_rows.append(ContractOutcome(
                    file=files.get(contract_id, contract_id), contract_id=contract_id,
                    status="unfinished" if run is None else "failed",
                    error_code=BATCH_TIMEOUT if run is None else RUN_CRASHED, flow_run_id=str(run_id),
                    detail=f"claimed by chunk run {run.state_name if run else 'still running'}, never reported"))
        merged += chunk_rows
    return merged
