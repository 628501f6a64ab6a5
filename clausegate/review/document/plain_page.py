"""A fast, conservative pre-check for hidden text, from PDFium's own page objects (child side).

:func:`plainly_visible` answers True only when PDFium's parse of the page shows that none of its text can be
hidden in any of the ways :mod:`clausegate.review.document.hidden` looks for; then the pypdf content-stream walk
(``hidden.has_hidden``) is skipped.  Any doubt answers False and the full check runs, so nothing it detects is
lost.  Every text object (also inside form XObjects, with their matrices composed) must be

* filled (render mode 0: not invisible, clipping or stroke-only), at least 10 % opaque, and clearly darker than
  white paper (a channel at least 0.25 below white);
* with an em (font size x text matrix incl. Tz, x the forms' matrices) at least 2 pt tall and 1 pt wide on the
  page: not microscopic or squeezed (a page with a Type 3 font, whose /FontMatrix scales glyphs further, answers
  False);
* inside the page box (media box ∩ crop box) and inside every clip PDFium attaches to it or to the forms that
  draw it (a form's /BBox is such a clip); clips must be rectangles;
* clearly different in colour from every filled path it overlaps on the page (a channel at least 0.38 apart; the
  full check compares text with the last filled rectangle under it, else white paper).  Images, shadings and
  strokes are backgrounds of unknown colour to the full check: text over them is hidden only when invisible.

Only axis-aligned matrices are followed (a rotated or skewed form answers False).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import pypdfium2.raw as pdfium

from clausegate.review.document.graphics import _get
from clausegate.review.document.visibility import MIN_FONT_PT

MIN_ALPHA = 26  # of 255: fainter text goes to the full check (it flags <= 2 %)
MIN_CONTRAST = 64  # of 255: text closer to white than this goes to the full check (it flags <= 6 %)
MIN_HEIGHT, MIN_WIDTH = MIN_FONT_PT + 1.0, 1.0  # page-space points (the full check flags glyphs under MIN_FONT_PT)
MIN_AREA_SIDE = 0.9  # page-space points: thinner filled paths are not backgrounds (the full check: 1 pt)
MIN_FILL_CONTRAST = 96  # of 255: text over a filled path closer in colour than this goes to the full check
MAX_DEPTH = 8
_TEXT, _PATH, _FORM = pdfium.FPDF_PAGEOBJ_TEXT, pdfium.FPDF_PAGEOBJ_PATH, pdfium.FPDF_PAGEOBJ_FORM
_IDENTITY = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class _Doubt(Exception):
    """Something the pre-check does not judge: the full check decides."""


def plainly_visible(page: Any, box: tuple | None, resources: Any, memo: dict | None = None) -> bool:
    """True when no text on the PDFium ``page`` (a ``pypdfium2.PdfPage``) can be hidden; ``box`` is the visible page
    area (x0, y0, x1, y1) in user space (None: unknown, answers False); ``resources`` the page's (pypdf) resource
    dictionary: a page using a Type 3 font answers False (its /FontMatrix scales glyphs beyond PDFium's font size);
    ``memo``: the document's fonts and forms judged so far (one dict per pypdf reader, shared by its pages)."""
    if box is None or _type3(resources, 0, {} if memo is None else memo):
        return False
    texts: list[tuple[tuple, tuple]] = []  # (page-space box, rgb)
    painted: list[tuple[tuple, tuple]] = []  # filled paths: (page-space box, rgb)
    raw = page.raw
    try:
        _walk(raw, pdfium.FPDFPage_CountObjects, pdfium.FPDFPage_GetObject, _IDENTITY, [box], texts, painted, {}, 0)
    except _Doubt:
        return False
    for box_t, rgb_t in texts:
        for box_p, rgb_p in painted:
            if _overlap(box_t, box_p) and _contrast(rgb_t, rgb_p) < MIN_FILL_CONTRAST:
                return False
    return True


def _contrast(a: tuple, b: tuple) -> int:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def _walk(container: Any, count: Any, get: Any, to_page: tuple, clips: list[tuple], texts: list, painted: list,
          known: dict, depth: int) -> None:
    """Collect the page-space boxes of text and painted objects; ``clips``: page-space rectangles every text object
    must lie inside (the page box, and the clips of the forms drawing this container); ``known``: the page's clip
    rectangles read so far."""
    n = count(container)
    if n < 0:
        raise _Doubt
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    for index in range(n):
        obj = get(container, index)
        if not obj or not pdfium.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
            raise _Doubt
        local = (left.value, bottom.value, right.value, top.value)
        kind = pdfium.FPDFPageObj_GetType(obj)
        clip = _clip_rect(obj, known)
        on_page = _transform(to_page, local)
        if kind == _TEXT:
            if clip is not None and not _inside(local, clip):
                raise _Doubt  # partly or wholly clipped away
            rgb, sample = _check_text(obj, to_page, on_page)
            if not all(_inside(on_page, outer) for outer in clips):
                raise _Doubt  # partly or wholly off the page or outside a form's clip
            texts.append((sample, rgb))
        elif kind == _FORM:
            if depth >= MAX_DEPTH:
                raise _Doubt
            matrix = pdfium.FS_MATRIX()
            if not pdfium.FPDFPageObj_GetMatrix(obj, matrix) or matrix.b or matrix.c:
                raise _Doubt
            inner = _mul((matrix.a, 0.0, 0.0, matrix.d, matrix.e, matrix.f), to_page)
            inner_clips = clips if clip is None else [*clips, _transform(to_page, clip)]
            _walk(obj, pdfium.FPDFFormObj_CountObjects, pdfium.FPDFFormObj_GetObject, inner, inner_clips, texts,
                  painted, known, depth + 1)
        elif kind == _PATH:
            fill, stroke = ctypes.c_int(), ctypes.c_int()
            if not pdfium.FPDFPath_GetDrawMode(obj, fill, stroke):
                raise _Doubt
            # filled areas under 1 pt (rules, hairlines) are no background to the full check either
            if fill.value and on_page[2] - on_page[0] >= MIN_AREA_SIDE and on_page[3] - on_page[1] >= MIN_AREA_SIDE:
                painted.append((on_page, _fill(obj)))
        elif kind not in (pdfium.FPDF_PAGEOBJ_IMAGE, pdfium.FPDF_PAGEOBJ_SHADING):
            raise _Doubt  # an object type this check does not know


def _type3(resources: Any, depth: int, memo: dict) -> bool:
    """Does a font of these resources, or of the forms among their XObjects (nested), have /Subtype /Type3?"""
    fonts, xobjects = _get(resources, "/Font"), _get(resources, "/XObject")
    for name, ref in fonts.items() if hasattr(fonts, "items") else ():
        key = ("font", ref.idnum) if hasattr(ref, "idnum") else None
        found = memo.get(key)
        if found is None:
            found = _get(fonts, name) is not None and _get(_get(fonts, name), "/Subtype") == "/Type3"
            if key is not None:
                memo[key] = found
        if found:
            return True
    if not hasattr(xobjects, "items"):
        return False
    if depth >= MAX_DEPTH:
        return bool(xobjects)
    for name, ref in xobjects.items():
        key = ("form", ref.idnum) if hasattr(ref, "idnum") else None
        found = memo.get(key)
        if found is None:
            xobject = _get(xobjects, name)
            found = _get(xobject, "/Subtype") == "/Form" and _type3(_get(xobject, "/Resources"), depth + 1, memo)
            if key is not None:
                memo[key] = found
        if found:
            return True
    return False


def _check_text(obj: Any, to_page: tuple, on_page: tuple) -> tuple[tuple, tuple]:
    """The text's colour, and where the full check may look for its background: it samples 0.3 em above the
    baseline, at its own estimate of where the run starts (left of the real start, never left of the line's start);
    anywhere on the page when the text is not upright."""
    if pdfium.FPDFTextObj_GetTextRenderMode(obj) != pdfium.FPDF_TEXTRENDERMODE_FILL:
        raise _Doubt
    # The glyphs' em on the page: font size x the text matrix (Tm, Tz, the CTM) x the forms' matrices.
    m, size = pdfium.FS_MATRIX(), ctypes.c_float()
    if not pdfium.FPDFPageObj_GetMatrix(obj, m) or not pdfium.FPDFTextObj_GetFontSize(obj, size):
        raise _Doubt
    sx, sy = to_page[0], to_page[3]
    width, height = size.value * math.hypot(m.a * sx, m.b * sy), size.value * math.hypot(m.c * sx, m.d * sy)
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        raise _Doubt
    r, g, b, a = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    if not pdfium.FPDFPageObj_GetFillColor(obj, r, g, b, a):
        raise _Doubt
    if a.value < MIN_ALPHA or 255 - min(r.value, g.value, b.value) < MIN_CONTRAST:
        raise _Doubt
    em = max(width, height)
    if m.b or m.c or m.a * sx <= 0 or m.d * sy <= 0:
        sample = (-math.inf, -math.inf, math.inf, math.inf)  # any same-coloured filled path on the page: doubt
    else:
        baseline = m.f * sy + to_page[5]
        sample = (-math.inf, baseline + 0.1 * height, on_page[2] + em, baseline + 0.5 * height)
    return (r.value, g.value, b.value), sample


def _fill(obj: Any) -> tuple:
    r, g, b, a = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    if not pdfium.FPDFPageObj_GetFillColor(obj, r, g, b, a):
        raise _Doubt
    return (r.value, g.value, b.value)


def _clip_rect(obj: Any, known: dict) -> tuple | None:
    """The intersection of the object's clip paths (rectangles only), in the object's own space; None: no clip."""
    clip = pdfium.FPDFPageObj_GetClipPath(obj)
    if not clip:
        return None
    paths = pdfium.FPDFClipPath_CountPaths(clip)
    if paths < 0:  # PDFium's answer for an object without a clip
        return None
    x, y = ctypes.c_float(), ctypes.c_float()
    rect: tuple | None = None
    for p in range(paths):
        segments = pdfium.FPDFClipPath_CountPathSegments(clip, p)
        first = pdfium.FPDFClipPath_GetPathSegment(clip, p, 0) if segments > 0 else None
        if not first:
            raise _Doubt
        # Objects drawn under one clip share PDFium's path data: read its points once per page.
        key = (ctypes.cast(first, ctypes.c_void_p).value, segments)
        this = known.get(key)
        if this is None:
            this = known[key] = _path_rect(clip, p, segments, x, y)
        rect = this if rect is None else (max(rect[0], this[0]), max(rect[1], this[1]),
                                         min(rect[2], this[2]), min(rect[3], this[3]))
    return rect


def _path_rect(clip: Any, p: int, segments: int, x: Any, y: Any) -> tuple:
    points = []
    for s in range(segments):
        segment = pdfium.FPDFClipPath_GetPathSegment(clip, p, s)
        if not segment or not pdfium.FPDFPathSegment_GetPoint(segment, x, y):
            raise _Doubt
        if pdfium.FPDFPathSegment_GetType(segment) == pdfium.FPDF_SEGMENT_BEZIERTO:
            raise _Doubt
        points.append((x.value, y.value))
    return _as_rect(points)


def _as_rect(points: list[tuple[float, float]]) -> tuple:
    if len(points) > 4 and abs(points[0][0] - points[-1][0]) < 0.01 and abs(points[0][1] - points[-1][1]) < 0.01:
        points = points[:-1]
    if len(points) != 4:
        raise _Doubt
    xs, ys = sorted(p[0] for p in points), sorted(p[1] for p in points)
    if xs[1] - xs[0] > 0.01 or xs[3] - xs[2] > 0.01 or ys[1] - ys[0] > 0.01 or ys[3] - ys[2] > 0.01:
        raise _Doubt
    if any(min(abs(px - xs[0]), abs(px - xs[3])) > 0.01 or min(abs(py - ys[0]), abs(py - ys[3])) > 0.01
           for px, py in points):
        raise _Doubt
    if len({(round(px, 2), round(py, 2)) for px, py in points}) != 4:
        raise _Doubt
    return (xs[0], ys[0], xs[3], ys[3])


def _inside(inner: tuple, outer: tuple) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _mul(m: tuple, n: tuple) -> tuple:
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t, e * q + f * s + u)


def _transform(m: tuple, rect: tuple) -> tuple:
    """An axis-aligned rectangle through an axis-aligned matrix (b = c = 0)."""
    x0, x1 = rect[0] * m[0] + m[4], rect[2] * m[0] + m[4]
    y0, y1 = rect[1] * m[3] + m[5], rect[3] * m[3] + m[5]
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
