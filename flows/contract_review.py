"""The contract-review flow: one contract through the cached review steps, then the human gate.

The steps are :func:`clausegate.pipeline.review.review_contract`; this module only makes it a flow.  The flow
is ``async`` only to use Prefect's async engine, which ends a run without a ~1 s wait; the body is synchronous
(:mod:`clausegate.pipeline.sync_body`).  Call it with ``asyncio.run(contract_review(...))`` outside a flow.
"""

from __future__ import annotations

from prefect import flow

from clausegate.pipeline import parameters as p
from clausegate.pipeline.review import REVIEW_FLOW_OPTIONS, review_contract
from clausegate.pipeline.sync_body import run_sync_body


@flow(**REVIEW_FLOW_OPTIONS)
async def contract_review(source: p.ContractSource, playbook: p.Playbook = "default", extractor: p.Extractor = None,
                    out_dir: p.OutDir = "reports", revises: p.Revises = None):
    """Review one contract (PDF, Word .docx or UTF-8 text, sniffed from its bytes) against a playbook; write JSON +
    Markdown reports to ``out_dir``.

    ``extractor``: 'offline' (default: the playbook's) or a model block such as
    'anthropic-model/claude'; with a model the offline extractor still runs first (cascade).  ``revises``: the
    earlier version's review id or file (what changed; decisions carried by the clause's text).
    """
    return await run_sync_body(review_contract, source, playbook, extractor, out_dir, revises=revises)
