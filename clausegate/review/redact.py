"""Strict text mode: the copy of a review that may leave the sealed store (``CLAUSEGATE_STRICT_TEXT``).

In strict mode no clause text reaches Prefect's database or an unsealed file: the review's Markdown artifact
and the gate record show categories, sections, pages and confidence; the text itself stays in the sealed run
result and the sealed task results, read back by an authenticated path (the inbox API, ``clausegate gates show``).

What is taken out: every clause's text (findings and those a model cleared), a model's quotes and reasons (a reason
may quote the clause), the gate reasons that carry them, the suggested redlines and questions (they
quote or rewrite the clause), notice messages (several quote the contract), and a .docx's tracked changes' text and
comments' text and anchored text, the key terms' quotes and the parties' names; the notice codes and pages, the
changes' and comments' authors, dates, places and flags, and the key terms' normalised dates, periods, law and
amounts stay.
"""

from __future__ import annotations

from clausegate.review.schemas import Clause, ContractTerms, Notice, Review

SEALED_TEXT = "[text sealed: strict text mode]"
_NO_QUOTE = ("found", "possible", "integrity", "language")  # gate reasons that never quote the contract or a model


def redact_clause(clause: Clause) -> Clause:
    dispute = clause.dispute.model_copy(update={"model_text": None, "model_reason": None}) if clause.dispute else None
    cleared = clause.cleared.model_copy(update={"model_text": None, "reason": SEALED_TEXT}) if clause.cleared else None
    return clause.model_copy(update={"text": SEALED_TEXT, "dispute": dispute, "cleared": cleared,
                                     "reason": SEALED_TEXT if clause.reason else None})


def redact_notice(notice: Notice) -> Notice:
    return notice.model_copy(update={"message": SEALED_TEXT})


def redact_review(review: Review) -> Review:
    """``review`` with no contract text in it (see the module doc)."""
    suggestions = [s.model_copy(update={"redline": SEALED_TEXT, "questions": []}) for s in review.suggestions]
    return review.model_copy(update={
        "clauses": [redact_clause(c) for c in review.clauses],
        "cleared_by_model": [redact_clause(c) for c in review.cleared_by_model],
        "gate_reasons": [r if r.why in _NO_QUOTE else r.model_copy(update={"detail": SEALED_TEXT})
                         for r in review.gate_reasons],
        "warnings": [redact_notice(w) for w in review.warnings],
        "suggestions": suggestions,
        "revisions": [r.model_copy(update={"text": SEALED_TEXT}) for r in review.revisions],
        "comments": [c.model_copy(update={"text": SEALED_TEXT, "anchor": SEALED_TEXT}) for c in review.comments],
        "contract_terms": _redact_terms(review.contract_terms),
    })


def _redact_terms(terms: ContractTerms | None) -> ContractTerms | None:
    if terms is None:
        return None
    sealed = []
    for term in terms.terms:
        update = {"quote": SEALED_TEXT} if term.quote else {}
        if term.name == "parties" and term.value:
            update.update({"value": SEALED_TEXT, "display": SEALED_TEXT})
        sealed.append(term.model_copy(update=update))
    return terms.model_copy(update={"terms": sealed})
