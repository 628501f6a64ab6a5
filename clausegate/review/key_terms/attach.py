"""The key terms and the language joined to an assembled review (plain logic; the flow body calls it).

A contract the offline reader cannot read (not English, ``clausegate.review.language``) is never reported with
clauses "missing" nor gated as missing a required clause: the missing list and those gates are dropped, the
warning ``CG-TEXT-LANGUAGE`` says why, and the pseudo-category ``Language`` asks a person (listed first, as
*Document integrity* is), whether or not a model also read it.  An English contract's review is unchanged
but for its key terms."""

from __future__ import annotations

from datetime import date

from clausegate.review.key_terms.terms import contract_terms
from clausegate.review.language import detect
from clausegate.review.schemas import GateReason, Notice, ParsedDocument, Review

LANGUAGE_CATEGORY = "Language"
LANGUAGE_CODE = "CG-TEXT-LANGUAGE"


def with_key_terms(review: Review, document: ParsedDocument, *, today: date, model: str | None = None) -> Review:
    """``review`` with its ``contract_terms`` and ``language``; a non-English contract's missing clauses dropped
    and a *Language* gate added.  ``model``: the model that also read it (None: the offline reader alone)."""
    text = "\n".join(p.text for p in document.pages)
    language = detect(text)
    update: dict = {"contract_terms": contract_terms(document, today=today), "language": language}
    if language.english:
        return review.model_copy(update=update)
    reader = (f"the model {model} read it in {language.name}; its findings are listed" if model
              else "no model is configured to read it")
    warning = Notice(code=LANGUAGE_CODE, message=(
        f"The contract reads as {language.name} ({language.code}, p={language.probability:.2f}); the offline "
        f"reader only reads English, so its findings may be wrong and no clause is reported missing; {reader}. "
        "A person reviews it (Language gate)."))
    missing_gated = {r.category for r in review.gate_reasons if r.why == "missing"}
    kept_reasons = [r for r in review.gate_reasons if r.why != "missing"]
    still = {r.category for r in kept_reasons}
    gated = [c for c in review.gated_categories if c not in missing_gated or c in still]
    reason = GateReason(category=LANGUAGE_CATEGORY, why="language", detail=(
        f"written in {language.name}: the offline reader cannot read it ({reader})"))
    update.update({
        "missing_categories": [],
        "positions": [p for p in review.positions if p.verdict != "missing"],
        "gated_categories": [LANGUAGE_CATEGORY, *[c for c in gated if c != LANGUAGE_CATEGORY]],
        "gate_reasons": [reason, *kept_reasons],
        "warnings": [*review.warnings, warning],
    })
    return review.model_copy(update=update)
