"""The nightly-batch flow: review every new contract from a source (the job: clausegate/pipeline/batch.py).

``async`` for Prefect's async engine only (see clausegate/pipeline/sync_body.py); the job is synchronous.
"""

from __future__ import annotations

from typing import Literal

from prefect import flow

from clausegate.batch.dispatch import DEFAULT_DEPLOYMENT
from clausegate.pipeline.batch import BATCH_FLOW_OPTIONS, review_batch
from clausegate.pipeline.sync_body import run_sync_body


@flow(**BATCH_FLOW_OPTIONS)
async def nightly_batch(
    source: str = "inbox",
    playbook: str = "default",
    out_dir: str = "reports",
    extractor: str | None = None,
    work_queue: Literal["high", "normal", "low"] = "low",
    max_in_flight: int = 4,
    max_parallel_runs: int = 2,
    retry_failed: bool = True,
    limit: int | None = None,
    timeout_minutes: float = 360,
    poll_seconds: float = 2.0,
    deployment: str | None = DEFAULT_DEPLOYMENT,
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
