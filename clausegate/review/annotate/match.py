"""Where a finding's quote is in a text: compared character by character after folding (NFKC like the review's text,
blanks and control characters dropped, PDFium's control-character hyphen a hyphen), anchored by its first and last
words, shortened when the review left a line of the document out of the quote (page furniture, a redaction mark).

A quote that is not one passage (the review joined a sentence cut at a page break to text further on, read a table
and the paragraph after it as one, or left a redaction line out) is found as **pieces** (:func:`pieces`): passages of
the text, in order, that together are exactly the quote; the writers mark each piece and tie them to one note."""

from __future__ import annotations

import unicodedata
from bisect import bisect_left
from difflib import SequenceMatcher

HEAD, TAIL = 60, 40
FURNITURE_MAX = 120  # a page number, a running header, a rule of dashes between two pages of a CUAD text
MIN_PIECE = 2  # a shorter piece of agreement between a quote and the text is chance
SHORT_PIECE = 16  # pieces shorter than this (a "to", a "(b) [***].") hold one such piece or a tenth of the quote, and
PIECE_EVERY = 40  # a quote at most one piece per this many characters (and two): a quote put together from
# fragments of the text is not the text
MAX_GAP = 6000  # folded characters of text a quote's pieces may skip in all (a page and more of furniture)


def fold(char: str, hyphens: bool = True) -> str:
    """A character as compared: NFKC (the review's text is NFKC-folded: a Greek question mark is a semicolon), the
    hyphen PDFium reports as a control character a hyphen (``hyphens`` False: every hyphen nothing), blanks and
    other control characters nothing."""
    if "!" <= char <= "~" and char != "-":  # printable ASCII: itself (most characters of a contract)
        return char
    if char in "\x02\xad-":
        return "-" if hyphens else ""
    if char.isspace() or ord(char) < 32 or ord(char) == 127:
        return ""
    return "".join(c for c in unicodedata.normalize("NFKC", char) if not c.isspace())


def folded(text: str) -> tuple[str, list[int]]:
    """``text`` folded, and the offset in ``text`` of each folded character."""
    chars, where = [], []
    for i, ch in enumerate(text):
        for c in fold(ch):
            chars.append(c)
            where.append(i)
    return "".join(chars), where


def region(page: str, quote: str) -> tuple[int, int] | None:
    """[start, end) of the folded ``quote`` in the folded ``page`` (both folded already), or None."""
    if not quote:
        return None
    at = next((a for size in (HEAD, HEAD // 2, HEAD // 4) if (a := page.find(quote[:size])) >= 0), -1)
    if at < 0:
        return None
    end = min(at + len(quote), len(page))
    for size in (TAIL, TAIL // 2, TAIL // 4):  # the last words; shorter when page furniture cuts them
        tail = quote[-size:]
        stop = page.find(tail, at + max(len(quote) - len(tail) - 5 * TAIL, 0))
        if 0 <= stop <= at + 2 * len(quote):
            end = stop + len(tail)
            break
    return at, end


def span(text: str, quote: str) -> tuple[int, int] | None:
    """[start, end) of ``quote`` in ``text`` (original offsets), or None."""
    page, where = folded(text)
    found = region(page, "".join(fold(c) for c in quote))
    if found is None:
        return None
    return where[found[0]], where[found[1] - 1] + 1


def same_text(anchored: str, quote: str) -> bool:
    """The anchored text of a .docx comment is the quote, white space aside, with two allowances for what the
    review's text leaves out: a list number Word draws (not in the runs: up to 12 characters missing at the start),
    and page furniture inside the quote (a page number or a running header the CUAD text keeps as a paragraph:
    extra pieces of at most FURNITURE_MAX characters, a quarter of the anchor at most).  Anything else is the wrong
    text."""
    a, q = "".join(fold(c) for c in anchored), "".join(fold(c) for c in quote)
    if a == q:
        return bool(a)
    extra = 0
    for op, a1, a2, q1, q2 in SequenceMatcher(None, a, q, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "insert" and a1 == 0 and q2 - q1 <= 12:
            continue
        if op == "delete" and a2 - a1 <= FURNITURE_MAX:
            extra += a2 - a1
            continue
        return False
    return extra <= len(a) // 4


def pieces(page: str, quote: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]] | None:
    """[start, end) pieces of the folded ``page`` (searched in ``page[lo:hi]``), in order, whose characters joined
    are exactly the folded ``quote``; None when no such pieces are near each other (at most MAX_GAP characters
    skipped in all) or one would be shorter than MIN_PIECE.  Found by aligning the quote with the text after its
    first words (:class:`difflib.SequenceMatcher`: longest agreements first, so a short piece sits between the long
    ones it joins); every character of the quote must be matched, so a quote with text the page lacks has none."""
    if not quote:
        return None
    hi = len(page) if hi is None else min(hi, len(page))
    for size in (HEAD // 4, MIN_PIECE * 4):
        at = page.find(quote[:size], lo, hi)
        if at >= 0:  # from its first words: first a window with little to skip (cheaper), then MAX_GAP
            for end in (at + len(quote) + len(quote) // 4 + FURNITURE_MAX, at + len(quote) + MAX_GAP):
                found = _aligned(page, quote, at, min(hi, end))
                if found is not None or end >= hi:
                    return found
            return None
    if hi - lo > len(quote) + 4 * MAX_GAP:
        return None  # no first words and a long text: the alignment would be slow and could be chance
    return _aligned(page, quote, lo, hi)


def _aligned(page: str, quote: str, lo: int, hi: int) -> list[tuple[int, int]] | None:
    window = page[lo:hi]
    blocks = [b for b in SequenceMatcher(None, quote, window, autojunk=False).get_matching_blocks() if b.size]
    if sum(b.size for b in blocks) != len(quote) or any(b.size < MIN_PIECE for b in blocks):
        return None
    if blocks[-1].b + blocks[-1].size - blocks[0].b - len(quote) > MAX_GAP:
        return None
    out: list[list[int]] = []
    for block in blocks:  # blocks next to each other in the text are one piece
        start = lo + block.b
        if out and out[-1][1] == start:
            out[-1][1] = start + block.size
        else:
            out.append([start, start + block.size])
    short = sum(b - a for a, b in out if b - a < SHORT_PIECE)
    if len(out) > 2 + len(quote) // PIECE_EVERY or short > max(len(quote) // 10, SHORT_PIECE):
        return None
    return [(a, b) for a, b in out]


def spans(text: str, quote: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]] | None:
    """:func:`pieces` in ``text``'s own offsets: [start, end) of each piece's first to last character."""
    page, where = folded(text)
    found = pieces(page, "".join(fold(c) for c in quote), bisect_left(where, lo),
                   None if hi is None else bisect_left(where, hi))
    if found is None:
        return None
    return [(where[a], where[b - 1] + 1) for a, b in found]
