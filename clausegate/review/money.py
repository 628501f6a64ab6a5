"""Amounts of money: adding up what model calls cost, and printing amounts so that small ones still mean something.

Costs are kept to 1/10000 cent (six decimals: ``clausegate.ops.budget``).  A fixed ``.2f`` turns a
€0.001 budget into "€0.00" and ``.4f`` hides a €0.00004 call, so amounts print with every
significant decimal up to that precision, and at least two:

    eur_text(0.001) == "€0.001"    eur_text(12.5) == "€12.50"    eur_text(0.011393) == "€0.011393"
"""

from __future__ import annotations

from clausegate.review.schemas import Cost

DECIMALS = 6  # the ledger's precision


def add_costs(*costs: Cost) -> Cost:
    """The sum of ``costs`` (euros rounded to the ledger's precision)."""
    return Cost(calls=sum(c.calls for c in costs), input_tokens=sum(c.input_tokens for c in costs),
                output_tokens=sum(c.output_tokens for c in costs), eur=round(sum(c.eur for c in costs), DECIMALS),
                reused_calls=sum(c.reused_calls for c in costs),
                reused_eur=round(sum(c.reused_eur for c in costs), DECIMALS))


def eur_digits(amount: float) -> str:
    """The amount without the sign: at least two decimals, at most six, no trailing zeros beyond two."""
    text = f"{round(float(amount), DECIMALS):.{DECIMALS}f}"
    whole, _, decimals = text.partition(".")
    decimals = decimals.rstrip("0").ljust(2, "0")
    if whole == "-0" and set(decimals) == {"0"}:
        whole = "0"
    return f"{whole}.{decimals}"


def eur_text(amount: float) -> str:
    """``€`` + :func:`eur_digits`."""
    return f"€{eur_digits(amount)}"
