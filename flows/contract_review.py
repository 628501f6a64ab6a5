"""The contract-review flow: thin wiring of cached tasks in review order."""

from __future__ import annotations

from pathlib import PurePath

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed

from clausegate import model_steps, steps
from clausegate.errors import ClauseGateError
from clausegate.gates import run_gate
from clausegate.playbook import load_playbook
from clausegate.schemas import Cost
from clausegate.tasks import configured, fingerprint_contract, offline_model_version


def _run_name() -> str:
    return "review-" + PurePath(str(flow_run.parameters.get("source", "contract"))).name


# The review is the run's persisted result (JSON), so the inbox API can return it by task id.
@flow(name="contract-review", flow_run_name=_run_name, validate_parameters=True, persist_result=True,
      result_serializer="json")
def contract_review(source: str, playbook: str = "default", extractor: str | None = None, out_dir: str = "reports"):
    """Review one contract PDF against a playbook; write JSON + Markdown reports to ``out_dir``.

    ``extractor``: 'offline' (default: the playbook's) or a model block such as
    'anthropic-model/claude'; with a model the offline extractor still runs first (cascade).
    """
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

    decisions, status, notices = run_gate(review, book)  # human gate: suspends here when a person must decide
    review = review.model_copy(update={"decisions": decisions, "status": status, "warnings": [*review.warnings, *notices]})
    paths = run["report"](review, out_dir)
    logger.info("5/5 report: %s (cost €%.4f, %d model calls)", ", ".join(paths), review.cost.eur, review.cost.calls)
    if review.failure:
        return Failed(message=f"{review.failure.code} at step '{review.failure.step}': report {paths[0]}", data=review)
    return review
