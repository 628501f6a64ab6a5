"""The contract-review flow: one contract through the cached review steps, then the human gate.

The steps are :func:`clausegate.pipeline.review.review_contract`; this module only makes it a flow.
"""

from __future__ import annotations

from pathlib import PurePath

from prefect import flow
from prefect.runtime import flow_run

from clausegate.security.at_rest import SEALED_JSON
from clausegate.pipeline.review import review_contract


def _run_name() -> str:
    return "review-" + PurePath(str(flow_run.parameters.get("source", "contract"))).name


# The review is the run's persisted result (JSON, encrypted at rest: clausegate/security/at_rest.py), so the
# inbox API can return it by task id.
@flow(name="contract-review", flow_run_name=_run_name, validate_parameters=True, persist_result=True,
      result_serializer=SEALED_JSON)
def contract_review(source: str, playbook: str = "default", extractor: str | None = None, out_dir: str = "reports"):
    """Review one contract PDF against a playbook; write JSON + Markdown reports to ``out_dir``.

    ``extractor``: 'offline' (default: the playbook's) or a model block such as
    'anthropic-model/claude'; with a model the offline extractor still runs first (cascade).
    """
    return review_contract(source, playbook, extractor, out_dir)
