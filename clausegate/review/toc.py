"""Tables of contents: text that lists a contract's headings with their page numbers, never a clause.

A table of contents names every clause ("14.4 Liquidated Damages on Termination 24"), so it scores for many
categories, but a quote of it is no evidence: the offline extractor shows the clause itself
(``clausegate.review.offline.extract``) and a quote never runs on into one (``clausegate.review.evidence``).

``is_toc(text)`` (a passage, its lines joined): it opens with "TABLE OF CONTENTS" / "CONTENTS" / "INDEX", or it
holds at least ``MIN_ENTRIES`` entries (2 right after a table of contents) "<heading word> <page number> <next
heading>" (not "Section 4 (…"), at least three for each sentence end, whose page numbers go up, by 0 to
``MAX_STEP`` in 80 % of the steps ("… In General 12 Section 2.2 Operation and Maintenance Services 12 Section 2.3
Service Fees 13").
"""

from __future__ import annotations

import re

MIN_ENTRIES = 3
MAX_STEP = 10  # pages from one entry to the next (a table's figures jump further: "150 … 200")
_TITLE_RE = re.compile(r"^\W*(?:table\s+of\s+contents|contents|index)\b", re.IGNORECASE)
# a page number between an entry's title and the next entry's number or capitalised title
_ENTRY_RE = re.compile(r"([A-Za-z)\]’']+)\s(\d{1,3})\s(?=(?:[A-Z(]|\d{1,3}(?:\.\d{1,3})*\.?\s))")
_REFERENCE_WORDS = frozenset("section sections article clause clauses phase exhibit schedule annex appendix item no "
                             "paragraph part rule year years day days month months milestone step stage level tier "
                             "january february march april may june july august september october november "
                             "december".split())
_SENTENCE_END_RE = re.compile(r"[a-z]{2}[.;]\s")  # prose: "… the Company. The", "…; and"


def is_toc(text: str, after_toc: bool = False) -> bool:
    """``text`` is (part of) a table of contents (see the module doc); ``after_toc``: the text before it is one,
    so two entries are enough (its last lines: "… DAMAGES 30 19.0 INTENTIONALLY DELETED 31 ADDENDUM …")."""
    if _TITLE_RE.match(text):
        return True
    pages = [int(n) for word, n in _ENTRY_RE.findall(text) if word.lower() not in _REFERENCE_WORDS]
    if len(pages) < (2 if after_toc else MIN_ENTRIES) or len(_SENTENCE_END_RE.findall(text)) * 3 > len(pages):
        return False
    steps = [b - a for a, b in zip(pages, pages[1:], strict=False)]
    return any(steps) and sum(1 for d in steps if 0 <= d <= MAX_STEP) >= 0.8 * len(steps)


def toc_flags(texts: list[str]) -> list[bool]:
    """``is_toc`` of each of a document's passages in order (a table of contents' tail after its start)."""
    out: list[bool] = []
    for text in texts:
        out.append(is_toc(text, after_toc=bool(out) and out[-1]))
    return out


__all__ = ["MIN_ENTRIES", "is_toc", "toc_flags"]
