"""Read what Prefect recorded about a flow run's tasks (the counting is done by Prefect, not by us)."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterId

from tests.support.waiting import poll


def task_states(flow_run_id, expected: int, timeout: float = 20.0, last: str | None = "write-report") -> dict[str, str]:
    """Map task name -> final state name ("Completed" = really executed, "Cached" = reused), as soon as
    ``expected`` tasks and the run's ``last`` task have a final state (the server records them
    asynchronously, not in order); what there is after ``timeout`` otherwise (the caller's assertion then
    names what is missing)."""
    seen: dict[str, str] = {}

    def final() -> dict[str, str] | None:
        with get_client(sync_client=True) as client:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        seen.clear()
        seen.update({run.name.rsplit("-", 1)[0]: run.state.name for run in runs if run.state and run.state.is_final()})
        return dict(seen) if len(seen) >= expected and (last is None or last in seen) else None

    return poll(final, timeout, step=0.1, max_step=0.5) or dict(seen)


def review_task_states(state) -> dict[str, str]:
    """:func:`task_states` of a finished contract-review run: at least 5 tasks when it completed; when it failed, at
    least the fingerprint, the step that failed and the report (a review that stops at parse has only those 3)."""
    return task_states(state.state_details.flow_run_id, expected=5 if state.is_completed() else 3)


def executed(states: dict[str, str]) -> Counter:
    return Counter(state for state in states.values())


# The content-keyed steps of a review: executed once per contract content, then read from the cache.
MODEL_STEPS = {"parse-pdf", "prefilter", "extract-clauses"}


EVERY_RUN = {"annotate-contract"}  # writes the annotated copy on every run, by design (clausegate/pipeline/annotate.py)


def steps_by_state(states: dict[str, str], name: str) -> set[str]:
    """The tasks of ``task_states(...)`` that ended in state ``name`` (not those that run on every run by design)."""
    return {task for task, state in states.items() if state == name and task not in EVERY_RUN}


def review_artifact_keys(flow_run_id: str) -> list[str]:
    """The per-contract review artifacts (``review-*``) of a run."""
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return [a.key for a in found if (a.key or "").startswith("review-")]


@contextlib.contextmanager
def prefect_log_records(name: str = "prefect.task_runs"):
    """The records Prefect's ``name`` logger emits inside the block (its loggers do not reach pytest's caplog)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    target = logging.getLogger(name)
    target.addHandler(handler)
    try:
        yield records
    finally:
        target.removeHandler(handler)
