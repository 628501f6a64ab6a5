"""Where a finding is in a .docx or text contract (no pages), and which tracked changes and comments fall in it.

A .docx or text document's parts are contiguous slices of its text (``Page.start``), so a clause's quote is found
in that text (whitespace-insensitive, within the parts it was read from): ``Clause.span`` is its [start, end) and,
in a .docx, ``Clause.paragraph`` the paragraph (¶) it starts in.  A pending tracked change or a comment whose place
lies in the span of a gated or high-risk finding is flagged with that finding's category: a gated clause the other
side is rewriting is what a reviewer reads first.  PDFs are left as they are (they have pages).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

from clausegate.review.document import registry
from clausegate.review.schemas import Clause, Comment, ParsedDocument, Revision

_SPACE = re.compile(r"\s+")
_CUT_MARK = " […]"
_HEAD, _TAIL = 60, 40


class _Collapsed:
    """``text`` with each run of white space made one space, and the original offset of each of its characters."""

    def __init__(self, text: str) -> None:
        pieces, where, pos = [], [], 0
        for match in _SPACE.finditer(text):
            pieces.append(text[pos:match.start()])
            where.extend(range(pos, match.start()))
            pieces.append(" ")
            where.append(match.start())
            pos = match.end()
        pieces.append(text[pos:])
        where.extend(range(pos, len(text)))
        self.text, self.where, self.length = "".join(pieces), where, len(text)

    def index(self, offset: int) -> int:
        return bisect.bisect_left(self.where, offset)

    def find(self, needle: str, lo: int, hi: int) -> int:
        return self.text.find(needle, self.index(lo), self.index(hi) + len(needle))

    def original(self, i: int) -> int:
        return self.where[i] if i < len(self.where) else self.length


def place(document: ParsedDocument, clauses: Iterable[Clause], protected: Iterable[str]
          ) -> tuple[list[Clause], list[Revision], list[Comment]]:
    """``clauses`` with their span (and ¶) in a .docx or text ``document``, and its revisions and comments flagged
    with the ``protected`` (gated or high-risk) findings they fall in."""
    clauses = list(clauses)
    if document.format == "pdf":
        return clauses, list(document.revisions), list(document.comments)
    text = "".join(page.text for page in document.pages)
    collapsed = _Collapsed(text)
    pages = {page.number: page for page in document.pages}
    placed = [_locate(clause, collapsed, pages, document) for clause in clauses]
    keep = set(protected)
    spans = [(c.category, c.span) for c in placed if c.span and not c.possible and c.category in keep]

    def flags(start: int, end: int) -> list[str]:
        return list(dict.fromkeys(cat for cat, (a, b) in spans if (a <= start <= b if start == end
                                                                    else start < b and end > a)))

    revisions = [r.model_copy(update={"flagged": flags(r.start, r.end)}) for r in document.revisions]
    comments = [c.model_copy(update={"flagged": flags(c.start, c.end)}) for c in document.comments]
    return placed, revisions, comments


def _locate(clause: Clause, collapsed: _Collapsed, pages: dict, document: ParsedDocument) -> Clause:
    quote = clause.text[:-len(_CUT_MARK)] if clause.text.endswith(_CUT_MARK) else clause.text
    quote = " ".join(quote.split())
    if not quote:
        return clause
    parts = [pages[n] for n in clause.pages if n in pages and pages[n].start is not None]
    lo = min((p.start for p in parts), default=0)
    hi = max((p.start + len(p.text) for p in parts), default=collapsed.length)
    head = quote[:_HEAD]
    at = collapsed.find(head, lo, hi)
    if at < 0:
        at = collapsed.text.find(head)
    if at < 0:
        return clause
    tail = quote[-_TAIL:]
    stop = collapsed.text.find(tail, at + max(len(quote) - len(tail) - 5 * _TAIL, 0))
    end_c = stop + len(tail) if 0 <= stop <= at + 2 * len(quote) else at + len(quote)
    start, end = collapsed.original(at), collapsed.original(end_c - 1) + 1
    update: dict = {"span": [start, end]}
    if registry.FORMATS[document.format].located_by == "paragraph":
        update["paragraph"] = paragraph_at(document, start)
    return clause.model_copy(update=update)


def paragraph_at(document: ParsedDocument, offset: int) -> int | None:
    """The number (¶) of the .docx paragraph holding ``offset`` of the document's text."""
    for page in document.pages:
        if page.start is None or page.first_paragraph is None or not page.paragraphs:
            continue
        if page.start <= offset < page.start + len(page.text):
            return page.first_paragraph + max(bisect.bisect_right(page.paragraphs, offset) - 1, 0)
    return None
