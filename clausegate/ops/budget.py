"""Token and € budgets: per run and per period, over ONE spend ledger; and what a review cost.

**The ledger** is a Prefect Variable (``clausegate_spend``), so it lives in Prefect's database with
everything else and survives restarts.  Every paid model answer is added to today's entry (UTC),
whatever the playbook's budget period; a period reads the sum of the entries inside it::

    {"2026-03": 4.2, "2026-05-06": 0.12, "2026-05-07": 0.05, "2025": 31.9}
    day 2026-05-07 -> 0.05     month 2026-05 -> 0.17     year 2026 -> 4.37

So a yearly budget sees the spend made under a daily or monthly playbook and the other way round.
Days of earlier months fold into their month and months of earlier years into their year (the
variable stays small; Prefect caps a value at 5,000 characters), which keeps every total a current
period can read exact.  A ledger written by an older ClauseGate (one key per period type) reads the
same way: its "2026" entry counts for the year 2026, its "2026-05" entry for that month and year.

Updates are read-modify-write under the ``clausegate-budget-ledger`` global concurrency limit
(limit 1), taken strictly: when the limit is missing (no ``clausegate up`` on this server) the first
writer creates it, so concurrent runs never lose each other's spend.

**Reservations** make the period budget a cap when reviews run together: before a request is sent,
:func:`reserve` checks its worst case against the period's spend *plus every request in flight*
and, if it fits, books that worst case in ``clausegate_spend_reserved`` (one entry per request,
``{id: [eur, expires]}``), all under the ledger lock; :func:`settle` adds what the answer cost to the
ledger and drops the entry in one locked update (a request that failed settles 0).  An entry a dead
process never settled expires with its request's timeout.

**A review's cost** (:class:`SpendMeter`): every answer a provider billed during the review, used
or not (a failed attempt, an unusable answer before its repair, a step that failed afterwards), is
this run's spend; answers the review took from Prefect's cache were paid by an earlier run and are
reported apart, as spend reused from cache.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError
from prefect.concurrency.sync import concurrency
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL
from prefect.variables import Variable
from pydantic import BaseModel

from clausegate.errors import ConfigurationError
from clausegate.review.money import add_costs, eur_text
from clausegate.review.playbook import Budgets
from clausegate.review.schemas import Cost, Review

LEDGER_VARIABLE = "clausegate_spend"
RESERVED_VARIABLE = "clausegate_spend_reserved"
LEDGER_LOCK = "clausegate-budget-ledger"
LOCK_TIMEOUT_SECONDS = 120
_KEY = re.compile(r"^\d{4}(-\d{2}){0,2}$")


def period_key(period: str, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return {"day": f"{now:%Y-%m-%d}", "month": f"{now:%Y-%m}", "year": f"{now:%Y}"}[period]


def _entries(ledger) -> dict[str, float]:
    if not isinstance(ledger, dict):
        return {}
    return {str(k): float(v) for k, v in ledger.items() if _KEY.match(str(k)) and isinstance(v, (int, float))}


def read_ledger() -> dict[str, float]:
    return _entries(Variable.get(LEDGER_VARIABLE, default={}))


def spent_in(ledger: dict[str, float], period: str, now: datetime | None = None) -> float:
    """What ``ledger`` holds for the current ``period`` (day, month or year)."""
    prefix = period_key(period, now)
    return round(sum(v for k, v in _entries(ledger).items() if k.startswith(prefix)), 6)


def spent_this_period(period: str, now: datetime | None = None) -> float:
    return spent_in(read_ledger(), period, now)


def add_to_ledger(ledger: dict[str, float], eur: float, now: datetime | None = None) -> dict[str, float]:
    """``ledger`` with ``eur`` added to today's entry, earlier months and years folded (pure)."""
    now = now or datetime.now(UTC)
    day, month, year = period_key("day", now), period_key("month", now), period_key("year", now)
    out: dict[str, float] = {}
    for key, value in _entries(ledger).items():
        if len(key) == 10 and key[:7] != month:
            key = key[:7]  # a day of an earlier month: into its month
        if len(key) == 7 and key[:4] != year:
            key = key[:4]  # a month of an earlier year: into its year
        out[key] = out.get(key, 0.0) + value
    out[day] = out.get(day, 0.0) + eur
    return {k: round(v, 6) for k, v in sorted(out.items())}


_CHECKED: set[str] = set()  # API URLs whose ledger lock this process has checked
_CHECKED_LOCK = threading.Lock()


def prepare_ledger() -> None:
    """Once per process and Prefect API: make sure the ledger lock exists and is usable (see
    :func:`ensure_ledger_lock`).  Called before a paid call, so a bad lock stops it before it is paid."""
    api = str(PREFECT_API_URL.value() or "")
    with _CHECKED_LOCK:
        if api in _CHECKED:
            return
    ensure_ledger_lock()
    with _CHECKED_LOCK:
        _CHECKED.add(api)


def ensure_ledger_lock() -> None:
    """Create the ledger's global concurrency limit (limit 1) unless it exists; refuse an unusable one
    (inactive, or more than one slot: concurrent writers would lose each other's spend)."""
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(LEDGER_LOCK)
        except ObjectNotFound:
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=LEDGER_LOCK, limit=1))
            except ObjectAlreadyExists:  # another run created it first
                pass
            return
    if not limit.active or limit.limit != 1:
        state = "inactive" if not limit.active else f"set to {limit.limit} slots"
        raise ConfigurationError(
            f"the spend ledger's lock {LEDGER_LOCK!r} is {state}",
            hint=f"set it active with limit 1 (Prefect UI: Concurrency > Global, or `prefect gcl update {LEDGER_LOCK} "
                 "--limit 1 --enable`); concurrent runs would otherwise lose spend")


@contextmanager
def ledger_lock() -> Iterator[None]:
    """Hold the one slot of ``clausegate-budget-ledger``; creates the limit when it is missing."""
    def take():
        return concurrency(LEDGER_LOCK, occupy=1, timeout_seconds=LOCK_TIMEOUT_SECONDS, strict=True)

    prepare_ledger()
    with ExitStack() as stack:
        try:
            stack.enter_context(take())
        except ConcurrencySlotAcquisitionError:
            ensure_ledger_lock()
            stack.enter_context(take())
        yield


class BudgetCheck(BaseModel):
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Hold:
    """A request's worst case, booked in the ledger's reservations until it is settled (or expires)."""

    id: str
    eur: float


def _reserved(now: float) -> dict[str, list[float]]:
    """The reservations still live at ``now`` (epoch s): ``{id: [eur, expires]}``."""
    value = Variable.get(RESERVED_VARIABLE, default={})
    out = {}
    for key, entry in (value if isinstance(value, dict) else {}).items():
        if isinstance(entry, list) and len(entry) == 2 and all(isinstance(v, (int, float)) for v in entry):
            if entry[1] > now:
                out[str(key)] = [float(entry[0]), float(entry[1])]
    return out


def reserve(budgets: Budgets, *, run_cost: Cost, estimated_eur: float, estimated_tokens: int,
            hold_seconds: float) -> tuple[BudgetCheck, Hold | None]:
    """Check a request's worst case against the budgets, counting the period's spend and every
    request in flight, and book it while it is in flight (``hold_seconds`` at most), under the
    ledger lock.  A free request (0 EUR) books nothing and takes no lock."""
    if estimated_eur <= 0:
        return check_budget(budgets, run_cost=run_cost, estimated_eur=0.0, estimated_tokens=estimated_tokens,
                            period_spent=0.0), None
    with ledger_lock():
        now = time.time()
        held = _reserved(now)
        in_flight = round(sum(eur for eur, _ in held.values()), 6)
        verdict = check_budget(budgets, run_cost=run_cost, estimated_eur=estimated_eur,
                               estimated_tokens=estimated_tokens, period_spent=spent_this_period(budgets.period)
                               + in_flight)
        if not verdict.allowed:
            if in_flight and verdict.reason.startswith(budgets.period):
                verdict.reason += f" (of which {eur_text(in_flight)} held by {len(held)} request(s) in flight)"
            return verdict, None
        hold = Hold(id=uuid.uuid4().hex[:10], eur=round(estimated_eur, 6))
        held[hold.id] = [hold.eur, round(now + hold_seconds, 1)]
        Variable.set(RESERVED_VARIABLE, held, overwrite=True)
    return verdict, hold


def settle(hold: Hold | None, eur: float, now: datetime | None = None) -> None:
    """The request of ``hold`` cost ``eur`` (0: it failed, nothing billed): add it to the ledger and
    drop the reservation, in one locked update."""
    if hold is None:
        record_spend(eur, now)
        return
    with ledger_lock():
        if eur > 0:
            Variable.set(LEDGER_VARIABLE, add_to_ledger(read_ledger(), eur, now), overwrite=True)
        held = _reserved(time.time())
        if held.pop(hold.id, None) is not None:
            Variable.set(RESERVED_VARIABLE, held, overwrite=True)


def record_spend(eur: float, now: datetime | None = None) -> None:
    """Add ``eur`` to the ledger (today's entry; no-op for zero), under the ledger lock."""
    if eur <= 0:
        return
    with ledger_lock():
        ledger = add_to_ledger(read_ledger(), eur, now)
        Variable.set(LEDGER_VARIABLE, ledger, overwrite=True)




def check_budget(budgets: Budgets, *, run_cost: Cost, estimated_eur: float, estimated_tokens: int,
                 period_spent: float) -> BudgetCheck:
    """Would one more call of this size stay within the run's and the period's budgets?"""
    tokens_after = run_cost.input_tokens + run_cost.output_tokens + estimated_tokens
    if tokens_after > budgets.max_tokens_per_run:
        return BudgetCheck(allowed=False,
                           reason=f"run token budget: {tokens_after:,} > {budgets.max_tokens_per_run:,} tokens")
    if run_cost.eur + estimated_eur > budgets.per_run_eur:
        return BudgetCheck(allowed=False, reason=f"run budget: {eur_text(run_cost.eur + estimated_eur)} "
                                                 f"> {eur_text(budgets.per_run_eur)}")
    if period_spent + estimated_eur > budgets.per_period_eur:
        return BudgetCheck(allowed=False, reason=f"{budgets.period} budget: {eur_text(period_spent + estimated_eur)} "
                                                 f"> {eur_text(budgets.per_period_eur)}")
    return BudgetCheck(allowed=True)


# ---------------------------------------------------------------- what one review cost

@dataclass
class SpendMeter:
    """The spend of one review, kept while it runs (in the flow's context, shared with its tasks).

    ``key`` names the review (flow run id + contract id).  A model task reports each answer its
    provider billed (:meth:`paid`) the moment it arrives, and the flow reports each task result it
    received (:meth:`received`), which is how a result from the cache is told apart: nothing was
    paid for it in this run.
    """

    key: str
    _paid: dict[str, list[Cost]] = field(default_factory=dict)  # step -> one Cost per billed answer
    _carried: dict[str, list[Cost]] = field(default_factory=dict)  # paid by this review before a resume
    _reused: dict[str, list[Cost]] = field(default_factory=dict)  # paid by another review (cache)
    _task_runs: set[str] = field(default_factory=set)
    _reused_runs: set[str] = field(default_factory=set)  # the task runs of ``_reused``
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def paid(self, step: str, task_run: str, cost: Cost) -> None:
        with self._lock:
            self._paid.setdefault(step, []).append(cost)
            self._task_runs.add(task_run)

    def received(self, step: str, cost: Cost, paid_by: str) -> None:
        """A task result reached the flow: ``paid_by`` is ``"<review key>#<task run id>"`` of the run
        that paid for it.  Paid in this run: already counted.  Else it came from the cache."""
        review, _, task_run = (paid_by or "").rpartition("#")
        with self._lock:
            if task_run in self._task_runs or not paid_by:
                return
            self._task_runs.add(task_run)
            if review != self.key:
                self._reused_runs.add(task_run)
            (self._carried if review == self.key else self._reused).setdefault(step, []).append(cost)

    def discard_reused(self) -> None:
        """Forget the results received from another review's cache: this review did not use them (it
        computes its own), so its report must not show them as reused."""
        with self._lock:
            self._reused.clear()
            self._task_runs -= self._reused_runs
            self._reused_runs.clear()

    def own(self) -> Cost:
        """Everything this review paid so far (the run budget's measure)."""
        with self._lock:
            return add_costs(*(c for costs in (*self._paid.values(), *self._carried.values()) for c in costs))

    def by_step(self, steps: list[str] | tuple[str, ...] = ()) -> dict[str, Cost]:
        with self._lock:
            names = list(dict.fromkeys([*steps, *self._paid, *self._carried, *self._reused]))
            out = {}
            for step in names:
                own = add_costs(*self._paid.get(step, []), *self._carried.get(step, []))
                reused = add_costs(*self._reused.get(step, []))
                out[step] = own.model_copy(update={"reused_calls": reused.calls, "reused_eur": reused.eur})
            return out

    def settle(self, review: Review) -> Review:
        """``review`` with its cost as metered: this run's spend by step, and spend reused from cache."""
        by_step = self.by_step(tuple(review.cost_by_step))
        return review.model_copy(update={"cost_by_step": by_step, "cost": add_costs(*by_step.values())})


_METER: ContextVar[SpendMeter | None] = ContextVar("clausegate_spend_meter", default=None)


def current_meter() -> SpendMeter | None:
    return _METER.get()


def start_meter(contract_id: str) -> SpendMeter:
    """Meter the review of ``contract_id`` in this flow run (model tasks report to it)."""
    meter = SpendMeter(key=f"{flow_run.id or 'no-flow-run'}:{contract_id}")
    _METER.set(meter)
    return meter


def stop_meter(meter: SpendMeter) -> None:
    if _METER.get() is meter:
        _METER.set(None)
