"""Token and € budgets: per run (in memory of the flow) and per period (a Prefect Variable ledger).

The period ledger is a Prefect Variable (``clausegate_spend``: ``{"2026": 12.34, ...}``), so it
lives in Prefect's database with everything else and survives restarts.  Updates take the
``clausegate-budget-ledger`` global concurrency slot when that limit exists (``clausegate up``
creates it), so concurrent runs do not lose each other's spend.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import BaseModel

from clausegate.playbook import Budgets
from clausegate.schemas import Cost

LEDGER_VARIABLE = "clausegate_spend"
LEDGER_LOCK = "clausegate-budget-ledger"


def period_key(period: str, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return {"day": f"{now:%Y-%m-%d}", "month": f"{now:%Y-%m}", "year": f"{now:%Y}"}[period]


def spent_this_period(period: str) -> float:
    from prefect.variables import Variable

    ledger = Variable.get(LEDGER_VARIABLE, default={}) or {}
    return float(ledger.get(period_key(period), 0.0))


def record_spend(eur: float, period: str) -> None:
    """Add ``eur`` to this period's ledger entry (no-op for zero)."""
    if eur <= 0:
        return
    from prefect.concurrency.sync import concurrency
    from prefect.variables import Variable

    with concurrency(LEDGER_LOCK, occupy=1, timeout_seconds=30):
        ledger = dict(Variable.get(LEDGER_VARIABLE, default={}) or {})
        key = period_key(period)
        ledger[key] = round(float(ledger.get(key, 0.0)) + eur, 6)
        Variable.set(LEDGER_VARIABLE, ledger, overwrite=True)


class BudgetCheck(BaseModel):
    allowed: bool
    reason: str = ""


def check_budget(budgets: Budgets, *, run_cost: Cost, estimated_eur: float, estimated_tokens: int,
                 period_spent: float) -> BudgetCheck:
    """Would one more call of this size stay within the run's and the period's budgets?"""
    tokens_after = run_cost.input_tokens + run_cost.output_tokens + estimated_tokens
    if tokens_after > budgets.max_tokens_per_run:
        return BudgetCheck(allowed=False, reason=f"run token budget: {tokens_after:,} > {budgets.max_tokens_per_run:,} tokens")
    if run_cost.eur + estimated_eur > budgets.per_run_eur:
        return BudgetCheck(allowed=False,
                           reason=f"run budget: €{run_cost.eur + estimated_eur:.4f} > €{budgets.per_run_eur:.2f}")
    if period_spent + estimated_eur > budgets.per_period_eur:
        return BudgetCheck(allowed=False, reason=f"{budgets.period} budget: €{period_spent + estimated_eur:.4f} "
                                                 f"> €{budgets.per_period_eur:.2f}")
    return BudgetCheck(allowed=True)


def add_costs(*costs: Cost) -> Cost:
    return Cost(calls=sum(c.calls for c in costs), input_tokens=sum(c.input_tokens for c in costs),
                output_tokens=sum(c.output_tokens for c in costs), eur=round(sum(c.eur for c in costs), 6))
