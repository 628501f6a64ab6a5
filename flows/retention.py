"""The retention sweep: delete uploads, persisted results and reports older than their period.

Runs as the ``retention`` deployment (prefect.yaml, daily).  The logic — periods, what counts as in
use by an unfinished (e.g. Suspended) run, report tombstones, the counts it publishes (a table
artifact ``retention``) — is :mod:`clausegate.ops.retention`.
"""

from __future__ import annotations

from prefect import flow
from prefect.states import State

from clausegate.ops import retention as ops_retention
from clausegate.pipeline import parameters as p
from clausegate.pipeline.sync_body import run_sync_body


@flow(name="retention", validate_parameters=True)
async def retention(
    days: p.RetentionDays = None,
    uploads_dirs: p.UploadsDirs = None,
    reports_dirs: p.ReportsDirs = None,
    results_dir: p.ResultsDir = None,
    dry_run: p.DryRun = False,
) -> list[dict] | State:
    """Delete what is older than ``days`` (default ``$CLAUSEGATE_RETENTION_DAYS`` or 30).

    Folders (defaults): the inbox's ``uploads/`` and ``reports/`` (``CLAUSEGATE_INBOX_DATA_DIR``), the
    deployments' ``reports`` folder (relative to the worker's project folder), Prefect's local
    result storage (``PREFECT_HOME/storage``) and the ``review-*`` artifacts in the Prefect database.
    ``dry_run``: count only.
    """
    return await run_sync_body(ops_retention.sweep_all, days=days, uploads_dirs=uploads_dirs, reports_dirs=reports_dirs,
                               results_dir=results_dir, dry_run=dry_run)
