"""The flow's step for a contract not in English when a model is configured: the model reads the whole text in
the contract's language (``clausegate.review.language_reading``), through the review's own model task
(``ask_extraction_model``: budget guard, metering, retries, cache), its findings listed for a person.  A model
that fails or is over budget leaves the review as the offline reader left it (the Language gate), with a notice."""

from __future__ import annotations

from prefect import Task, get_run_logger

from clausegate.errors import ClauseGateError
from clausegate.pipeline.model_calls import BudgetContext, PartialAnswer, model_result, provider_ref
from clausegate.review.language_reading import language_prompt, with_language_reading
from clausegate.review.playbook import Playbook
from clausegate.review.schemas import Cost, Notice, ParsedDocument, Review


def read_in_its_language(review: Review, document: ParsedDocument, book: Playbook, extractor: str,
                         ask_extraction_model: Task) -> Review:
    """``review`` with the model's reading of a non-English contract (unchanged for English or offline)."""
    language = review.language
    if language is None or language.english or extractor == "offline":
        return review
    categories = list(book.categories)
    prompt = language_prompt(document, categories, language)
    budget = BudgetContext(budgets=book.budgets, run_cost=Cost())
    try:
        result = model_result("extract", ask_extraction_model(prompt, provider_ref(extractor),
                                                               book.steps.extract.max_output_tokens, budget))
    except PartialAnswer as cut:  # cut at the output limit: its complete, grounded items are kept
        result = cut.partial
    except ClauseGateError as error:
        get_run_logger().warning("%s: the model did not read the %s text: %s", error.code, language.name, error)
        notice = Notice(code=error.code, message=(f"the model did not read the {language.name} text ({error}); "
                                                  "the Language gate stands"))
        return review.model_copy(update={"warnings": [*review.warnings, notice]})
    return with_language_reading(review, result.clauses, result.notices, model=result.model, asked=categories)
