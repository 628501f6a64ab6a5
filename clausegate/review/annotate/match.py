"""Where a finding's quote is in a text: compared character by character after folding (NFKC like the review's text,
blanks and control characters dropped, PDFium's control-character hyphen a hyphen), anchored by its first and last
words, shortened when the review left a line of the document out of the quote (page furniture, a redaction mark)."""

from __future__ import annotations

import unicodedata
from difflib import SequenceMatcher

HEAD, TAIL = 60, 40
FURNITURE_MAX = 120  # a page number, a running header, a rule of dashes between two pages of a CUAD text


def fold(char: str, hyphens: bool = True) -> str:
    """A character as compared: NFKC (the review's text is NFKC-folded: a Greek question mark is a semicolon), the
    hyphen PDFium reports as a control character a hyphen (``hyphens`` False: every hyphen nothing), blanks and
    other control characters nothing."""
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
