"""Flow runs as ClauseGate reads them: the CG-RUN-* code of a run's final state, and the one place
that polls flow runs until they settle (used by the batch for its gate runs and its chunk runs).

Also when a requeued run may start again (:func:`not_before`).

Codes (runbook: docs/runbook.md): ``CG-RUN-CRASHED``, ``CG-RUN-CANCELLED``, ``CG-RUN-FAILED`` (a failed
run whose message names no code).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.client.schemas.objects import FlowRun

RUN_CRASHED = "CG-RUN-CRASHED"
RUN_CANCELLED = "CG-RUN-CANCELLED"
RUN_FAILED = "CG-RUN-FAILED"
_CODE = re.compile(r"\bCG-[A-Z0-9]+(?:-[A-Z0-9]+)*\b")


def error_code_from_message(message: str | None, default: str = RUN_FAILED) -> str:
    """The first CG code in a state message (``default`` when it names none)."""
    match = _CODE.search(message or "")
    return match.group(0) if match else default


def settled_runs(run_ids: Iterable[Any], *, paused_counts: bool = True) -> dict[Any, FlowRun]:
    """One read of ``run_ids``: those in a final state (or, with ``paused_counts``, waiting at a gate:
    Suspended / Paused), by id."""
    ids = list(run_ids)
    if not ids:
        return {}
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=len(ids))
    return {run.id: run for run in runs
            if run.state is not None and (run.state.is_final() or (paused_counts and run.state.is_paused()))}


def wait_for_runs(run_ids: Iterable[Any], *, poll_seconds: float, deadline: float | None,
                  paused_counts: bool = False) -> dict[Any, FlowRun]:
    """Poll until every run settled or ``deadline`` (``time.monotonic()``) passed; the settled runs.
    A failed read (the API blinked) is tried again at the next poll."""
    pending = set(run_ids)
    settled: dict[Any, FlowRun] = {}
    while pending and (deadline is None or time.monotonic() < deadline):
        time.sleep(poll_seconds)
        try:
            found = settled_runs(pending, paused_counts=paused_counts)
        except Exception:  # e.g. the API blinked: try again next round
            continue
        settled.update(found)
        pending -= set(found)
    return settled


REPLAY_SECONDS = 75  # Prefect replays the last minute of events to a new event subscriber


def not_before(history: list) -> datetime | None:
    """When a requeued attempt may start: ``REPLAY_SECONDS`` after the run's last Cancelling (none: at once).

    A process worker watches each attempt it starts for a ``prefect.flow-run.Cancelling`` event of that run id,
    on a new event subscription, and Prefect replays the last minute of events to a new subscriber
    (prefect/events/clients.py). An attempt started within that minute of the Cancelling that stopped its
    predecessor may be given that old event once its process is registered, and killed (SIGTERM) 20 ms after it
    starts. The time is the server's own (the state's timestamp), so no clock needs to agree."""
    cancelling = [s.timestamp for s in history if s.is_cancelling()]
    return cancelling[-1] + timedelta(seconds=REPLAY_SECONDS) if cancelling else None
