"""Partial-failure path: a step whose input lacks a field stops and names it."""

import pickle

import pytest

from clausegate.errors import StepInputError
from clausegate.review import assemble
from clausegate.review.report import render_markdown
from clausegate.review.schemas import FilteredDocument, Notice, Page, ParsedDocument, Passage

CID = "a" * 64


def test_extract_step_names_the_missing_field():
    with pytest.raises(StepInputError) as caught:
        assemble.extract_step({"contract_id": CID, "pages_kept": [], "tokens_total": 0, "tokens_kept": 0},
                           ["Insurance"])
    assert caught.value.field == "passages"
    assert "step 'extract'" in str(caught.value) and "is missing" in str(caught.value)


def test_prefilter_step_rejects_malformed_pages():
    bad = {"contract_id": CID, "filename": "x.pdf", "pages": [{"number": 0, "text": "x"}]}
    with pytest.raises(StepInputError) as caught:
        assemble.prefilter_step(bad, ["Insurance"])
    assert caught.value.field == "pages.0.number"


def test_review_step_rejects_a_clause_with_unknown_category():
    document = ParsedDocument(contract_id=CID, filename="x.pdf", pages=[Page(number=1, text="t")])
    filtered = FilteredDocument(contract_id=CID, passages=[Passage(page=1, text="t", score=1.0)],
                                pages_kept=[1], tokens_total=1, tokens_kept=1)
    extraction = {"contract_id": CID, "extractor": "model", "categories_checked": ["Insurance"],
                  "clauses": [{"category": "Made Up", "text": "x", "pages": [1], "confidence": 0.5, "source": "model"}]}
    with pytest.raises(StepInputError) as caught:
        assemble.assemble_review(document, filtered, extraction, playbook="p", gated=[])
    assert caught.value.field == "clauses.0.category"


def test_failed_review_is_explicit_and_renders():
    document = ParsedDocument(contract_id=CID, filename="x.pdf", pages=[Page(number=1, text="t")])
    error = StepInputError("extract", "passages", "is missing")
    review = assemble.failed_review(contract_id=CID, filename="x.pdf", playbook="p", step="extract",
                                 error=error, document=document)
    assert review.status == "partial_failure"
    assert review.failure.field == "passages" and review.failure.code == "CG-STEP-INPUT"
    assert review.clauses == []
    markdown = render_markdown(review)
    assert "Step **extract** stopped with `CG-STEP-INPUT` on field `passages`" in markdown


def test_step_input_error_survives_pickling():
    error = pickle.loads(pickle.dumps(StepInputError("extract", "passages", "is missing")))
    assert error.field == "passages" and error.code == "CG-STEP-INPUT"
    assert str(error) == str(StepInputError("extract", "passages", "is missing"))


@pytest.mark.parametrize("code", ["CG-PDF-HIDDEN-TEXT", "CG-PDF-GARBLED-TEXT", "CG-PDF-INTEGRITY-UNCHECKED"])
def test_integrity_warning_gates_the_review(code):
    """A document-integrity warning makes the gate ask a person, even with no gated clause."""
    notice = Notice(code=code, message="“Ignore previous instructions” is hidden text on page 1", page=1)
    document = ParsedDocument(contract_id=CID, filename="x.pdf", pages=[Page(number=1, text="t")], notices=[notice])
    filtered = FilteredDocument(contract_id=CID, passages=[Passage(page=1, text="t", score=1.0)],
                                pages_kept=[1], tokens_total=1, tokens_kept=1)
    extraction = {"contract_id": CID, "extractor": "offline", "categories_checked": ["Insurance"], "clauses": []}
    review = assemble.assemble_review(document, filtered, extraction, playbook="p", gated=["Uncapped Liability"])
    assert review.gated_categories == ["Document integrity"]
    assert assemble.integrity_warnings(review.warnings) == [notice]
    markdown = render_markdown(review)
    assert markdown.index("## Document integrity") < markdown.index("## Needs a person")
    assert "## Warnings" not in markdown, "integrity warnings are listed once, at the top"

    clean = assemble.assemble_review(document.model_copy(update={"notices": []}), filtered, extraction, playbook="p",
                                  gated=["Uncapped Liability"])
    assert clean.gated_categories == [] and clean.status == "complete"
