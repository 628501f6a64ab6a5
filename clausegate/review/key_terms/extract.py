"""The key terms of a contract, read offline from its text: parties, agreement, effective and expiration dates,
renewal term, notice period to stop a renewal, governing law and the cap on liability.

Plain regular expressions over keyword windows (never the whole text twice), dates read by python-dateutil
(``dates``), so a contract costs a few milliseconds and the same text always gives the same terms.  Each term
keeps the words it was read from and its page; a term the text does not state is ``None`` (the report says
"not found").  Measured against CUAD's normalised answers by ``bench/key_terms.py`` (docs/key-terms.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clausegate.review.figures import read as read_figures
from clausegate.review.key_terms.dates import DATE_RE, FoundDate, durations, find_dates, flat_text
from clausegate.review.key_terms.jurisdictions import jurisdiction_at
from clausegate.review.key_terms.scan import near

_PREAMBLE = re.compile(r"\b(?:entered\s+into|made\s+(?:and\s+entered\s+)?(?:as\s+of|on|this|effective)|dated|"
                       r"by\s+and\s+between|is\s+made|between)\b")
_EFFECTIVE_WORD = ("effective",)
_EFFECTIVE = re.compile(r"effective\s+date")  # scanned over the lowered text (no IGNORECASE), as the others below
_EFFECTIVE_UPON = re.compile(r"(?:shall|will)\s+(?:be(?:come)?\s+effective|take\s+effect|commence)\s+"
                             r"(?:as\s+of\s+|on\s+|upon\s+)"
                             r"(?:the\s+)?(?:date\s+(?:first\s+)?(?:above|hereof|of\s+(?:its\s+)?(?:execution|signature|this))|"
                             r"(?:completion\s+of\s+(?:the\s+)?)?(?:execution|signature|signing))"
                             r"|effective\s+(?:until|upon|when)\s+(?:it\s+is\s+)?signed"
                             r"|(?:commenc\w*|commencement\s+date)[^.;]{0,30}?\bthe\s+date\s+(?:first\s+(?:set\s+forth|written|"
                             r"stated)\s+above|hereof|of\s+this\s+agreement)")  # takes effect on the day it is made
_EFFECTIVE_AS_OF = re.compile(r"(?<!was )(?<!were )(?<!been )(?<!became )\beffective(?:\s+(?:for|in)\s+[^.;]{0,45}?)?"
                              r"\s+(?:as\s+of|on|from)\s+(?:the\s+)?|(?<!was )\beffective\s+(?=\w+\s+\d)")
_DEFINES_OTHER = re.compile(r"[\"”]\s+(?:means|shall\s+mean)\b[^.;]*$")  # '"Bill of Sale" means …, effective as of'
_NAMES_IT = re.compile(r"^,?\s*(?:\((?:the|this|hereinafter|such\s+date\s+being)?[^()]{0,25}|"
                       r"(?:the|this|hereinafter)\s+)"
                       r"[\"“”']?$", re.IGNORECASE)  # "<date> (the "Effective Date")"
_EFFECTIVE_MEANS = re.compile(r"^[\"”’')\s]*(?:[^.;\d]{0,40}?\b(?:shall\s+(?:be|mean)|means|is|will\s+be)\b|:|of|on)?"
                              r"\s*(?:the\s+)?$", re.IGNORECASE)
_RENEW = re.compile(r"\b(?:renew|renewal|renewed|renews|automatically\s+(?:extend|continue)|extended\s+automatically|"
                    r"year[- ]to[- ]year|successive)")
_RENEW_ANCHOR = ("renew", "automatic", "to-year", "to year", "successive")
_NOTICE_AFTER = re.compile(r"^['’]?s?\)?\s*(?:\([^)]*\)\s*)?(?:prior|advance|written|notice|before|in\s+advance|"
                           r"of\s+(?:the|its|such|any|written)|preceding)", re.IGNORECASE)
_NOTICE_BEFORE = re.compile(r"(?:at\s+least|not\s+less\s+than|no\s+less\s+than|no\s+later\s+than|not\s+later\s+than|"
                            r"within|minimum\s+of|upon|giving|gives?|with|least)\s*(?:\(|the\s+)?$", re.IGNORECASE)
_LAW_WORD = ("law",)
_LAWS_OF = re.compile(r"\blaws?\s+(?:of|in|prevailing\s+in)\b")
_GOVERNED = re.compile(r"\b(?:governed|governs|govern|governing|construed|interpreted|enforced|subject\s+to)\b")
_GOVERNED_BY_LAW = re.compile(r"\b(?:governed|construed|interpreted)\b[^.;]{0,150}?(?P<name>\b[A-Z][\w.]*(?:\s+[A-Z]"
                              r"[\w.]*){0,3})\s+(?:law|General\s+Obligations\s+Law)\b")
_LAW_HEADING = re.compile(r"\b(?:governing|applicable|choice\s+of)\s+law\b")
_LAWS_OF_STATE = re.compile(r"\blaws?\s+of\s+(?:the\s+)?(?:state|commonwealth|province)\s+of\b")
_INCORPORATED = re.compile(r"(?:organi[sz]ed|existing|incorporated|formed|standing|registered|chartered)\b[^.;]{0,40}$")
_CAP = re.compile(r"liabilit")
_CAP_WORDS = re.compile(r"\b(?:exceed|limited\s+to|maximum|aggregate|in\s+no\s+event|cap)\b", re.IGNORECASE)
_RECITAL = re.compile(r"WHEREAS|Whereas|that\s+certain|pursuant\s+to|under\s+the|amended|issuance|[Oo]rder\s+[Nn]o")
# a date another document is given, not this one's (case-sensitive: a filing's upper-case legend "AS AMENDED" is not)
_DATE_CUE = re.compile(r"(?:as\s+of|dated|made|entered\s+into|this|day\s+of|effective|\bon|date\s*:?)\s*(?:the\s+)?$",
                       re.IGNORECASE)
_DATE_LABEL = re.compile(r"\bDated?\s*:\s*$", re.IGNORECASE)
_DATE_LABEL_WORD = re.compile(r"dated?\s*:\s*", re.IGNORECASE)  # where _DATE_LABEL can end
_DATE_REACH = 60  # a date just after its label: its own length
WINDOW = 700  # the longest sentence read around a keyword, in characters either side


@dataclass
class Term:
    """One key term as read: its normalised value, the words it was read from and where they are."""

    name: str
    value: str | None = None
    display: str | None = None
    quote: str = ""
    start: int | None = None
    extra: dict = field(default_factory=dict)


_ABBREVIATIONS = ("No", "Inc", "Co", "Ltd", "St", "Sec", "Corp", "U.S", "N.A", "S.A", "Mr", "Ms", "Dr", "etc")


def _ends_sentence(text: str, k: int) -> bool:
    """Whether the ``.`` or ``;`` at ``k`` ends a sentence (not "Inc." or "No."; a capital, digit or quote next)."""
    if text[k] == "." and (text[max(0, k - 4):k].endswith(_ABBREVIATIONS) or (k and text[k - 1].isupper())):
        return False
    if text[k + 1:k + 2] in ("\"", "”"):  # a defined term's closing quote: 'the "Term." B. Notwithstanding'
        k += 1
    nxt = text[k + 1:k + 3]
    return len(nxt) < 2 or (nxt[0].isspace() and (nxt[1].isupper() or nxt[1].isdigit() or nxt[1] in "(\"“"
                                                  or nxt[1].isspace()))


def sentence_bounds(text: str, i: int, j: int | None = None) -> tuple[int, int]:
    """The sentence (or list item) around ``text[i:j]``: from the previous sentence end to the next one."""
    j = i if j is None else j
    lo, hi = max(0, i - WINDOW), min(len(text), j + WINDOW)
    a = lo
    k = i
    while k > lo:
        k = max(text.rfind(".", lo, k), text.rfind(";", lo, k))
        if k < 0:
            break
        if _ends_sentence(text, k):
            a = k + 2 if text[k + 1:k + 2] in ("\"", "”") else k + 1
            break
    b = hi
    k = j
    while k < hi:
        dot, semi = text.find(".", k, hi), text.find(";", k, hi)
        k = min(x for x in (dot, semi, hi) if x >= 0)
        if k >= hi:
            break
        if _ends_sentence(text, k):
            b = k + 1
            break
        k += 1
    return a, b


def quote(text: str, a: int, b: int) -> str:
    return " ".join(text[a:b].split())


def date_term(name: str, found: FoundDate, text: str, a: int, b: int) -> Term:
    return Term(name=name, value=found.value.isoformat(), display=found.value.strftime("%-d %B %Y"),
                quote=quote(text, a, b), start=found.start)


def preamble(text: str) -> tuple[int, int]:
    m = _PREAMBLE.search(text[:20000].lower())
    at = m.start() if m else 0
    return max(0, at - 500), min(len(text), at + 1200)


def _recital(text: str, found: FoundDate) -> bool:
    """A date a recital or a reference gives another document ("WHEREAS … Agreement dated May 8, 2008")."""
    start, _ = sentence_bounds(text, found.start)
    return bool(_RECITAL.search(text, max(0, found.start - 120), found.start)
                or re.search(r"WHEREAS|RECITAL", text[max(start, found.start - 600):found.start]))


def agreement_date(text: str, low: str | None = None) -> Term:
    """The date the contract is made: the preamble's first date (not one a recital gives another agreement),
    else the last date a signature block gives ("Date: …"); ``low``: the text lowered (same length)."""
    a, b = preamble(text)
    found = [d for d in find_dates(text, a, b) if d.has_day and not _recital(text, d)]
    cued = [d for d in found if _DATE_CUE.search(text, max(0, d.start - 30), d.start)]
    found = cued or found
    found = found or [d for d in find_dates(text, 0, 3000) if d.has_day and not _recital(text, d)]
    if not found:  # the last "Date: …" (a signature block's): only the text just after each label is read for a date
        labelled = (find_dates(text, m.end(), m.end() + _DATE_REACH) for m in _DATE_LABEL_WORD.finditer(
            text.lower() if low is None else low))
        found = [d for ds in labelled for d in ds[:1]
                 if d.has_day and _DATE_LABEL.search(text, max(0, d.start - 15), d.start)]
        found = found[-1:]
    if not found:
        return Term("agreement_date")
    s, e = sentence_bounds(text, found[0].start, found[0].end)
    return date_term("agreement_date", found[0], text, s, e)


def effective_date(text: str, low: str, agreed: Term) -> Term:
    """"Effective Date: <date>" / "<date> (the "Effective Date")", else "effective [as of] <date>", else the
    agreement date when the contract names an Effective Date (or takes effect on signing) without another date."""
    for m in _EFFECTIVE.finditer(low):
        after = [d for d in find_dates(text, m.end(), min(len(text), m.end() + 60)) if d.has_day]
        if after and _EFFECTIVE_MEANS.match(" ".join(text[m.end():after[0].start].split()) + " "):
            s, e = sentence_bounds(text, m.start(), after[0].end)
            return date_term("effective_date", after[0], text, s, e)
        before = [d for d in find_dates(text, max(0, m.start() - 60), m.start()) if d.has_day]
        between = text[before[-1].end:m.start()] if before else ""
        if before and _NAMES_IT.match(" ".join(between.split())):
            s, e = sentence_bounds(text, before[-1].start, m.end())
            return date_term("effective_date", before[-1], text, s, e)
    for m in near(_EFFECTIVE_AS_OF, _EFFECTIVE_WORD, low):
        found = [d for d in find_dates(text, m.end(), min(len(text), m.end() + 40)) if d.has_day]
        if found and found[0].start - m.end() <= 2 and not _recital(text, found[0]) and not _DEFINES_OTHER.search(
                text, max(0, m.start() - 200), m.start()):
            s, e = sentence_bounds(text, found[0].start, found[0].end)
            return date_term("effective_date", found[0], text, s, e)
    if agreed.value and (_EFFECTIVE.search(low) or _EFFECTIVE_UPON.search(low)):
        return Term("effective_date", value=agreed.value, display=agreed.display, quote=agreed.quote,
                    start=agreed.start, extra={"as": "agreement_date"})
    return Term("effective_date")


def _renewal_sentences(text: str, low: str) -> list[tuple[int, int]]:
    seen, out = set(), []
    for m in near(_RENEW, _RENEW_ANCHOR, low):
        a, b = sentence_bounds(text, m.start(), m.end())
        if (a, b) not in seen:
            seen.add((a, b))
            out.append((a, b))
        if len(out) >= 12:
            break
    return out


def _automatic(sentence: str) -> bool:
    return bool(re.search(r"\bautomatic|\bshall\s+(?:be\s+)?(?:renew|extend|continue)|\bwill\s+(?:be\s+)?(?:renew|"
                          r"extend|continue)|\bunless\b|\bthereafter\b", sentence, re.IGNORECASE))


def renewal_and_notice(text: str, low: str) -> tuple[Term, Term]:
    renewal, notice = Term("renewal_term"), Term("notice_period")
    for a, b in _renewal_sentences(text, low):
        sentence = text[a:b]
        if re.search(r"\brenewal\s+(?:fee|royalt|payment|price|rate)|\bre-?negotiat", sentence, re.IGNORECASE):
            continue
        flat = flat_text(sentence)
        kw = _RENEW.search(flat.lower())
        if not kw:
            continue
        for period, s, e in durations(sentence):
            is_notice = bool(_NOTICE_AFTER.match(flat[e:e + 30]) or _NOTICE_BEFORE.search(flat[max(0, s - 25):s]))
            if is_notice:
                if notice.value is None and period.unit in ("days", "months", "weeks") and re.search(
                        r"notice|notif|written", flat[max(0, s - 60):e + 60], re.IGNORECASE) and re.search(
                        r"terminat|not\s+(?:to\s+)?renew|non-?renew|intent|cancel|expir|elect", flat, re.IGNORECASE):
                    notice = Term("notice_period", value=period.iso(), display=period.text(),
                                  quote=quote(text, a, b), start=a, extra={"days": period.days()})
                continue
            if renewal.value is None and (e > kw.start() - 80) and period.unit in ("years", "months") and not re.search(
                    r"\b(?:within|after|following|prior\s+to|before)\s*$", flat[max(0, s - 20):s], re.IGNORECASE):
                renewal = Term("renewal_term", value=period.iso(), display=period.text(),
                               quote=quote(text, a, b), start=a,
                               extra={"automatic": _automatic(sentence),
                                      "successive": bool(re.search(r"successive|each|annually|year[- ]to[- ]year|"
                                                                   r"month[- ]to[- ]month|further|additional",
                                                                   flat, re.IGNORECASE)),
                                      "months": round(period.days() / 30.4375)})
        if renewal.value and notice.value:
            break
    return renewal, notice


def governing_law(text: str, low: str) -> Term:
    """The law the contract chooses: "governed by … the laws of X", "X law governs", the first jurisdiction
    under a Governing Law heading, else "the laws of the State of X" that is not where a party is organised."""
    best = None
    for m in near(_LAWS_OF, _LAW_WORD, low):
        back = max(0, m.start() - 200)
        lead = max(low.rfind(".", back, m.start()), low.rfind(";", back, m.start()))
        if (not _GOVERNED.search(low, max(lead + 1, m.start() - 200), m.start())
                or _INCORPORATED.search(low, max(0, m.end() - 60), m.end())):
            continue
        name = jurisdiction_at(text, m.end(), m.end() + 120)
        if name:
            best = (m.start(), m.end(), name)
            break
    if best is None:
        for m in _GOVERNED_BY_LAW.finditer(text):
            name = jurisdiction_at(text, m.start("name"), m.end("name"))
            if name:
                best = (m.start(), m.end(), name)
                break
    if best is None:
        for m in near(_LAW_HEADING, _LAW_WORD, low):
            name = jurisdiction_at(text, m.end(), m.end() + 400)
            if name:
                best = (m.start(), m.end() + 1, name)
                break
    if best is None:
        for m in near(_LAWS_OF_STATE, _LAW_WORD, low):
            name = jurisdiction_at(text, m.end(), m.end() + 60)
            if name and not _INCORPORATED.search(low, max(0, m.start() - 60), m.start()):
                best = (m.start(), m.end(), name)
                break
    if best is None:
        return Term("governing_law")
    a, b = sentence_bounds(text, best[0], best[1])
    return Term("governing_law", value=best[2], display=best[2], quote=quote(text, a, b), start=best[0])


def liability_cap(text: str, low: str) -> Term:
    checked = 0
    for m in _CAP.finditer(low):
        a, b = sentence_bounds(text, m.start(), m.end())
        sentence = text[a:b]
        if not _CAP_WORDS.search(sentence) or not re.search(r"exceed|limited\s+to|maximum|cap", sentence, re.I):
            continue
        checked += 1
        if checked > 20:
            break
        amounts = [f for f in read_figures(sentence, "amount") if not f.rate and f.value > 0]
        if amounts:
            f = amounts[0]
            currency = f.currency or ""
            value = f"{currency} {f.value:.2f}".strip()
            return Term("liability_cap", value=value, display=f"{currency} {f.value:,.0f}".strip(),
                        quote=quote(text, a, b), start=a)
        multiple = read_figures(sentence, "multiple_of_fees") or read_figures(sentence, "months_of_fees")
        if multiple and re.search(r"fees|amounts?\s+paid|paid|payable", sentence, re.IGNORECASE):
            f = multiple[0]
            label = (f"{f.value:g} months of fees" if f.kind == "months_of_fees" else f"{f.value:g} x fees")
            return Term("liability_cap", value=label, display=label, quote=quote(text, a, b), start=a)
    return Term("liability_cap")


__all__ = ["DATE_RE", "Term", "WINDOW", "agreement_date", "date_term", "effective_date", "governing_law",
           "liability_cap", "preamble", "quote", "renewal_and_notice", "sentence_bounds"]
