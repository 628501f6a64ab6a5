"""Page furniture: running headers and footers, printed page numbers and filing stamps, found in a
document's page texts and removed before the pages become passages (``clausegate.review.passages``).

A contract filed on EDGAR prints its own page numbers ("12", "- 3 -", "Page 4 of 9") and the filing's
stamp (``Source: LEADERSONLINE INC, S-1/A, 4/27/2000``) in the text layer, and a PDF page often holds
two printed pages, so they sit in the middle of a clause: "UNDER ANY THEORY 12 OF LIABILITY".  Both
PDFium's and pypdf's text keep them on lines of their own.  A line is furniture when, stripped:

1. it is a filing stamp (``_STAMP_RE``: "Source: NAME, FORM, M/D/YYYY", a page number before it allowed),
   anywhere on the page;
2. it is a page number: "Page 3", "Page 3 of 9", "3 of 9" or "- 3 -" anywhere; one or two bare numbers ("12", "5
   6") or a lower-case roman numeral among the first or last ``EDGE_LINES`` non-blank lines of its page; a rule of
   dashes, underscores or stars ("- -----", a filing's page separator) anywhere; a bare number (one or two, no dot,
   at most three digits) further inside the page too (a PDF page of a filing often holds several printed pages: two
   printed page numbers meet there, "3" / "18"), unless ``FIGURE_RUN`` or more of them stand on consecutive lines
   (a table's column of figures); never a bare number the line before refers to ("Section", "No.", "Exhibit");
3. it repeats across pages: among the first or last ``EDGE_LINES`` lines of at least 3 pages
   (2 for a two- or three-page document), compared lower-cased, spaces collapsed,
   digit runs masked and a leading or trailing page number dropped ("Acme Confidential - Page 4").
   A repeated line needs a letter and ``MIN_REPEAT_CHARS`` to ``MAX_REPEAT_CHARS`` characters; clause text is
   never one: a line ending like a sentence or a clause piece (".", ";", ":", ","), opening like a clause
   ("12. Term", "(a)", "Section 4", "ARTICLE V") or a signature-block field ("By:", "Name:", "/s/").

4. it is part of a numbering column torn from its clauses: ``NUMBER_RUN`` or more consecutive lines that are
   each a clause number only ("9." "10." "10.1." ..., as PDFium reads some auto-numbered lists).

Only whole lines are removed and a page stays a page (its number is unchanged), so passages keep their
page attribution; a removed line leaves nothing behind (its neighbours join as if it were not there).
"""

from __future__ import annotations

import re
from collections import Counter

EDGE_LINES = 3  # lines at the top and at the bottom of a page where headers, footers and page numbers sit
MIN_REPEAT_CHARS = 6
FIGURE_RUN = 3  # so many bare numbers on consecutive lines inside a page: a table's column of figures, kept
MAX_REPEAT_CHARS = 100

_STAMP_RE = re.compile(
    r"^(?:\d{1,4}\s+)?Source:\s+\S.{0,100}?,\s*[0-9A-Z][^,\n]{0,30},\s*\d{1,2}/\d{1,2}/\d{2,4}$")
# "Page 3", "Page 3 of 9", "- 3 -", "3 of 9": a page number wherever it is
_MARKED_PAGE_RE = re.compile(
    r"^(?:page\s*\d{1,4}|[-–—]\s*\d{1,4}\s*[-–—]|\d{1,4}\s+of\s+\d{1,4})(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_ROMAN_RE = re.compile(r"^(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})$")  # a preface's "iv" (edges only)
_BARE_NUMBERS_RE = re.compile(r"^(\d{1,4})(?:\s+(\d{1,4}))?$")
_REFERENCE_WORDS = frozenset({"section", "sections", "article", "clause", "no.", "§", "page", "pages", "exhibit",
                              "schedule", "item", "paragraph"})
_SIGNATURE_RE = re.compile(r"^(?:by|name|title|date|dated|its|attn|attention)\s*:|^/s/", re.IGNORECASE)
_CLAUSE_LIKE_RE = re.compile(r"^(?:#|\(\w{1,4}\)|(?:section|article|clause|schedule|exhibit|annex)\s+[#ivxlc])")
_NUMBER_LINE_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3})*\.$")  # "10.", "10.2.": a clause number alone
NUMBER_RUN = 3  # so many clause numbers on consecutive lines: a numbering column torn from its clauses
_RULE_RE = re.compile(r"^[\W_]{3,}$")  # a rule of dashes, underscores or stars: "- ---------------"
_DIGITS_RE = re.compile(r"\d+")
_SPACES_RE = re.compile(r"\s+")
_EDGE_NUMBER_RE = re.compile(  # a page number before or after a running line: "Acme Confidential - Page #"
    r"^(?:(?:page\s*)?#(?:\s*(?:of|/)\s*#)?\s*[-–—|]*\s*)|(?:\s*[-–—|]*\s*(?:page\s*)?#(?:\s*(?:of|/)\s*#)?)$")


def _normalised(line: str) -> str:
    key = _DIGITS_RE.sub("#", _SPACES_RE.sub(" ", line.strip().lower()))
    return _EDGE_NUMBER_RE.sub("", key).strip()


def _running_candidate(key: str) -> bool:
    """A (normalised) line that may be a running header or footer; clause text never is: a line that ends like a
    sentence or a clause piece, opens like a clause ("#. Term", "(a)", "Section #") or signs is kept."""
    return (MIN_REPEAT_CHARS <= len(key) <= MAX_REPEAT_CHARS and any(c.isalpha() for c in key)
            and not key.endswith((".", ";", ":", ",")) and not _SIGNATURE_RE.match(key)
            and not _CLAUSE_LIKE_RE.match(key))


def _edges(lines: list[str]) -> set[int]:
    """Indices of the first and last ``EDGE_LINES`` non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return set(filled[:EDGE_LINES]) | set(filled[-EDGE_LINES:])


def _is_page_number(line: str, at_edge: bool, prev: str) -> bool:
    if _MARKED_PAGE_RE.match(line):
        return True
    m = _BARE_NUMBERS_RE.match(line)
    if m is not None and prev.rstrip().rsplit(" ", 1)[-1].lower() in _REFERENCE_WORDS:
        return False  # a number the line before refers to: "Section" / "12"
    if _RULE_RE.match(line):
        return True  # a separator, no text: anywhere on the page
    if at_edge:
        return m is not None or _ROMAN_RE.match(line) is not None
    return m is not None and all(len(g) <= 3 for g in m.groups() if g)  # inside the page: at most three digits


def furniture_lines(pages: list[str]) -> list[set[int]]:
    """Per page, the indices (in ``page.splitlines()``) of its furniture lines (see the module doc)."""
    split = [page.splitlines() for page in pages]
    edges = [_edges(lines) for lines in split]
    n_pages = sum(1 for lines in split if any(line.strip() for line in lines))
    seen: Counter[str] = Counter()
    keys: list[dict[int, str]] = []
    for lines, edge in zip(split, edges, strict=True):
        page_keys = {i: _normalised(lines[i]) for i in edge}
        page_keys = {i: k for i, k in page_keys.items() if _running_candidate(k)}
        keys.append(page_keys)
        seen.update(set(page_keys.values()))
    need = 3 if n_pages > 3 else 2
    out: list[set[int]] = []
    for lines, edge, page_keys in zip(split, edges, keys, strict=True):
        drop = set()
        inside: set[int] = set()  # bare numbers inside the page: printed page numbers, or a table's figures
        prev = ""
        for i, raw in enumerate(lines):
            line = raw.strip()
            if not line:
                continue
            before, prev = prev, line
            if (_STAMP_RE.match(line) or _is_page_number(line, i in edge, before)
                    or (n_pages >= 2 and i in page_keys and seen[page_keys[i]] >= need)):
                drop.add(i)
                if i not in edge and _BARE_NUMBERS_RE.match(line):
                    inside.add(i)
        drop -= _figure_columns(inside)  # a table's column of figures, not the page numbers of printed pages
        drop |= _number_runs(lines)
        out.append(drop)
    return out


def _figure_columns(inside: set[int]) -> set[int]:
    """The line indices of ``inside`` that belong to a run of at least ``FIGURE_RUN`` consecutive lines."""
    out: set[int] = set()
    run: list[int] = []
    for i in [*sorted(inside), -2]:
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if len(run) >= FIGURE_RUN:
            out.update(run)
        run = [i]
    return out


def _number_runs(lines: list[str]) -> set[int]:
    """Lines of runs of at least ``NUMBER_RUN`` consecutive non-blank lines that are each a clause number only."""
    runs: set[int] = set()
    run: list[int] = []
    for i, raw in enumerate([*lines, "end"]):
        line = raw.strip()
        if not line and run:
            continue
        if _NUMBER_LINE_RE.match(line):
            run.append(i)
            continue
        if len(run) >= NUMBER_RUN:
            runs.update(run)
        run = []
    return runs


def strip_furniture(pages: list[str]) -> list[str]:
    """``pages`` without their furniture lines (one text per page, same order and count)."""
    out = []
    for page, drop in zip(pages, furniture_lines(pages), strict=True):
        if not drop:
            out.append(page)
            continue
        out.append("\n".join(line for i, line in enumerate(page.splitlines()) if i not in drop))
    return out


__all__ = ["EDGE_LINES", "furniture_lines", "strip_furniture"]
