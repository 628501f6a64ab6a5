"""When a reader cannot see text: the thresholds the PDF check (:mod:`clausegate.review.document.graphics`) and the
.docx check (:mod:`clausegate.review.document.docx_hidden`) share, so both formats call the same text hidden.

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
