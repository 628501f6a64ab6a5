"""Model-backed steps as called from the flow: the offline-first cascade and the generation step.

Each model call is one cached task (``clausegate.model_tasks``); this module decides what to
send, shrinks the prompt on a context-overflow answer (a new, smaller request, never a retry of
the same one), and degrades to the offline result when a budget would be exceeded.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from clausegate.errors import BudgetExceeded
from clausegate.extractor import category_confidence, extract_thresholds
from clausegate.generation import build_generation_prompt, clauses_needing_suggestions
from clausegate.model_extraction import TRUNCATED_MARK, build_prompt, cascade_categories, naive_prompt_tokens, truncate_prompt
from clausegate.model_tasks import BudgetContext, ask_extraction_model, ask_generation_model, provider_ref
from clausegate.playbook import Playbook
from clausegate.providers.errors import ContextTooLong, OutputTruncated
from clausegate.schemas import CascadeSummary, Clause, Cost, Extraction, FilteredDocument, Notice, ParsedDocument, Suggestion


class CascadeResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    extraction: Extraction
    summary: CascadeSummary
    cost: Cost


class GenerationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    suggestions: list[Suggestion] = []
    notices: list[Notice] = []
    cost: Cost = Cost()


def _notice(error: Exception, prefix: str = "") -> Notice:
    return Notice(code=getattr(error, "code", "CG-ERROR"), message=prefix + str(error))


def _with_options(task_obj, policy):
    return task_obj.with_options(timeout_seconds=policy.timeout_seconds, retries=policy.retries,
                                 retry_delay_seconds=policy.retry_delay_seconds)


def _ask_adapting(ask: Callable, prompt, ref, max_tokens, budget, *, shrink: Callable | None = None):
    """Ask once (Prefect retries transient errors inside ``ask``). Permanent answers that a different
    request can fix are handled here with a new, different request, never the same one again:
    context overflow -> fewer passages (marked [TRUNCATED]); output cut at max_tokens -> once with
    twice the output budget."""
    notices: list[Notice] = []
    raised_output = False
    while True:
        try:
            return ask(prompt, ref, max_tokens, budget), prompt, notices
        except ContextTooLong as error:
            smaller = shrink(prompt) if shrink else None
            if smaller is None:
                raise
            notices.append(Notice(code=error.code, message=f"{TRUNCATED_MARK} prompt too long for {ref.model}; sent "
                                                           f"{len(smaller.passages)} of {len(prompt.passages)} passages instead"))
            prompt = smaller
        except OutputTruncated as error:
            if raised_output:
                raise
            raised_output, max_tokens = True, max_tokens * 2
            notices.append(Notice(code=error.code, message=f"answer cut at the output limit; asked again with max_tokens={max_tokens}"))


def cascade(document: ParsedDocument, filtered: FilteredDocument, offline: Extraction, book: Playbook,
            extractor: str) -> CascadeResult:
    """Offline first; the model sees only high-risk categories and those the offline model is unsure of."""
    categories = list(book.categories)
    settings = book.steps.extract
    send = cascade_categories(category_confidence(filtered, categories), extract_thresholds(categories),
                              book.high_risk, margin=settings.cascade_margin)
    naive = naive_prompt_tokens(document)
    summary = dict(categories_total=len(categories), prompt_tokens_naive=naive)
    if not send or not filtered.passages:
        return CascadeResult(extraction=offline, cost=Cost(), summary=CascadeSummary(
            categories_sent=[], model_calls=0, model_calls_saved=1, prompt_tokens_sent=0, **summary))

    ref = provider_ref(extractor)
    budget = BudgetContext(budgets=book.budgets, run_cost=Cost())
    ask = _with_options(ask_extraction_model, settings)
    try:
        result, prompt, notices = _ask_adapting(ask, build_prompt(filtered, send), ref, settings.max_output_tokens, budget,
                                                    shrink=truncate_prompt)
    except BudgetExceeded as error:
        degraded = offline.model_copy(update={"notices": [*offline.notices, _notice(error)],
                                              "extractor": f"offline (budget: {extractor} skipped)"})
        return CascadeResult(extraction=degraded, cost=Cost(), summary=CascadeSummary(
            categories_sent=[], model_calls=0, model_calls_saved=1, prompt_tokens_sent=0, **summary))
    kept_offline: list[Clause] = [c for c in offline.clauses if c.category not in send]
    extraction = Extraction(contract_id=offline.contract_id, extractor=f"{extractor} ({result.model}) + offline",
                            clauses=[*kept_offline, *result.clauses], categories_checked=categories,
                            notices=[*offline.notices, *notices, *result.notices])
    return CascadeResult(extraction=extraction, cost=result.cost, summary=CascadeSummary(
        categories_sent=send, model_calls=result.cost.calls, model_calls_saved=0,
        prompt_tokens_sent=prompt.tokens, truncated=prompt.truncated, **summary))


def generate(contract_id: str, clauses: list[Clause], book: Playbook, run_cost: Cost) -> GenerationResult:
    """Redlines and counterparty questions for gated / high-risk clauses (skipped without a provider)."""
    settings = book.steps.generate
    targets = clauses_needing_suggestions(clauses, book)
    if not targets:
        return GenerationResult()
    if not settings.provider:
        return GenerationResult(notices=[Notice(code="CG-GENERATE-SKIPPED",
                                                message="no generation model configured (playbook steps.generate.provider); "
                                                        "no redlines suggested")])
    ref = provider_ref(settings.provider)
    budget = BudgetContext(budgets=book.budgets, run_cost=run_cost)
    try:
        result, _, notices = _ask_adapting(_with_options(ask_generation_model, settings),
                                            build_generation_prompt(contract_id, targets, book), ref,
                                            settings.max_output_tokens, budget)
    except BudgetExceeded as error:
        return GenerationResult(notices=[_notice(error)])
    return GenerationResult(suggestions=result.suggestions, notices=[*notices, *result.notices], cost=result.cost)
