"""Prefect tasks: each wraps one plain step with caching, persistence, retries and timeouts.

Cache keys come from the task's inputs + source code, never from the run id, so a rerun, a
resumed run and a retried run all reuse finished work.  The document enters the cache key
through its sha256 (``contract_id``), never through its path: an edited file gets a new key.
Model-dependent steps take the offline model's version as an input, so retraining invalidates
their cache.

Persisted results are encrypted (``clausegate.security.at_rest.SEALED_PICKLE``, Prefect serializer type
``clausegate-fernet``), and a sealed upload is read through its decrypted bytes, which are also what
the contract id hashes: a sealed upload and the same plain PDF share one contract id and one cache.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from datetime import timedelta
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE, CachePolicy

from clausegate.security import at_rest

from clausegate.review.llm import extract

from clausegate.review.document import sandbox

from clausegate.review import schemas

from clausegate.review import assemble
from clausegate.providers.retry import retry_condition
from clausegate.review.playbook import Playbook
from clausegate.review.report import render_markdown, write_report
from clausegate.review.schemas import ContractSource, Extraction, FilteredDocument, ParsedDocument, Review

class ResultSchema(CachePolicy):
    """Cache key part from the source of the modules that define what results hold (pydantic models).

    TASK_SOURCE sees only the task function: a field added to ``Clause`` would otherwise let a rerun
    unpickle an old result without it (AttributeError downstream).  Any change there is a new key.
    """

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        return result_schema_version()


def result_schema_version() -> str:
    digest = hashlib.sha256()
    for module in (schemas, model_extraction):
        digest.update(inspect.getsource(module).encode("utf-8"))
    return digest.hexdigest()[:16]


RESULT_SCHEMA = ResultSchema()
INPUT_KEYED = INPUTS + TASK_SOURCE + RESULT_SCHEMA


class ContractContent(CachePolicy):
    """Cache key from the contract's content hash and the parser's version: path and file name play no part."""

    def compute_key(self, task_ctx, inputs, flow_parameters, **kwargs):
        return f"{inputs['source'].contract_id}:{sandbox.PARSER_VERSION}"


CONTENT_KEYED = (INPUTS - "source") + TASK_SOURCE + RESULT_SCHEMA + ContractContent()


_COMMON: dict[str, Any] = dict(persist_result=True, result_serializer=at_rest.SEALED_PICKLE,
                               retry_condition_fn=retry_condition)


@task(name="fingerprint", cache_policy=NO_CACHE)
def fingerprint_contract(source: str, max_file_mb: float) -> ContractSource:
    """Read the file and hash it: always runs, so an edited file is never mistaken for the old one.

    First step of every review, so it also checks the at-rest key against the result storage
    (``CG-AT-REST-KEY`` before any cached step is looked up; see clausegate/security/at_rest.py).
    """
    from pathlib import Path

    from clausegate.review.document.sandbox import fingerprint

    at_rest.check_result_key()
    max_bytes = int(max_file_mb * 1024 * 1024)
    with at_rest.plaintext_path(source, max_plain_bytes=max_bytes) as plain:
        if plain is None:  # a plain file (e.g. `clausegate review FILE`)
            return fingerprint(source, max_bytes=max_bytes)
        found = fingerprint(plain, max_bytes=max_bytes)
    original = Path(source).expanduser()
    return found.model_copy(update={"path": str(original.absolute()), "filename": original.name})


@task(name="parse-pdf", cache_policy=CONTENT_KEYED, **_COMMON)
def parse_contract(source: ContractSource, max_chars: int, memory_mb: int, ocr: str, time_cap_seconds: float) -> ParsedDocument:
    from clausegate.review.document.sandbox import parse_pdf

    # parse_pdf re-hashes the bytes it reads and stops with CG-PDF-CHANGED if they differ.  A sealed
    # upload is handed to it as an in-memory view of its decrypted bytes (never written to disk).
    with at_rest.plaintext_path(source.path, max_plain_bytes=source.size_bytes) as plain:
        view = source if plain is None else source.model_copy(update={"path": str(plain)})
        return parse_pdf(view, max_chars=max_chars, timeout_seconds=time_cap_seconds, memory_mb=memory_mb, ocr=ocr)


@task(name="prefilter", cache_policy=INPUT_KEYED, **_COMMON)
def prefilter_passages(document: ParsedDocument, categories: tuple[str, ...], model_version: str) -> FilteredDocument:
    return assemble.prefilter_step(document, categories)


@task(name="extract-clauses", cache_policy=INPUT_KEYED, **_COMMON)
def extract_clauses(filtered: FilteredDocument, categories: tuple[str, ...], model_version: str) -> Extraction:
    return assemble.extract_step(filtered, categories)


@task(name="write-report", cache_policy=INPUT_KEYED, **_COMMON)
def publish_report(review: Review, out_dir: str) -> list[str]:
    json_path, md_path = write_report(review, out_dir)
    create_markdown_artifact(
        key=f"review-{review.contract_id[:16]}",
        markdown=render_markdown(review),
        description=f"ClauseGate review of {review.filename} ({review.status})",
    )
    return [str(json_path), str(md_path)]


def offline_model_version() -> str:
    """Version of the packaged offline model (read from its metadata, without loading the weights)."""
    from clausegate.review.offline.model import META_NAME, MODEL_DIR

    return str(json.loads((MODEL_DIR / META_NAME).read_text(encoding="utf-8"))["version"])


def configured(book: Playbook) -> dict[str, Any]:
    """The tasks with the playbook's per-step timeouts, retries and cache expiration applied.

    A playbook's ``retention.days`` caps the cache expiration: its cached results expire (and the
    retention flow deletes them) no later than its reports."""
    days = book.cache.expiration_days
    if book.retention.days is not None:
        days = min(days, book.retention.days)
    expiry = timedelta(days=days)

    def apply(task_obj, policy):
        return task_obj.with_options(
            timeout_seconds=policy.timeout_seconds,
            retries=policy.retries,
            retry_delay_seconds=policy.retry_delay_seconds,
            cache_expiration=expiry,
        )

    s = book.steps
    return {
        "parse": apply(parse_contract, s.parse),
        "prefilter": apply(prefilter_passages, s.prefilter),
        "extract": apply(extract_clauses, s.extract),
        "report": apply(publish_report, s.report),
    }
