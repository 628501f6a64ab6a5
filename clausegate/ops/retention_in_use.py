"""What unfinished flow runs still need: the files retention must never delete.

For every flow run that is Scheduled, Pending, Running, Paused/Suspended (a gate waiting for a
person) or Cancelling: its ``source`` file (and, for a batch chunk's ``list:MANIFEST``, the manifest
and the files it lists) and the result record of every task run it has (a suspended run, resumed,
re-runs from the top and takes its finished steps from exactly those records).  If the Prefect API
cannot be asked, :func:`in_use` raises :class:`RetentionError` and nothing is deleted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterState, FlowRunFilterStateType
from prefect.client.schemas.objects import StateType

from clausegate.errors import ClauseGateError

IN_USE_FAILED = "CG-RETENTION-IN-USE-UNKNOWN"


class RetentionError(ClauseGateError):
    code = IN_USE_FAILED
    transient = True


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


def storage_key(data: Any) -> str | None:
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
                    chunk = FlowRunFilter(id=FlowRunFilterId(any_=ids[start:start + 50]))
                    page = api.read_task_runs(flow_run_filter=chunk, limit=200, offset=offset)
                    for task_run in page:
                        key = storage_key(task_run.state.data if task_run.state else None)
                        if key:
                            found.add(key)
                    if len(page) < 200:
                        break
                    offset += 200
    except ClauseGateError:
        raise
    except Exception as exc:  # the API is down or refuses: delete nothing
        raise RetentionError(f"cannot tell which files unfinished runs still need: the Prefect API failed "
                             f"({type(exc).__name__}: {exc}); nothing was deleted",
                             hint="check the Prefect server (`clausegate status`) and the credential; the next "
                                  "scheduled run tries again") from None
    return found
