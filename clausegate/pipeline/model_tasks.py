"""Prefect tasks that call a model provider: retries by error class, fallback from attempt 2,
rate limit, budget check, spend ledger, and persisted results so no finished call is paid twice.

The cache key is the rendered prompt + the provider's configuration (block name, models, URLs,
never the key) + the task's source.  Budget inputs are excluded from the key: a rerun finds the
finished call in the cache whatever has been spent since.  Results are encrypted at rest
(``clausegate.security.at_rest.SEALED_PICKLE``).

Money (see ``clausegate.ops.budget``): every answer a provider bills is recorded the moment it arrives,
in the one spend ledger and in the review's meter, whatever happens next (an answer that fails
validation, a repair call that fails, a task that fails later).  A Prefect retry of a task run
never sends a request that run already paid for: the paid answer is reused.  A budget skip is a
Completed task run (its message says why; never cached), which the flow sees as ``BudgetExceeded``.
A result's ``paid_by`` names the review and task run that paid for it, so a rerun that takes it
from the cache reports it as spend reused from cache, not as its own.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from typing import Any, Callable

from prefect import get_run_logger, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from pydantic import BaseModel, ConfigDict

from clausegate.security.at_rest import SEALED_PICKLE
from clausegate.ops.budget import check_budget, current_meter, prepare_ledger, record_spend, spent_this_period
from clausegate.errors import BudgetExceeded, ConfigurationError
from clausegate.review.llm.redlines import GenerationAnswer, GenerationPrompt, ground_suggestions
from clausegate.review.llm.extract import ExtractionPrompt, ModelAnswer, ground_answer
from clausegate.review.money import eur_text
from clausegate.review.playbook import Budgets
from clausegate.providers.base import ModelResponse
from clausegate.providers.retry import MODEL_RETRY_POLICY, use_fallback_now
from clausegate.providers.structured import complete_json
from clausegate.review.schemas import Clause, Cost, Notice, Suggestion
from clausegate.pipeline.tasks import RESULT_SCHEMA

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
    paid_by: str = ""  # "<review key>#<task run id>" of the run that paid for it (budget.SpendMeter)


class ModelSuggestions(BaseModel):
    model_config = ConfigDict(frozen=True)

    suggestions: list[Suggestion]
    notices: list[Notice]
    cost: Cost
    model: str
    paid_by: str = ""


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


class BudgetSkip(BaseModel):
    """What a budget-skipped task run returns (inside a Completed state; see ``_skipped``)."""

    message: str
    hint: str = ""


def _guard(client, max_tokens: int, prompt_tokens: int, budget: BudgetContext) -> None:
    estimate_tokens = int(prompt_tokens * PROMPT_TOKEN_MARGIN + max_tokens * OUTPUT_TOKEN_ESTIMATE)
    estimate_eur = client.pricing.eur(int(prompt_tokens * PROMPT_TOKEN_MARGIN), int(max_tokens * OUTPUT_TOKEN_ESTIMATE))
    period_spent = spent_this_period(budget.budgets.period) if estimate_eur > 0 else 0.0
    meter = current_meter()  # the review's own spend so far, failed attempts included
    run_cost = meter.own() if meter is not None else budget.run_cost
    verdict = check_budget(budget.budgets, run_cost=run_cost, estimated_eur=estimate_eur,
                           estimated_tokens=estimate_tokens, period_spent=period_spent)
    if not verdict.allowed:
        raise BudgetExceeded(f"model call skipped: {verdict.reason}",
                             hint="the step used the offline extractor instead; raise the playbook's budgets to use the model")


def _skipped(error: BudgetExceeded):
    """A budget skip as the task's final state: Completed, the reason as its message, not cached
    (a rerun with more budget must ask the model; a cached skip would answer for it)."""
    from prefect.states import Completed
    from prefect.transactions import get_transaction

    transaction = get_transaction()
    if transaction is not None:
        transaction.write_on_commit = False
    return Completed(message=f"skipped ({error.code}): {error.message}",
                     data=BudgetSkip(message=error.message, hint=error.hint))


# Answers paid for in a task run, by task run id: a Prefect retry (same task run) reuses them instead
# of sending the same request again.  Process memory is enough: Prefect retries a task run in the
# process that runs it.  Bounded; an entry goes when its task run ends (or can no longer be retried).
_PAID: OrderedDict[str, dict[str, ModelResponse]] = OrderedDict()
_PAID_LOCK = threading.Lock()
_PAID_RUNS_KEPT = 512


def _paid_answers(task_run_id: str) -> dict[str, ModelResponse]:
    with _PAID_LOCK:
        answers = _PAID.setdefault(task_run_id, {})
        _PAID.move_to_end(task_run_id)
        while len(_PAID) > _PAID_RUNS_KEPT:
            _PAID.popitem(last=False)
        return answers


def _forget_paid(task_run_id: str) -> None:
    with _PAID_LOCK:
        _PAID.pop(task_run_id, None)


class _Metered:
    """The block's client as a model task uses it.  Each answer the provider billed is handed to
    ``on_paid`` as soon as it arrives (ledger + meter), before anything can fail on it; a request
    already answered in this task run (same prompt and output limit, any model) is answered from
    ``answers`` instead of being sent and paid again."""

    def __init__(self, client, answers: dict[str, ModelResponse], on_paid: Callable[[ModelResponse], None]) -> None:
        self._client, self._answers, self._on_paid = client, answers, on_paid

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def complete(self, system: str, user: str, *, max_tokens: int | None = None, **options: Any) -> ModelResponse:
        key = hashlib.sha256(json.dumps([system, user, max_tokens]).encode()).hexdigest()
        if key in self._answers:
            get_run_logger().info("reused the answer already paid for in this task run (request %s); not sent again",
                                  self._answers[key].request_id)
            return self._answers[key]
        response = self._client.complete(system, user, max_tokens=max_tokens, **options)
        self._answers[key] = response
        self._on_paid(response)
        return response


def _call(ref: ProviderRef, system: str, user: str, schema, max_tokens: int, prompt_tokens: int, budget: BudgetContext,
          *, step: str = "model"):
    """(parsed answer, cost of every answer paid in this task run, model, paid_by)."""
    from prefect.concurrency.sync import rate_limit
    from prefect.runtime import task_run

    client = load_model_block(ref.block).get_client()
    _guard(client, max_tokens, prompt_tokens, budget)
    prepare_ledger()  # the ledger lock exists (created if missing) before anything is paid
    rate_limit(RATE_LIMIT)
    run_id = str(task_run.id or uuid.uuid4())
    meter = current_meter()
    logger = get_run_logger()
    answers = _paid_answers(run_id)

    def paid(response: ModelResponse) -> None:
        cost = client.pricing.cost([response])
        if meter is not None:
            meter.paid(step, run_id, cost)
        logger.info("model call %s (%s): %d in / %d out tokens, %s, request %s", ref.block, response.model,
                    response.input_tokens, response.output_tokens, eur_text(cost.eur), response.request_id)
        record_spend(cost.eur)  # paid, whether or not the answer turns out usable

    try:
        parsed, responses = complete_json(_Metered(client, answers, paid), system, user, schema,
                                          max_tokens=max_tokens, use_fallback=use_fallback_now())
    except Exception as error:
        if not getattr(error, "transient", False):  # no retry of this task run follows
            _forget_paid(run_id)
        raise
    _forget_paid(run_id)
    paid_by = f"{meter.key if meter is not None else 'no-review'}#{run_id}"
    return parsed, client.pricing.cost(answers.values()), responses[-1].model or ref.model, paid_by


MODEL_CACHE = (INPUTS - "budget") + TASK_SOURCE + RESULT_SCHEMA
MODEL_RESULTS = dict(cache_policy=MODEL_CACHE, persist_result=True, result_serializer=SEALED_PICKLE)


@task(name="ask-extraction-model", **MODEL_RESULTS, **MODEL_RETRY_POLICY)
def ask_extraction_model(prompt: ExtractionPrompt, ref: ProviderRef, max_tokens: int, budget: BudgetContext) -> ModelExtraction:
    try:
        answer, cost, model, paid_by = _call(ref, prompt.system, prompt.user, ModelAnswer, max_tokens, prompt.tokens,
                                             budget, step="extract")
    except BudgetExceeded as skipped:
        return _skipped(skipped)
    clauses, notices = ground_answer(answer, prompt, model=model)
    return ModelExtraction(clauses=clauses, notices=notices, cost=cost, model=model, paid_by=paid_by)


@task(name="ask-generation-model", **MODEL_RESULTS, **MODEL_RETRY_POLICY)
def ask_generation_model(prompt: GenerationPrompt, ref: ProviderRef, max_tokens: int, budget: BudgetContext) -> ModelSuggestions:
    try:
        answer, cost, model, paid_by = _call(ref, prompt.system, prompt.user, GenerationAnswer, max_tokens, prompt.tokens,
                                             budget, step="generate")
    except BudgetExceeded as skipped:
        return _skipped(skipped)
    suggestions, notices = ground_suggestions(answer, prompt, model=model)
    return ModelSuggestions(suggestions=suggestions, notices=notices, cost=cost, model=model, paid_by=paid_by)


class ModelTask:
    """A model task as the flow calls it (``with_options`` keeps the wrapper).

    A budget skip ends the task run Completed; the caller still gets ``BudgetExceeded`` (and keeps
    the offline result, with the notice).  Each result the flow receives is reported to the review's
    meter, which is how one taken from the cache counts as spend reused, not as this run's.
    ``return_state=True`` returns Prefect's state untouched (no skip conversion, no metering).
    """

    def __init__(self, task_obj, step: str) -> None:
        self.task, self.step = task_obj, step

    def with_options(self, **options: Any) -> "ModelTask":
        return ModelTask(self.task.with_options(**options), self.step)

    def __getattr__(self, name: str) -> Any:
        if name == "task":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.task, name)

    def __call__(self, *args: Any, **kwargs: Any):
        from prefect.states import State

        result = self.task(*args, **kwargs)
        if kwargs.get("return_state"):
            return result
        if isinstance(result, State):  # a budget skip (Completed, not cached)
            skip = result.result()
            raise BudgetExceeded(skip.message, hint=skip.hint)
        meter = current_meter()
        if meter is not None:
            meter.received(self.step, result.cost, result.paid_by)
        return result


ask_extraction_model = ModelTask(ask_extraction_model, step="extract")
ask_generation_model = ModelTask(ask_generation_model, step="generate")
