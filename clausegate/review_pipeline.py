"""One contract through the review steps (cached Prefect tasks), inside whatever flow run calls it.

``contract_review`` (the flow) is a thin wrapper around :func:`review_contract`.  The nightly batch's
``chunks`` dispatch calls it directly inside its chunk runs, so a contract costs a few task runs
(recorded through events) instead of a subflow run (several synchronous API writes, which a
SQLite-backed server serialises).  There the human gate is not asked (it would suspend the whole
chunk): a review that needs a person ends ``pending_decision`` and the batch sends that contract as
its own contract-review deployment run, which asks — with every finished step from the cache.
"""

from __future__ import annotations

from prefect import get_run_logger
from prefect.states import Failed, State

from clausegate import model_steps, steps
from clausegate.errors import ClauseGateError
from clausegate.gates import run_gate
from clausegate.playbook import load_playbook
from clausegate.schemas import Cost, Notice, Review
from clausegate.tasks import configured, fingerprint_contract, offline_model_version


def review_contract(source: str, playbook: str = "default", extractor: str | None = None, out_dir: str = "reports",
                    *, ask_person: bool = True) -> Review | State:
    """Review one contract PDF; write JSON + Markdown reports to ``out_dir``.  Returns the review, or a
    Failed state carrying the partial review when a step stopped it.  ``ask_person=False``: never
    suspend for a gate; mark the review ``pending_decision`` instead."""
    logger = get_run_logger()
    book = load_playbook(playbook)
    run = configured(book)
    categories = tuple(book.categories)
    use = extractor or book.steps.extract.extractor
    version = offline_model_version()

    contract = fingerprint_contract(source, book.steps.parse.max_file_mb)
    logger.info("1/5 parsing %s (contract %s)", contract.filename, contract.contract_id[:12])
    document = filtered = None
    stage = "parse"
    try:
        p = book.steps.parse
        document = run["parse"](contract, p.max_chars, p.memory_mb, p.ocr, p.timeout_seconds)
        stage = "prefilter"
        logger.info("2/5 pre-filter: %d pages, %d categories", len(document.pages), len(categories))
        filtered = run["prefilter"](document, categories, version)
        stage = "extract"
        logger.info("3/5 extracting (%s) from %d passages on pages %s", use, len(filtered.passages), filtered.pages_kept)
        extraction = run["extract"](filtered, categories, version)
        cascade = None
        costs = {}
        if use != "offline":
            outcome = model_steps.cascade(document, filtered, extraction, book, use)
            extraction, cascade, costs["extract"] = outcome.extraction, outcome.summary, outcome.cost
        stage = "generate"
        logger.info("4/5 suggestions for gated / high-risk clauses")
        generated = model_steps.generate(contract.contract_id, extraction.clauses, book, costs.get("extract", Cost()))
        costs["generate"] = generated.cost
        stage = "review"
        review = steps.assemble_review(document, filtered, extraction, playbook=book.name, gated=book.gated_categories,
                                       min_confidence=book.steps.extract.min_confidence, cascade=cascade,
                                       suggestions=generated.suggestions, notices=generated.notices, cost_by_step=costs)
    except ClauseGateError as error:
        logger.error("%s stopped the review at step '%s' (a partial report is written): %s", error.code, stage, error)
        review = steps.failed_review(contract_id=contract.contract_id, filename=contract.filename, playbook=book.name,
                                     step=stage, error=error, document=document, filtered=filtered)

    if ask_person:
        decisions, status, notices = run_gate(review, book)  # human gate: suspends here when a person must decide
    else:
        decisions, status, notices = deferred_gate(review)
    review = review.model_copy(update={"decisions": decisions, "status": status, "warnings": [*review.warnings, *notices]})
    paths = run["report"](review, out_dir)
    logger.info("5/5 report: %s (cost €%.4f, %d model calls)", ", ".join(paths), review.cost.eur, review.cost.calls)
    if review.failure:
        # No data: a Failed state's result must be an exception (the partial review is in the report).
        return Failed(message=f"{review.failure.code} at step '{review.failure.step}': {review.failure.message} "
                              f"Partial report: {paths[0]}")
    return review


def deferred_gate(review: Review) -> tuple[list, str, list[Notice]]:
    """The gate outcome when this run may not wait for a person (batch chunk runs)."""
    if review.status != "complete" or not review.gated_categories:
        return [], review.status, []
    return [], "pending_decision", [Notice(
        code="CG-GATE-DEFERRED", message=f"{', '.join(review.gated_categories)} need a person's decision; the batch "
                                         "asks in a contract-review run of its own.")]
