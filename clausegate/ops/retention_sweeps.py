"""The retention sweeps, one per area: persisted results, uploads, reports (tombstones), review artifacts.

Each keeps what is fresh or still needed by an unfinished run (:class:`~clausegate.ops.retention_in_use.InUse`),
deletes the rest (or, in a dry run, only counts it) and returns its :class:`AreaCounts`.  Age is the
file's modification time.  The periods and the sweep run are :mod:`clausegate.ops.retention`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from prefect.client.schemas.sorting import ArtifactSort
from prefect.exceptions import ObjectNotFound

from clausegate.ops.retention_in_use import InUse
from clausegate.review.annotate import MARK, SUFFIXES
from clausegate.review.report import SEALED_SUFFIX
from clausegate.security.at_rest import KEY_CHECK_FILE

log = logging.getLogger("clausegate.ops.retention")

TOMBSTONE_KEY = "retention_tombstone"
DAY = 86400.0


@dataclass
class AreaCounts:
    area: str
    folder: str
    deleted: int = 0
    kept_fresh: int = 0
    kept_in_use: int = 0
    tombstoned: int = 0
    errors: int = 0
    bytes_deleted: int = 0

    def row(self) -> dict[str, Any]:
        return {"area": self.area, "folder": self.folder, "deleted": self.deleted, "kept (fresh)": self.kept_fresh,
                "kept (in use)": self.kept_in_use, "reports tombstoned": self.tombstoned, "errors": self.errors,
                "MB freed": round(self.bytes_deleted / 1048576, 3)}


def _files(folder: Path) -> Iterable[tuple[Path, os.stat_result]]:
    for root, _dirs, names in os.walk(folder, followlinks=False):
        for name in names:
            path = Path(root) / name
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_symlink() or not path.is_file():
                continue
            yield path, st


def _remove_empty_dirs(folder: Path) -> None:
    for root, _dirs, _names in os.walk(folder, topdown=False):
        if Path(root) != folder and not os.listdir(root):
            try:
                os.rmdir(root)
            except OSError:
                pass


def _delete(path: Path, st: os.stat_result, counts: AreaCounts) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        counts.errors += 1
        log.warning("retention: cannot delete %s: %s", path, exc)
        return
    counts.deleted += 1
    counts.bytes_deleted += st.st_size


_EXPIRATION = re.compile(rb'"expiration"\s*:\s*"([^"]{10,40})"')


def _record_expired(path: Path, now: float) -> bool:
    """Prefect's own expiration of a result record has passed (the cache no longer uses it).

    The record is JSON with its metadata first, so the expiration is read from the file's head."""
    try:
        with path.open("rb") as fh:
            found = _EXPIRATION.search(fh.read(4096))
        if not found:
            return False
        when = datetime.fromisoformat(found.group(1).decode("ascii").replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp() <= now
    except (OSError, ValueError, UnicodeDecodeError):
        return False


def _settle(path: Path, st, *, expired: bool, in_use: InUse, counts: AreaCounts, dry_run: bool) -> None:
    """Keep a fresh or in-use file; otherwise delete it (or only count it, in a dry run)."""
    if not expired:
        counts.kept_fresh += 1
    elif path in in_use:
        counts.kept_in_use += 1
    elif dry_run:
        counts.deleted += 1
        counts.bytes_deleted += st.st_size
    else:
        _delete(path, st, counts)


def sweep_results(folder: Path, *, days: float, in_use: InUse, now: float | None = None,
                  dry_run: bool = False) -> AreaCounts:
    """Persisted results (not the at-rest key check file) past the period or Prefect's own expiration."""
    now = time.time() if now is None else now
    counts = AreaCounts("results", str(folder))
    if not folder.is_dir():
        return counts
    for path, st in _files(folder):
        if path.name == KEY_CHECK_FILE and path.parent == folder:
            continue
        expired = now - st.st_mtime > days * DAY or _record_expired(path, now)
        _settle(path, st, expired=expired, in_use=in_use, counts=counts, dry_run=dry_run)
    return counts


def sweep_uploads(folder: Path, *, days: float, in_use: InUse, now: float | None = None,
                  dry_run: bool = False) -> AreaCounts:
    """Uploaded contracts past the period (then empty folders are removed)."""
    now = time.time() if now is None else now
    counts = AreaCounts("uploads", str(folder))
    if not folder.is_dir():
        return counts
    for path, st in _files(folder):
        _settle(path, st, expired=now - st.st_mtime > days * DAY, in_use=in_use, counts=counts, dry_run=dry_run)
    if not dry_run:
        _remove_empty_dirs(folder)
    return counts


def _report_meta(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def tombstone(report: dict[str, Any], days: float) -> dict[str, Any]:
    return {
        "contract_id": report.get("contract_id"),
        "filename": report.get("filename"),
        "playbook": report.get("playbook"),
        "status": report.get("status"),
        TOMBSTONE_KEY: f"the report was deleted after the retention period ({days:g} days) on "
                       f"{datetime.now(UTC).date().isoformat()}; this record keeps the batch from "
                       "reviewing the contract again",
    }


def _write_tombstone(path: Path, report: dict[str, Any], days: float) -> None:
    tmp = path.with_name(f".{path.name}.retention.tmp")
    tmp.write_text(json.dumps(tombstone(report, days), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


REPORT_SUFFIXES = (".json", ".md", ".ics", *(MARK + suffix for suffix in SUFFIXES.values()))


def report_json_of(path: Path) -> Path | None:
    """The JSON report a file in the reports folder belongs to (``<stem>.json`` for ``<stem>.json``, ``.md``,
    ``.ics``, ``.json.sealed`` and the annotated copy ``<stem>.annotated.docx|.pdf|.html`` or its ``.sealed``
    form), or None for anything else (batch summaries, manifests): those go with their report's period."""
    name = path.name.removesuffix(SEALED_SUFFIX)
    for suffix in REPORT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return path.with_name(name[:-len(suffix)] + ".json")
    return None


def sweep_reports(folder: Path, *, days: float, playbook_days: Callable[[str], float | None] = lambda name: None,
                  in_use: InUse | None = None, now: float | None = None, dry_run: bool = False) -> AreaCounts:
    """Reports (``<stem>.json`` + ``<stem>.md``, with what is written beside them: the ``.ics`` calendar, the sealed
    full review, the annotated copy) and batch summaries/manifests under ``folder``.  A report and everything
    beside it expire at its playbook's period when that is shorter than ``days``."""
    now = time.time() if now is None else now
    in_use = in_use or InUse()
    counts = AreaCounts("reports", str(folder))
    if not folder.is_dir():
        return counts
    limit_cache: dict[Path, float] = {}

    def limit_for(path: Path) -> float:
        json_path = report_json_of(path)
        if json_path is None:
            return days
        if json_path not in limit_cache:
            meta = _report_meta(json_path) if json_path.is_file() else None
            own = playbook_days(str(meta.get("playbook"))) if meta and meta.get("playbook") else None
            limit_cache[json_path] = min(days, own) if own else days
        return limit_cache[json_path]

    for path, st in _files(folder):
        period = limit_for(path)
        if now - st.st_mtime <= period * DAY:
            counts.kept_fresh += 1
            continue
        if path in in_use:
            counts.kept_in_use += 1
            continue
        meta = _report_meta(path) if path.suffix == ".json" else None
        if meta is not None and TOMBSTONE_KEY in meta:
            counts.kept_fresh += 1  # a tombstone holds no contract text
            continue
        if dry_run:
            counts.deleted += 1
            counts.bytes_deleted += st.st_size
            continue
        if meta is not None and meta.get("contract_id") and meta.get("playbook") and "status" in meta:
            try:
                _write_tombstone(path, meta, period)
            except OSError as exc:
                counts.errors += 1
                log.warning("retention: cannot replace report %s: %s", path, exc)
                continue
            counts.tombstoned += 1
            counts.bytes_deleted += max(0, st.st_size - path.stat().st_size)
            continue
        _delete(path, st, counts)
    if not dry_run:
        _remove_empty_dirs(folder)
    return counts


REVIEW_ARTIFACT_PREFIX = "review-"  # clausegate.pipeline.tasks.publish_report


def sweep_review_artifacts(*, days: float, in_use: InUse, now: float | None = None, dry_run: bool = False,
                           prefix: str = REVIEW_ARTIFACT_PREFIX) -> AreaCounts:
    """Delete ``review-*`` artifact versions older than ``days`` from the Prefect database."""
    now = time.time() if now is None else now
    counts = AreaCounts("review artifacts", "Prefect database")
    with get_client(sync_client=True) as client:
        found, offset = [], 0
        while True:
            page = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(like_=prefix)),
                                         sort=ArtifactSort.ID_DESC, limit=200, offset=offset)
            found.extend(a for a in page if (a.key or "").startswith(prefix))
            if len(page) < 200:
                break
            offset += 200
        for artifact in found:
            created = artifact.created.timestamp() if artifact.created else now
            if now - created <= days * DAY:
                counts.kept_fresh += 1
            elif artifact.flow_run_id is not None and str(artifact.flow_run_id) in in_use.run_ids:
                counts.kept_in_use += 1
            elif dry_run:
                counts.deleted += 1
            else:
                try:
                    client.delete_artifact(artifact.id)
                    counts.deleted += 1
                except ObjectNotFound:
                    pass
                except Exception as exc:  # counted; the next run tries again
                    counts.errors += 1
                    log.warning("retention: cannot delete artifact %s: %s", artifact.id, exc)
    return counts
