"""The figures a walk-away condition checks, read from a clause's text: periods, amounts, multiples of fees.

Plain regular expressions over a normalised text (number words → digits, "thirty (30)" → "30"), no
model and no network, so a check is deterministic:

* ``period_days``: every period, in days ("thirty (30) days" 30, "two weeks" 14, "3 months" 90,
  "one year" 365, "net 45" 45);
* ``months_of_fees``: periods in months or years next to a word about fees or payment ("fees paid in
  the three (3) months preceding the claim" 3, "twelve-month period" 12, "annual fees" 12);
* ``amount``: sums of money with a currency ("$1,000,000", "EUR 2 million", "500 thousand dollars");
* ``multiple_of_fees``: "two times (2x) the fees" 2, "twice the fees paid" 2 (next to a fee word).
"""

from __future__ import annotations

import re

FIGURE_KINDS = ("months_of_fees", "period_days", "amount", "multiple_of_fees")
UNIT_WORDS = {"months_of_fees": "months of fees", "period_days": "days", "amount": "(amount)",
              "multiple_of_fees": "x the fees"}

_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
_WORDS = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\b", re.IGNORECASE)
_SPELLED_AND_DIGITS = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\s*\((\d[\d,.]*)\)", re.IGNORECASE)
_PAREN_DIGITS = re.compile(r"\((\d[\d,.]*)\)")
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_PERIOD = re.compile(rf"{_NUM}\s*[-\s]?\s*(?:calendar\s+|business\s+|working\s+)?(day|week|month|year)s?\b",
                     re.IGNORECASE)
_NET = re.compile(r"\bnet\s+(\d+)\b", re.IGNORECASE)
_BARE_PERIOD = re.compile(r"\b(?:prior|preceding|previous|last|past|immediately\s+preceding)\s+(?:calendar\s+|"
                          r"contract\s+)?(month|year)\b", re.IGNORECASE)
_ANNUAL_FEES = re.compile(r"\b(?:annual|yearly|twelve\s+months')\s+(?:\w+\s+){0,2}(?:fees?|charges|payments?)\b",
                          re.IGNORECASE)
_FEE_WORDS = re.compile(r"\b(?:fees?|charges?|paid|payable|amounts?|payments?|compensation|price)\b", re.IGNORECASE)
_SCALE = r"(?:\s*(million|billion|thousand|m|k|mm|bn)\b)?"
_MONEY_BEFORE = re.compile(rf"(?:US\$|\$|€|£|\b(?:USD|EUR|GBP|CHF)\s?)\s?{_NUM}{_SCALE}", re.IGNORECASE)
_MONEY_AFTER = re.compile(rf"{_NUM}{_SCALE}\s*(?:(?:US\s+)?dollars|euros?|pounds(?:\s+sterling)?|USD|EUR|GBP|CHF)\b",
                          re.IGNORECASE)
_MULTIPLE = re.compile(rf"{_NUM}\s*(?:x|times)\b|\b(twice|double)\b", re.IGNORECASE)
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTHS = {"month": 1, "year": 12}
_MULTIPLIERS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mm": 1e6, "billion": 1e9, "bn": 1e9}
_WINDOW = 100  # characters either side of a figure in which a fee word makes it a figure about fees


def _words_value(phrase: str) -> int | None:
    total = current = 0
    for word in re.split(r"\s+and\s+|\s+|-", phrase.lower()):
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word == "thousand":
            total += max(current, 1) * 1000
            current = 0
        else:
            return None
    return total + current


def normalise(text: str) -> str:
    """Number words as digits; "thirty (30)" and "(30)" as "30"; whitespace collapsed."""
    flat = " ".join(text.split())
    flat = _SPELLED_AND_DIGITS.sub(lambda m: m.group(1), flat)
    flat = _PAREN_DIGITS.sub(lambda m: m.group(1), flat)

    def spelled(match: re.Match) -> str:
        value = _words_value(match.group(0))
        return match.group(0) if value is None else str(value)

    return _WORDS.sub(spelled, flat)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _near_fees(text: str, start: int, end: int) -> bool:
    return bool(_FEE_WORDS.search(text, max(start - _WINDOW, 0), min(end + _WINDOW, len(text))))


def figures(text: str, kind: str) -> list[float]:
    """The figures of ``kind`` (one of :data:`FIGURE_KINDS`) in ``text``, in order of appearance."""
    flat = normalise(text)
    if kind == "period_days":
        found = [(m.start(), _number(m.group(1)) * _DAYS[m.group(2).lower()]) for m in _PERIOD.finditer(flat)]
        found += [(m.start(), _number(m.group(1))) for m in _NET.finditer(flat)]
    elif kind == "months_of_fees":
        found = [(m.start(), _number(m.group(1)) * _MONTHS[m.group(2).lower()]) for m in _PERIOD.finditer(flat)
                 if m.group(2).lower() in _MONTHS and _near_fees(flat, m.start(), m.end())]
        found += [(m.start(), float(_MONTHS[m.group(1).lower()])) for m in _BARE_PERIOD.finditer(flat)
                  if _near_fees(flat, m.start(), m.end())]
        found += [(m.start(), 12.0) for m in _ANNUAL_FEES.finditer(flat)]
    elif kind == "amount":
        found = [(m.start(), _number(m.group(1)) * _MULTIPLIERS.get((m.group(2) or "").lower(), 1))
                 for pattern in (_MONEY_BEFORE, _MONEY_AFTER) for m in pattern.finditer(flat)]
    elif kind == "multiple_of_fees":
        found = [(m.start(), 2.0 if m.group(2) else _number(m.group(1))) for m in _MULTIPLE.finditer(flat)
                 if _near_fees(flat, m.start(), m.end())]
    else:
        raise ValueError(f"unknown figure kind {kind!r}; one of {FIGURE_KINDS}")
    seen: dict[int, float] = {}
    for start, value in sorted(found):
        seen.setdefault(start, value)
    return list(seen.values())
