"""One walk-away rule against one clause, on its figures: meets, breaks, or cannot say, in plain words.

A rule's figure may be written in the clause in another unit: a cap "$15,000,000" against a rule "at
least 12 months of fees" is 15,000,000 / the contract's stated monthly fees; "fees of the prior 3
months" against a rule in dollars is 3 x the monthly fees; a sum against a rule in multiples of the fees
is the sum / the contract's stated value.  :func:`compare` converts only with figures the contract
states (:mod:`clausegate.review.position_figures`) and in the same currency; anything else is *not
compared*, and the note says why (no fees stated, another currency, a rate per day, a redacted amount).

Where the contract states several fees, the month of fees lies between the smallest one alone and all
of them together; a figure is decided only when both ends give the same answer (else "cannot say").
Several figures in one clause: the smallest binds a ``min`` rule and the largest a ``max`` rule (the
stricter reading), unless the clause says "whichever is greater" / "lesser of", which is then followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, Protocol

from clausegate.review.figures import Figure, read, redacted
from clausegate.review.position_figures import ContractFigures


class WalkAway(Protocol):
    """What a comparison reads of a playbook's walk-away rule (``positions.WalkAway`` is the validated one)."""

    kind: str
    min: float | None
    max: float | None
    currency: str | None

    def line(self) -> str: ...

Outcome = Literal["meets", "breaks", "cannot say"]
_SYMBOL = {"USD": "$", "EUR": "€", "GBP": "£"}
_GREATER = re.compile(r"\b(?:greater|higher|larger)\s+of\b|whichever\s+is\s+(?:greater|higher|larger|more)",
                      re.IGNORECASE)
_LESSER = re.compile(r"\b(?:lesser|lower|smaller)\s+of\b|whichever\s+is\s+(?:less|lesser|lower|smaller)",
                     re.IGNORECASE)


def money(amount: float, currency: str | None) -> str:
    """"$15,000,000", "€2,500.50", "CNY 50,000"; "15,000,000 (currency not stated)"."""
    digits = f"{amount:,.2f}" if round(amount, 2) % 1 else f"{amount:,.0f}"
    if currency is None:
        return f"{digits} (currency not stated)"
    return f"{_SYMBOL[currency]}{digits}" if currency in _SYMBOL else f"{currency} {digits}"


def _num(value: float) -> str:
    return f"{value:,.1f}".removesuffix(".0") if abs(value) >= 1 else f"{value:.3g}"


def in_unit(kind: str, value: float, currency: str | None = None) -> str:
    """A value in a rule's unit, in words: "12 months of fees", "30 days", "$1,000,000", "20% of the fees"."""
    if kind == "amount":
        return money(value, currency)
    if kind == "multiple_of_fees":
        return f"{_num(value * 100)}% of the fees" if value < 1 else f"{_num(value)} times the fees"
    return f"{_num(value)} {'months of fees' if kind == 'months_of_fees' else 'days'}"


@dataclass(frozen=True)
class Reading:
    """One figure of the clause in the rule's unit: between ``low`` and ``high`` (equal unless converted
    with several stated fees), and how it was read."""

    low: float
    high: float
    says: str


@dataclass(frozen=True)
class Judgement:
    """A rule against a clause: ``outcome`` None when no figure applies; ``text`` the plain-words verdict
    on figures; ``notes`` the figures not compared and why."""

    outcome: Outcome | None
    text: str = ""
    notes: tuple[str, ...] = ()
    values: tuple[float, ...] = field(default_factory=tuple)


def _exact(figure: Figure, kind: str) -> Reading:
    return Reading(figure.value, figure.value, f"{in_unit(kind, figure.value, figure.currency)} (\"{figure.quote}\")")


def _fees_range(contract: ContractFigures, currency: str | None, noun: str, shown: str,
                notes: list[str]) -> tuple[float, float, str] | None:
    """(smallest monthly fee, all monthly fees together, how they were read), or None with a note why."""
    if currency is None:
        notes.append(f"{noun} {shown}: its currency is not stated, so it is not set against the fees")
        return None
    if not contract.fees:
        notes.append(f"{noun} {shown}: the contract states no recurring fees to count months of fees by")
        return None
    others = sorted({f.currency for f in contract.fees if f.currency != currency})
    same = [f for f in contract.fees if f.currency == currency]
    if others or not same:
        notes.append(f"{noun} {shown} is in {currency}, the stated fees are in {', '.join(others)}: not compared")
        return None
    low, total = min(f.monthly for f in same), sum(f.monthly for f in same)
    if len(same) == 1:
        return low, total, f"{money(low, currency)} a month: \"{same[0].quote}\""
    listed = "; ".join(f"\"{f.quote}\"" for f in same)
    return low, total, f"{money(low, currency)} to {money(total, currency)} a month, one or all of {listed}"


def _value_range(contract: ContractFigures, currency: str | None, noun: str, shown: str,
                 notes: list[str]) -> tuple[float, float, str] | None:
    same = [v for v in contract.value if v.currency == currency and currency is not None]
    if not same:
        why = ("its currency is not stated" if currency is None else
               f"the contract's stated value is in {', '.join(sorted({v.currency for v in contract.value}))}"
               if contract.value else "the contract states no total value or total fees")
        notes.append(f"{noun} {shown}: {why}, so it is not set against a multiple of the fees")
        return None
    low, high = min(v.amount for v in same), max(v.amount for v in same)
    return low, high, "; ".join(f"{money(v.amount, v.currency)}: \"{v.quote}\"" for v in same)


def _sums(text: str, noun: str, notes: list[str]) -> list[Figure]:
    """The clause's amounts that are sums (a rate per day or per unit is noted, not compared)."""
    out = []
    for figure in read(text, "amount"):
        if figure.rate:
            notes.append(f"{money(figure.value, figure.currency)} (\"{figure.quote}\") is a rate, not a total: "
                         "not compared")
        else:
            out.append(figure)
    return out


def readings(rule: WalkAway, text: str, contract: ContractFigures, noun: str, notes: list[str]) -> list[Reading]:
    """The clause's figures in the rule's unit: read directly, or converted with the contract's figures."""
    kind = rule.kind
    if kind in ("period_days", "term_days"):
        return [_exact(f, kind) for f in read(text, kind)]
    if kind == "months_of_fees":
        found = [_exact(f, kind) for f in read(text, kind)]
        for f in _sums(text, noun, notes):
            shown = money(f.value, f.currency)
            if fees := _fees_range(ContractFigures(fees=contract.fees), f.currency, noun, shown, notes):
                low_fee, all_fees, how = fees
                found.append(Reading(f.value / all_fees, f.value / low_fee, f"{noun} {shown} = "
                                     f"{_span(f.value / all_fees, f.value / low_fee)} months of the stated fees "
                                     f"({how})"))
        return found
    if kind == "multiple_of_fees":
        found = [_exact(f, kind) for f in read(text, kind)]
        for f in _sums(text, noun, notes):
            shown = money(f.value, f.currency)
            if total := _value_range(contract, f.currency, noun, shown, notes):
                low, high, how = total
                found.append(Reading(f.value / high, f.value / low, f"{noun} {shown} = "
                                     f"{_span(100 * f.value / high, 100 * f.value / low)}% of the stated "
                                     f"contract value ({how})"))
        return found
    # amount: sums in the rule's currency; months of fees x the stated fees; multiples x the stated value
    found = []
    for f in _sums(text, noun, notes):
        if f.currency == rule.currency:
            found.append(_exact(f, kind))
        else:
            notes.append(f"{noun} {money(f.value, f.currency)} (\"{f.quote}\") is not in {rule.currency}, "
                         f"the currency of the rule: not compared")
    for f in read(text, "months_of_fees"):
        shown = f"{_num(f.value)} months of fees (\"{f.quote}\")"
        if fees := _fees_range(ContractFigures(fees=contract.fees), rule.currency, noun, shown, notes):
            low_fee, all_fees, how = fees
            found.append(Reading(f.value * low_fee, f.value * all_fees, f"{shown} = "
                                 f"{_money_span(f.value * low_fee, f.value * all_fees, rule.currency)} ({how})"))
    for f in read(text, "multiple_of_fees"):
        shown = in_unit("multiple_of_fees", f.value) + f" (\"{f.quote}\")"
        if total := _value_range(contract, rule.currency, noun, shown, notes):
            low, high, how = total
            found.append(Reading(f.value * low, f.value * high, f"{shown} = "
                                 f"{_money_span(f.value * low, f.value * high, rule.currency)} ({how})"))
    return found


def _span(low: float, high: float) -> str:
    return _num(low) if _num(low) == _num(high) else f"{_num(low)} to {_num(high)}"


def _money_span(low: float, high: float, currency: str | None) -> str:
    return money(low, currency) if round(low, 2) == round(high, 2) else \
        f"{money(low, currency)} to {money(high, currency)}"


def compare(rule: WalkAway, text: str, contract: ContractFigures | None = None, *, noun: str = "figure") -> Judgement:
    """``rule`` against the clause ``text`` (see the module docstring)."""
    notes: list[str] = []
    found = readings(rule, text, contract or ContractFigures(), noun, notes)
    if not found:
        if redacted(text):
            notes.append("a figure in the clause is redacted (***)")
        return Judgement(outcome=None, notes=tuple(dict.fromkeys(notes)))
    line = rule.line()
    greater, lesser = bool(_GREATER.search(text)), bool(_LESSER.search(text))
    pick_max = greater if rule.min is not None else not lesser  # a min rule: the smallest binds, unless "greater of"
    low = (max if pick_max else min)(r.low for r in found)
    high = (max if pick_max else min)(r.high for r in found)
    said = "; ".join(dict.fromkeys(r.says for r in found))
    if len({(r.low, r.high) for r in found}) > 1:
        said += (" (the greater binds: \"whichever is greater\")" if greater and pick_max else
                 " (the lesser binds)" if lesser and not pick_max else
                 f" (the {'largest' if pick_max else 'smallest'} binds)")
    outcome: Outcome
    if rule.min is not None and high < rule.min or rule.max is not None and low > rule.max:
        outcome, verb = "breaks", ("below" if rule.min is not None and high < rule.min else "above")
    elif (rule.min is None or low >= rule.min) and (rule.max is None or high <= rule.max):
        outcome, verb = "meets", "meets"
    else:
        outcome, verb = "cannot say", "cannot say against"
    text_out = f"{said}: {verb} '{line}'"
    if outcome == "cannot say":
        notes.append(f"{said}: could be either side of '{line}' (depends which stated fees apply)")
        text_out = ""
    return Judgement(outcome=outcome, text=text_out, notes=tuple(dict.fromkeys(notes)),
                     values=tuple(sorted({round(r.low, 3) for r in found} | {round(r.high, 3) for r in found})))


__all__ = ["Judgement", "Reading", "compare", "in_unit", "money", "readings"]
