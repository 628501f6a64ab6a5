"""A parsed document as the clauses two versions are compared by.

A clause is a sentence of the document's read text (Punkt with the contract abbreviations of
:mod:`clausegate.review.punkt`; a "sentence" that starts in lower case goes on the one before, one of at most
``LEAD_WORDS`` words, a clause number or a heading, on the one after), after the page
furniture is removed (:func:`clausegate.review.text_identity.read_texts`, then the printed page numbers and rules
left inside a line) and line-end hyphenation joined.  Its
``key`` is :func:`clausegate.review.text_identity.normalise` of its text: NFKC, hyphens inside words and line
breaks gone, whitespace collapsed.  A PDF and a .docx of the same words, two layouts of one text, or one text with
other line breaks and hyphenation have the same keys, so none of that is ever a change.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from clausegate.review.furniture import furniture_lines
from clausegate.review.schemas import ParsedDocument
from clausegate.review.text_identity import normalise, read_texts

LEAD_WORDS = 3  # a "sentence" of at most this many words (a number, a heading) goes on the next one
_LINE_END_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u2011]\s*\n\s*(?=[a-z])")
_SPACES = re.compile(r"\s+")
# page furniture inside the read text: a printed page number flowed into it ("in compliance -5- with", "- 3 -"),
# a rule ("-----", "_____", "====="): where a line ends decides whether the page's furniture check sees them
_FURNITURE = re.compile(r"(?<!\S)(?:[-\u2013\u2014]\s?\d{1,3}\s?[-\u2013\u2014]|[-_=~*\u2013\u2014]{3,})(?!\S)")


@dataclass(frozen=True)
class Unit:
    """One clause of one version: its text as shown (whitespace collapsed) and its comparison key."""

    index: int
    text: str
    key: str

    @property
    def sha256(self) -> str:
        return key_sha256(self.key)


def key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def _punkt():
    from clausegate.review.punkt import MemoPunkt  # local import: nltk (~0.3 s) only when a text is split

    return MemoPunkt()


def display_text(pages: list[str]) -> str:
    """The read pages as one text: line-end hyphenation joined (``termi-``/``nation``), page numbers and rules
    left inside a line removed, whitespace collapsed.  Page numbers are looked for line by line, never across a
    line break: lines of bare figures and dashes (``0 -`` / ``0 -``) joined would read as a page number ``- 0 -``
    in one layout and not in another."""
    joined = " ".join(_LINE_END_HYPHEN.sub("", page) for page in pages)
    return _SPACES.sub(" ", " ".join(_FURNITURE.sub(" ", line) for line in joined.splitlines())).strip()


def split_units(text: str) -> list[Unit]:
    """``text``'s sentences as units (module doc)."""
    spans: list[list[int]] = []
    lead = None  # a clause number or a heading ("2.", "Fees.") opens the sentence after it
    for start, end in _punkt().span_tokenize(text):
        if spans and text[start:start + 1].islower():
            spans[-1][1] = end
        elif len(text[start:end].split()) <= LEAD_WORDS:
            lead = start if lead is None else lead
        else:
            spans.append([start if lead is None else lead, end])
            lead = None
    if lead is not None:
        spans.append([lead, len(text)])
    out = []
    for start, end in spans:
        shown = text[start:end].strip()
        key = normalise(shown)
        if key:
            out.append(Unit(len(out), shown, key))
    return out


def units_of(document: ParsedDocument) -> list[Unit]:
    """The document's clauses (module doc)."""
    return split_units(display_text([text for _, text in read_texts(document.pages)]))


def furniture_of(document: ParsedDocument) -> frozenset[str]:
    """The normalised lines the page-furniture check took out of the document's read pages.  A PDF line of one
    word ("2008", "14", "[●]" wrapped alone) can look like a page number there; a word missing from one version
    only because it was such a line is layout, not a change (:mod:`.align`)."""
    pages = [page.text for page in document.pages if not page.needs_ocr and page.text and page.text.strip()]
    out = set()
    for text, dropped in zip(pages, furniture_lines(pages), strict=True):
        lines = text.splitlines()
        for i in dropped:
            key = normalise(display_text([lines[i]]))
            out.add(key)
            if not any(c.isalpha() for c in key):  # a line of figures and placeholders: each of them
                out.update(key.split())
    return frozenset(out - {""})
