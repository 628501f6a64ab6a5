"""The plumbing of one model call, as the model tasks in :mod:`clausegate.pipeline.tasks` use it:
which block answers (``ProviderRef``), the budget guard, the spend meter and ledger, and the memo
of paid answers that keeps a Prefect retry from paying twice.

Money (see ``clausegate.ops.budget``): a budget is a cap.  Every request is checked before it is sent
(the first one, the repair call, a Prefect retry's, the larger re-ask of a truncated answer) against
its worst case: the prompt's tokens (with a margin for the provider's tokenizer) plus the whole
``max_tokens``, at the block's prices, and that worst case is reserved in the ledger (under its lock)
until the answer is settled, so reviews running together never pass the period budget between them.
Every answer a provider bills is recorded the moment it arrives,
in the one spend ledger and in the review's meter, whatever happens next (an answer that fails
validation, a repair call that fails, a task that fails later).  A Prefect retry of a task run
never sends a request that run already paid for: the paid answer is reused.

A paid answer is never thrown away while part of it can be used: when the answer is cut at the
output limit, fails validation even after its repair, or its repair call would exceed the budget,
its complete, valid items are kept (:func:`used_in_part`, notice ``CG-MODEL-PARTIAL`` naming them)
and the categories it does not cover are reported as not confirmed.  A budget skip with nothing
paid is a Completed task run (its message says why; never cached), which the flow sees as
``BudgetExceeded`` (:func:`model_result`).  A result's ``paid_by`` names the review and task run
that paid for it, so a rerun that takes it from the cache reports it as spend reused from cache.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prefect import get_run_logger
from prefect.concurrency.sync import rate_limit
from prefect.runtime import task_run
from prefect.states import Completed, State
from prefect.transactions import get_transaction
from pydantic import BaseModel, ConfigDict

from clausegate.config import load_model_block
from clausegate.errors import BudgetExceeded, ClauseGateError
from clausegate.ops.budget import Hold, current_meter, prepare_ledger, reserve, settle
from clausegate.providers.base import ModelResponse
from clausegate.providers.errors import InvalidOutput, OutputTruncated
from clausegate.providers.retry import use_fallback_now
from clausegate.providers.structured import complete_json
from clausegate.review.llm.extract import Absence
from clausegate.review.money import add_costs, eur_text
from clausegate.review.passages import count_tokens
from clausegate.review.playbook import Budgets
from clausegate.review.schemas import Clause, Cost, Notice, Suggestion

RATE_LIMIT = "clausegate-model-calls"
PROMPT_TOKEN_MARGIN = 1.3  # our token count vs. a provider tokenizer
PARTIAL = "CG-MODEL-PARTIAL"


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
    absent: list[Absence] = []  # grounded "not there" answers, with the model's reasons
    notices: list[Notice]
    cost: Cost
    model: str
    paid_by: str = ""  # "<review key>#<task run id>" of the run that paid for it (budget.SpendMeter)
    answered: list[str] | None = None  # an answer used in part: the categories it covers (None: all sent)
    truncated: bool = False  # that answer was cut at the output limit: worth asking again with more


class ModelSuggestions(BaseModel):
    model_config = ConfigDict(frozen=True)

    suggestions: list[Suggestion]
    notices: list[Notice]
    cost: Cost
    model: str
    paid_by: str = ""
    answered: list[str] | None = None  # used in part: the categories it has suggestions for
    truncated: bool = False


def provider_ref(name: str) -> ProviderRef:
    block = load_model_block(name)
    return ProviderRef(block=name, model=block.model, base_url=block.base_url,
                       fallback_model=block.fallback_model, fallback_base_url=block.fallback_base_url)


class BudgetSkip(BaseModel):
    """What a budget-skipped task run returns (inside a Completed state; see :func:`skipped`)."""

    message: str
    hint: str = ""


def worst_case(pricing, prompt_tokens: int, max_tokens: int) -> tuple[int, float]:
    """(tokens, EUR) a request can cost at most: its prompt with the tokenizer margin, plus the whole
    output budget (a provider never bills more output than ``max_tokens``)."""
    prompt = int(prompt_tokens * PROMPT_TOKEN_MARGIN)
    return prompt + max_tokens, pricing.eur(prompt, max_tokens)


def _guard(client, system: str, user: str, max_tokens: int, budget: BudgetContext, paid: Cost,
           what: str = "model call") -> Hold | None:
    """Raise ``BudgetExceeded`` unless this request's worst case fits every budget; else reserve it in
    the ledger until :func:`settle` (the period's spend counts every request in flight).  ``paid``:
    what this task run has paid so far (counted when the review has no meter)."""
    estimate_tokens, estimate_eur = worst_case(client.pricing, count_tokens(system) + count_tokens(user), max_tokens)
    meter = current_meter()  # the review's own spend so far, failed attempts included
    run_cost = meter.own() if meter is not None else add_costs(budget.run_cost, paid)
    connect, read = client.timeout
    verdict, hold = reserve(budget.budgets, run_cost=run_cost, estimated_eur=estimate_eur,
                            estimated_tokens=estimate_tokens, hold_seconds=2 * (connect + read) + 60)
    if not verdict.allowed:
        raise BudgetExceeded(f"{what} skipped: {verdict.reason} (its worst case: {estimate_tokens:,} tokens, "
                             f"{eur_text(estimate_eur)})",
                             hint="the step used what it had (the offline extractor, or what was paid for); raise "
                                  "the playbook's budgets to use the model")
    return hold


def _not_cached() -> None:
    """This task run's result is not written to the cache (its transaction does not commit a record)."""
    transaction = get_transaction()
    if transaction is not None:
        transaction.write_on_commit = False


def skipped(error: BudgetExceeded) -> State:
    """A budget skip as the task's final state: Completed, the reason as its message, not cached
    (a rerun with more budget must ask the model; a cached skip would answer for it)."""
    _not_cached()
    return Completed(message=f"skipped ({error.code}): {error.message}",
                     data=BudgetSkip(message=error.message, hint=error.hint))


class PartialAnswer(OutputTruncated):
    """A truncated answer whose complete items were kept (``partial``): ask again with a bigger output
    budget, and use ``partial`` if that cannot be done."""

    def __init__(self, message: str, *, partial: ModelExtraction | ModelSuggestions | None = None, **kwargs) -> None:
        self.partial = partial
        super().__init__(message, **kwargs)


def model_result(step: str, result: ModelExtraction | ModelSuggestions | State) -> Any:
    """A model task's return value as the flow uses it (``step``: 'extract' or 'generate').

    A budget skip (the Completed state of :func:`skipped`) raises ``BudgetExceeded``: the caller keeps
    the offline result, with the notice.  Any other result is reported to the review's meter, which is
    how one taken from the cache counts as spend reused, not as this run's.  A truncated answer used in
    part raises :class:`PartialAnswer` (an ``OutputTruncated``) carrying it."""
    if isinstance(result, State):
        skip = result.result()
        raise BudgetExceeded(skip.message, hint=skip.hint)
    meter = current_meter()
    if meter is not None:
        meter.received(step, result.cost, result.paid_by)
    if result.truncated:
        raise PartialAnswer("the answer was cut at the output limit; its complete items are kept", partial=result)
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


def _release(hold: Hold | None) -> None:
    """Release a request's reservation (it was not sent, or got no answer); never hides the request's own error."""
    try:
        settle(hold, 0.0)
    except Exception as error:  # the reservation then expires by itself (budget.reserve's hold_seconds)
        get_run_logger().warning("the budget reservation of a model request was not released (%s); it expires "
                                 "by itself", type(error).__name__)


class _Metered:
    """The block's client as a model task uses it.  Each request's worst case is reserved first
    (``before_send``, which may refuse it); each answer the provider billed is handed to ``on_paid``
    with that reservation as soon as it arrives (ledger + meter), before anything can fail on it; a
    request that got no answer releases its reservation.  A request already answered in this task run
    (same prompt and output limit, any model) is answered from ``answers`` instead of being sent and
    paid again."""

    def __init__(self, client, answers: dict[str, ModelResponse],
                 on_paid: Callable[[ModelResponse, Hold | None], None],
                 before_send: Callable[[str, str, int], Hold | None]) -> None:
        self._client, self._answers, self._on_paid, self._before_send = client, answers, on_paid, before_send

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def complete(self, system: str, user: str, *, max_tokens: int | None = None, **options: Any) -> ModelResponse:
        key = hashlib.sha256(json.dumps([system, user, max_tokens]).encode()).hexdigest()
        if key in self._answers:
            get_run_logger().info("reused the answer already paid for in this task run (request %s); not sent again",
                                  self._answers[key].request_id)
            return self._answers[key]
        hold = self._before_send(system, user, max_tokens or self._client.max_output_tokens)  # may refuse
        try:
            response = self._client.complete(system, user, max_tokens=max_tokens, **options)
        except BaseException:
            _release(hold)  # no answer, nothing billed
            raise
        self._answers[key] = response
        self._on_paid(response, hold)
        return response


@dataclass(frozen=True)
class ModelCall:
    """What :func:`call_model` got: the parsed ``answer``, or (``answer`` None) the texts of the paid
    answers it could not use whole and the ``problem`` (``BudgetExceeded``: the repair call was
    refused; ``OutputTruncated``; ``InvalidOutput``), for :func:`used_in_part`."""

    answer: Any
    unused: list[str]
    problem: ClauseGateError | None
    cost: Cost
    model: str
    paid_by: str


def call_model(ref: ProviderRef, system: str, user: str, schema, max_tokens: int, budget: BudgetContext, *,
               step: str = "model") -> ModelCall:
    """One model call inside a model task: budget guard before every request, rate limit, metered
    answers, one repair at most.  Raises ``BudgetExceeded`` when the first request would exceed a
    budget (nothing sent, nothing paid); any other failure with a paid answer in hand is returned."""
    client = load_model_block(ref.block).get_client()
    run_id = str(task_run.id or uuid.uuid4())
    meter = current_meter()
    logger = get_run_logger()
    answers = _paid_answers(run_id)
    sent: list[bool] = []  # a request was sent in this call (the rate limit is taken once)

    def before_send(system: str, user: str, limit: int) -> Hold | None:
        if not sent:
            prepare_ledger()  # the ledger lock exists (created if missing) before anything is reserved or paid
        hold = _guard(client, system, user, limit, budget, client.pricing.cost(answers.values()),
                      what="repair call" if answers else "model call")
        if not sent:
            try:
                rate_limit(RATE_LIMIT)
            except BaseException:
                _release(hold)
                raise
        sent.append(True)
        return hold

    def paid(response: ModelResponse, hold: Hold | None) -> None:
        cost = client.pricing.cost([response])
        if meter is not None:
            meter.paid(step, run_id, cost)
        logger.info("model call %s (%s): %d in / %d out tokens, %s, request %s", ref.block, response.model,
                    response.input_tokens, response.output_tokens, eur_text(cost.eur), response.request_id)
        settle(hold, cost.eur)  # paid, whether or not the answer turns out usable; the reservation goes

    parsed, problem, unused = None, None, []
    try:
        parsed, responses = complete_json(_Metered(client, answers, paid, before_send), system, user, schema,
                                          max_tokens=max_tokens, use_fallback=use_fallback_now())
    except BudgetExceeded as error:
        if not answers:  # the first request: nothing paid, a plain skip
            _forget_paid(run_id)
            raise
        problem, unused, responses = error, [r.text for r in answers.values()], list(answers.values())
    except (OutputTruncated, InvalidOutput) as error:
        responses = list(error.responses or answers.values())
        problem, unused = error, [r.text for r in responses]
    except Exception as error:
        if not getattr(error, "transient", False):  # no retry of this task run follows
            _forget_paid(run_id)
        raise
    _forget_paid(run_id)
    paid_by = f"{meter.key if meter is not None else 'no-review'}#{run_id}"
    model = (responses[-1].model if responses else "") or ref.model
    return ModelCall(answer=parsed, unused=unused, problem=problem, cost=client.pricing.cost(answers.values()),
                     model=model, paid_by=paid_by)


def used_in_part(call: ModelCall, result: ModelExtraction | ModelSuggestions,
                 kept: list[str]) -> ModelExtraction | ModelSuggestions | State:
    """``result``, built from the valid items ``kept`` (labels) of ``call``'s unusable paid answers,
    with notices saying why and which.  Nothing kept: the call's problem stands (a budget skip, or
    the error raised).  Kept after a refused repair call: not cached, so a rerun with more budget
    asks again (like :func:`skipped`)."""
    problem = call.problem
    if not kept:
        if isinstance(problem, BudgetExceeded):
            return skipped(problem)
        raise problem
    if isinstance(problem, BudgetExceeded):
        why = "its answer failed validation and the repair call was skipped for the budget"
        _not_cached()
    elif isinstance(problem, OutputTruncated):
        why = "its answer was cut at the output limit"
    else:
        why = "its answer failed validation, also after the repair call"
    notices = [Notice(code=PARTIAL, message=f"the model's paid answer was used in part ({why}): kept "
                                            f"{len(kept)} complete, valid item(s): {', '.join(kept)}")]
    if not isinstance(problem, OutputTruncated):  # the cascade's notice says it asks again with more output
        notices.insert(0, Notice(code=problem.code, message=problem.message))
    return result.model_copy(update={"notices": [*notices, *result.notices],
                                     "truncated": isinstance(problem, OutputTruncated)})
