"""The plumbing of one model call, as the model tasks in :mod:`clausegate.pipeline.tasks` use it:
which block answers (``ProviderRef``), the budget guard, the spend meter and ledger, and the memo
of paid answers that keeps a Prefect retry from paying twice.

Money (see ``clausegate.ops.budget``): every answer a provider bills is recorded the moment it arrives,
in the one spend ledger and in the review's meter, whatever happens next (an answer that fails
validation, a repair call that fails, a task that fails later).  A Prefect retry of a task run
never sends a request that run already paid for: the paid answer is reused.  A budget skip is a
Completed task run (its message says why; never cached), which the flow sees as ``BudgetExceeded``
(:func:`model_result`).  A result's ``paid_by`` names the review and task run that paid for it, so
a rerun that takes it from the cache reports it as spend reused from cache, not as its own.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from prefect import get_run_logger
from prefect.concurrency.sync import rate_limit
from prefect.runtime import task_run
from prefect.states import Completed, State
from prefect.transactions import get_transaction
from pydantic import BaseModel, ConfigDict

from clausegate.config import load_model_block
from clausegate.errors import BudgetExceeded
from clausegate.ops.budget import check_budget, current_meter, prepare_ledger, record_spend, spent_this_period
from clausegate.providers.base import ModelResponse
from clausegate.providers.retry import use_fallback_now
from clausegate.providers.structured import complete_json
from clausegate.review.money import eur_text
from clausegate.review.playbook import Budgets
from clausegate.review.schemas import Clause, Cost, Notice, Suggestion

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


def provider_ref(name: str) -> ProviderRef:
    block = load_model_block(name)
    return ProviderRef(block=name, model=block.model, base_url=block.base_url,
                       fallback_model=block.fallback_model, fallback_base_url=block.fallback_base_url)


class BudgetSkip(BaseModel):
    """What a budget-skipped task run returns (inside a Completed state; see :func:`skipped`)."""

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
                             hint="the step used the offline extractor instead; raise the playbook's budgets to "
                                  "use the model")


def skipped(error: BudgetExceeded) -> State:
    """A budget skip as the task's final state: Completed, the reason as its message, not cached
    (a rerun with more budget must ask the model; a cached skip would answer for it)."""
    transaction = get_transaction()
    if transaction is not None:
        transaction.write_on_commit = False
    return Completed(message=f"skipped ({error.code}): {error.message}",
                     data=BudgetSkip(message=error.message, hint=error.hint))


def model_result(step: str, result: ModelExtraction | ModelSuggestions | State) -> Any:
    """A model task's return value as the flow uses it (``step``: 'extract' or 'generate').

    A budget skip (the Completed state of :func:`skipped`) raises ``BudgetExceeded``: the caller keeps
    the offline result, with the notice.  Any other result is reported to the review's meter, which is
    how one taken from the cache counts as spend reused, not as this run's."""
    if isinstance(result, State):
        skip = result.result()
        raise BudgetExceeded(skip.message, hint=skip.hint)
    meter = current_meter()
    if meter is not None:
        meter.received(step, result.cost, result.paid_by)
    return result


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


def call_model(ref: ProviderRef, system: str, user: str, schema, max_tokens: int, prompt_tokens: int,
               budget: BudgetContext, *, step: str = "model"):
    """One model call inside a model task: budget guard, rate limit, metered answers, one repair at most.

    Returns (parsed answer, cost of every answer paid in this task run, model, paid_by); raises
    ``BudgetExceeded`` before anything is sent when the call would exceed a budget."""
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
