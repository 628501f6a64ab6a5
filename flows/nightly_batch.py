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
from prefect.runtime import flow_run
from prefect.states import Failed

from clausegate import batch
from clausegate.errors import ClauseGateError
from clausegate.playbook import load_playbook


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
) -> dict:
    """Review every new contract in ``source`` (a folder, or ``python:module:factory``) with ``playbook``.

    Contracts already reviewed (a report for the same content hash + playbook in ``out_dir``),
    still in flight, or duplicated are skipped.  Returns the batch totals; the per-contract table
    is an artifact and ``<out_dir>/batches/batch-*.csv|json``.
    """
    logger = get_run_logger()
    started = datetime.now(timezone.utc)
    try:
        book = load_playbook(playbook)
    except ClauseGateError as error:
        return Failed(message=str(error))
    out = str(Path(out_dir).expanduser().resolve())
    dispatcher = batch.DeploymentDispatcher(playbook=playbook, out_dir=out, extractor=extractor, deployment=deployment,
                                            work_queue=work_queue, batch_id=str(flow_run.id or ""))
    try:
        dispatcher.check_deployment()
        todo, decided = discover(source, playbook, out, retry_failed, limit)
    except ClauseGateError as error:
        logger.error("%s", error)
        return Failed(message=str(error))
    logger.info("%d contracts to review, %d skipped/decided; fanning out to %s on queue %r (max %d in flight)",
                len(todo), len(decided), deployment, work_queue, max_in_flight)

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

    rows = batch.run_batch(todo, dispatcher, max_in_flight=max_in_flight, poll_seconds=poll_seconds,
                           timeout_seconds=timeout_minutes * 60, on_progress=progress)
    summary = batch.BatchSummary(source=source, playbook=book.name, mode="deployments", started_at=started,
                                 finished_at=datetime.now(timezone.utc), rows=[*decided, *rows])
    files = publish(summary, out)
    totals = summary.totals
    logger.info("batch done: %d reviewed, %d failed, %d waiting at a gate, %d skipped; %.1f contracts/minute; %s",
                totals.reviewed, totals.failed, totals.waiting, totals.skipped, totals.contracts_per_minute, files[0])
    return {**totals.model_dump(mode="json"), "summary_files": files}
