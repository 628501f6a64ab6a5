"""Prefect tasks that call a model provider: retries by error class, fallback from attempt 2,
rate limit, budget check, spend ledger, and persisted results so no finished call is paid twice.

The cache key is the rendered prompt + the provider's configuration (block name, models, URLs,
never the key) + the task's source.  Budget inputs are excluded from the key: a rerun finds the
finished call in the cache whatever has been spent since.
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from pydantic import BaseModel, ConfigDict

from clausegate.budget import check_budget, record_spend, spent_this_period
from clausegate.errors import BudgetExceeded, ConfigurationError
from clausegate.generation import GenerationAnswer, GenerationPrompt, ground_suggestions
from clausegate.model_extraction import ExtractionPrompt, ModelAnswer, ground_answer
from clausegate.playbook import Budgets
from clausegate.providers.errors import ProviderError
from clausegate.providers.retry import MODEL_RETRY_POLICY, use_fallback_now
from clausegate.providers.structured import complete_json
from clausegate.schemas import Clause, Cost, Notice, Suggestion

RATE_LIMIT = "clausegate-model-calls"
OUTPUT_TOKEN_ESTIMATE = 0.5  # share of max_output_tokens assumed for a budget estimate
PROMPT_TOKEN_MARGIN = 1.3  # our token count vs. a provider tokenizer


class ProviderRef(BaseModel):
    """Which model block, and the settings that change its answers (part of the cache key)."""

    model_config = ConfigDict(frozen=True)

    block: str
    model: str
    base_url: str
    fallback_model: str | None = None
    fallback_base_url: str | None = None


class BudgetContext(BaseModel):
    model_config = ConfigDict(frozen=True)

    budgets: Budgets
    run_cost: Cost


class ModelExtraction(BaseModel):
    model_config = ConfigDict(frozen=True)

    clauses: list[Clause]
    notices: list[Notice]
    cost: Cost
    model: str


class ModelSuggestions(BaseModel):
    model_config = ConfigDict(frozen=True)

    suggestions: list[Suggestion]
    notices: list[Notice]
    cost: Cost
    model: str


def load_model_block(name: str):
    """Load 'anthropic-model/NAME' or 'openai-compatible-model/NAME' (a saved Prefect block)."""
    from blocks.models import AnthropicModel, OpenAICompatibleModel

    kinds = {"anthropic-model": AnthropicModel, "openai-compatible-model": OpenAICompatibleModel}
    kind, _, block_name = name.partition("/")
    if kind not in kinds or not block_name:
        raise ConfigurationError(f"unknown model provider {name!r}",
                                 hint="use 'offline', 'anthropic-model/NAME' or 'openai-compatible-model/NAME' "
                                      "(create the block with `clausegate model-block` or the Prefect UI)")
    try:
        return kinds[kind].load(block_name)
    except ValueError as exc:
        raise ConfigurationError(f"model block {name!r} not found: {exc}",
                                 hint="create it in the Prefect UI (Blocks) or with `clausegate model-block`") from None


def provider_ref(name: str) -> ProviderRef:
    block = load_model_block(name)
    return ProviderRef(block=name, model=block.model, base_url=block.base_url,
                       fallback_model=block.fallback_model, fallback_base_url=block.fallback_base_url)


def _guard(client, max_tokens: int, prompt_tokens: int, budget: BudgetContext) -> None:
    estimate_tokens = int(prompt_tokens * PROMPT_TOKEN_MARGIN + max_tokens * OUTPUT_TOKEN_ESTIMATE)
    estimate_eur = client.pricing.eur(int(prompt_tokens * PROMPT_TOKEN_MARGIN), int(max_tokens * OUTPUT_TOKEN_ESTIMATE))
    period_spent = spent_this_period(budget.budgets.period) if estimate_eur > 0 else 0.0
    verdict = check_budget(budget.budgets, run_cost=budget.run_cost, estimated_eur=estimate_eur,
                           estimated_tokens=estimate_tokens, period_spent=period_spent)
    if not verdict.allowed:
        raise BudgetExceeded(f"model call skipped: {verdict.reason}",
                             hint="the step used the offline extractor instead; raise the playbook's budgets to use the model")


def _call(ref: ProviderRef, system: str, user: str, schema, max_tokens: int, prompt_tokens: int, budget: BudgetContext):
    from prefect.concurrency.sync import rate_limit

    client = load_model_block(ref.block).get_client()
    _guard(client, max_tokens, prompt_tokens, budget)
    rate_limit(RATE_LIMIT)
    try:
        parsed, responses = complete_json(client, system, user, schema, max_tokens=max_tokens,
                                          use_fallback=use_fallback_now())
    except ProviderError as error:
        record_spend(client.pricing.cost(error.responses).eur, budget.budgets.period)  # paid even if unusable
        raise
    cost = client.pricing.cost(responses)
    record_spend(cost.eur, budget.budgets.period)
    logger = get_run_logger()
    for response in responses:
        logger.info("model call %s (%s): %d in / %d out tokens, €%.5f, request %s", ref.block, response.model,
                    response.input_tokens, response.output_tokens,
                    client.pricing.eur(response.input_tokens, response.output_tokens), response.request_id)
    return parsed, cost, responses[-1].model or ref.model


MODEL_CACHE = (INPUTS - "budget") + TASK_SOURCE


@task(name="ask-extraction-model", cache_policy=MODEL_CACHE, persist_result=True, **MODEL_RETRY_POLICY)
def ask_extraction_model(prompt: ExtractionPrompt, ref: ProviderRef, max_tokens: int, budget: BudgetContext) -> ModelExtraction:
    answer, cost, model = _call(ref, prompt.system, prompt.user, ModelAnswer, max_tokens, prompt.tokens, budget)
    clauses, notices = ground_answer(answer, prompt, model=model)
    return ModelExtraction(clauses=clauses, notices=notices, cost=cost, model=model)


@task(name="ask-generation-model", cache_policy=MODEL_CACHE, persist_result=True, **MODEL_RETRY_POLICY)
def ask_generation_model(prompt: GenerationPrompt, ref: ProviderRef, max_tokens: int, budget: BudgetContext) -> ModelSuggestions:
    answer, cost, model = _call(ref, prompt.system, prompt.user, GenerationAnswer, max_tokens, prompt.tokens, budget)
    suggestions, notices = ground_suggestions(answer, prompt, model=model)
    return ModelSuggestions(suggestions=suggestions, notices=notices, cost=cost, model=model)
