"""The nightly-batch flow: review every new contract from a source (the job: clausegate/pipeline/batch.py).

``async`` for Prefect's async engine only (see clausegate/pipeline/sync_body.py); the job is synchronous.
"""

from __future__ import annotations

from prefect import flow

from clausegate.batch.dispatch import DEFAULT_DEPLOYMENT
from clausegate.pipeline import parameters as p
from clausegate.pipeline.batch import BATCH_FLOW_OPTIONS, review_batch
from clausegate.pipeline.sync_body import run_sync_body


@flow(**BATCH_FLOW_OPTIONS)
async def nightly_batch(
    source: p.BatchSource = "inbox",
    playbook: p.Playbook = "default",
    out_dir: p.OutDir = "reports",
    extractor: p.Extractor = None,
    work_queue: p.WorkQueue = "low",
    max_in_flight: p.MaxInFlight = 4,
    max_parallel_runs: p.MaxParallelRuns = 2,
    retry_failed: p.RetryFailed = True,
    limit: p.Limit = None,
    timeout_minutes: p.TimeoutMinutes = 360,
    poll_seconds: p.PollSeconds = 2.0,
    deployment: p.ReviewDeployment = DEFAULT_DEPLOYMENT,
) -> dict:
    """Review every new contract in ``source`` (a folder, ``list:MANIFEST`` or ``python:module:factory``) with
    ``playbook`` as tasks of this run, ``max_in_flight`` at a time; a deployment run with more contracts
    spreads them over up to ``max_parallel_runs`` runs (this one + chunk runs on any worker).  Contracts that
    need a person go to ``deployment`` (contract-review runs on ``work_queue``) and wait at their gate.
    Skips contracts already reviewed (same content hash + playbook in ``out_dir``), in flight, or duplicated."""
    return await run_sync_body(review_batch, source, playbook, out_dir, extractor=extractor, work_queue=work_queue,
                               max_in_flight=max_in_flight, max_parallel_runs=max_parallel_runs,
                               retry_failed=retry_failed, limit=limit, timeout_minutes=timeout_minutes,
                               poll_seconds=poll_seconds, deployment=deployment)
