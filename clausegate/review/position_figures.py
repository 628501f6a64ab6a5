"""What a whole contract says about its money: the recurring fees it states and its stated total value.

A walk-away rule in months of fees ("a cap of at least 12 months' fees") cannot judge a cap written in
dollars unless the contract says what a month of fees is; a rule in multiples of the fees needs the
contract's total.  :func:`contract_figures` reads both from the contract's text, with the same plain
regular expressions as :mod:`clausegate.review.figures` (no model, no network):

* a **recurring fee**: an amount with "per month / a year / per annum / quarterly / annually" after it
  and a word about fees or payment shortly before it ("a fee of $50,000 per month"), or after "monthly /
  quarterly / annual … fee(s) / payment(s) / rent of" ("Quarterly payments of $312,500 each"); kept as an
  amount per month ($312,500 a quarter is $104,166.67 a month);
* the **contract value**: an amount after "total / aggregate contract value, price, fees, consideration"
  or "contract value / price / sum".

Each is kept with the words it was read from, so a verdict can quote them.  Nothing is inferred: a
contract that states no such figure has none, and :mod:`clausegate.review.position_compare` then says
that a dollar cap could not be set against a months-of-fees rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clausegate.review.figures import normalise, read

_PER = {"month": 1.0, "monthly": 1.0, "calendar month": 1.0, "quarter": 3.0, "quarterly": 3.0,
        "calendar quarter": 3.0, "year": 12.0, "annum": 12.0, "annually": 12.0, "yearly": 12.0,
        "calendar year": 12.0, "contract year": 12.0, "annual": 12.0}
_UNIT_AFTER = re.compile(r"^\s*\)?\s*(?:\([^)]{0,60}\)\s*)?(?:each\s+)?(?:(?:per|a|an|each|every|/)\s*"
                         r"((?:calendar\s+|contract\s+)?(?:month|quarter|year|annum))\b|(monthly|quarterly|annually|"
                         r"yearly)\b)", re.IGNORECASE)
_FEE_BEFORE = re.compile(r"\b(?:fees?|charges?|pay|pays|paid|payable|payments?|rent|subscription|royalt(?:y|ies)|"
                         r"compensation|price)\b[^.;$€£]{0,60}$", re.IGNORECASE)
_RECURRING_BEFORE = re.compile(r"\b(monthly|quarterly|annual|yearly)\s+(?:[\w-]+\s+){0,3}?(?:fees?|payments?|"
                               r"charges?|rent|subscription(?:\s+fees?)?|installments?)\b[^.;$€£]{0,40}$",
                               re.IGNORECASE)
_VALUE_BEFORE = re.compile(r"\b(?:(?:total|aggregate)\s+(?:contract\s+)?(?:value|price|fees?|consideration|"
                           r"amount\s+payable)|contract\s+(?:value|price|sum))\b[^.;$€£]{0,40}$", re.IGNORECASE)
_QUOTE = 90  # characters of context a quote keeps before the amount


@dataclass(frozen=True)
class StatedFee:
    """A recurring fee the contract states: ``monthly`` in ``currency`` and the words it was read from."""

    monthly: float
    currency: str
    quote: str


@dataclass(frozen=True)
class StatedValue:
    """The contract's stated total value (or total fees)."""

    amount: float
    currency: str
    quote: str


@dataclass(frozen=True)
class ContractFigures:
    """The recurring fees and total value a contract states (empty: it states none)."""

    fees: tuple[StatedFee, ...] = ()
    value: tuple[StatedValue, ...] = ()


def _quote(flat: str, start: int, end: int, lead: int) -> str:
    begin = max(start - lead, 0)
    return " ".join(flat[begin:end].split()).strip(" ,;:")


def contract_figures(text: str) -> ContractFigures:
    """The recurring fees and stated contract value in ``text`` (a whole contract), each read once."""
    flat = normalise(text)
    fees: dict[tuple[float, str], StatedFee] = {}
    value: dict[tuple[float, str], StatedValue] = {}
    for amount in read(text, "amount"):
        if amount.currency is None:
            continue
        before = flat[max(amount.start - _QUOTE, 0):amount.start]
        after = _UNIT_AFTER.match(flat[amount.end:amount.end + 60])
        recurring = _RECURRING_BEFORE.search(before)
        months = None
        if after and _FEE_BEFORE.search(before):
            months = _PER[" ".join((after.group(1) or after.group(2)).lower().split())]
            end = amount.end + after.end()
            lead = len(before) - _FEE_BEFORE.search(before).start()
        elif recurring:
            months = _PER[recurring.group(1).lower()]
            end, lead = amount.end, len(before) - recurring.start()
        if months is not None:
            fee = StatedFee(monthly=round(amount.value / months, 2), currency=amount.currency,
                            quote=_quote(flat, amount.start, end, lead))
            fees.setdefault((fee.monthly, fee.currency), fee)
        elif (stated := _VALUE_BEFORE.search(before)) and not amount.rate:
            lead = len(before) - stated.start()
            value.setdefault((amount.value, amount.currency), StatedValue(
                amount=amount.value, currency=amount.currency, quote=_quote(flat, amount.start, amount.end, lead)))
    return ContractFigures(fees=tuple(fees.values()), value=tuple(value.values()))


__all__ = ["ContractFigures", "StatedFee", "StatedValue", "contract_figures"]
