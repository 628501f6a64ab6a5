"""The spend ledger and the budget checks: one ledger every period reads, its lock, amounts in print."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, datetime

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
from prefect.exceptions import ObjectNotFound
from prefect.variables import Variable

from clausegate.errors import ConfigurationError
from clausegate.ops import budget
from clausegate.ops.budget import (
    LEDGER_LOCK,
    LEDGER_VARIABLE,
    SpendMeter,
    add_to_ledger,
    check_budget,
    record_spend,
    spent_in,
    spent_this_period,
)
from clausegate.review.money import eur_text
from clausegate.review.playbook import Budgets
from clausegate.review.schemas import Cost, Review

NOW = datetime(2026, 5, 7, 15, 0, tzinfo=UTC)
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ one ledger, every period

def test_every_period_reads_the_same_entries():
    ledger = add_to_ledger({}, 0.25, NOW)
    assert ledger == {"2026-05-07": 0.25}
    assert [spent_in(ledger, p, NOW) for p in ("day", "month", "year")] == [0.25, 0.25, 0.25]


def test_an_old_per_period_ledger_counts_where_it_belongs():
    old = {"2026": 3.0, "2026-05": 2.0, "2026-05-07": 1.0, "2025": 9.0, "2026-04": 7.0}  # one key per period type
    assert spent_in(old, "day", NOW) == 1.0
    assert spent_in(old, "month", NOW) == 3.0
    assert spent_in(old, "year", NOW) == 13.0


def test_earlier_days_and_months_fold_so_the_variable_stays_small():
    ledger: dict[str, float] = {}
    for day in range(1, 366):  # a year of daily spend, then some
        when = datetime.fromordinal(datetime(2025, 1, 1).toordinal() + day - 1).replace(tzinfo=UTC)
        ledger = add_to_ledger(ledger, 0.5, when)
    ledger = add_to_ledger(ledger, 0.5, NOW)
    assert set(ledger) == {"2025", "2026-05-07"}
    assert ledger["2025"] == pytest.approx(365 * 0.5)
    for _ in range(40):  # a busy month stays ≤ 31 day keys + months + years
        ledger = add_to_ledger(ledger, 0.001, NOW)
    assert len(__import__("json").dumps(ledger)) < 5000
    assert spent_in(ledger, "month", NOW) == pytest.approx(0.54)


def test_junk_in_the_variable_is_ignored():
    assert spent_in({"note": "x", "2026": "3", "2026-05-07": 1.5}, "year", NOW) == 1.5


# ------------------------------------------------------------------ amounts with enough digits

@pytest.mark.parametrize("amount, text", [(0.001, "€0.001"), (12.5, "€12.50"), (0.0, "€0.00"),
                                          (0.011393, "€0.011393"), (0.00004, "€0.00004"), (40, "€40.00")])
def test_amounts_print_with_enough_digits(amount, text):
    assert eur_text(amount) == text


def test_a_tiny_budget_says_what_it_is():
    verdict = check_budget(Budgets(per_run_eur=0.001), run_cost=Cost(), estimated_eur=0.0042, estimated_tokens=10,
                           period_spent=0.0)
    assert not verdict.allowed
    assert verdict.reason == "run budget: €0.0042 > €0.001"
    verdict = check_budget(Budgets(per_period_eur=0.005, period="day"), run_cost=Cost(), estimated_eur=0.002,
                           estimated_tokens=10, period_spent=0.004)
    assert verdict.reason == "day budget: €0.006 > €0.005"


# ------------------------------------------------------------------ a review's own spend vs. reused

def _review(**cost_by_step) -> Review:
    return Review(contract_id="0" * 64, filename="x.pdf", playbook="p", status="complete", extractor="offline",
                  cost_by_step=cost_by_step)


def test_meter_splits_own_spend_from_spend_reused_from_cache():
    meter = SpendMeter(key="run-2:c")
    meter.paid("extract", "t1", Cost(calls=1, input_tokens=100, output_tokens=10, eur=0.0005))  # an unusable answer
    meter.paid("extract", "t1", Cost(calls=1, input_tokens=120, output_tokens=12, eur=0.0006))  # its repair
    meter.received("extract", Cost(calls=2, input_tokens=220, output_tokens=22, eur=0.0011), "run-2:c#t1")  # fresh
    meter.received("generate", Cost(calls=1, eur=0.002), "run-1:c#t9")  # from the cache, paid by run 1
    review = meter.settle(_review(generate=Cost()))
    assert review.cost_by_step["extract"] == Cost(calls=2, input_tokens=220, output_tokens=22, eur=0.0011)
    assert review.cost_by_step["generate"] == Cost(reused_calls=1, reused_eur=0.002)
    assert review.cost == Cost(calls=2, input_tokens=220, output_tokens=22, eur=0.0011,
                               reused_calls=1, reused_eur=0.002)
    assert meter.own().eur == 0.0011


def test_meter_counts_a_result_this_review_paid_before_a_resume_as_its_own():
    meter = SpendMeter(key="run-1:c")  # the same flow run, re-run from the top after a gate
    meter.received("extract", Cost(calls=1, eur=0.003), "run-1:c#t1")
    assert meter.settle(_review()).cost == Cost(calls=1, eur=0.003)


# ------------------------------------------------------------------ the ledger on a real Prefect server

def _delete_lock() -> None:
    with get_client(sync_client=True) as client:
        try:
            client.delete_global_concurrency_limit_by_name(LEDGER_LOCK)
        except ObjectNotFound:
            pass


def _lock_limit() -> int | None:
    with get_client(sync_client=True) as client:
        try:
            return client.read_global_concurrency_limit_by_name(LEDGER_LOCK).limit
        except ObjectNotFound:
            return None


def test_record_spend_creates_the_lock_and_every_period_sees_it(prefect_server):
    _delete_lock()  # a server `clausegate up` never configured
    before = {p: spent_this_period(p) for p in ("day", "month", "year")}
    record_spend(0.001)
    assert _lock_limit() == 1
    spent = {p: round(spent_this_period(p) - before[p], 6) for p in before}
    assert spent == {"day": 0.001, "month": 0.001, "year": 0.001}


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from clausegate.ops.budget import record_spend
    for _ in range({n}):
        record_spend(0.001)
""")


@pytest.mark.slow
def test_concurrent_processes_lose_no_ledger_update(prefect_server, tmp_path):
    _delete_lock()  # no `clausegate up`: the writers must create the lock themselves, and use it
    before = spent_this_period("year")
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT), n=4))
    writers = [subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE) for _ in range(3)]
    errors = [w.communicate(timeout=240)[1].decode() for w in writers]
    assert all(w.returncode == 0 for w in writers), errors
    assert round(spent_this_period("year") - before, 6) == 0.012, Variable.get(LEDGER_VARIABLE)
    assert _lock_limit() == 1


def test_a_lock_with_more_than_one_slot_is_refused_before_anything_is_paid(prefect_server):
    budget.prepare_ledger()  # creates it if missing
    with get_client(sync_client=True) as client:
        client.update_global_concurrency_limit(LEDGER_LOCK, GlobalConcurrencyLimitUpdate(limit=2))
    budget._CHECKED.clear()  # a new process
    try:
        with pytest.raises(ConfigurationError, match="set to 2 slots"):
            budget.prepare_ledger()
    finally:
        _delete_lock()
        budget._CHECKED.clear()
