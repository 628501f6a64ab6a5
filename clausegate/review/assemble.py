"""The review's plain steps (no Prefect here; ``clausegate/pipeline/tasks.py`` wraps them in tasks):
validate the input, call the domain module, return a model.

Each step validates what it is given against the model it depends on.  A missing or malformed
field stops the step with ``StepInputError`` naming the field, so nothing downstream runs on
garbage; the flow turns that into an explicit partial-failure review.

A parsed document with document-integrity warnings (``CG-PDF-HIDDEN-TEXT``,
``CG-PDF-GARBLED-TEXT``, ``CG-PDF-INTEGRITY-UNCHECKED``) gets the pseudo-category
``Document integrity`` in the review's ``gated_categories``, so the human gate asks a person
(and lists the warnings as findings) instead of the review ending plain ``complete``.

The playbook's positions (``clausegate.review.positions``) are checked here too: each finding of a
category with a position gets a verdict in ``Review.positions``, and a verdict the position gates on
(``deviates``, ``missing``) puts the category in ``gated_categories``.

The playbook's own clause types (``custom_categories``: ``custom_step``) join the review as findings with
``custom`` set, after CUAD's; a gated or high-risk one is treated exactly as a CUAD category of that name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from clausegate.errors import StepInputError
from clausegate.review.categories import CATEGORIES
from clausegate.review.custom_categories import CustomCategory, find_custom
from clausegate.review.document.codes import INTEGRITY_CATEGORY, INTEGRITY_CODES
from clausegate.review.gate_reasons import gate_reasons
from clausegate.review.locate import place
from clausegate.review.money import add_costs
from clausegate.review.offline.extract import extract_offline
from clausegate.review.offline.model import load_model
from clausegate.review.positions import Position, check_positions, gating_categories
from clausegate.review.prefilter import prefilter
from clausegate.review.schemas import (
    CascadeSummary,
    Cost,
    Extraction,
    FilteredDocument,
    Notice,
    ParsedDocument,
    Review,
    StepFailure,
    Suggestion,
)

ModelT = TypeVar("ModelT", bound=BaseModel)


def require(model: type[ModelT], data: Any, *, step: str) -> ModelT:
    """Return ``data`` as ``model`` or raise ``StepInputError`` naming the first bad field."""
    if isinstance(data, model):
        return data
    if isinstance(data, BaseModel):
        data = data.model_dump()
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or model.__name__
        detail = "is missing" if first["type"] == "missing" else f"is invalid ({first['msg']})"
        raise StepInputError(step, field, detail) from None


def prefilter_step(document: Any, categories: Iterable[str]) -> FilteredDocument:
    parsed = require(ParsedDocument, document, step="prefilter")
    return prefilter(parsed, list(categories))


def extract_step(filtered: Any, categories: Iterable[str]) -> Extraction:
    """The offline extractor (always runs first; the model cascade builds on its result)."""
    kept = require(FilteredDocument, filtered, step="extract")
    wanted = list(categories)
    clauses = extract_offline(kept, wanted)
    return Extraction(
        contract_id=kept.contract_id,
        extractor=f"offline ({load_model().version})",  # the report names the model version
        clauses=clauses,
        categories_checked=wanted,
    )


def custom_step(document: Any, categories: Iterable[CustomCategory], high_risk: Iterable[str]) -> Extraction:
    """The playbook's custom categories in the document (``find_custom``), as an extraction of their own."""
    parsed = require(ParsedDocument, document, step="custom")
    wanted = list(categories)
    return Extraction(contract_id=parsed.contract_id, extractor="custom categories (similarity to the examples)",
                      clauses=find_custom(parsed, wanted, frozenset(high_risk)),
                      categories_checked=[c.name for c in wanted])


def assemble_review(
    document: Any,
    filtered: Any,
    extraction: Any,
    *,
    playbook: str,
    gated: Iterable[str],
    min_confidence: float = 0.0,
    protected: Iterable[str] = (),
    cascade: CascadeSummary | None = None,
    suggestions: Iterable[Suggestion] = (),
    notices: Iterable[Notice] = (),
    cost_by_step: dict[str, Cost] | None = None,
    positions: Iterable[Position] = (),
    custom: Any = None,
    disputed: Iterable[str] = (),
    possible_gates: bool = True,
) -> Review:
    """``custom``: the custom categories' extraction (``custom_step``), or None when the playbook defines none.
    ``disputed``: the categories a model disputed that a person must decide (``CascadeResult.gate``);
    ``possible_gates``: the playbook's ``possible_findings`` is ``gate`` (else a possible finding is a note)."""
    parsed = require(ParsedDocument, document, step="review")
    kept = require(FilteredDocument, filtered, step="review")
    found = require(Extraction, extraction, step="review")
    own = require(Extraction, custom, step="review") if custom is not None else None
    checked = [*found.categories_checked, *(own.categories_checked if own else [])]
    order = {name: i for i, name in enumerate([*CATEGORIES, *checked])}  # CUAD's order, then the playbook's
    # min_confidence thins out ordinary findings; a gated or high-risk finding leaves only by a person's
    # decision, never by a threshold (which a model's low-confidence answer could otherwise push it under)
    keep, gated, disputed = set(protected), list(gated), list(dict.fromkeys(disputed))
    ordered = sorted(
        (c for c in [*found.clauses, *(own.clauses if own else [])]
         if c.confidence >= min_confidence or c.possible or c.category in keep),
        key=lambda c: (order.get(c.category, len(order)), c.pages[0], -c.confidence),
    )
    clauses = [c for c in ordered if c.cleared is None]  # a finding a model took off the gate is listed apart
    present = {c.category for c in clauses if not c.possible}
    # "possible" clauses (scored near the threshold): not findings, but never left among the missing
    # categories; in a gated category one goes to the gate like a finding, or is a note (possible_findings)
    possible = {c.category for c in clauses if c.possible} - present
    asks = present | (possible if possible_gates else set())
    gated_found = [c for c in dict.fromkeys(gated) if c in asks]
    gated_found += [c for c in disputed if c not in gated_found and c in present | possible]
    notes = [c for c in dict.fromkeys(gated) if c in possible and c not in gated_found]
    # the playbook's positions: a finding that deviates from the standard, or a required clause that is
    # missing, goes to the gate when its position says so (gate_on); a missing one is listed without a quote
    positions = list(positions)
    scope = "clause" if is_single_clause(parsed) else "contract"
    # a required clause missing still gates, even in a short text; figures are set against the contract's stated fees
    checks = check_positions(clauses, positions, contract_text="\n".join(p.text for p in parsed.pages))
    gating = [c for c in checks if c.clause is None or clauses[c.clause].category in asks | set(disputed)]
    gated_found += [c for c in gating_categories(gating, positions) if c not in gated_found]
    warnings = [*parsed.notices, *found.notices, *(own.notices if own else []), *notices]
    if integrity_warnings(warnings):
        # Hidden or garbled text: what was reviewed may not be what the contract says. Never a plain
        # `complete`: the human gate asks about it like a gated finding (listed first).
        gated_found.insert(0, INTEGRITY_CATEGORY)
    reasons = gate_reasons(gated_found, clauses, gating, set(disputed), warnings)
    # a .docx or text contract: each finding's span (and ¶), and the tracked changes and comments inside the
    # gated or high-risk ones flagged (clausegate/review/locate.py); a PDF's clauses are left as they are
    clauses, revisions, comments = place(parsed, clauses, [*gated, *keep])
    cleared = place(parsed, [c for c in ordered if c.cleared is not None], ())[0]
    return Review(
        contract_id=parsed.contract_id,
        filename=parsed.filename,
        playbook=playbook,
        status="complete",
        extractor=found.extractor,
        clauses=clauses,
        missing_categories=[] if scope == "clause" else [c for c in checked if c not in present and c not in possible],
        scope=scope,
        gated_categories=gated_found,
        pages_total=len(parsed.pages),
        pages_kept=kept.pages_kept,
        tokens_total=kept.tokens_total,
        tokens_kept=kept.tokens_kept,
        warnings=warnings,
        suggestions=list(suggestions),
        positions=checks,
        gate_reasons=reasons,
        cleared_by_model=cleared,
        notes=notes,
        cascade=cascade,
        cost_by_step=cost_by_step or {},
        cost=add_costs(*(cost_by_step or {}).values()),
        format=parsed.format,
        revisions=revisions,
        comments=comments,
    )


CLAUSE_WORDS = 300  # a pasted text shorter than this is one clause (or a few), not a contract


def is_single_clause(parsed: ParsedDocument) -> bool:
    """A plain text (``--text``, stdin, a .txt) of fewer than :data:`CLAUSE_WORDS` words."""
    return parsed.format == "text" and sum(len(p.text.split()) for p in parsed.pages) < CLAUSE_WORDS


def integrity_warnings(warnings: Iterable[Notice]) -> list[Notice]:
    """The document-integrity warnings (hidden text, garbled text, a page that could not be checked)."""
    return [w for w in warnings if w.code in INTEGRITY_CODES]


def failed_review(
    *,
    contract_id: str,
    filename: str,
    playbook: str,
    step: str,
    error: Exception,
    document: ParsedDocument | None = None,
    filtered: FilteredDocument | None = None,
) -> Review:
    """An explicit partial-failure review: what finished, which step stopped and why."""
    code = getattr(error, "code", "CG-INTERNAL")
    failure = StepFailure(
        step=step,
        code=code,
        message=str(error),
        field=getattr(error, "field", None),
    )
    warnings: list[Notice] = list(document.notices) if document else []
    return Review(
        contract_id=contract_id,
        filename=filename,
        playbook=playbook,
        status="failed" if document is None else "partial_failure",
        extractor="none",
        pages_total=len(document.pages) if document else 0,
        pages_kept=filtered.pages_kept if filtered else [],
        tokens_total=filtered.tokens_total if filtered else 0,
        tokens_kept=filtered.tokens_kept if filtered else 0,
        warnings=warnings,
        failure=failure,
        format=document.format if document else "pdf",
        revisions=list(document.revisions) if document else [],
        comments=list(document.comments) if document else [],
    )


