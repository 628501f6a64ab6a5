"""Re-locate a reused review's passages and findings in THIS document (same words, another layout).

A review whose pre-filter result was computed on another layout of the same text (a PDF and the .docx of one
contract: the same ``content_id``, another ``text_id``) reuses the pre-filter, extraction and model answers
as they are (so their cache keys, model prompts included, are the earlier review's), and before the review is
assembled every location in them is found again in this document: each passage's and finding's normalised text
is searched in this document's read text (furniture removed, as the pre-filter reads it), and its pages are
the pages (or, in a .docx or text, the parts) it lies on here; the .docx ¶ and span then follow from them
(``clausegate.review.locate``).  A text that is not found, or found in more than one place where the reused
result cannot tell which, makes :func:`relocate` raise :class:`NotFound`: the review then computes its own, because a
reused result must never show a location of another file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clausegate.review.schemas import (
    Clause,
    FilteredDocument,
    KeyTerms,
    Notice,
    ParsedDocument,
    Passage,
    Suggestion,
)
from clausegate.review.text_identity import normalise, read_texts

_CUT_MARK = " […]"
_HEAD = 60
_PAGE_REF = re.compile(r"\bp\. (\d+)\b")


class NotFound(Exception):
    """A reused text has no single place in this document."""


class Layout:
    """This document's read text, normalised as ``content_id`` reads it, with where each page lies in it."""

    def __init__(self, document: ParsedDocument) -> None:
        pieces: list[str] = []
        self.bounds: list[tuple[int, int, int]] = []  # (start, end, page number)
        pos = 0
        for number, text in read_texts(document.pages):
            norm = normalise(text)
            if not norm:
                continue
            if pieces:
                pos += 1  # the space joining two pages
            self.bounds.append((pos, pos + len(norm), number))
            pieces.append(norm)
            pos += len(norm)
        self.text = " ".join(pieces)

    def occurrences(self, quote: str, lo: int = 0, hi: int | None = None) -> list[int]:
        found, at = [], self.text.find(quote, lo)
        while at >= 0 and (hi is None or at <= hi):
            found.append(at)
            at = self.text.find(quote, at + 1)
        return found

    def pages(self, at: int, length: int) -> list[int]:
        end = at + max(length, 1)
        return [number for start, stop, number in self.bounds if start < end and stop > at]


def quote_of(text: str) -> str:
    """``text`` as searched: its cut mark dropped, normalised like the layout."""
    return normalise(text[:-len(_CUT_MARK)] if text.endswith(_CUT_MARK) else text)


@dataclass
class Relocated:
    """The reused results with this document's locations."""

    filtered: FilteredDocument
    clauses: list[Clause]
    suggestions: list[Suggestion]
    notices: list[Notice]
    key_terms: KeyTerms | None


def _passages(layout: Layout, passages: list[Passage]) -> list[tuple[int, int]]:
    """Each passage's [start, end) in the layout, in document order: the one occurrence after the one before."""
    spans, cursor = [], 0
    for passage in passages:
        quote = quote_of(passage.text)
        found = layout.occurrences(quote, cursor) if quote else []
        if len(found) != 1:
            raise NotFound(passage.text[:_HEAD])
        spans.append((found[0], found[0] + len(quote)))
        cursor = found[0] + len(quote)
    return spans


def _place(layout: Layout, text: str, page: int | None, passages: list[Passage], spans: list[tuple[int, int]]
           ) -> list[int]:
    """This document's pages of a finding's ``text`` (``page``: its first page in the reused result): its one
    occurrence, or the one starting in the reused passage that holds its beginning."""
    quote = quote_of(text)
    if not quote:
        raise NotFound(text)
    found = layout.occurrences(quote)
    if len(found) > 1:
        head = quote[:_HEAD]
        near = [span for passage, span in zip(passages, spans, strict=True)
                if head in layout.text[span[0]:span[1]] and (page is None or passage.page == page)]
        found = sorted({at for lo, hi in near for at in layout.occurrences(quote, max(lo - len(quote), 0), hi)})
    if len(found) != 1:
        raise NotFound(text[:_HEAD])
    return layout.pages(found[0], len(quote))


def _clause(clause: Clause, find) -> Clause:
    update: dict = {"pages": find(clause.text, clause.pages[0]), "span": None, "paragraph": None}
    if clause.dispute is not None and clause.dispute.model_text:
        moved = find(clause.dispute.model_text, (clause.dispute.model_pages or [None])[0])
        update["dispute"] = clause.dispute.model_copy(update={"model_pages": moved})
    return clause.model_copy(update=update)


def _new_page(page: int, firsts: dict[tuple[str, int], set[int]], categories: list[str]) -> int:
    """This document's first page for a reused first ``page`` of findings in ``categories`` (all: any), when
    those findings all begin on one page here."""
    new = {n for (category, old), moved in firsts.items() if old == page and category in categories for n in moved}
    if len(new) != 1:
        raise NotFound(f"p. {page}")
    return next(iter(new))


def _notice(notice: Notice, firsts: dict[tuple[str, int], set[int]]) -> Notice:
    """A model step's notice with its page (and the pages its message cites) in this document: the findings of
    the categories it names, else of any category, that began on that page."""
    named = [category for category, _ in firsts if category in notice.message] or [c for c, _ in firsts]

    def new(page: int) -> int:
        return _new_page(page, firsts, named)

    message = _PAGE_REF.sub(lambda m: f"p. {new(int(m.group(1)))}", notice.message)
    return notice.model_copy(update={"message": message, "page": new(notice.page) if notice.page else None})


def relocate(document: ParsedDocument, filtered: FilteredDocument, clauses: list[Clause],
             suggestions: list[Suggestion], notices: list[Notice], key_terms: KeyTerms | None = None
             ) -> Relocated:
    """The reused ``filtered`` result, the findings, suggestions and model notices built on it, with this
    ``document``'s locations; :class:`NotFound` (naming the text) when one of them has no single place here."""
    layout = Layout(document)
    spans = _passages(layout, filtered.passages)
    passages = [p.model_copy(update={"page": layout.pages(lo, hi - lo)[0]})
                for p, (lo, hi) in zip(filtered.passages, spans, strict=True)]

    def find(text: str, page: int | None) -> list[int]:
        return _place(layout, text, page, filtered.passages, spans)

    moved = [_clause(c, find) for c in clauses]
    firsts: dict[tuple[str, int], set[int]] = {}  # (category, reused first page) -> first pages here
    for old, new in zip(clauses, moved, strict=True):
        firsts.setdefault((old.category, old.pages[0]), set()).add(new.pages[0])
        if old.dispute is not None and old.dispute.model_pages and new.dispute is not None:
            firsts.setdefault((old.category, old.dispute.model_pages[0]), set()).add(new.dispute.model_pages[0])
    placed = [s.model_copy(update={"pages": [_new_page(n, firsts, [s.category]) for n in s.pages[:1]]})
              for s in suggestions]
    told = [_notice(n, firsts) for n in notices]
    terms = None
    if key_terms is not None:
        found = {(old.category, tuple(old.pages)): new.pages for old, new in zip(clauses, moved, strict=True)}
        if any(t.pages and (t.category, tuple(t.pages)) not in found for t in key_terms.terms):
            raise NotFound("a key term")
        terms = key_terms.model_copy(update={"terms": [
            t.model_copy(update={"pages": found[(t.category, tuple(t.pages))] if t.pages else []})
            for t in key_terms.terms]})
    kept = sorted({p.page for p in passages})
    return Relocated(filtered=filtered.model_copy(update={"passages": passages, "pages_kept": kept}),
                     clauses=moved, suggestions=placed, notices=told, key_terms=terms)
