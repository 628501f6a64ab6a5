"""The figures a walk-away condition checks, read from a clause's text: periods, amounts, multiples of fees.

Plain regular expressions over a normalised text (number words → digits, "thirty (30)" → "30"), no
model and no network, so a check is deterministic:

* ``period_days``: every period, in days ("thirty (30) days" 30, "two weeks" 14, "3 months" 90,
  "one year" 365, "net 45" 45);
* ``term_days``: the periods that are durations, not deadlines ("for three (3) years" 1095, "each
  twelve-month period" 360; not "within 30 days", "30 days after", "90 days' notice");
* ``months_of_fees``: periods in months or years next to a word about fees or payment ("fees paid in
  the three (3) months preceding the claim" 3, "twelve-month period" 12, "annual fees" 12, "two times
  the annual fees" 24);
* ``amount``: sums of money with their currency ("$1,000,000" USD, "EUR 2 million", "RMB 50,000",
  "one million US Dollars"); a bare "$" or "dollars" is read as USD, "C$"/"Canadian dollars" as CAD.
  An amount "per day", "for each unit" or "multiplied by" is a *rate* (:attr:`Figure.rate`), not a sum;
* ``multiple_of_fees``: "two times (2x) the fees" 2, "twice the fees paid" 2 (next to a fee word),
  "ten percent (10%) of the total fees" 0.1, "10% of the value of the Contract" 0.1.

:func:`read` gives each figure with the words it was read from (a verdict quotes them);
:func:`figures` only the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIGURE_KINDS = ("months_of_fees", "period_days", "term_days", "amount", "multiple_of_fees")
UNIT_WORDS = {"months_of_fees": "months of fees", "period_days": "days", "term_days": "days",
              "amount": "(amount)", "multiple_of_fees": "x the fees"}

_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000}
_WORD = "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
_WORDS = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\b", re.IGNORECASE)
_SPELLED_AND_DIGITS = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\s*\((\d[\d,.]*)\)", re.IGNORECASE)
_SPELLED_PERCENT = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\s+per\s?cent\s*\((\d[\d.]*)\s?%\)",
                              re.IGNORECASE)
_PAREN_DIGITS = re.compile(r"\((\d[\d,.]*)\)")
_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_PERIOD = re.compile(rf"{_NUM}\s*[-\s]?\s*(?:calendar\s+|business\s+|working\s+)?(day|week|month|year)s?\b",
                     re.IGNORECASE)
_NET = re.compile(r"\bnet\s+(\d+)\b", re.IGNORECASE)
_BARE_PERIOD = re.compile(r"\b(?:prior|preceding|previous|last|past|immediately\s+preceding)\s+(?:calendar\s+|"
                          r"contract\s+)?(month|year)\b", re.IGNORECASE)
_ANNUAL_FEES = re.compile(r"\b(?:annual|yearly|twelve\s+months')\s+(?:\w+\s+){0,2}(?:fees?|charges|payments?)\b",
                          re.IGNORECASE)
_TIMES_BEFORE = re.compile(rf"(?:{_NUM}\s*(?:x|times)|\b(twice|double))\s+(?:the\s+)?$", re.IGNORECASE)
_FEE_WORDS = re.compile(r"\b(?:fees?|charges?|paid|payable|amounts?|payments?|compensation|price)\b", re.IGNORECASE)
_DEADLINE_BEFORE = re.compile(r"\b(?:within|after|before|prior\s+to|upon|than|notice\s+of|at\s+least|no\s+later"
                              r"|not\s+later|until|by)\s+$", re.IGNORECASE)
_DEADLINE_AFTER = re.compile(r"^['’]?s?\s*(?:prior|after|following|from|before|of\s+(?:the|receipt|written|such|"
                             r"its|any)|notice|written|advance|in\s+advance)\b", re.IGNORECASE)
_MULTIPLE = re.compile(rf"{_NUM}\s*(?:x|times)\b|\b(twice|double)\b", re.IGNORECASE)
_PERCENT_OF_FEES = re.compile(
    rf"{_NUM}\s*(?:%|per\s?cent\b)\s+of\s+(?:the\s+|all\s+)?(?:[\w-]+\s+){{0,3}}?"
    r"(?:fees?|charges|price|amounts?\s+(?:paid|payable)|payments|compensation|"
    r"(?:final\s+|total\s+)?value\s+of\s+(?:the|this)\s+(?:contract|agreement))\b", re.IGNORECASE)
_SCALE = r"(?:\s*(million|billion|thousand|m|k|mm|bn)\b)?"
_SYMBOLS = {"us$": "USD", "u.s.$": "USD", "$": "USD", "c$": "CAD", "ca$": "CAD", "cdn$": "CAD", "a$": "AUD",
            "au$": "AUD", "hk$": "HKD", "s$": "SGD", "nt$": "TWD", "€": "EUR", "£": "GBP", "rs": "INR", "rs.": "INR",
            "rmb": "CNY", "¥": None}  # ¥: yen or yuan, not said
_CODES = "USD EUR GBP CHF CAD AUD JPY CNY RMB INR HKD SGD SEK NOK DKK NZD ZAR BRL MXN KRW TWD ILS".split()
_MONEY_BEFORE = re.compile(
    rf"(US\$|U\.S\.\s?\$|CA\$|CDN\$|C\$|AU\$|A\$|HK\$|NT\$|S\$|\$|€|£|¥|\b(?:{'|'.join(_CODES)})|\bRs\.?)\s?{_NUM}{_SCALE}",
    re.IGNORECASE)
_WORD_CURRENCIES = {"dollars": "USD", "us dollars": "USD", "u.s. dollars": "USD", "united states dollars": "USD",
                    "canadian dollars": "CAD", "australian dollars": "AUD", "hong kong dollars": "HKD",
                    "singapore dollars": "SGD", "euro": "EUR", "euros": "EUR", "pounds": "GBP",
                    "pounds sterling": "GBP", "yuan": "CNY", "renminbi": "CNY", "yen": "JPY", "rupees": "INR",
                    "swiss francs": "CHF"}
_MONEY_AFTER = re.compile(
    rf"{_NUM}{_SCALE}\s*((?:(?:US|U\.S\.|United\s+States|Canadian|Australian|Hong\s+Kong|Singapore)\s+)?dollars"
    rf"|euros?|pounds(?:\s+sterling)?|yuan|renminbi|yen|rupees|swiss\s+francs|\b(?:{'|'.join(_CODES)}))\b",
    re.IGNORECASE)
_RATE_AFTER = re.compile(r"^\s*\)?\s*(?:\([^)]{0,60}\)\s*)?(?:\w+\s+)?(?:(?:per|for\s+each|for\s+every|/)\s*"
                         r"(?!\s|claim|occurrence|incident|event)|each\b|multiplied\s+by\b|times\b|x\b)", re.IGNORECASE)
_REDACTED = re.compile(r"(?:\$|USD|RMB|€|£)\s?\[?\s?\*|\[\s?\*+\s?\]|\*\*\*")
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTHS = {"month": 1, "year": 12}
_MULTIPLIERS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mm": 1e6, "billion": 1e9, "bn": 1e9}
_WINDOW = 100  # characters either side of a figure in which a fee word makes it a figure about fees
_FEES_BEFORE = 80  # a period of fees: a fee word this many characters before it, or "months' fees" after it
_FEES_AFTER = re.compile(r"^['’]?s?\s+(?:of\s+)?(?:the\s+)?(?:[\w-]+\s+)?(?:fees?|charges|payments?|compensation)\b",
                         re.IGNORECASE)
_MAX_DAYS = 36500  # a "period" past 100 years is a number in a table ("7,083 year"), not a period


@dataclass(frozen=True)
class Figure:
    """One figure of a clause: its value in the kind's unit, the words it was read from (normalised text),
    and for an amount its currency (an ISO code; None when the text does not say which) and whether it is
    a rate ("$5,000 per day") rather than a sum."""

    kind: str
    value: float
    quote: str
    start: int = 0
    end: int = 0
    currency: str | None = None
    rate: bool = False


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
    """Number words as digits; "thirty (30)" and "(30)" as "30"; "ten percent (10%)" as "10%"; whitespace
    collapsed."""
    flat = " ".join(text.split())
    flat = _SPELLED_PERCENT.sub(lambda m: m.group(1) + "%", flat)
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


def _fees_period(text: str, start: int, end: int) -> bool:
    """A period about fees: a fee word shortly before it ("fees paid in the 3 months") or right after it
    ("12 months' fees"); a fee word further on ("a One-Year Warranty Period ... the payment") does not count."""
    return bool(_FEE_WORDS.search(text, max(start - _FEES_BEFORE, 0), start)) or bool(_FEES_AFTER.match(text[end:]))


def _fig(kind: str, m: re.Match, value: float, **extra) -> Figure:
    return Figure(kind=kind, value=value, quote=m.group(0).strip(), start=m.start(), end=m.end(), **extra)


def _money(flat: str) -> list[Figure]:
    found = []
    for m in _MONEY_BEFORE.finditer(flat):
        symbol = m.group(1).lower().replace(" ", "")
        currency = _SYMBOLS[symbol] if symbol in _SYMBOLS else symbol.upper().replace("RMB", "CNY")
        found.append((m, _number(m.group(2)) * _MULTIPLIERS.get((m.group(3) or "").lower(), 1), currency))
    for m in _MONEY_AFTER.finditer(flat):
        word = " ".join(m.group(3).lower().split())
        currency = _WORD_CURRENCIES.get(word, word.upper().replace("RMB", "CNY"))
        found.append((m, _number(m.group(1)) * _MULTIPLIERS.get((m.group(2) or "").lower(), 1), currency))
    return [_fig("amount", m, value, currency=currency, rate=bool(_RATE_AFTER.match(flat[m.end():m.end() + 40])))
            for m, value, currency in found]


def _months_of_fees(flat: str) -> list[Figure]:
    found = [_fig("months_of_fees", m, _number(m.group(1)) * _MONTHS[m.group(2).lower()])
             for m in _PERIOD.finditer(flat)
             if m.group(2).lower() in _MONTHS and _fees_period(flat, m.start(), m.end())
             and _number(m.group(1)) * _DAYS[m.group(2).lower()] <= _MAX_DAYS]
    found += [_fig("months_of_fees", m, float(_MONTHS[m.group(1).lower()])) for m in _BARE_PERIOD.finditer(flat)
              if _fees_period(flat, m.start(), m.end())]
    for m in _ANNUAL_FEES.finditer(flat):
        times = _TIMES_BEFORE.search(flat[max(m.start() - 30, 0):m.start()])
        factor = (2.0 if times.group(2) else _number(times.group(1))) if times else 1.0
        found.append(_fig("months_of_fees", m, 12.0 * factor))
    return found


def read(text: str, kind: str) -> list[Figure]:
    """The figures of ``kind`` (one of :data:`FIGURE_KINDS`) in ``text``, in order of appearance; the
    same value (and currency) read twice, as in "Nine Million Dollars ($9,000,000)", once."""
    flat = normalise(text)
    if kind in ("period_days", "term_days"):
        found = [_fig(kind, m, _number(m.group(1)) * _DAYS[m.group(2).lower()]) for m in _PERIOD.finditer(flat)
                 if _number(m.group(1)) * _DAYS[m.group(2).lower()] <= _MAX_DAYS]
        if kind == "term_days":
            found = [f for f in found if not _DEADLINE_BEFORE.search(flat[max(f.start - 25, 0):f.start])
                     and not _DEADLINE_AFTER.match(flat[f.end:f.end + 30])]
        else:
            found += [_fig(kind, m, _number(m.group(1))) for m in _NET.finditer(flat)]
    elif kind == "months_of_fees":
        found = _months_of_fees(flat)
    elif kind == "amount":
        found = _money(flat)
    elif kind == "multiple_of_fees":
        found = [_fig(kind, m, 2.0 if m.group(2) else _number(m.group(1))) for m in _MULTIPLE.finditer(flat)
                 if _near_fees(flat, m.start(), m.end())]
        found += [_fig(kind, m, _number(m.group(1)) / 100) for m in _PERCENT_OF_FEES.finditer(flat)]
    else:
        raise ValueError(f"unknown figure kind {kind!r}; one of {FIGURE_KINDS}")
    kept: dict[object, Figure] = {}
    for figure in sorted(found, key=lambda f: f.start):
        starts = {f.start for f in kept.values()}
        key = (figure.value, figure.currency, figure.rate) if kind == "amount" else figure.start
        if figure.start not in starts:
            kept.setdefault(key, figure)
    return list(kept.values())


def figures(text: str, kind: str) -> list[float]:
    """The values of :func:`read`."""
    return [f.value for f in read(text, kind)]


def redacted(text: str) -> bool:
    """True when the text has a redacted figure ("$***", "[***]"), as SEC filings often do."""
    return bool(_REDACTED.search(text))
