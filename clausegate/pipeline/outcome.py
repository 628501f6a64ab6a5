"""A finished review's outcome as a label on its contract-review flow run, written as the run completes.

``clausegate.review.outcome`` = ``<review status>|<gated: 0/1>|<decided: 0/1>``: enough for a reader to tell done,
escalated and completed-without-a-decision apart without decoding the (sealed) review, e.g. the inbox's task list
(:mod:`clausegate.inbox.views`).  Best effort: a label that could not be written only makes that reader decode.
"""

from __future__ import annotations

import logging
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.runtime import flow_run

from clausegate.review.schemas import Review

OUTCOME_LABEL = "clausegate.review.outcome"
log = logging.getLogger("clausegate.pipeline")


def facts(review: Review) -> str:
    return f"{review.status}|{int(bool(review.gated_categories))}|{int(bool(review.decisions))}"


def record_outcome(review: Review) -> None:
    """Label this flow run with ``review``'s outcome (a no-op outside a flow run)."""
    run_id = flow_run.id
    if not run_id:
        return
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run_labels(UUID(str(run_id)), {OUTCOME_LABEL: facts(review)})
    except Exception as exc:  # only a shortcut for readers: they decode the review instead
        log.warning("run %s: the review's outcome label could not be written (%s)", run_id, type(exc).__name__)
