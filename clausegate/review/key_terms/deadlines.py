"""The dates that act: when the current term ends and by when notice must be given so that it does not renew.

The notice deadline is the term's end minus the notice period.  A contract that renews automatically is rolled
forward, one renewal term at a time, to the first term whose notice deadline is still ahead (on or after
``today``); one that does not renew keeps its own end (its deadline may be past: the report says so).
"""

from __future__ import annotations

import re
from datetime import date

from clausegate.review.key_terms.dates import Duration, add
from clausegate.review.schemas import ContractTerm, RenewalDates

_ISO = re.compile(r"P(\d+(?:\.\d+)?)([DWMY])")
_UNITS = {"D": "days", "W": "weeks", "M": "months", "Y": "years"}
MAX_ROLLS = 1200  # a monthly renewal from 1920 is still rolled forward; nothing loops for ever


def duration(value: str | None) -> Duration | None:
    """An ISO 8601 duration as written by the key terms (``P90D``, ``P1Y``), or None."""
    m = _ISO.fullmatch(value or "")
    return Duration(float(m.group(1)), _UNITS[m.group(2)]) if m else None


def _minus(day: date, period: Duration) -> date:
    return day - period.delta()


def renewal_dates(expiration: ContractTerm | None, renewal: ContractTerm | None, notice: ContractTerm | None,
                  *, automatic: bool, today: date) -> RenewalDates | None:
    """The current term's end and the notice deadline, or None when the contract states no end date."""
    if expiration is None or not expiration.value or not re.fullmatch(r"\d{4}-\d\d-\d\d", expiration.value):
        return None
    end = date.fromisoformat(expiration.value)
    term, period = duration(renewal.value if renewal else None), duration(notice.value if notice else None)
    auto = automatic and term is not None
    rolled = 0
    if auto:
        def deadline_of(day: date) -> date:
            return _minus(day, period) if period else day

        while deadline_of(end) < today and rolled < MAX_ROLLS:
            end, rolled = add(end, term), rolled + 1
    deadline = _minus(end, period) if period else None
    words = [f"the term ends {end.isoformat()}"]
    if rolled:
        words[-1] += (f" (the initial term ended {expiration.value}, renewed automatically {rolled} time(s) by "
                      f"{term.text()})")
    if deadline:
        words.append(f"notice of {period.text()} is due by {deadline.isoformat()}")
        if deadline < today:
            words[-1] += " (already past)"
    elif auto:
        words.append("it renews automatically; the contract states no notice period")
    return RenewalDates(term_end=end.isoformat(), auto_renews=auto,
                        notice_deadline=deadline.isoformat() if deadline else None,
                        computed_on=today.isoformat(), explanation="; ".join(words))
