"""Section numbers and headings of contract text:
"11.3. Limitation of Liability. EXCEPT ..." -> ("11.3", "Limitation of Liability").

``heading_of(text)`` reads a numbered heading at the start of a passage or sentence;
``SectionTracker`` follows a document's passages in reading order and says, for each, the
section it sits in (the last numbered heading seen before or at its start).  The offline model
uses the heading words as features (``heading_words``), and the evidence shown for a finding
names its section (``clausegate.review.evidence``).

Recognised starts: ``11.``, ``11.3``, ``11.3.1.``, ``Section 4.2``, ``ARTICLE V``, ``Article 9``
followed by a title (up to ``MAX_TITLE_WORDS`` words ending in ``.``, ``:`` or an ALL-CAPS
title) or by clause text.  A bare number without a dot (``12 OF LIABILITY``: a page number
printed in the text layer) is not a heading.  Unnumbered headings ("Limitation of Liability",
"RECITALS" on a line of their own) are seen only on the page's lines, so the tracker is told them
(``SectionTracker.feed(text, title)``, from ``clausegate.review.passages.titled_passages``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TITLE_WORDS = 8

_NUM = r"(?:\d{1,3}(?:\.\d{1,3}){1,4}\.?|\d{1,3}\.)"  # 11.3  11.3.1.  12.   (not a bare "12")
_ROMAN = r"(?:[IVXLC]{1,6}|\d{1,3}(?:\.\d{1,3}){0,4})"
_START_RE = re.compile(
    rf"""^\s*(?:
        (?P<kw>(?:section|article|clause)\s+{_ROMAN})\.?
      | (?P<num>{_NUM})
    )(?=\s|$)\s*""",
    re.IGNORECASE | re.VERBOSE,
)
# a title: a few words, the first capitalised, ending with "." or ":" (or an ALL-CAPS run)
_TITLE_RE = re.compile(r"^(?P<title>[A-Z][\w'’&/,\-() ]{1,80}?)\s*[.:](?=\s|$)")
_CAPS_TITLE_RE = re.compile(r"^(?P<title>[A-Z][A-Z'’&/,\-() ]{2,80}?)(?=\s+\d|\s+[A-Z][a-z]|\s*$)")
_LABEL_RE = re.compile(r"^((?:section|article|clause)\s+\S+|\d{1,3}(?:\.\d{1,3})*)(?:\s+(.*))?$", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z]{3,}")
_STOP = frozenset({"and", "the", "for", "with", "other", "this", "that", "any", "all", "from", "under"})


def _title_case(title: str) -> bool:
    """Most longer words capitalised ("Limitation of Liability", not "This Agreement is binding")."""
    long_words = [w for w in title.split() if len(w) >= 4 and w[0].isalpha()]
    return not long_words or sum(w[0].isupper() for w in long_words) >= 0.75 * len(long_words)


@dataclass(frozen=True)
class Heading:
    number: str  # "11.3", "Section 4", "ARTICLE V"
    title: str  # "Limitation of Liability" ("" when the number is followed by clause text)
    end: int  # where the heading ends in the text (the clause text starts here)

    @property
    def label(self) -> str:
        """"11.3 Limitation of Liability", or just the number."""
        return f"{self.number} {self.title}".strip()


def heading_of(text: str) -> Heading | None:
    """The numbered heading ``text`` starts with, or None."""
    m = _START_RE.match(text)
    if not m:
        return None
    number = (m.group("kw") or m.group("num") or "").rstrip(".")
    number = " ".join(number.split())
    rest = text[m.end():]
    t = _TITLE_RE.match(rest)
    title = ""
    end = m.end()
    if t and len(t.group("title").split()) <= MAX_TITLE_WORDS and _title_case(t.group("title")):
        title = t.group("title").strip()
        end += t.end()
    else:
        c = _CAPS_TITLE_RE.match(rest)
        if c and len(c.group("title").split()) <= MAX_TITLE_WORDS and c.group("title").strip().isupper():
            title = c.group("title").strip()
            end += c.end()
    return Heading(number=number, title=title, end=end)


def from_label(label: str | None) -> Heading | None:
    """Inverse of ``Heading.label``: "11.3 Limitation of Liability" -> Heading("11.3", "Limitation of Liability")."""
    if not label:
        return None
    m = _LABEL_RE.match(label.strip())
    if not m:
        return Heading(number="", title=label.strip(), end=0)
    return Heading(number=" ".join(m.group(1).split()), title=(m.group(2) or "").strip(), end=0)


def heading_words(title: str) -> list[str]:
    """Lower-case content words of a section title (feature tokens for the offline model)."""
    return [w.lower() for w in _WORD_RE.findall(title) if w.lower() not in _STOP]


class SectionTracker:
    """Feed passages (or sentences) in reading order; ``section`` is the current heading.

    A numbered heading with a title opens a section, and so does an unnumbered heading line given as
    ``title``; a bare number ("(a)"-level items are not tracked) updates the number and keeps the title of
    its parent section when the number extends it (11.3 -> 11.3.1)."""

    def __init__(self) -> None:
        self.section: Heading | None = None

    def feed(self, text: str, title: str | None = None) -> Heading | None:
        """The section ``text`` belongs to (a heading at its start counts).  ``title``: the unnumbered heading
        line ``text`` starts with, as the page's lines showed it (``passages.titled_passages``): "Limitation of
        Liability", "RECITALS"; a numbered heading at the start wins over it."""
        h = heading_of(text)
        if title and text.startswith(title):
            if h is None:
                h = Heading(number="", title=title.rstrip(".:").strip(), end=len(title))
            elif not h.title and len(title) > h.end:  # "12." on its own line, then "Limitation of Liability"
                h = Heading(number=h.number, title=title[h.end:].strip().rstrip(".:"), end=len(title))
        if h is not None:
            if not h.title and self.section and h.number.startswith(self.section.number + "."):
                h = Heading(number=h.number, title=self.section.title, end=h.end)
            self.section = h
        return self.section


__all__ = ["Heading", "SectionTracker", "from_label", "heading_of", "heading_words"]
