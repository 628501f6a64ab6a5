"""Dates and durations as a contract writes them, read into ISO dates and (number, unit) periods.

A regular expression finds the candidates ("May 8, 2014", "the 8th day of May, 2014", "1 August 2019",
"10/1/99", "2014-05-08"); python-dateutil's parser turns each into a date (a US order for numbers unless the
first one is over 12).  Durations ("thirty (30) days", "one (1) year", "twelve-month", "annually") are read
over ``figures.normalise``'s text (number words as digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache

from dateutil import parser as date_parser
from dateutil.relativedelta import relativedelta

from clausegate.review.figures import normalise

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|"
          r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_DAY = r"(?:[0-3]?\d)\s?(?:st|nd|rd|th|t\s?h|s\s?t|n\s?d|r\s?d)?"  # "1s t": a PDF's split ordinal
_YEAR = r"(?:19|20)\d\d"
DATE_RE = re.compile(
    rf"(?<![A-Za-z])(?P<md>{_MONTH}\s*{_DAY}\s*,?\s*{_YEAR})\b"
    rf"|(?<!\d)(?P<dm>{_DAY}\s*(?:day\s+of\s+|of\s+)?{_MONTH}\s*,?\s*(?:A\.?D\.?\s*)?{_YEAR})\b"
    rf"|\b(?P<my>{_MONTH}\s*,?\s*{_YEAR})\b"
    r"|\b(?P<num>[0-3]?\d[/.-][0-3]?\d[/.-](?:(?:19|20)\d\d|\d\d))\b"
    rf"|\b(?P<iso>{_YEAR}-[01]\d-[0-3]\d)\b",
    re.IGNORECASE)
_DEFAULT = datetime(2000, 1, 1)
_ORDINAL = re.compile(r"(?<=\d)\s?(?:st|nd|rd|th|t\s?h|s\s?t|n\s?d|r\s?d)\b|\bday\s+of\b|\bof\b|A\.?D\.?",
                      re.IGNORECASE)


@dataclass(frozen=True)
class FoundDate:
    """A date in a text: its ISO value, where it is, and whether the text gave its day ("May 2014" does not)."""

    value: date
    start: int
    end: int
    has_day: bool = True


def parse_date(text: str) -> date | None:
    """One date as written ("May 8, 2014", "8th day of May 2014", "10/1/99") or None."""
    cleaned = " ".join(_ORDINAL.sub(" ", text).replace(",", " ").split())
    numeric = re.fullmatch(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})", cleaned)
    try:
        if numeric:
            first, second, year = (int(g) for g in numeric.groups())
            dayfirst = first > 12
            value = date_parser.parse(cleaned, dayfirst=dayfirst, default=_DEFAULT).date()
            if year < 100 and value.year > date.today().year + 30:
                value = value.replace(year=value.year - 100)
            return value
        return date_parser.parse(cleaned, default=_DEFAULT).date()
    except (ValueError, OverflowError):
        return None


# a year (19xx, 20xx) or a numeric date's tail: where a date ends.  Written to start with a digit so that ``re``
# skips to the next digit in C (``(?:19|20)\d\d\b|\d[/.-]\d\d?\b``, the same matches, tries every position: 3x slower)
_ANCHOR = re.compile(r"\d(?:(?<=1)9\d\d\b|(?<=2)0\d\d\b|[/.-]\d\d?\b)")
_LEAD = 40  # the longest date written before its year ("the 12th day of September, ")


def year_ends(text: str) -> list[int]:
    """Where each year (or numeric date's tail) that can end a date ends, in order: ``find_dates`` finds a date only
    where one of these lies."""
    return [m.end() for m in _ANCHOR.finditer(text)]


def find_dates(text: str, start: int = 0, end: int | None = None) -> list[FoundDate]:
    """Every date in ``text[start:end]`` (offsets into ``text``), in order.  The date pattern is tried only just
    before a year (or a numeric date's end), which keeps a long text cheap."""
    end = len(text) if end is None else min(end, len(text))
    found: list[FoundDate] = []
    for anchor in _ANCHOR.finditer(text, start, end):
        if found and anchor.start() < found[-1].end:
            continue
        lo = max(start, anchor.start() - _LEAD, found[-1].end if found else 0)
        for m in DATE_RE.finditer(text, lo, min(end, anchor.end() + 6)):
            if m.end() < anchor.end() - 1:
                continue
            value = parse_date(m.group(0))
            if value is not None and 1950 <= value.year <= 2100:
                found.append(FoundDate(value=value, start=m.start(), end=m.end(), has_day=m.group("my") is None))
            break
    return found


@lru_cache(maxsize=64)
def flat_text(text: str) -> str:
    """``figures.normalise(text)``, kept for the sentences read twice (their periods, then the words around them)."""
    return normalise(text)


_UNIT = {"day": "days", "week": "weeks", "month": "months", "year": "years"}
_DURATION = re.compile(r"\b(\d{1,4}(?:\.\d+)?)\s*[-\s]?\s*(?:\([\dIl]+\)\s*)?(?:consecutive\s+|calendar\s+|business\s+|"
                       r"working\s+|full\s+|additional\s+|successive\s+|contract\s+|renewal\s+)*"
                       r"(day|week|month|year)s?\b", re.IGNORECASE)
_EVERY = re.compile(r"\b(annually|year[- ]to[- ]year|yearly|month[- ]to[- ]month|monthly)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Duration:
    """A period: ``count`` ``unit`` (days, weeks, months, years)."""

    count: float
    unit: str

    def text(self) -> str:
        count = int(self.count) if float(self.count).is_integer() else self.count
        return f"{count} {self.unit[:-1] if count == 1 else self.unit}"

    def iso(self) -> str:
        count = int(self.count) if float(self.count).is_integer() else self.count
        return f"P{count}{ {'days': 'D', 'weeks': 'W', 'months': 'M', 'years': 'Y'}[self.unit]}"

    def days(self) -> float:
        return self.count * {"days": 1, "weeks": 7, "months": 30.4375, "years": 365.25}[self.unit]

    def delta(self) -> relativedelta:
        whole = int(self.count)
        if self.unit == "years" and not float(self.count).is_integer():
            return relativedelta(months=round(self.count * 12))
        return relativedelta(**{self.unit: whole})


def durations(text: str) -> list[tuple[Duration, int, int]]:
    """The periods of ``text`` (normalised: number words as digits) with their offsets in the normalised text."""
    flat = flat_text(text)
    out = [(Duration(float(m.group(1)), _UNIT[m.group(2).lower()]), m.start(), m.end())
           for m in _DURATION.finditer(flat) if 0 < float(m.group(1)) <= 1200]
    for m in _EVERY.finditer(flat):
        unit = "years" if m.group(1).lower().startswith(("ann", "year")) else "months"
        out.append((Duration(1.0, unit), m.start(), m.end()))
    return sorted(out, key=lambda d: d[1])


def add(start: date, period: Duration) -> date:
    """``start`` plus ``period`` (calendar months and years: 2014-02-10 + 5 years is 2019-02-10)."""
    return start + period.delta()
