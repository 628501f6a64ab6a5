"""Can a reader of a .docx see a run?  The PDF check's rule (:mod:`clausegate.review.document.visibility`, its
thresholds) applied to Word's run properties, resolved through styles by :mod:`clausegate.review.document.docx_parts`.

A run is hidden when it is ``w:vanish`` or ``w:specVanish``; when its colour is within ``COLOUR_TOLERANCE`` of its
effective background (the run's highlight, else its shading, else its paragraph's shading, else its table cell's,
else the white page); when its glyphs are under ``MIN_FONT_PT`` tall; or when they are squeezed under
``MIN_WIDTH_PT`` wide by the character scale (``w:w``).  Word's "automatic" text colour is black on a light
background and white on a dark one, so it is always visible.
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from clausegate.review.document.visibility import MIN_FONT_PT, MIN_WIDTH_PT, same_colour

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
WHITE = (1.0, 1.0, 1.0)
BLACK = (0.0, 0.0, 0.0)
DEFAULT_SIZE_HALF_POINTS = 20  # Word's size when neither the run nor a style says (10 pt)
# w:highlight's named colours (ECMA-376 ST_HighlightColor)
HIGHLIGHT = {"black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF",
             "red": "FF0000", "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080",
             "darkGreen": "008000", "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000",
             "darkGray": "808080", "lightGray": "C0C0C0"}
VANISH = "hidden (w:vanish)"
SPEC_VANISH = "hidden (w:specVanish)"
SAME_COLOUR = "in the colour of its background"
TINY = f"microscopic (under {MIN_FONT_PT:g} pt)"
SQUEEZED = f"squeezed under {MIN_WIDTH_PT:g} pt wide (character scale)"


def rgb(value: str | None) -> tuple[float, float, float] | None:
    """``RRGGBB`` as 0..1 channels; None for ``auto``, absent or malformed values."""
    if not value or len(value) != 6:
        return None
    try:
        return tuple(int(value[i:i + 2], 16) / 255 for i in (0, 2, 4))  # type: ignore[return-value]
    except ValueError:
        return None


def shading(shd: Element | None) -> tuple[float, float, float] | None:
    """The colour a ``w:shd`` paints (None: nothing, so what is under it shows): ``clear`` its fill, ``solid`` its
    pattern colour, ``pctN`` the two mixed N % of the way to the pattern colour."""
    if shd is None:
        return None
    pattern = (shd.get(W + "val") or "clear").lower()
    fill = rgb(shd.get(W + "fill"))
    if pattern == "nil":
        return None
    if pattern == "clear":
        return fill
    colour = rgb(shd.get(W + "color")) or BLACK  # an automatic pattern colour is black
    if pattern == "solid":
        return colour
    if pattern.startswith("pct") and pattern[3:].isdigit():
        share = int(pattern[3:]) / (1000 if len(pattern) == 6 else 100)  # pct5 .. pct95, pct125 = 12.5 %
        base = fill or WHITE
        return tuple(b + (c - b) * share for b, c in zip(base, colour, strict=True))  # type: ignore[return-value]
    return fill  # stripes and crosses: judged by the fill


def run_background(props: dict[str, Any], under: tuple | None) -> tuple:
    """The colour behind a run: its highlight, its shading, else ``under`` (paragraph, cell), else white paper."""
    highlight = props.get("highlight")
    if highlight and highlight in HIGHLIGHT:
        return rgb(HIGHLIGHT[highlight]) or WHITE
    return props.get("shading") or under or WHITE


def reasons(props: dict[str, Any], under: tuple | None) -> set[str]:
    """Why a run with these (resolved) properties cannot be seen; empty when it can."""
    why = set()
    if props.get("vanish"):
        why.add(VANISH)
    if props.get("spec_vanish"):
        why.add(SPEC_VANISH)
    colour = rgb(props.get("color"))
    if colour is not None and same_colour(colour, run_background(props, under)):
        why.add(SAME_COLOUR)
    size = props.get("sz", DEFAULT_SIZE_HALF_POINTS) / 2
    if size < MIN_FONT_PT:
        why.add(TINY)
    elif size * props.get("w", 100) / 100 < MIN_WIDTH_PT:
        why.add(SQUEEZED)
    return why
