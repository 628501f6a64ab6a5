"""The flow's step for a contract not in English when a model is configured: the model reads the whole text in
the contract's language (``clausegate.review.language_reading``), through the review's own model task
(``ask_extraction_model``: budget guard, metering, retries, cache), its findings listed for a person.  A model
that fails or is over budget leaves the review as the offline reader left it (the Language gate), with a notice.
The model also confirms or fills the key terms (``clausegate.review.key_terms.model``: grounded quotes), which
the English offline reader mostly cannot read in such a text.  An English contract's key terms go to the model too
when the offline reader missed one (``steps.extract.key_terms``), over the passages that can state them."""

from __future__ import annotations

import bisect
from datetime import date

from prefect import Task, get_run_logger, task
from prefect.states import State
from pydantic import BaseModel, ConfigDict

from clausegate.errors import BudgetExceeded, ClauseGateError
from clausegate.pipeline.model_calls import (
    BudgetContext,
    PartialAnswer,
    ProviderRef,
    call_model,
    model_result,
    provider_ref,
    skipped,
)
from clausegate.pipeline.tasks import MODEL_CALL_KEYED
from clausegate.providers.retry import MODEL_RETRY_POLICY
from clausegate.review.key_terms.model import TermsAnswer, excerpt, ground_terms, terms_prompt
from clausegate.review.language_reading import language_prompt, with_language_reading
from clausegate.review.playbook import Playbook
from clausegate.review.schemas import Cost, Notice, ParsedDocument, Review
from clausegate.review.text_identity import normalise
from clausegate.security import at_rest


class ModelTerms(BaseModel):
    """The model's key terms answer (not yet grounded) and what it cost."""

    model_config = ConfigDict(frozen=True)

    answer: TermsAnswer
    cost: Cost
    model: str
    paid_by: str = ""
    truncated: bool = False


@task(name="ask-key-terms-model", cache_policy=MODEL_CALL_KEYED, persist_result=True,
      result_serializer=at_rest.SEALED_PICKLE, **MODEL_RETRY_POLICY)
def ask_key_terms_model(system: str, user: str, ref: ProviderRef, max_tokens: int,
                        budget: BudgetContext) -> ModelTerms | State:
    try:
        call = call_model(ref, system, user, TermsAnswer, max_tokens, budget, step="extract")
    except BudgetExceeded as skip:
        return skipped(skip)
    if call.answer is None:
        if isinstance(call.problem, BudgetExceeded):
            return skipped(call.problem)
        raise call.problem
    return ModelTerms(answer=call.answer, cost=call.cost, model=call.model, paid_by=call.paid_by)


def _with_model_terms(review: Review, document: ParsedDocument, ref: ProviderRef, max_tokens: int,
                      budget: BudgetContext, *, whole: bool = True) -> Review:
    """``whole``: the text from its start (another language); else the passages that can state a term."""
    if review.contract_terms is None:
        return review
    starts, pos = [], 0
    for page in document.pages:
        starts.append(pos)
        pos += len(page.text) + 1
    text = "\n".join(p.text for p in document.pages)
    shown = text if whole else excerpt(normalise(text), review.contract_terms)  # one prompt for the same words
    system, user = terms_prompt(shown, review.contract_terms)
    got = model_result("extract", ask_key_terms_model(system, user, ref, max_tokens, budget))
    terms, notices = ground_terms(got.answer, text, review.contract_terms, model=got.model, today=date.today(),
                                  page_of=lambda at: document.pages[bisect.bisect_right(starts, at) - 1].number
                                  if at >= 0 else None)
    return review.model_copy(update={"contract_terms": terms, "warnings": [*review.warnings, *notices]})


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
    review = with_language_reading(review, result.clauses, result.notices, model=result.model, asked=categories)
    try:
        return _with_model_terms(review, document, provider_ref(extractor), book.steps.extract.max_output_tokens,
                                 budget)
    except ClauseGateError as error:
        return _terms_notice(review, error)


def _terms_notice(review: Review, error: ClauseGateError) -> Review:
    get_run_logger().warning("%s: the model did not read the key terms: %s", error.code, error)
    notice = Notice(code=error.code, message=f"the model did not read the key terms ({error}); the offline reading "
                                             "stands")
    return review.model_copy(update={"warnings": [*review.warnings, notice]})


def confirm_key_terms(review: Review, document: ParsedDocument, book: Playbook, extractor: str) -> Review:
    """An English contract's key terms confirmed or filled by the configured model: asked when the offline reader
    missed one (``steps.extract.key_terms: missing``), always, or never; offline or another language: unchanged
    (``read_in_its_language`` reads those)."""
    terms, language, when = review.contract_terms, review.language, book.steps.extract.key_terms
    if (extractor == "offline" or terms is None or when == "never" or review.failure
            or (language is not None and not language.english)):
        return review
    if when == "missing" and all(t.value is not None for t in terms.terms):
        return review
    budget = BudgetContext(budgets=book.budgets, run_cost=Cost())
    try:
        return _with_model_terms(review, document, provider_ref(extractor), book.steps.extract.max_output_tokens,
                                 budget, whole=False)
    except ClauseGateError as error:
        return _terms_notice(review, error)
