"""The review's annotate step: the reviewed file's annotated copy (:mod:`clausegate.review.annotate`) written next
to its report, ``<report stem>.annotated.docx|.pdf|.html``; in strict text mode sealed with the at-rest key instead
(``….sealed``, never an unsealed copy: docs/security.md), like the full review next to a strict report.

It runs twice in a contract-review run that asks a person: before the gate (the copy a gate links to: "Decision:
pending") and after it (the decision, who and when, in each gated finding's note).  Writing the file is the step's
side effect, so it is not cached (it costs a fraction of the review: ``python bench/annotate.py --cpu``).  A copy
that cannot be written (the child crashed, hit a cap, or ran out of time) costs the copy, never the review: the step
logs a ``CG-ANNOTATE-FAILED`` warning and the review goes on without one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import opaque

from clausegate.config import settings
from clausegate.errors import ClauseGateError
from clausegate.review import annotate as annotating
from clausegate.review.document.sandbox import read_verified
from clausegate.review.report import SEALED_SUFFIX, report_stem
from clausegate.review.schemas import ContractSource, ParsedDocument, Review
from clausegate.security import at_rest


def annotated_name(review: Review) -> str | None:
    """The annotated copy's file name for ``review`` (in its report's folder), or None when it has none."""
    suffix = annotating.SUFFIXES.get(review.format)
    if suffix is None:
        return None
    name = f"{report_stem(review)}{annotating.MARK}{suffix}"
    return name + SEALED_SUFFIX if settings().strict_text else name


@task(name="annotate-contract", cache_policy=NO_CACHE, retries=0)
def annotate_contract(review: Review, contract: ContractSource, document: ParsedDocument | None, positions: list,
                      out_dir: str, memory_mb: int, timeout_seconds: float) -> str | None:
    """Write the annotated copy of ``contract`` for ``review``; its file name, or None (nothing to annotate, or
    the copy could not be written: logged)."""
    logger = get_run_logger()
    if not annotating.supported(review):
        return None
    try:
        data = b"" if review.format == "text" else _contract_bytes(contract)
        copy = annotating.annotate(review, data, document, positions, memory_mb=memory_mb,
                                   timeout_seconds=timeout_seconds, pool_size=settings().parse_pool_size)
    except ClauseGateError as error:
        logger.warning("%s: no annotated copy of %s: %s (%s)", error.code, contract.filename, error,
                       getattr(error, "hint", ""))
        return None
    if copy is None:
        return None
    name = annotated_name(review)
    path = Path(out_dir) / name
    strict = settings().strict_text
    try:
        path.parent.mkdir(mode=0o700 if strict else 0o777, parents=True, exist_ok=True)  # like the report's folder
        if strict:
            at_rest.write_sealed(path, copy.data)
        else:
            _write_private(path, copy.data)
    except OSError as exc:
        logger.warning("no annotated copy of %s: cannot write %s (%s)", contract.filename, path, exc.strerror or exc)
        return None
    if copy.skipped:
        logger.warning("annotated copy %s: %d of %d findings not placed (%s)", name, len(copy.skipped),
                       len(review.clauses), "; ".join(f"#{i + 1}: {why}" for i, why in copy.skipped[:5]))
    logger.info("annotated copy: %s (%d comments or highlights, %d fallback insertions)", path,
                len(copy.commented), len(copy.inserted))
    return name


def _contract_bytes(contract: ContractSource) -> bytes:
    """The reviewed file's bytes, re-hashed (``CG-PDF-CHANGED`` if they differ); a sealed inbox upload through its
    decrypted in-memory view, as the parse step reads it (never written to disk)."""
    with at_rest.plaintext_path(contract.path, max_plain_bytes=contract.size_bytes) as plain:
        return read_verified(contract if plain is None else contract.model_copy(update={"path": str(plain)}))


def _write_private(path: Path, data: bytes) -> None:
    """``data`` to ``path`` atomically, owner-only (0600) like the reports: it holds the contract's text."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def annotate_review(review: Review, contract: ContractSource, document: ParsedDocument | None, book,
                    out_dir: str) -> Review:
    """``review`` with ``annotated`` set to its annotated copy's file name (the flow body's hook)."""
    if not annotating.supported(review):
        return review
    p = book.steps.parse
    name = annotate_contract(opaque(review), contract, opaque(document), list(book.positions), out_dir,
                             p.memory_mb, p.timeout_seconds)
    return review.model_copy(update={"annotated": name}) if name else review
