"""Every Prefect task of a review, and the one place their options are set (:func:`configure`).

Each task wraps one plain step (``clausegate.review.assemble``, the PDF sandbox, the report) or one
model call (``clausegate.pipeline.model_calls``) with caching, persistence, retries and timeouts.
The flow body (``clausegate.pipeline.review``) calls them by name on the :class:`ReviewTasks` that
``configure`` returns, so every task of a review gets its playbook's step options the same way.

Cache keys come from the task's inputs + source code, never from the run id, so a rerun, a
resumed run and a retried run all reuse finished work.  The parse is keyed on the file (its sha256,
``contract_id``, never its path: an edited file gets a new key); everything after it on the text
(``TEXT_KEYED``: the document enters as its ``content_id``, the words without their layout, the
pre-filter's result without the file's id), so a re-saved PDF, the .docx of the same text or another
file with it reuses the pre-filter, the extraction and, through their prompts (which carry no file
hash or name), the model answers.  The pre-filter's result records the review that computed it
(``FilteredDocument.origin``), so a review that takes it from the cache can say which one it reused
(``Review.reused_from``); when that review's layout was another (a PDF's pages, a .docx's parts), the
flow re-locates every reused passage and finding in this file before it is reported
(``clausegate.review.relocate``) or, when one cannot be placed, computes this file's own
(``identity="text"``).
Model-dependent steps take the offline model's version as an input, so retraining invalidates
their cache.  A model call's key is the rendered prompt + the provider's configuration (block
name, models, URLs, never the key) + the task's source; budget inputs are left out, so a rerun
finds the finished call in the cache whatever has been spent since.

Persisted results are encrypted (``clausegate.security.at_rest.SEALED_PICKLE``, Prefect serializer type
``clausegate-fernet``), and a sealed upload is read through its decrypted bytes, which are also what
the contract id hashes: a sealed upload and the same plain PDF share one contract id and one cache.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from prefect import Task, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE, CachePolicy
from prefect.runtime import flow_run
from prefect.utilities.annotations import BaseAnnotation, opaque

from clausegate.config import settings
from clausegate.errors import BudgetExceeded
from clausegate.pipeline.model_calls import (
    BudgetContext,
    ModelExtraction,
    ModelSuggestions,
    ProviderRef,
    call_model,
    skipped,
    used_in_part,
)
from clausegate.providers.retry import MODEL_RETRY_POLICY, retry_condition
from clausegate.review import assemble, schemas
from clausegate.review.custom_categories import CustomCategory
from clausegate.review.document import formats, sandbox
from clausegate.review.document.codes import PARSER_VERSION
from clausegate.review.llm import extract as llm_extract
from clausegate.review.llm.extract import ExtractionPrompt, ModelAnswer, ground_absences, ground_answer
from clausegate.review.llm.redlines import GenerationAnswer, GenerationPrompt, ground_suggestions
from clausegate.review.llm.salvage import salvaged_answer, salvaged_suggestions
from clausegate.review.offline.model import META_NAME, MODEL_DIR
from clausegate.review.playbook import Playbook, StepPolicy
from clausegate.review.redact import redact_review
from clausegate.review.report import SEALED_SUFFIX, render_markdown, report_paths, write_report
from clausegate.review.schemas import (
    ContractSource,
    Extraction,
    FilteredDocument,
    ParsedDocument,
    Review,
    ReviewOrigin,
)
from clausegate.runs.timing import timed_step
from clausegate.security import at_rest, key_canary

# ---------------------------------------------------------------- cache keys


class ResultSchema(CachePolicy):
    """Cache key part from the source of the modules that define what results hold (pydantic models).

    TASK_SOURCE sees only the task function: a field added to ``Clause`` would otherwise let a rerun
    unpickle an old result without it (AttributeError downstream).  Any change there is a new key.
    """

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        return result_schema_version()


RESULT_MODULES = (schemas, llm_extract)  # clausegate/review/schemas.py, clausegate/review/llm/extract.py


def result_schema_version() -> str:
    digest = hashlib.sha256()
    for module in RESULT_MODULES:
        digest.update(inspect.getsource(module).encode("utf-8"))
    return digest.hexdigest()[:16]


RESULT_SCHEMA = ResultSchema()
MODEL_CALL_KEYED = (INPUTS - "budget") + TASK_SOURCE + RESULT_SCHEMA


class ContractContent(CachePolicy):
    """Cache key from the contract's content hash and the parser's version: path and file name play no part."""

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        return f"{inputs['source'].contract_id}:{PARSER_VERSION}"


CONTENT_KEYED = (INPUTS - "source") + TASK_SOURCE + RESULT_SCHEMA + ContractContent()


class TextContent(CachePolicy):
    """Cache key from the contract's text, not its file: a ``document`` input enters as its ``content_id`` (the
    words, without layout) when the task's ``identity`` input is ``"content"``, else as its ``text_id`` (the words
    and their pages); a ``filtered`` one as its passages and counts (its ``contract_id`` and ``origin`` left out)."""

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        parts = []
        for name in ("document", "filtered"):
            value = inputs.get(name)
            if isinstance(value, BaseAnnotation):  # opaque(...) as passed by the flow body
                value = value.unwrap()
            if isinstance(value, ParsedDocument):
                by_content = inputs.get("identity") == "content"
                parts.append(f"{name}:" + (f"content:{value.content_id}" if by_content else value.text_id))
            elif isinstance(value, FilteredDocument):
                dumped = value.model_dump(mode="json", exclude={"contract_id", "origin"})
                parts.append(f"{name}:" + hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest())
        return "|".join(parts) or None


TEXT_KEYED = (INPUTS - "document" - "filtered") + TASK_SOURCE + RESULT_SCHEMA + TextContent()


class ReviewContent(CachePolicy):
    """Cache key from what a review says, not which run computed it (its ``flow_run_id`` left out): a rerun of a
    finished review reuses its report, which names the run that wrote it."""

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        review = inputs.get("review")
        if isinstance(review, BaseAnnotation):
            review = review.unwrap()
        if not isinstance(review, Review):
            return None
        dumped = review.model_dump(mode="json", exclude={"flow_run_id"})
        return "review:" + hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()


REPORT_KEYED = (INPUTS - "review") + TASK_SOURCE + RESULT_SCHEMA + ReviewContent()


_COMMON: dict[str, Any] = dict(persist_result=True, result_serializer=at_rest.SEALED_PICKLE,
                               retry_condition_fn=retry_condition)
_MODEL_CALL: dict[str, Any] = dict(cache_policy=MODEL_CALL_KEYED, persist_result=True,
                                   result_serializer=at_rest.SEALED_PICKLE, **MODEL_RETRY_POLICY)

# ---------------------------------------------------------------- the tasks, in the order a review runs them


@task(name="fingerprint", cache_policy=NO_CACHE)
@timed_step("parse")  # the batch summary's "where the time went"
def fingerprint_contract(source: str, max_file_mb: float) -> ContractSource:
    """Read the file and hash it: always runs, so an edited file is never mistaken for the old one.

    First step of every review, so it also checks the at-rest key against the result storage
    (``CG-AT-REST-KEY`` before any cached step is looked up; see clausegate/security/at_rest.py).
    """
    at_rest.check_result_key()
    key_canary.check_stack_key()  # the stack's key (clausegate/security/key_canary.py), when storage is remote too
    max_bytes = int(max_file_mb * 1024 * 1024)
    with at_rest.plaintext_path(source, max_plain_bytes=max_bytes) as plain:
        if plain is None:  # a plain file (e.g. `clausegate review FILE`)
            return sandbox.fingerprint(source, max_bytes=max_bytes)
        found = sandbox.fingerprint(plain, max_bytes=max_bytes)
    original = Path(source).expanduser()
    return found.model_copy(update={"path": str(original.absolute()), "filename": original.name})


@task(name="parse-pdf", cache_policy=CONTENT_KEYED, **_COMMON)
@timed_step("parse")  # the batch summary's "where the time went"
def parse_contract(source: ContractSource, max_chars: int, memory_mb: int, ocr: str,
                   time_cap_seconds: float) -> ParsedDocument:
    # PDF, Word .docx or UTF-8 text, sniffed from the bytes (clausegate/review/document/formats.py), which are
    # re-hashed first (CG-PDF-CHANGED if they differ).  A sealed upload is handed over as an in-memory view of its
    # decrypted bytes (never written to disk).
    with at_rest.plaintext_path(source.path, max_plain_bytes=source.size_bytes) as plain:
        view = source if plain is None else source.model_copy(update={"path": str(plain)})
        return formats.parse_document(view, max_chars=max_chars, timeout_seconds=time_cap_seconds,
                                      memory_mb=memory_mb, ocr=ocr, pool_size=settings().parse_pool_size)


@task(name="prefilter", cache_policy=TEXT_KEYED, **_COMMON)
@timed_step("prefilter")  # the batch summary's "where the time went"
def prefilter_passages(document: ParsedDocument, categories: tuple[str, ...], model_version: str,
                       identity: str = "text") -> FilteredDocument:
    """Keyed on the text (``TEXT_KEYED``; ``identity`` "content": on the words alone, so a PDF and the .docx of the
    same text share it); the result names the review that computed it and the layout its locations are in
    (``origin``: a review of another layout re-locates them, ``clausegate.review.relocate``)."""
    filtered = assemble.prefilter_step(document, categories)
    origin = ReviewOrigin(contract_id=filtered.contract_id, filename=document.filename,
                          reviewed_at=datetime.now(UTC), flow_run_id=str(flow_run.id or ""), text_id=document.text_id)
    return filtered.model_copy(update={"origin": origin})


@task(name="extract-clauses", cache_policy=TEXT_KEYED, **_COMMON)
@timed_step("extract")  # the batch summary's "where the time went"
def extract_clauses(filtered: FilteredDocument, categories: tuple[str, ...], model_version: str) -> Extraction:
    return assemble.extract_step(filtered, categories)


@task(name="find-custom-clauses", cache_policy=TEXT_KEYED, **_COMMON)
@timed_step("extract")  # the batch summary's "where the time went"
def find_custom_clauses(document: ParsedDocument, categories: tuple[CustomCategory, ...], high_risk: tuple[str, ...],
                        model_version: str) -> Extraction:
    """The playbook's custom categories (their definitions are inputs: an edited example is a new key); keyed on
    the text like the pre-filter, and on the offline model's version (its vocabulary and idf make the vectors)."""
    return assemble.custom_step(document, categories, high_risk)


@task(name="ask-extraction-model", **_MODEL_CALL)
@timed_step("extract")  # the batch summary's "where the time went"
def ask_extraction_model(prompt: ExtractionPrompt, ref: ProviderRef, max_tokens: int,
                         budget: BudgetContext) -> ModelExtraction:
    try:
        call = call_model(ref, prompt.system, prompt.user, ModelAnswer, max_tokens, budget, step="extract")
    except BudgetExceeded as skip:
        return skipped(skip)
    if call.answer is not None:
        clauses, notices = ground_answer(call.answer, prompt, model=call.model)
        absent, dropped = ground_absences(call.answer, prompt)
        return ModelExtraction(clauses=clauses, absent=absent, notices=[*notices, *dropped], cost=call.cost,
                               model=call.model, paid_by=call.paid_by)
    clauses, notices = ground_answer(salvaged_answer(call.unused), prompt, model=call.model)
    result = ModelExtraction(clauses=clauses, notices=notices, cost=call.cost, model=call.model, paid_by=call.paid_by,
                             answered=sorted({c.category for c in clauses}))
    return used_in_part(call, result, [f"{c.category} (p. {c.pages[0]})" for c in clauses])


@task(name="ask-generation-model", **_MODEL_CALL)
@timed_step("suggestions")  # the batch summary's "where the time went"
def ask_generation_model(prompt: GenerationPrompt, ref: ProviderRef, max_tokens: int,
                         budget: BudgetContext) -> ModelSuggestions:
    try:
        call = call_model(ref, prompt.system, prompt.user, GenerationAnswer, max_tokens, budget, step="generate")
    except BudgetExceeded as skip:
        return skipped(skip)
    if call.answer is not None:
        suggestions, notices = ground_suggestions(call.answer, prompt, model=call.model)
        return ModelSuggestions(suggestions=suggestions, notices=notices, cost=call.cost, model=call.model,
                                paid_by=call.paid_by)
    suggestions, notices = ground_suggestions(salvaged_suggestions(call.unused), prompt, model=call.model)
    result = ModelSuggestions(suggestions=suggestions, notices=notices, cost=call.cost, model=call.model,
                              paid_by=call.paid_by, answered=sorted({s.category for s in suggestions}))
    return used_in_part(call, result, [f"a redline for {s.category}" for s in suggestions])


@task(name="write-report", cache_policy=REPORT_KEYED, **_COMMON)
@timed_step("report")  # the batch summary's "where the time went"
def publish_report(review: Review, out_dir: str, artifact: bool = True) -> list[str]:
    """Write the JSON + Markdown reports; ``artifact``: also publish the review as the run's Markdown artifact
    (a contract-review run).  The nightly batch passes False: one API write per contract was most of its
    report step, and its summary artifact lists every contract (the reports are in ``out_dir``)."""
    config = settings()
    shown = redact_review(review) if config.strict_text else review  # strict: no clause text leaves the seal
    json_path, md_path = write_report(shown, out_dir, private=config.strict_text)
    if config.strict_text and config.seal_reports:
        full = json.dumps(review.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
        at_rest.write_sealed(json_path.with_name(json_path.name + SEALED_SUFFIX), full)
    if artifact:
        create_markdown_artifact(
            key=f"review-{review.contract_id[:16]}",
            markdown=render_markdown(shown),
            description=f"ClauseGate review of {review.filename} ({review.status})",
        )
    return [str(json_path), str(md_path)]


def offline_model_version() -> str:
    """Version of the packaged offline model (read from its metadata, without loading the weights)."""
    return str(json.loads((MODEL_DIR / META_NAME).read_text(encoding="utf-8"))["version"])


# ---------------------------------------------------------------- the one options applier


@dataclass(frozen=True)
class ReviewTasks:
    """The review's tasks with its playbook's step options applied (see :func:`configure`); the
    attributes carry the task functions' names.  ``fingerprint_contract`` is not here: it runs before
    the playbook's steps, uncached, with its defaults."""

    parse_contract: Task
    prefilter_passages: Task
    extract_clauses: Task
    find_custom_clauses: Task
    ask_extraction_model: Task
    ask_generation_model: Task
    publish_report: Task

    def write_report(self, review: Review, out_dir: str, *, artifact: bool) -> list[str]:
        """Run ``publish_report`` for ``review``.  Writing the files is its side effect, so a cached
        result counts only while both files are on disk: when one is missing (deleted to re-review, or
        never written) the task runs with ``refresh_cache`` and its cache record is written anew."""
        task_obj = self.publish_report
        if not all(path.is_file() for path in report_paths(review, out_dir)):
            task_obj = task_obj.with_options(refresh_cache=True)
        return task_obj(opaque(review), out_dir, artifact=artifact)


def cache_expiration(book: Playbook) -> timedelta:
    """How long the playbook's cached results live: ``cache.expiration_days``, capped by
    ``retention.days`` (its cached results expire, and the retention flow deletes them, no later than
    its reports)."""
    days = book.cache.expiration_days
    if book.retention.days is not None:
        days = min(days, book.retention.days)
    return timedelta(days=days)


def with_step_options(task_obj: Task, policy: StepPolicy, expiry: timedelta) -> Task:
    """``task_obj`` with a step's timeout and retries and the playbook's cache expiration."""
    return task_obj.with_options(timeout_seconds=policy.timeout_seconds, retries=policy.retries,
                                 retry_delay_seconds=policy.retry_delay_seconds, cache_expiration=expiry)


def configure(book: Playbook) -> ReviewTasks:
    """Every task of a review with the playbook's per-step options (``steps.*``: a model call runs
    under its step's policy, extraction's or generation's) and :func:`cache_expiration`."""
    expiry, steps = cache_expiration(book), book.steps
    return ReviewTasks(
        parse_contract=with_step_options(parse_contract, steps.parse, expiry),
        prefilter_passages=with_step_options(prefilter_passages, steps.prefilter, expiry),
        extract_clauses=with_step_options(extract_clauses, steps.extract, expiry),
        find_custom_clauses=with_step_options(find_custom_clauses, steps.extract, expiry),
        ask_extraction_model=with_step_options(ask_extraction_model, steps.extract, expiry),
        ask_generation_model=with_step_options(ask_generation_model, steps.generate, expiry),
        publish_report=with_step_options(publish_report, steps.report, expiry),
    )
