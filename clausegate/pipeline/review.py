"""The review flow body: one contract through the review's tasks (``clausegate.pipeline.tasks``, called
by name on the review's configured :class:`~clausegate.pipeline.tasks.ReviewTasks`), the model path
(``clausegate.pipeline.cascade``), the human gate and the report, inside whatever flow run calls it.

``flows/contract_review.py`` (the flow) and ``clausegate review`` make it a flow with :data:`REVIEW_FLOW_OPTIONS`
(an ``async`` one around this synchronous body: :mod:`clausegate.pipeline.sync_body`).
The nightly batch (:mod:`clausegate.pipeline.batch`) calls it directly inside its own runs
(``ask_person=False``), so a contract costs a few task runs instead of a flow run of its own.  There the
human gate is not asked (it would suspend the whole batch): a review that needs a person ends
``pending_decision`` and the batch sends that contract as its own contract-review deployment run, which
asks — with every finished step from the cache.

The big step results (document, passages, review) go into the next task as ``opaque(...)``: Prefect still links
the task to the run that made the value and hashes all of it for the cache key, but does not walk every page,
passage and clause looking for futures (``visit_collection``: a large share of a review's Prefect time).

A contract-review run (``ask_person=True``) never completes a gated review without a decision: if the
gate cannot wait (``GateError``) the review records the failure at step ``gate``, the report says so
and the run fails with the code.  And it acts only while its attempt is the run's current one
(:mod:`clausegate.runs.attempts`): before every step, the gate, the report and the run's result; a process
that hung while its run was crashed or requeued exits at the next check without touching the run.
"""

from __future__ import annotations

from datetime import date
from pathlib import PurePath

from prefect import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed, State
from prefect.utilities.annotations import opaque

from clausegate.errors import ClauseGateError, GateError
from clausegate.gates import run_gate
from clausegate.ops.budget import start_meter, stop_meter
from clausegate.pipeline.annotate import annotate_review
from clausegate.pipeline.cascade import cascade, check_timeouts, final_status, generate
from clausegate.pipeline.deadlines import schedule_reminder
from clausegate.pipeline.language_model import confirm_key_terms, read_in_its_language
from clausegate.pipeline.outcome import record_outcome
from clausegate.pipeline.sources import resolve_source
from clausegate.pipeline.tasks import configure, fingerprint_contract, offline_model_version
from clausegate.pipeline.versions import carry_step, with_carried
from clausegate.review import assemble
from clausegate.review.gate_reasons import with_tracked_change_gates
from clausegate.review.key_terms.attach import with_key_terms
from clausegate.review.money import eur_text
from clausegate.review.playbook import load_playbook
from clausegate.review.relocate import NotFound, Relocated, relocate
from clausegate.review.schemas import Cost, FilteredDocument, Notice, Review, ReviewOrigin, StepFailure
from clausegate.runs.attempts import ensure_current, fenced_exit
from clausegate.security.at_rest import SEALED_JSON


def review_run_name() -> str:
    """``review-<file name>``: the run's name in the UI."""
    return "review-" + PurePath(str(flow_run.parameters.get("source", "contract"))).name


# The one definition of the contract-review flow's options (flows/contract_review.py, `clausegate review`).
# The review is the run's persisted result (JSON, encrypted at rest: clausegate/security/at_rest.py), so the
# inbox API can return it by task id.
REVIEW_FLOW_OPTIONS = {"name": "contract-review", "flow_run_name": review_run_name, "validate_parameters": True,
                       "persist_result": True, "result_serializer": SEALED_JSON}


def review_contract(source: str, playbook: str = "default", extractor: str | None = None, out_dir: str = "reports",
                    *, ask_person: bool = True, annotate: bool = True, revises: str | None = None) -> Review | State:
    """Review one contract PDF; write JSON + Markdown reports to ``out_dir``.  Returns the review, or a
    Failed state carrying the partial review when a step stopped it.  ``ask_person=False``: never
    suspend for a gate; mark the review ``pending_decision`` instead (and skip the attempt checks:
    batch chunk runs never decide a gate), and publish no review artifact (the batch's summary lists it).
    With ``ask_person`` an exception leaves the review (and becomes the run's state) only while this
    attempt is the run's current one (:func:`~clausegate.runs.attempts.fenced_exit`).  ``annotate``: write the
    annotated copy of the file next to the report (:mod:`clausegate.pipeline.annotate`).  ``revises``: the earlier
    version's review id or file (:mod:`clausegate.pipeline.versions`)."""
    if not ask_person:
        return _review(source, playbook, extractor, out_dir, ask_person=False, annotate=annotate, revises=revises)
    with fenced_exit():
        return _review(source, playbook, extractor, out_dir, ask_person=True, annotate=annotate, revises=revises)


def _review(source: str, playbook: str, extractor: str | None, out_dir: str, *, ask_person: bool,
            annotate: bool = True, revises: str | None = None) -> Review | State:
    logger = get_run_logger()
    checkpoint = ensure_current if ask_person else _unchecked
    book = load_playbook(playbook)
    tasks = configure(book)  # every task with the playbook's step options, called by name below
    categories = tuple(book.categories)
    use = extractor or book.steps.extract.extractor
    check_timeouts(book, use)  # a step timeout that cannot hold the HTTP calls fails here, at load
    version = offline_model_version()

    contract = fingerprint_contract(resolve_source(source), book.steps.parse.max_file_mb)
    meter = start_meter(contract.contract_id)  # every paid model answer of this review, failed steps too
    logger.info("1/5 parsing %s (contract %s)", contract.filename, contract.contract_id[:12])
    document = filtered = None
    model_gate, unconfirmed, degraded = [], [], False  # what a model disputed / could not confirm
    stage = "parse"
    try:
        p = book.steps.parse
        checkpoint("parse")
        document = tasks.parse_contract(contract, p.max_chars, p.memory_mb, p.ocr, p.timeout_seconds)
        # keyed on the bytes: the same bytes under another name come back with the first name; this file's own
        document = document.model_copy(update={"filename": contract.filename})
        for identity in ("content", "text"):  # the text's words first; its own layout when a reuse cannot be placed
            stage = "prefilter"
            checkpoint("prefilter")
            logger.info("2/5 pre-filter: %d pages, %d categories", len(document.pages), len(categories))
            filtered = tasks.prefilter_passages(opaque(document), categories, version, identity)  # keyed on the text
            filtered, reused_from = own_text(filtered, contract.contract_id)
            elsewhere = filtered.origin is not None and filtered.origin.text_id not in (None, document.text_id)
            if elsewhere and placed(document, filtered, []) is None:  # its passages first, before any model step
                continue
            stage = "extract"
            checkpoint("extract")
            logger.info("3/5 extracting (%s) from %d passages on pages %s", use, len(filtered.passages),
                        filtered.pages_kept)
            extraction = tasks.extract_clauses(opaque(filtered), categories, version)
            extraction = extraction.model_copy(update={"contract_id": contract.contract_id})
            cascade_summary = key_terms = None
            costs = {}
            if use != "offline":
                outcome = cascade(document, filtered, extraction, book, use, tasks.ask_extraction_model)
                extraction, cascade_summary, costs["extract"] = outcome.extraction, outcome.summary, outcome.cost
                model_gate, unconfirmed, degraded = outcome.gate, outcome.unconfirmed, outcome.degraded
                key_terms = outcome.key_terms
            stage = "generate"
            checkpoint("generate")
            logger.info("4/5 suggestions for gated / high-risk clauses")
            generated = generate(extraction.clauses, book, costs.get("extract", Cost()), tasks.ask_generation_model)
            costs["generate"] = generated.cost
            degraded = degraded or generated.degraded
            suggestions, notices = generated.suggestions, generated.notices
            if not elsewhere:
                break  # computed on this layout: its locations are this document's
            moved = placed(document, filtered, extraction.clauses, suggestions, [*extraction.notices, *notices],
                           key_terms)
            if moved is None:
                model_gate, unconfirmed, degraded = [], [], False
                meter.discard_reused()  # the reused answers are not this review's: it computes its own
                continue
            extraction = extraction.model_copy(update={"clauses": moved.clauses,
                                                       "notices": moved.notices[:len(extraction.notices)]})
            filtered, suggestions, key_terms = moved.filtered, moved.suggestions, moved.key_terms
            notices = moved.notices[len(extraction.notices):]
            break
        if reused_from is not None:
            logger.info("same text as %s (reviewed %s): its pre-filter, extraction and model answers are reused",
                        reused_from.filename, reused_from.reviewed_at.isoformat(timespec="seconds"))
        custom = None
        if book.custom_categories:  # the team's own clause types: similarity to the playbook's examples
            custom = tasks.find_custom_clauses(opaque(document), tuple(book.custom_categories),
                                               tuple(book.high_risk), version)  # keyed on this document's text
            custom = custom.model_copy(update={"contract_id": contract.contract_id})
        stage = "review"
        review = assemble.assemble_review(document, filtered, extraction, playbook=book.name,
                                          gated=book.gated_categories, disputed=model_gate,
                                          possible_gates=book.possible_findings == "gate",
                                          min_confidence=book.steps.extract.min_confidence,
                                          protected=[*book.gated_categories, *book.high_risk,
                                                     *book.position_gated],
                                          cascade=cascade_summary,
                                          suggestions=suggestions, notices=notices,
                                          cost_by_step=costs, positions=book.positions, custom=custom)
        review = review.model_copy(update={"model_unconfirmed": unconfirmed, "text_id": document.text_id,
                                           "reused_from": reused_from, "key_terms": key_terms})
        # key terms, renewal dates and language (a contract not in English: warned and gated on Language)
        review = with_key_terms(review, document, today=date.today(), model=None if use == "offline" else use)
        # a contract not in English, with a model: the model reads the whole text in its language
        review = read_in_its_language(review, document, book, use, tasks.ask_extraction_model)
        review = confirm_key_terms(review, document, book, use)  # English: the model fills a term read nowhere
        review = with_tracked_change_gates(review, book.high_risk)  # the other side's changes in a high-risk clause
    except ClauseGateError as error:
        logger.error("%s stopped the review at step '%s' (a partial report is written): %s", error.code, stage, error)
        review = assemble.failed_review(contract_id=contract.contract_id, filename=contract.filename,
                                        playbook=book.name, step=stage, error=error, document=document,
                                        filtered=filtered)
    review = meter.settle(review)  # cost: this run's spend by step, and spend reused from cache
    stop_meter(meter)

    if annotate and ask_person and review.gated_categories:  # the annotated copy a gate links to (pending)
        review = annotate_review(review, contract, document, book, out_dir)
    carried = []
    review = review.model_copy(update={"flow_run_id": str(flow_run.id or "")})  # its review id, for --revises
    if revises and not review.failure:  # the earlier version: what changed, its decisions carried by the text
        review, carried = carry_step(review, document, book, revises)
    if ask_person:
        try:
            decisions, status, notices = run_gate(review, book)  # human gate: suspends here when a person must decide
        except GateError as error:  # it could not wait for a person: the run fails, never completes undecided
            failure = StepFailure(step="gate", code=error.code, message=str(error))
            review = review.model_copy(update={"failure": failure})
            decisions, status, notices = [], "partial_failure", []
    else:
        decisions, status, notices = deferred_gate(review)
    decisions, status = with_carried(carried, decisions, status)
    if not review.failure:
        status = final_status(status, degraded)  # complete on the offline result alone: degraded
    review = review.model_copy(update={"decisions": decisions, "status": status,
                                       "warnings": [*review.warnings, *notices]})
    if annotate and (review.annotated is None or decisions):  # next to the report, with the decision if one came
        review = annotate_review(review, contract, document, book, out_dir)
    checkpoint("report")
    paths = tasks.write_report(review, out_dir, artifact=ask_person)  # the batch: no artifact per contract
    logger.info("5/5 report: %s (cost %s, %d model calls; %s reused from cache)", ", ".join(paths),
                eur_text(review.cost.eur), review.cost.calls, eur_text(review.cost.reused_eur))
    checkpoint("finishing the run")
    if review.failure:
        # No data: a Failed state's result must be an exception (the partial review is in the report).
        return Failed(message=f"{review.failure.code} at step '{review.failure.step}': {review.failure.message} "
                              f"Partial report: {paths[0]}")
    if ask_person:  # a contract-review run of its own (a batch's reviews are tasks of the batch's run)
        record_outcome(review)  # the inbox's list reads it instead of decoding the review
        try:  # the renewal notice deadline: a reminder run scheduled on Prefect (clausegate/pipeline/deadlines.py)
            schedule_reminder(review)
        except Exception as exc:  # the review is done and its .ics written; a reminder that could not be scheduled
            logger.warning("the deadline reminder could not be scheduled: %s", exc)
    return review


def own_text(filtered: FilteredDocument, contract_id: str) -> tuple[FilteredDocument, ReviewOrigin | None]:
    """The text-keyed pre-filter result as this review's own (its ``contract_id``), and the earlier review of
    another file it came from (None: computed for this file, in this run or an earlier one).  The origin
    travels inside the cached result, so it names exactly the review whose computation is reused, also when
    two reviews of one text ran at once (each computed its own; the cache keeps one of them)."""
    origin = filtered.origin
    reused = origin if origin is not None and origin.contract_id != contract_id else None
    return filtered.model_copy(update={"contract_id": contract_id}), reused


def placed(document, filtered: FilteredDocument, clauses: list, suggestions: list = (), notices: list = (),
           key_terms=None) -> Relocated | None:
    """The reused results re-located in ``document`` (another layout of the same words), or None (logged) when a
    reused text has no single place in it: the review then computes this file's own (``identity="text"``)."""
    try:
        return relocate(document, filtered, list(clauses), list(suggestions), list(notices), key_terms)
    except NotFound as missing:
        get_run_logger().info("same words as %s in another layout, but this reused text has no single place in this "
                              "file: %r; computing this file's own", filtered.origin.filename, str(missing))
        return None


def deferred_gate(review: Review) -> tuple[list, str, list[Notice]]:
    """The gate outcome when this run may not wait for a person (batch chunk runs)."""
    if review.status != "complete" or not review.gated_categories:
        return [], review.status, []
    return [], "pending_decision", [Notice(
        code="CG-GATE-DEFERRED", message=f"{', '.join(review.gated_categories)} need a person's decision; the batch "
                                         "asks in a contract-review run of its own.")]


def _unchecked(where: str) -> None:
    """No attempt check (batch chunk runs: see ``review_contract``)."""
