"""A contract's key terms read in one pass over its page texts (``extract``, ``parties``), with where each is."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from clausegate.review.key_terms.expiry import expiration_date
from clausegate.review.key_terms.extract import (
    Term,
    agreement_date,
    date_term,
    effective_date,
    governing_law,
    liability_cap,
    renewal_and_notice,
    sentence_bounds,
)
from clausegate.review.key_terms.parties import parties

PAGE_JOIN = "\n\n"
# EDGAR's stamp and a redaction legend's cue words, blanked; each pattern starts with a fixed string, so ``re``
# scans for it quickly (an alternation at the start would try every position of the text)
_STAMP = re.compile(r"Source:\s+[^\n]{0,100}?,\s*[0-9A-Z][^,\n]{0,30},\s*\d{1,2}/\d{1,2}/\d{2,4}")
_LEGEND = re.compile(r"pursuant\s+to\s+Rule\s+(?:406|24b-2)\b[^.]{0,120}?,\s+as\s+amended\b")


@dataclass
class Reading:
    """The key terms of one contract (``None``: the text does not state it) and the text they were read from."""

    text: str
    page_starts: list[int]
    terms: dict[str, Term]

    def page_of(self, offset: int) -> int:
        return bisect.bisect_right(self.page_starts, offset)


def read_terms(pages: list[str]) -> Reading:
    """The key terms of a contract given its page (or part) texts, in order."""
    starts, pos = [], 0
    for page in pages:
        starts.append(pos)
        pos += len(page) + len(PAGE_JOIN)
    text = PAGE_JOIN.join(pages)
    for boilerplate in (_STAMP, _LEGEND):  # the filing's, not the contract's words
        text = boilerplate.sub(lambda m: " " * len(m.group(0)), text)
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer ("İ"): scan the text itself
        low = text
    agreed = agreement_date(text, low)
    effective = effective_date(text, low, agreed)
    expiry = expiration_date(text, low, effective if effective.value else agreed, agreed)
    begins = expiry.extra.pop("begins", None)
    if begins is not None and (effective.value is None or effective.extra.get("as")):
        # the term's own start ("commencing on January 1, 2016") is when the contract takes effect
        s, e = sentence_bounds(text, begins.start, begins.end)
        effective = date_term("effective_date", begins, text, s, e)
    renewal, notice = renewal_and_notice(text, low)
    terms = [parties(text), agreed, effective, expiry, renewal, notice, governing_law(text, low),
             liability_cap(text, low)]
    return Reading(text=text, page_starts=starts, terms={t.name: t for t in terms})
