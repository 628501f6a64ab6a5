"""The nightly-batch flow: review every new contract from a source as contract-review deployment runs.

Thin wiring of :mod:`clausegate.batch`: discover -> skip reviewed / in-flight / duplicates (by content
hash) -> fan out with at most ``max_in_flight`` runs open -> summary table artifact + CSV/JSON files.
The fan-out lands on the ``low`` queue by default, so ad-hoc reviews on ``normal``/``high`` overtake it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import deployment as deployment_runtime
from prefect.runtime import flow_run
from prefect.states import Failed

from clausegate import batch
from clausegate.errors import ClauseGateError
from clausegate.review.playbook import load_playbook


@task(name="discover-contracts", cache_policy=NO_CACHE)
def discover(source: str, playbook: str, out_dir: str, retry_failed: bool, limit: int | None):
    book = load_playbook(playbook)
    files = batch.load_source(source).discover()
    in_flight = batch.in_flight_reviews(playbook)
    return batch.plan_batch(files, playbook=book.name, out_dir=out_dir, max_file_mb=book.steps.parse.max_file_mb,
                            retry_failed=retry_failed, in_flight=in_flight, limit=limit)


@task(name="publish-batch-summary", cache_policy=NO_CACHE)
def publish(summary: batch.BatchSummary, out_dir: str) -> list[str]:
    folder = Path(out_dir) / "batches"
    stem = f"batch-{summary.started_at:%Y%m%dT%H%M%S}-{str(flow_run.id or 'local')[:8]}"
    csv_path, json_path = batch.write_summary(summary, folder, stem)
    create_table_artifact(key="nightly-batch-contracts", table=batch.table_rows(summary),
                          description=f"Nightly batch: one row per contract ({summary.source})")
    create_markdown_artifact(key="nightly-batch-summary", markdown=batch.summary_markdown(summary, [csv_path, json_path]),
                             description="Nightly batch totals")
    return [str(csv_path), str(json_path)]


@flow(name="nightly-batch", validate_parameters=True)
def nightly_batch(
    source: str = "inbox",
    playbook: str = "default",
    out_dir: str = "reports",
    extractor: str | None = None,
    work_queue: Literal["high", "normal", "low"] = "low",
    max_in_flight: int = 8,
    retry_failed: bool = True,
    limit: int | None = None,
    timeout_minutes: float = 360,
    poll_seconds: float = 2.0,
    deployment: str = batch.DEFAULT_DEPLOYMENT,
    dispatch: Literal["deployments", "chunks", "inline"] = "deployments",
    chunks: int = 2,
    inline_threads: int = 2,
    inline_as: Literal["subflows", "tasks"] = "subflows",
    chunk_reviews: Literal["subflows", "tasks"] = "tasks",
) -> dict:
    """Review every new contract in ``source`` (a folder, or ``python:module:factory``) with ``playbook``.

    Contracts already reviewed (a report for the same content hash + playbook in ``out_dir``),
    still in flight, or duplicated are skipped.  Returns the batch totals; the per-contract table
    is an artifact and ``<out_dir>/batches/batch-*.csv|json``.

    ``dispatch``:

    * ``deployments`` (default): one contract-review deployment run per contract, any worker takes
      them, gated findings suspend the run for a person;
    * ``chunks``: the contracts are split into ``chunks`` nightly-batch deployment runs (any worker)
      that review their share (``inline_threads`` at a time) as tasks of the chunk run (or, with
      ``chunk_reviews: subflows``, as subflows): no process and no flow run per contract, ~4x the
      throughput on SQLite; contracts whose gate needs a person (``pending_decision``) are then sent
      as contract-review deployment runs (cached steps), which suspend and ask;
    * ``inline``: reviews inside this run only (one process; no spreading, no gates): as subflows, or
      (``inline_as: tasks``) as tasks of this run.

    ``chunk_reviews``: how chunk runs review (``tasks``, the fast path: no run per contract; or
    ``subflows``: one contract-review subflow per contract).
    """
    logger = get_run_logger()
    started = datetime.now(timezone.utc)
    try:
        book = load_playbook(playbook)
    except ClauseGateError as error:
        return Failed(message=str(error))
    out = str(Path(out_dir).expanduser().resolve())
    if dispatch == "chunks" and not deployment_runtime.id:
        logger.warning("dispatch 'chunks' needs this batch to run as a deployment; reviewing inline instead")
        dispatch = "inline"
    if dispatch == "inline":
        dispatcher = batch.LocalDispatcher(playbook=playbook, out_dir=out, extractor=extractor, workers=inline_threads,
                                           as_tasks=inline_as == "tasks")
        max_in_flight = max(1, inline_threads)
    else:
        dispatcher = batch.DeploymentDispatcher(playbook=playbook, out_dir=out, extractor=extractor,
                                                deployment=deployment, work_queue=work_queue,
                                                batch_id=str(flow_run.id or ""))
    try:
        if dispatch != "inline":
            dispatcher.check_deployment()
        todo, decided = discover(source, playbook, out, retry_failed, limit)
    except ClauseGateError as error:
        dispatcher.close()
        logger.error("%s", error)
        return Failed(message=str(error))
    logger.info("%d contracts to review, %d skipped/decided; %s (max %d in flight)", len(todo), len(decided),
                f"fanning out to {deployment} on queue {work_queue!r}" if dispatch != "inline" else "inline subflows",
                max_in_flight)

    def progress(event, candidate, row):
        if event == "done" and row is not None:
            if row.status in ("failed", "not-submitted", "unfinished"):
                logger.warning("%s: %s %s %s", row.file, row.status, row.error_code, row.detail[:200])
            else:
                logger.info("%s: %s%s, %s clauses, %d gates waiting (%s)", row.file, row.status,
                            f" ({row.review_status})" if row.review_status else "", row.clauses, row.gates_waiting,
                            row.worker or "-")
        elif event == "poll-error" and row is not None:
            logger.warning("polling the runs failed (will retry): %s", row.detail)

    if dispatch == "chunks" and todo:
        rows = _run_chunks(todo, chunks=chunks, playbook=playbook, out=out, extractor=extractor, work_queue=work_queue,
                           inline_threads=inline_threads, poll_seconds=poll_seconds, timeout_minutes=timeout_minutes,
                           logger=logger, inline_as=chunk_reviews)
        waiting_gate = [r for r in rows if r.review_status == "pending_decision"]
        if waiting_gate:  # ask the person: as deployment runs these suspend at their gate
            by_id = {c.contract_id[:12]: c for c in todo}
            again = [by_id[r.contract_id] for r in waiting_gate if r.contract_id in by_id]
            logger.info("%d contract(s) need a person: sending them as contract-review deployment runs", len(again))
            asked = batch.run_batch(again, dispatcher, max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                                    timeout_seconds=timeout_minutes * 60, on_progress=progress)
            rows = [r for r in rows if r not in waiting_gate] + asked
        dispatcher.close()
    else:
        rows = batch.run_batch(todo, dispatcher, max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                               timeout_seconds=timeout_minutes * 60, on_progress=progress)
    summary = batch.BatchSummary(source=source, playbook=book.name, mode="local" if dispatch == "inline" else "deployments",
                                 started_at=started, finished_at=datetime.now(timezone.utc), rows=[*decided, *rows])
    files = publish(summary, out)
    totals = summary.totals
    logger.info("batch done: %d reviewed, %d failed, %d waiting at a gate, %d skipped; %.1f contracts/minute; %s",
                totals.reviewed, totals.failed, totals.waiting, totals.skipped, totals.contracts_per_minute, files[0])
    return {**totals.model_dump(mode="json"), "summary_files": files}


def _run_chunks(todo, *, chunks, playbook, out, extractor, work_queue, inline_threads, poll_seconds, timeout_minutes,
                logger, inline_as) -> list[batch.ContractOutcome]:
    """Split ``todo`` into nightly-batch deployment runs (dispatch=inline) and collect their rows."""
    import json
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.deployments import run_deployment
    from prefect.runtime import deployment

    n = max(1, min(chunks, len(todo)))
    groups = [todo[i::n] for i in range(n)]
    me = str(flow_run.id)
    runs = {}
    for i, group in enumerate(groups):
        manifest = batch.write_manifest(Path(out) / "batches", f"chunk-{me[:8]}-{i}", group)
        run = run_deployment(f"nightly-batch/{deployment.name}", timeout=0, work_queue_name=work_queue,
                             idempotency_key=f"{me}:chunk:{i}", tags=["clausegate", "batch-chunk"],
                             flow_run_name=f"{flow_run.name}-chunk-{i}",
                             parameters={"source": f"list:{manifest}", "playbook": playbook, "out_dir": out,
                                         "extractor": extractor, "dispatch": "inline",
                                         "inline_threads": inline_threads, "inline_as": inline_as,
                                         "retry_failed": True})
        runs[run.id] = group
    logger.info("%d contracts in %d chunk runs (%s)", len(todo), n, ", ".join(str(r)[:8] for r in runs))
    deadline = time.monotonic() + timeout_minutes * 60
    final = {}
    while len(final) < len(runs) and time.monotonic() < deadline:
        time.sleep(poll_seconds)
        with get_client(sync_client=True) as client:
            for run in client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(runs)))):
                if run.state and run.state.is_final():
                    final[run.id] = run
    rows: list[batch.ContractOutcome] = []
    for run_id, group in runs.items():
        found = sorted((Path(out) / "batches").glob(f"batch-*-{str(run_id)[:8]}.json"))
        chunk_rows = []
        if found:
            chunk_rows = [batch.ContractOutcome(**r) for r in json.loads(found[-1].read_text())["rows"]]
        run = final.get(run_id)
        worker = str(((run.labels or {}) if run else {}).get("prefect.worker.name", ""))
        chunk_rows = [r.model_copy(update={"worker": worker or r.worker}) if r.worker == "in-process" else r
                      for r in chunk_rows]
        seen = {r.contract_id for r in chunk_rows}
        for c in group:  # contracts the chunk never reported (crashed chunk, timeout)
            if c.contract_id[:12] not in seen:
                code = batch.BATCH_TIMEOUT if run is None else batch.RUN_CRASHED
                chunk_rows.append(batch.ContractOutcome(file=c.filename, contract_id=c.contract_id[:12],
                                                        status="unfinished" if run is None else "failed",
                                                        error_code=code, flow_run_id=str(run_id),
                                                        detail=f"chunk run {run.state_name if run else 'still running'}"))
        rows += chunk_rows
    return rows
