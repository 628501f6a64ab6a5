"""When a reader cannot see text: the thresholds the PDF check (:mod:`clausegate.review.document.graphics`) and the
.docx and .odt checks (:mod:`clausegate.review.document.docx_hidden`, ``odt``) share, so every format calls the same
text hidden, and the notices a word-processor format gives for the hidden text it left out.

Colours are RGB tuples of 0..1; sizes are the glyphs' em in points.
"""

from __future__ import annotations

from typing import Any

MIN_FONT_PT = 3.0  # effective glyph height (the em) below which text is microscopic: unreadable at 100 %
MIN_WIDTH_PT = 0.5  # effective glyph width (font size x horizontal scale) below which text is squeezed away
COLOUR_TOLERANCE = 0.06  # max per-channel difference (0..1) at which two colours look the same


def same_colour(colour: Any, background: Any) -> bool:
    """Do two RGB (or gray, CMYK: same length) colours look the same?  Anything not a tuple is not comparable."""
    comparable = isinstance(colour, tuple) and isinstance(background, tuple) and len(colour) == len(background)
    return comparable and max(abs(a - b) for a, b in zip(colour, background, strict=True)) <= COLOUR_TOLERANCE


MAX_HIDDEN_NOTICES = 20  # one notice per paragraph with hidden text up to this many, then one for the rest


def hidden_notices(hidden: list[tuple[int, list[str], set[str]]], paragraphs: int, code: str,
                   readers: str) -> list[dict[str, Any]]:
    """The notices of a .docx or .odt's hidden text: per paragraph (index, the hidden pieces, why each is hidden)
    the excerpt, its ¶ and the reasons; ``readers``: who does not see it ("Word", "LibreOffice or Word")."""
    notices = []
    for index, pieces, reasons in hidden[:MAX_HIDDEN_NOTICES]:
        joined = " ".join(" ".join(pieces).split())
        excerpt = joined if len(joined) <= 120 else joined[:117] + "…"
        where = f"¶ {min(index + 1, paragraphs)}" + ("" if index < paragraphs else " (at the end)")
        notices.append({"code": code, "page": None, "message": (
            f"“{excerpt}” is hidden text in {where}: {', '.join(sorted(reasons))} ({len(pieces)} piece(s), "
            f"{len(joined)} characters). A reader of the document in {readers} does not see it; it was left out of "
            "the reviewed text. Ask the sender why it is there.")})
    if len(hidden) > MAX_HIDDEN_NOTICES:
        notices.append({"code": code, "page": None, "message": (
            f"hidden text in {len(hidden) - MAX_HIDDEN_NOTICES} more paragraph(s), not listed one by one.")})
    return notices
