"""Retention: uploads, persisted results and reports are deleted once older than their period.

Plain logic; the scheduled flow is ``flows/retention.py`` (deployment ``retention``, daily).

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

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from clausegate.errors import ClauseGateError, ConfigurationError

log = logging.getLogger(__name__)

ENV_DAYS = "CLAUSEGATE_RETENTION_DAYS"
DEFAULT_DAYS = 30.0
IN_USE_FAILED = "CG-RETENTION-IN-USE-UNKNOWN"
DELETE_FAILED = "CG-RETENTION-DELETE"
TOMBSTONE_KEY = "retention_tombstone"
DAY = 86400.0


class RetentionError(ClauseGateError):
    code = IN_USE_FAILED
    transient = True


def retention_days(value: float | None = None) -> float:
    """The global period: ``value`` if given, else ``CLAUSEGATE_RETENTION_DAYS``, else 30."""
    if value is None:
        raw = os.environ.get(ENV_DAYS, "").strip()
        if not raw:
            return DEFAULT_DAYS
        try:
            value = float(raw)
        except ValueError:
            raise ConfigurationError(f"{ENV_DAYS}={raw!r} is not a number of days",
                                     hint=f"set {ENV_DAYS} to a positive number (e.g. 30) or unset it") from None
    if not value > 0:
        raise ConfigurationError(f"the retention period must be positive, not {value!r} days",
                                 hint=f"set {ENV_DAYS} (or the flow's `days`) to a positive number")
    return float(value)


# ------------------------------------------------------------------------------------ in use
ACTIVE_STATE_TYPES = ("SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING")


@dataclass
class InUse:
    paths: set[Path] = field(default_factory=set)
    runs: int = 0
    run_ids: set[str] = field(default_factory=set)

    def __contains__(self, path: Path) -> bool:
        return _norm(path) in self.paths

    def add(self, path: str | Path) -> None:
        self.paths.add(_norm(Path(path)))


def _norm(path: Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def _storage_key(data: Any) -> str | None:
    """The result record path in a task/flow run state's data (``ResultRecordMetadata`` or its dict)."""
    if data is None:
        return None
    key = getattr(data, "storage_key", None)
    if key is None and isinstance(data, dict):
        key = data.get("storage_key") or (data.get("metadata") or {}).get("storage_key")
    if key is None:
        metadata = getattr(data, "metadata", None)
        key = getattr(metadata, "storage_key", None)
    return str(key) if key else None


def _protect_source(found: InUse, source: Any) -> None:
    if not isinstance(source, str) or not source or "\x00" in source:
        return
    if source.startswith("list:"):  # a batch chunk: the manifest and every contract it lists
        manifest = Path(source[5:])
        found.add(manifest)
        try:
            for line in manifest.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    found.add(line.strip())
        except (OSError, UnicodeDecodeError):
            pass
        return
    found.add(source)


def in_use() -> InUse:
    """Files unfinished flow runs still need (see the module docstring).  RetentionError: unknown."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    found = InUse()
    try:
        with get_client(sync_client=True) as api:
            active = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType(t) for t in ACTIVE_STATE_TYPES])))
            by_id = {}
            for _ in range(2):  # twice: a run leaving the set between pages shifts the next page by one
                offset = 0
                while True:
                    page = api.read_flow_runs(flow_run_filter=active, limit=200, offset=offset)
                    by_id.update((run.id, run) for run in page)
                    if len(page) < 200:
                        break
                    offset += 200
            runs = list(by_id.values())
            found.runs = len(runs)
            found.run_ids = {str(run.id) for run in runs}
            for run in runs:
                _protect_source(found, (run.parameters or {}).get("source"))
            ids = [run.id for run in runs]
            for start in range(0, len(ids), 50):
                offset = 0
                while True:
                    page = api.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids[start:start + 50])),
                                              limit=200, offset=offset)
                    for task_run in page:
                        key = _storage_key(task_run.state.data if task_run.state else None)
                        if key:
                            found.add(key)
                    if len(page) < 200:
                        break
                    offset += 200
    except ClauseGateError:
        raise
    except Exception as exc:  # noqa: BLE001 - the API is down or refuses: delete nothing
        raise RetentionError(f"cannot tell which files unfinished runs still need: the Prefect API failed "
                             f"({type(exc).__name__}: {exc}); nothing was deleted",
                             hint="check the Prefect server (`clausegate status`) and the credential; the next "
                                  "scheduled run tries again") from None
    return found


# ------------------------------------------------------------------------------------ sweep
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
    for root, dirs, names in os.walk(folder, followlinks=False):
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
    for root, dirs, names in os.walk(folder, topdown=False):
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
            when = when.replace(tzinfo=timezone.utc)
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
    from clausegate.security.at_rest import KEY_CHECK_FILE

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
                       f"{datetime.now(timezone.utc).date().isoformat()}; this record keeps the batch from "
                       "reviewing the contract again",
    }


def _write_tombstone(path: Path, report: dict[str, Any], days: float) -> None:
    tmp = path.with_name(f".{path.name}.retention.tmp")
    tmp.write_text(json.dumps(tombstone(report, days), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def sweep_reports(folder: Path, *, days: float, playbook_days: Callable[[str], float | None] = lambda name: None,
                  in_use: InUse | None = None, now: float | None = None, dry_run: bool = False) -> AreaCounts:
    """Reports (``<stem>.json`` + ``<stem>.md``) and batch summaries/manifests under ``folder``."""
    now = time.time() if now is None else now
    in_use = in_use or InUse()
    counts = AreaCounts("reports", str(folder))
    if not folder.is_dir():
        return counts
    limit_cache: dict[Path, float] = {}

    def limit_for(path: Path) -> float:
        json_path = path.with_suffix(".json")
        if json_path not in limit_cache:
            meta = _report_meta(json_path) if json_path.is_file() else None
            own = playbook_days(str(meta.get("playbook"))) if meta and meta.get("playbook") else None
            limit_cache[json_path] = min(days, own) if own else days
        return limit_cache[json_path]

    for path, st in _files(folder):
        period = limit_for(path) if path.suffix in (".json", ".md") else days
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
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort
    from prefect.exceptions import ObjectNotFound

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
                except Exception as exc:  # noqa: BLE001 - counted; the next run tries again
                    counts.errors += 1
                    log.warning("retention: cannot delete artifact %s: %s", artifact.id, exc)
    return counts


def playbook_retention_days(name: str) -> float | None:
    """``retention.days`` of a playbook by name (built-in, or in CLAUSEGATE_INBOX_PLAYBOOKS_DIR); None if unknown."""
    from clausegate.review.playbook import load_playbook

    try:
        from clausegate.inbox.settings import InboxSettings

        ref = InboxSettings().playbooks().get(name, name)
    except Exception:  # noqa: BLE001 - inbox settings not usable here: built-in names only
        ref = name
    try:
        return load_playbook(ref).retention.days
    except Exception:  # noqa: BLE001 - an unknown / invalid playbook: the global period
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
