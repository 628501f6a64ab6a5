"""Retention: uploads, persisted results and reports are deleted once older than their period.

The body of the ``retention`` flow (``flows/retention.py``, deployment ``retention``, daily) is
:func:`sweep_all`; the per-area sweeps are :mod:`clausegate.ops.retention_sweeps`, what unfinished runs
still need is :mod:`clausegate.ops.retention_in_use`.

Periods
-------
* ``CLAUSEGATE_RETENTION_DAYS`` (default 30; the flow's ``days`` parameter overrides it): the longest
  anything is kept.  Uploads follow it (one upload can serve several playbooks).
* a playbook's ``retention.days`` shortens it for that playbook's reports (the report JSON names
  its playbook) and caps its cache expiration, so its cached step results expire too.
* persisted results: deleted when older than the period, or when Prefect's own cache expiration
  (``metadata.expiration`` of the record, from the playbook) has passed: Prefect would not use them.

Age is the file's modification time (an upload submitted again is touched by the inbox, so its
period restarts).

Never deleted
-------------
* what an unfinished run still needs: for every flow run that is Scheduled, Pending, Running,
  Paused/Suspended (a gate waiting for a person) or Cancelling, its ``source`` file (and, for a
  batch chunk's ``list:MANIFEST``, the manifest and the files it lists) and the result record of
  every task run it has (a suspended run, resumed, re-runs from the top and takes its finished steps
  from exactly those records).  If the Prefect API cannot be asked, nothing is deleted;
* the at-rest key check file in the result storage;
* report tombstones: a report JSON past its period is replaced by a tombstone (contract id, file
  name, playbook, status; no contract text) so the nightly batch, which skips contracts that have a
  report, does not review an expired contract again.  Its Markdown twin is deleted.

The review artifacts (``review-<contract>`` Markdown in the Prefect UI: the report again) are
reports too: versions older than the period are deleted from the Prefect database.
"""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed, State

from clausegate.config import settings
from clausegate.errors import ConfigurationError
from clausegate.ops.retention_in_use import InUse, in_use
from clausegate.ops.retention_sweeps import (
    AreaCounts,
    sweep_reports,
    sweep_results,
    sweep_review_artifacts,
    sweep_uploads,
)
from clausegate.review.playbook import load_playbook
from clausegate.security.at_rest import result_storage_dir

ENV_DAYS = "CLAUSEGATE_RETENTION_DAYS"
DELETE_FAILED = "CG-RETENTION-DELETE"


def retention_days(value: float | None = None) -> float:
    """The global period: ``value`` if given, else ``CLAUSEGATE_RETENTION_DAYS``, else 30."""
    if value is None:
        return settings().retention_days  # ConfigurationError (CG-CONFIG) for a value that is not positive
    if not value > 0:
        raise ConfigurationError(f"the retention period must be positive, not {value!r} days",
                                 hint=f"set {ENV_DAYS} (or the flow's `days`) to a positive number")
    return float(value)


def playbook_retention_days(name: str) -> float | None:
    """``retention.days`` of a playbook by name (built-in, or in CLAUSEGATE_INBOX_PLAYBOOKS_DIR); None if unknown."""
    try:
        ref = settings().inbox.playbooks().get(name, name)
    except Exception:  # inbox settings not usable here: built-in names only
        ref = name
    try:
        return load_playbook(ref).retention.days
    except Exception:  # an unknown / invalid playbook: the global period
        return None


def render_markdown(days: float, rows: list[AreaCounts], in_use_info: InUse, dry_run: bool) -> str:
    lines = [f"# Retention sweep{' (dry run: nothing deleted)' if dry_run else ''}", "",
             f"Period: **{days:g} days** (`{ENV_DAYS}` / flow parameter `days`; a playbook's `retention.days` "
             f"shortens it for its reports and cached results).  Unfinished runs protecting their files: "
             f"**{in_use_info.runs}**.", "",
             "| area | deleted | kept (fresh) | kept (in use) | reports tombstoned | errors | MB freed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.area} | {r.deleted} | {r.kept_fresh} | {r.kept_in_use} | {r.tombstoned} | {r.errors} "
                     f"| {r.bytes_deleted / 1048576:.3f} |")
    return "\n".join(lines) + "\n"


def sweep_all(*, days: float | None, uploads_dirs: list[str] | None, reports_dirs: list[str] | None,
              results_dir: str | None, dry_run: bool) -> list[dict] | State:
    """The ``retention`` flow: pick the folders, sweep every area, publish the counts (artifacts
    ``retention`` and ``retention-summary``).  Failed (``CG-RETENTION-DELETE``) when expired files could
    not be deleted; RetentionError (nothing deleted) when Prefect cannot say what is in use."""
    logger = get_run_logger()
    period = retention_days(days)
    inbox = settings().inbox
    uploads = [Path(p) for p in uploads_dirs] if uploads_dirs is not None else [inbox.uploads_dir]
    reports = [Path(p) for p in reports_dirs] if reports_dirs is not None else [inbox.reports_dir, Path("reports")]
    results = Path(results_dir) if results_dir else result_storage_dir()

    needed = in_use()  # before anything is deleted
    logger.info("retention: %g days; %d unfinished runs protect %d files", period, needed.runs, len(needed.paths))
    rows: list[AreaCounts] = []
    for folder in dict.fromkeys(p.resolve() for p in uploads):
        rows.append(sweep_uploads(folder, days=period, in_use=needed, dry_run=dry_run))
    if results is not None:
        rows.append(sweep_results(results.resolve(), days=period, in_use=needed, dry_run=dry_run))
    else:
        logger.warning("retention: the result storage is not a local folder; persisted results are not swept "
                       "(set an expiry on the remote storage instead)")
    for folder in dict.fromkeys(p.resolve() for p in reports):
        rows.append(sweep_reports(folder, days=period, playbook_days=playbook_retention_days, in_use=needed,
                                  dry_run=dry_run))
    rows.append(sweep_review_artifacts(days=period, in_use=needed, dry_run=dry_run))
    for row in rows:
        logger.info("retention %s (%s): deleted %d, tombstoned %d, kept %d fresh + %d in use, %d errors",
                    row.area, row.folder, row.deleted, row.tombstoned, row.kept_fresh, row.kept_in_use, row.errors)
    create_table_artifact(key="retention", table=[row.row() for row in rows],
                          description=f"Retention sweep: {period:g} days{' (dry run)' if dry_run else ''}")
    create_markdown_artifact(key="retention-summary", markdown=render_markdown(period, rows, needed, dry_run),
                             description="Retention sweep summary")
    errors = sum(row.errors for row in rows)
    if errors:  # visible in Prefect, not a Completed run that quietly kept expired contracts
        return Failed(message=f"[{DELETE_FAILED}] {errors} expired files could not be deleted (see the run log). "
                              "Next step: fix the folder permissions; the next run tries again.")
    return [row.row() for row in rows]
