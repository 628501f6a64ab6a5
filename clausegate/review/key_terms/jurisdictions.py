"""Jurisdiction names a governing-law clause names: US states, Canadian provinces, countries and their common
other spellings ("PRC", "the Netherlands"), each read as one normalised name ("People's Republic of China")."""

from __future__ import annotations

import re

US_STATES = ("Alabama Alaska Arizona Arkansas California Colorado Connecticut Delaware Florida Georgia Hawaii Idaho "
             "Illinois Indiana Iowa Kansas Kentucky Louisiana Maine Maryland Massachusetts Michigan Minnesota "
             "Mississippi Missouri Montana Nebraska Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah "
             "Vermont Virginia Washington Wisconsin Wyoming").split() + [
    "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Rhode Island",
    "South Carolina", "South Dakota", "West Virginia", "District of Columbia"]
PROVINCES = ["Ontario", "Quebec", "British Columbia", "Alberta", "Manitoba", "Saskatchewan", "Nova Scotia",
             "New Brunswick"]
COUNTRIES = ["England", "Scotland", "Ireland", "Israel", "Hong Kong", "Singapore", "Japan", "Taiwan", "India",
             "Germany", "France", "Spain", "Italy", "Switzerland", "Sweden", "Norway", "Denmark", "Finland", "Belgium",
             "Netherlands", "Luxembourg", "Austria", "Australia", "New Zealand", "Canada", "Mexico", "Brazil", "Korea",
             "Cayman Islands", "Bermuda", "British Virgin Islands", "Malaysia", "Thailand", "Philippines", "Indonesia",
             "South Africa", "Cyprus", "Greece", "Portugal", "Poland", "Russia", "Turkey", "United Arab Emirates",
             "Macau", "Vietnam", "Kazakhstan", "Ukraine", "Egypt", "Nigeria", "Kenya", "Pakistan", "Chile",
             "Argentina", "Colombia", "Peru", "Deutschland", "Bundesrepublik Deutschland",
             "España", "Frankreich", "Schweiz", "Österreich"]
ALIASES = {"People's Republic of China": "People's Republic of China", "People’s Republic of China":
           "People's Republic of China", "PRC": "People's Republic of China", "P.R.C.": "People's Republic of China",
           "China": "People's Republic of China", "Republic of Korea": "Korea", "South Korea": "Korea",
           "United Kingdom": "England", "England and Wales": "England", "Commonwealth of Massachusetts":
           "Massachusetts", "Commonwealth of Pennsylvania": "Pennsylvania", "Commonwealth of Virginia": "Virginia",
           "Deutschland": "Germany", "Bundesrepublik Deutschland": "Germany", "España": "Spain",
           "Frankreich": "France", "Schweiz": "Switzerland", "Österreich": "Austria",
           "United States": "United States", "U.S.A.": "United States", "USA": "United States"}
_ALL = sorted({*US_STATES, *PROVINCES, *COUNTRIES, *ALIASES}, key=len, reverse=True)
_NAME = re.compile(r"(?<![\w])(?:" + "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in _ALL) + r")(?![\w])",
                   re.IGNORECASE)
_CANONICAL = {n.lower(): n for n in _ALL}
_PROVINCES = set(PROVINCES)
NAME_RE = _NAME


def jurisdiction_at(text: str, start: int, end: int) -> str | None:
    """The first jurisdiction named in ``text[start:end]``, normalised; "United States" only when nothing more
    precise (a state) follows it in the window."""
    first = None
    for m in _NAME.finditer(text, start, min(end, len(text))):
        said = " ".join(m.group(0).split())
        if said.isupper() and len(said) <= 4 and said not in ALIASES:
            continue
        spelled = _CANONICAL[said.lower()]
        if spelled == "China" and text[max(0, m.start() - 18):m.start()].lower().endswith("republic of "):
            spelled = "People's Republic of China"
        name = ALIASES.get(spelled, spelled)
        if name == "United States":
            first = first or name
            continue
        if name == "Washington" and re.match(r"\s*,?\s*D\.?\s?C", text[m.end():m.end() + 6]):
            name = "District of Columbia"
        return f"{name}, Canada" if name in _PROVINCES else name
    return first


def primary(name: str) -> str:
    """The jurisdiction a normalised answer starts with, for comparing ("Ontario, Canada" -> "ontario",
    "Province of Ontario, Canada" -> "ontario", "England; Wales" -> "england")."""
    head = re.split(r"[;,]", name, maxsplit=1)[0]
    head = re.sub(r"^(?:the\s+)?(?:State|Commonwealth|Province|Republic)\s+of\s+", "", head.strip(),
                  flags=re.IGNORECASE)
    head = ALIASES.get(head, head)
    return re.sub(r"^the\s+", "", head.strip().lower())
