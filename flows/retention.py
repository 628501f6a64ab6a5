"""The retention sweep: delete uploads, persisted results and reports older than their period.

Runs as the ``retention`` deployment (prefect.yaml, daily).  The logic — periods, what counts as in
use by an unfinished (e.g. Suspended) run, report tombstones — is :mod:`clausegate.ops.retention`; this
flow only picks the folders, runs it and publishes the counts (a table artifact ``retention``).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed

from clausegate.ops import retention as r
from clausegate.security.at_rest import result_storage_dir


@flow(name="retention", validate_parameters=True)
def retention(
    days: float | None = None,
    uploads_dirs: list[str] | None = None,
    reports_dirs: list[str] | None = None,
    results_dir: str | None = None,
    dry_run: bool = False,
) -> list[dict] | Failed:
    """Delete what is older than ``days`` (default ``$CLAUSEGATE_RETENTION_DAYS`` or 30).

    Folders (defaults): the inbox's ``uploads/`` and ``reports/`` (``CLAUSEGATE_INBOX_DATA_DIR``), the
    deployments' ``reports`` folder (relative to the worker's project folder), Prefect's local
    result storage (``PREFECT_HOME/storage``) and the ``review-*`` artifacts in the Prefect database.
    ``dry_run``: count only.
    """
    from clausegate.inbox.settings import InboxSettings

    logger = get_run_logger()
    period = r.retention_days(days)
    inbox = InboxSettings()
    uploads = [Path(p) for p in uploads_dirs] if uploads_dirs is not None else [inbox.uploads_dir]
    reports = [Path(p) for p in reports_dirs] if reports_dirs is not None else [inbox.reports_dir, Path("reports")]
    results = Path(results_dir) if results_dir else result_storage_dir()

    needed = r.in_use()  # before anything is deleted; RetentionError (nothing deleted) if Prefect cannot say
    logger.info("retention: %g days; %d unfinished runs protect %d files", period, needed.runs, len(needed.paths))
    rows: list[r.AreaCounts] = []
    for folder in dict.fromkeys(p.resolve() for p in uploads):
        rows.append(r.sweep_uploads(folder, days=period, in_use=needed, dry_run=dry_run))
    if results is not None:
        rows.append(r.sweep_results(results.resolve(), days=period, in_use=needed, dry_run=dry_run))
    else:
        logger.warning("retention: the result storage is not a local folder; persisted results are not swept "
                       "(set an expiry on the remote storage instead)")
    for folder in dict.fromkeys(p.resolve() for p in reports):
        rows.append(r.sweep_reports(folder, days=period, playbook_days=r.playbook_retention_days, in_use=needed,
                                    dry_run=dry_run))
    rows.append(r.sweep_review_artifacts(days=period, in_use=needed, dry_run=dry_run))
    for row in rows:
        logger.info("retention %s (%s): deleted %d, tombstoned %d, kept %d fresh + %d in use, %d errors",
                    row.area, row.folder, row.deleted, row.tombstoned, row.kept_fresh, row.kept_in_use, row.errors)
    create_table_artifact(key="retention", table=[row.row() for row in rows],
                          description=f"Retention sweep: {period:g} days{' (dry run)' if dry_run else ''}")
    create_markdown_artifact(key="retention-summary", markdown=r.render_markdown(period, rows, needed, dry_run),
                             description="Retention sweep summary")
    errors = sum(row.errors for row in rows)
    if errors:  # visible in Prefect, not a Completed run that quietly kept expired contracts
        return Failed(message=f"[{r.DELETE_FAILED}] {errors} expired files could not be deleted (see the run log). "
                              "Next step: fix the folder permissions; the next run tries again.")
    return [row.row() for row in rows]
