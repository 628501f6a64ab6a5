"""When a contract's term ends: an end-date label, the term sentence's end date or date range, its start plus its
length ("two (2) years from the Effective Date", "until the fifteenth (15th) anniversary"), or ``perpetual`` when
it runs until a party ends it.

Developed on CUAD's TRAIN contracts (``python bench/key_terms.py --split train --show expiration_date``).
"""

from __future__ import annotations

import bisect
import re
from datetime import date

from clausegate.review.key_terms.dates import Duration, FoundDate, add, durations, find_dates, flat_text, year_ends
from clausegate.review.key_terms.extract import (
    _NOTICE_AFTER,
    _NOTICE_BEFORE,
    Term,
    date_term,
    quote,
    sentence_bounds,
)
from clausegate.review.key_terms.scan import near

_TERM = re.compile(
    r"\b(?:initial\s+term(?!\s+(?:minimum|fee|payment|purchase|commitment|royalt))|(?:effective\s+)?term\s+(?:of\s+(?:this|the)\s+(?:agreement|contract|franchise)|"
    r"hereof)|(?:the|effective)\s+term\s+is\b|(?:shall|will)\s+(?:be\s+valid|be\s+for|begin|commence|continue|remain|"
    r"be\s+effective|become\s+effective|take\s+effect|come\s+into\s+(?:force|effect)|apply\s+and\s+remain|expire|"
    r"terminate\s+on|be\s+in\s+(?:full\s+)?(?:force|effect))|(?:agreement|contract)\s+is\s+(?:valid|effective|in\s+"
    r"effect)\s+(?:for|from|until)|(?:this|the)\s+agreement\s+is\s+for\s+a\s+term|"
    r"[\"“]?term[\"”]?\s+(?:shall|will)\s+(?:commence|begin|be|continue|expire|end|mean)|(?<=[\"“])term[\"”]\s+means|"
    r"(?:contract|agreement|cooperation)\s+(?:period|term)[\"”]?\s+(?:shall\s+(?:be\s+)?)?(?:means?\b|is\b|from\b)|"
    r"^\s*(?:\d{1,2}\.?\s*)?term\s*:)", re.MULTILINE)
# every match of _TERM holds one of these (its "shall/will" alternatives through the verb after it)
_TERM_ANCHOR = ("term", "valid", "be for", "begin", "commenc", "continu", "remain", "effect", "come into",
                "apply", "expire", "terminate", "force", "period")
_YEAR_END = re.compile(r"\b(?:until|through|to)\s+(?:the\s+)?end\s+of\s+(?:the\s+)?(?:calendar\s+year\s+)?"
                       r"(?:((?:19|20)\d\d)\b|(?:then[- ])?current\s+calendar\s+year\b)", re.IGNORECASE)
# counted from the day the contract is made
_ANNIVERSARY_OF_THIS = re.compile(r"anniversary\s+of\s+(?:(?:the\s+date\s+of\s+)?this\s+agreement|the\s+date\s+hereof)",
                                  re.IGNORECASE)
_NAMED_START = re.compile(r"\b(?:from|after|following|on|upon|of|with)\s+the\s+((?:[A-Z][\w-]*\s+){1,3}Date)\b")
_DEFINES_AS = re.compile(r"[\"”’']?\s*(?:shall\s+mean|means|(?:shall|will|to)\s+be|is|:)?\s*(?:the\s+)?[\"“]?\s*")
_NAMED_AFTER = re.compile(r"\s*,?\s*\(\s*(?:the|such\s+date\s+being\s+the|hereinafter)?\s*[\"“']\s*")
_SIGNING_DAY = re.compile(r"\b(?:Execution|Signing|Signature)\b")  # a named date that is the day it is signed
_RANGE_WORD = re.compile(r"term")
_RANGE_HITS = 60  # the words "term" whose sentences are read for a date range, at most
_RANGE_REACH = 300  # how far after "term" a range's second date can end: 80 + two dates (<= 40 + 6 each) + its gap
_RANGE_GAP = re.compile(r"\s*(?:\([^()]{0,30}\)\s*)?(?:-|–|to|through|thru|until|and\s+end(?:s|ing)?(?:\s+on)?)\s*"
                        r"(?:and\s+including\s+)?", re.IGNORECASE)
# (an end that comes automatically is no renewal: "will end automatically", "automatically terminate")
_RENEWAL_PART = re.compile(r"\b(?:renew|(?<!end\s)(?<!expire\s)(?<!terminate\s)automatic(?!ally\s+(?:end|terminat|"
                           r"expir)))", re.IGNORECASE)
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
             "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
             "twentieth"]
_ANNIVERSARY = re.compile(rf"\b({'|'.join(_ORDINALS)}|\d{{1,2}}\s?(?:st|nd|rd|th|t\s?h))"
                          r"\s*(?:\(\d{1,2}\s?(?:st|nd|rd|th|t\s?h)\)\s*)?anniversary\b", re.IGNORECASE)
_END_OF_YEAR_N = re.compile(r"\bend\s+of\s+(?:Contract\s+)?Year\s+(\d{1,2})\b")
_DATE_WORD = ("date", "end:", "end :")  # _END_LABEL's fixed strings ("end" alone hits "amend", "extend")
_END_LABEL = re.compile(r"\b(?:termination|expiration|expiry|end)\s+date[\"”]?\s*"
                        r"(?::|means|shall\s+(?:be|mean)|is)?\s*|\b(?:contract|agreement|term)\s+end\s?:\s*")
_NOT_THE_TERM = re.compile(r"(?:during|throughout|within|after|following|in|for|of|beyond|upon|over|before|prior\s+to|"
                           r"end\s+of|expiration\s+of)\s+(?:the|this|such|any)\s+$")
# the same before "term" itself, also with a few words between or no article ("during the initial three year term
# of this Agreement", "within the first six months of term of this Agreement", "the remaining term of"); not "for"
# ("shall extend for an initial term of two (2) years")
_NOT_THE_TERM_WORDS = re.compile(r"\b(?:(?:during|throughout|within|after|following|in|of|beyond|upon|over|"
                                 r"before|prior\s+to)\s+(?:(?:the|this|such|any)\s+)?(?:[a-z-]+\s+){0,3}|"
                                 r"(?:remaining|unexpired)\s+)$")
# a term counted from an event the contract does not date ("one (1) year from the date of delivery of the Product",
# "commence on the date upon which the Company delivers", "ten (10) years after the First Commercial Sale"): no date
# can be computed
_FROM_EVENT = re.compile(
    r"\b(?:years?|months?|commenc\w*|begin\w*|effective|start\w*)\)?\s+(?:from|after|following|as\s+of|on|upon)\s+"
    r"(?:that\s+date\b|the\s+(?:first\s+)?date\s+(?:of\s+(?!this\b|these\b|execution|signing|signature|the\s+effective|effective|"
    r"its\s+execution|the\s+last\s+signature)|(?:up)?on\s+which\b(?!\s+(?:it|this\s+agreement)\s+(?:is|was|has\s+been)"
    r"\s+(?:signed|executed))|that\b|when\b|the\s+[\w@&-]+(?:\s+[\w@&-]+){0,3}\s+(?:becomes|is|are|has|have)\b)|"
    r"(?:the\s+)?first\s+commercial\s+sale|(?:the\s+)?(?:delivery|acceptance|completion)\s+of\b)"
, re.IGNORECASE)
# runs until a party ends it (not "held to be indefinite, invalid …")
_PERPETUAL = re.compile(r"\bperpetu|\bindefinite(?!\s*,)|\bunlimited\s+period|"
                        r"\b(?:continue|remain|end)[^.;]{0,80}?\b(?:until|when)\s+(?:(?:such\s+time\s+as\s+)?(?:it\s+is\s+|"
                        r"this\s+agreement\s+is\s+)?terminated|termination|(?:either|a|one|any)\s+party\s+(?:terminates|"
                        r"informs|gives|notifies|elects)|the\s+(?:expiration\s+or\s+)?(?:earlier\s+)?termination)|"
                        r"\b(?:continue|remain|extend)[^.;]{0,80}?\bfor\s+(?:so|as)\s+long\s+as\b",
                        re.IGNORECASE)
# this agreement, anywhere, running without an end ("shall remain in effect … perpetually", "in perpetuity"): the
# words first (one cheap scan), then "this agreement" earlier in their sentence
_RUNS_WITHOUT_END = re.compile(r"perpetu\w*\s+(?:thereafter|unless)|in\s+perpetuity|indefinite(?:ly)?\s+(?:term|period|"
                               r"until|unless)|unlimited\s+period|thereafter[^.;]{0,20}\bunless\s+terminated",
                               re.IGNORECASE)
_WITHOUT_END_ANCHOR = ("perpetu", "indefinite", "unlimited", "thereafter")
_THEN_UNTIL_ENDED = re.compile(r"\b(?:continue|remain)\b[^.;]{0,40}?\bthereafter\s+until\s+(?:it\s+is\s+)?"
                               r"(?:terminated|(?:either|a|one|any)\s+party)", re.IGNORECASE)
# a duty that lasts as long as the agreement (or beyond it) says nothing of the agreement's own end
_OTHER_DUTY = re.compile(r"confidential|non-?use\b|non-?compet|non-?solicit", re.IGNORECASE)
_THIS_AGREEMENT = re.compile(r"\b(?:this|the)\s+agreement\b[^.;]*$", re.IGNORECASE)
_END_WORDS = re.compile(r"\b(?:expire|expiring|expiration|terminate|terminating|end|ending|through|until|to|thru|"
                        r"conclud\w*)\b[^.;]{0,40}$", re.IGNORECASE)
_START_WORDS = re.compile(r"\b(?:commenc\w*|begin\w*|start\w*|from|effective)\b[^.;]{0,25}$", re.IGNORECASE)
_AFTER_THE_END = re.compile(r"\s*(?:after|following|from)\s+(?:the\s+)?(?:termination|expir)", re.IGNORECASE)


def _term_periods(sentence: str) -> list[Duration]:
    """The durations of a term sentence that are the term's length, not a notice or payment period."""
    out = []
    flat = flat_text(sentence)
    for period, s, e in durations(sentence):
        if _NOTICE_AFTER.match(flat[e:e + 30]) or _NOTICE_BEFORE.search(flat[max(0, s - 25):s]):
            continue
        if re.search(r"\b(?:within|after|following|from\s+the\s+date\s+of\s+(?:notice|receipt))\s*$",
                     flat[max(0, s - 25):s], re.IGNORECASE):
            continue
        if _AFTER_THE_END.match(flat, e):  # "for a period of 5 years after termination": a survival tail
            continue
        out.append(period)
    for m in _END_OF_YEAR_N.finditer(sentence):  # "will end automatically upon the end of Year 3"
        out.append(Duration(float(m.group(1)), "years"))
    for m in _ANNIVERSARY.finditer(sentence):  # "ending on the third (3rd) anniversary of the Effective Date"
        word = m.group(1).lower()
        years = _ORDINALS.index(word) + 1 if word in _ORDINALS else int(re.sub(r"\D", "", word))
        out.append(Duration(float(years), "years"))
    return out


def _is_term_sentence(low: str, m: re.Match, a: int, b: int) -> bool:
    if _NOT_THE_TERM.search(low, max(0, m.start() - 20), m.start()):
        return False
    if not m.group(0).startswith(("shall", "will")) and _NOT_THE_TERM_WORDS.search(low, max(0, m.start() - 50),
                                                                                 m.start()):
        return False
    if m.group(0).startswith(("shall", "will")) and not re.search(r"agreement|\bterm\b|contract|\)\s*$",
                                                                  low[max(0, m.start() - 60):m.start()]):
        return False
    return "surviv" not in low[a:b]


def expiration_date(text: str, low: str, start_term: Term, made: Term | None = None) -> Term:
    """The term's end; ``start_term`` is the date the term counts from (the effective date, else the
    agreement date), ``made`` the agreement date (for "the first anniversary of this Agreement")."""
    for m in near(_END_LABEL, _DATE_WORD, low):  # "Termination Date: 1 April 2009", "Expiration Date means …"
        found = [d for d in find_dates(text, m.end(), min(len(text), m.end() + 40)) if d.has_day]
        if found and found[0].start - m.end() <= 3:
            a, b = sentence_bounds(text, m.start(), found[0].end)
            return date_term("expiration_date", found[0], text, a, b)
    checked = 0
    for m in near(_TERM, _TERM_ANCHOR, low):
        a, b = sentence_bounds(text, m.start(), m.end())
        if not _is_term_sentence(low, m, a, b):
            continue
        sentence = text[a:b]
        checked += 1
        if checked > 10:
            break
        ends = [d for d in find_dates(text, a, b)
                if d.has_day and _END_WORDS.search(text[max(a, d.start - 60):d.start])]
        if ends:
            return date_term("expiration_date", ends[-1], text, a, b)
        # the renewal is not the initial term (after the term's words: a heading "Term and Renewal" before them)
        cut = _RENEWAL_PART.search(sentence, m.end() - a)
        head = sentence[:cut.start()] if cut else sentence
        year_end = _YEAR_END.search(head)  # "until the end of 2006", "until the end of the current calendar year"
        if year_end and (year_end.group(1) or start_term.value):
            end = date(int(year_end.group(1) or start_term.value[:4]), 12, 31)
            return Term("expiration_date", value=end.isoformat(), display=end.strftime("%-d %B %Y"),
                        quote=quote(text, a, b), start=a)
        periods = _term_periods(head)
        if periods and _THEN_UNTIL_ENDED.search(head):  # a first period, then on until a party ends it
            return _perpetual(text, a, b)
        if periods and periods[0].unit in ("years", "months"):
            starts = [d for d in find_dates(text, a, a + len(head))
                      if d.has_day and _START_WORDS.search(text[max(a, d.start - 40):d.start])]
            if made is not None and made.value and _ANNIVERSARY_OF_THIS.search(head):
                end = add(date.fromisoformat(made.value), periods[0])
                return Term("expiration_date", value=end.isoformat(), display=end.strftime("%-d %B %Y"),
                            quote=quote(text, a, b), start=a,
                            extra={"term": periods[0].text(), **({"begins": starts[0]} if starts else {})})
            if not starts and _FROM_EVENT.search(head):
                return Term("expiration_date", quote=quote(text, a, b), start=a,
                            extra={"term": periods[0].text(), "from_event": True})
            name, named = (None, None) if starts else _named_start(text, head)
            if named is not None and _SIGNING_DAY.search(name):
                begin = named.value  # the day it is signed: when it is made, not when it takes effect
            else:
                starts = [named] if named is not None else starts
                begin = starts[0].value if starts else (
                    date.fromisoformat(start_term.value) if start_term.value else None)
            if begin is None:
                return Term("expiration_date", quote=quote(text, a, b), start=a,
                            extra={"term": periods[0].text(), "no_start": True})
            end = add(begin, periods[0])
            return Term("expiration_date", value=end.isoformat(), display=end.strftime("%-d %B %Y"),
                        quote=quote(text, a, b), start=a,
                        extra={"term": periods[0].text(), **({"begins": starts[0]} if starts else {})})
        if _PERPETUAL.search(head) and not _OTHER_DUTY.search(head):
            return _perpetual(text, a, b)
    ranged = _date_range(text, low)
    if ranged is not None:
        return ranged
    for m in near(_RUNS_WITHOUT_END, _WITHOUT_END_ANCHOR, low):
        if _THIS_AGREEMENT.search(text, max(0, m.start() - 160), m.start()):
            a, b = sentence_bounds(text, m.start(), m.end())
            if not _OTHER_DUTY.search(text, a, b):
                return _perpetual(text, a, b)
    return Term("expiration_date")


def _named_start(text: str, head: str) -> tuple[str | None, FoundDate | None]:
    """The date a term sentence counts from when it names one other than the Effective Date ("commence on the
    Commencement Date", "the eighth anniversary of the Commencement Date") and the contract defines it with a
    date ('"Commencement Date" means 16 October 2005', 'November 16, 2005 (the "Launch Date")'): its name and date
    (``None`` for the date when the contract does not date it)."""
    names = [" ".join(m.group(1).split()) for m in _NAMED_START.finditer(head)]
    name = next((n for n in names if n.lower() != "effective date"), "")
    if not name:
        return None, None
    for hit in re.finditer(re.escape(name).replace(r"\ ", r"\s+"), text):
        after = [d for d in find_dates(text, hit.end(), min(len(text), hit.end() + 80)) if d.has_day]
        if after and _DEFINES_AS.fullmatch(text, hit.end(), after[0].start):
            return name, after[0]
        before = [d for d in find_dates(text, max(0, hit.start() - 60), hit.start()) if d.has_day]
        if before and _NAMED_AFTER.fullmatch(text, before[-1].end, hit.start()):
            return name, before[-1]
    return name, None


def _date_range(text: str, low: str) -> Term | None:
    """A term stated as a range of dates just after the word "term" in a sentence no term pattern read ("a fixed
    term Joint Venture beginning November 27, 2018 and ending November 30th, 2019", "Terms of the project: 12 weeks
    from February 8, 2018 to May 3, 2018"): the range's end."""
    years = year_ends(text)
    for count, hit in enumerate(_RANGE_WORD.finditer(low)):
        if count >= _RANGE_HITS:
            break
        # the first date starts within 80 characters of "term", the second one gap after it: two dates near first
        if bisect.bisect_left(years, hit.end() + _RANGE_REACH) - bisect.bisect_left(years, hit.end()) < 2:
            continue  # fewer than two dates can end there: no range (cheaper than reading the window's dates)
        near_dates = [d for d in find_dates(text, hit.end(), hit.end() + _RANGE_REACH) if d.has_day]
        if len(near_dates) < 2 or near_dates[0].start - hit.end() > 80:
            continue
        a, b = sentence_bounds(text, hit.start(), hit.end())
        found = [d for d in near_dates if d.end <= b]
        for first, second in zip(found, found[1:], strict=False):
            if (first.start - hit.end() <= 80 and second.value > first.value
                    and _RANGE_GAP.fullmatch(text, first.end, second.start)):
                return date_term("expiration_date", second, text, a, b)
    return None


def _perpetual(text: str, a: int, b: int) -> Term:
    return Term("expiration_date", value="perpetual", display="perpetual (until terminated)",
                quote=quote(text, a, b), start=a)
