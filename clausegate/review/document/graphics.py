"""A small PDF graphics-state machine: for every text-showing operator (Tj, TJ, ', "), can a reader
see the text it draws?  Used by :mod:`clausegate.review.document.hidden`.

It follows q/Q, cm, the text state and matrix, Tf (with Type 3 font matrices), fill and stroke
colours (device, calibrated and ICC spaces; pattern/indexed/separation colours are "not
comparable", i.e. visible), ExtGState alpha, filled rectangles (backgrounds, in painter's order;
other filled shapes and images are backgrounds of unknown colour), clip paths and a form's
/BBox, and form XObjects (recursively).  Text is hidden when invisible (render mode 3/7, unless
over an image: a scan's OCR layer), in the colour of what is under its first glyph (white paper
where nothing is), fully transparent, outside the page box or its clip, or microscopic.  Glyph
widths are estimated, not measured, so "outside" is judged with a generous width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pypdf.generic import ContentStream, NameObject

from clausegate.review.document import tokens
from clausegate.review.document.geometry import Path
from clausegate.review.document.geometry import apply as _apply
from clausegate.review.document.geometry import bbox as _bbox
from clausegate.review.document.geometry import intersect as _intersect
from clausegate.review.document.geometry import mul as _mul
from clausegate.review.document.geometry import num as _num
from clausegate.review.document.visibility import MIN_FONT_PT, MIN_WIDTH_PT
from clausegate.review.document.visibility import same_colour as _same

INVISIBLE = "invisible (render mode 3/7)"
SAME_COLOUR = "in the colour of its background"
TRANSPARENT = "fully transparent"
OFF_PAGE = "outside the page or its clipping area"
TINY = f"microscopic (under {MIN_FONT_PT:g} pt)"

MIN_ALPHA = 0.02
MAX_FORM_DEPTH = 8
MAX_FORM_INVOCATIONS = 300  # per page; further forms are drawn but not looked into
MAX_REGIONS = 4000

WHITE = (1.0, 1.0, 1.0)
IMAGE = "image"  # a painted image: unknown colour, and what an OCR text layer lies over
UNKNOWN = "unknown"  # painted with a colour we cannot compare (pattern, shading, separation)
IDENTITY = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SHOW = frozenset({b"Tj", b"TJ", b"'", b'"'})
_FILL = frozenset({b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*"})
_STROKE = frozenset({b"S", b"s", b"B", b"B*", b"b", b"b*"})
_PAINT = _FILL | _STROKE | {b"n"}
_COLOUR = frozenset({b"g", b"rg", b"k", b"G", b"RG", b"K", b"cs", b"CS", b"sc", b"scn", b"SC", b"SCN"})
_DEVICE_OPS = {b"g": 1, b"rg": 3, b"k": 4}
_TEXT_SCALARS = {b"Tr": ("render", 1), b"Tz": ("scale", 0.01), b"Ts": ("rise", 1), b"TL": ("leading", 1)}


@dataclass
class State:
    ctm: tuple = IDENTITY
    clip: tuple | None = None  # device-space bbox (x0, y0, x1, y1); None = nothing visible
    fill: Any = (0.0, 0.0, 0.0)  # rgb tuple, or None when the colour cannot be compared
    stroke: Any = (0.0, 0.0, 0.0)
    fill_n: int = 1  # components of the current fill colour space (0 = not comparable)
    stroke_n: int = 1
    fill_alpha: float = 1.0
    stroke_alpha: float = 1.0
    render: float = 0  # Tr
    size: float = 12.0
    scale: float = 1.0  # Tz / 100
    rise: float = 0.0
    leading: float = 0.0
    unit: tuple = (1.0, 1.0)  # Type 3 font matrix scale
    line: float = 1.0  # line width (w), user space

    def copy(self) -> State:  # q happens ~10^5 times on a heavy page: dataclasses.replace() is too slow
        new = object.__new__(State)
        new.__dict__.update(self.__dict__)
        return new


@dataclass
class Scan:
    """Per content stream: text operators (index -> reasons, empty = visible) and forms drawn."""

    shows: dict[int, set[str]] = field(default_factory=dict)
    # Do index -> (form, its resources, its operators, its scan)
    forms: dict[int, tuple[Any, Any, list, Scan]] = field(default_factory=dict)

    def has_hidden(self) -> bool:
        return any(self.shows.values()) or any(s.has_hidden() for *_, s in self.forms.values())

    def reasons(self) -> list[str]:
        return [r for rs in self.shows.values() for r in rs] + [r for *_, s in self.forms.values() for r in s.reasons()]


def _rgb(values: list[Any], n: int) -> tuple | None:
    if n not in (1, 3, 4) or len(values) != n:
        return None
    v = [min(max(_num(x), 0.0), 1.0) for x in values]
    return (v[0],) * 3 if n == 1 else tuple(v) if n == 3 else tuple((1 - x) * (1 - v[3]) for x in v[:3])


def _set_colour(gs: State, op: bytes, operands: list[Any], resources: Any) -> None:
    """g/rg/k/cs/sc/scn set the fill colour, their upper-case twins the stroke colour."""
    stroke, name = op[:1].isupper(), op.lower()
    if name in _DEVICE_OPS:
        n = _DEVICE_OPS[name]
        colour = _rgb(operands, n)
    elif name == b"cs":
        n = _space_components(operands[0], resources) if operands else 0
        colour = (0.0, 0.0, 0.0) if n else None  # a new colour space starts black (or not comparable)
    else:
        n = gs.stroke_n if stroke else gs.fill_n
        colour = _rgb(operands, n)
    if stroke:
        gs.stroke_n, gs.stroke = n, colour
    else:
        gs.fill_n, gs.fill = n, colour


_DEVICE_SPACES = {"/DeviceGray": 1, "/G": 1, "/CalGray": 1, "/DeviceRGB": 3, "/RGB": 3, "/CalRGB": 3,
                  "/DeviceCMYK": 4, "/CMYK": 4}


def _space_components(space: Any, resources: Any, depth: int = 0) -> int:
    """1/3/4 for spaces whose colours we can compare, 0 for the rest (pattern, indexed, separation …)."""
    space = space.get_object() if hasattr(space, "get_object") else space
    if isinstance(space, str):
        if space in _DEVICE_SPACES:
            return _DEVICE_SPACES[space]
        named = _get(_get(resources, "/ColorSpace"), space)
        return _space_components(named, resources, depth + 1) if named is not None and depth < 3 else 0
    if isinstance(space, list) and space:
        kind = str(space[0])
        if kind == "/ICCBased" and len(space) > 1:
            n = int(_num(_get(space[1], "/N"), 0))
            return n if n in (1, 3, 4) else 0
        return _DEVICE_SPACES.get(kind, 0)
    return 0


def _get(obj: Any, key: str) -> Any:
    try:
        obj = obj.get_object() if obj is not None else None
        value = obj.get(key) if hasattr(obj, "get") else None
        return value.get_object() if value is not None else None
    except Exception:  # a broken reference is "absent"
        return None


def _text_bytes(operator: bytes, operands: list[Any]) -> tuple[int, int]:
    """(bytes shown, non-blank bytes shown) by a text operator."""
    if operator == b"TJ":
        items = [x for x in (operands[0] if operands else []) if isinstance(x, (str, bytes))]
    else:
        items = operands[2:3] if operator == b'"' else operands[:1]
    total = inked = 0
    for item in items:
        raw = item if isinstance(item, bytes) else str(item).encode("utf-8", "replace")
        total += len(raw)
        inked += len(raw.translate(None, b" \t\r\n\x00"))
    return total, inked


def _font_unit(font: Any) -> tuple[float, float]:
    """How a Type 3 font's /FontMatrix scales glyphs compared with the usual 1/1000 (other fonts: 1)."""
    matrix = _get(font, "/FontMatrix") if _get(font, "/Subtype") == "/Type3" else None
    if not isinstance(matrix, list) or len(matrix) != 6:
        return (1.0, 1.0)
    return (math.hypot(_num(matrix[0]), _num(matrix[1])) * 1000, math.hypot(_num(matrix[2]), _num(matrix[3])) * 1000)


class Scanner:
    """Walks one page: a shared list of painted regions (painter's order) and a form budget."""

    def __init__(self, pdf: Any, fast: bool = False) -> None:
        self.pdf = pdf
        self.fast = fast  # forms parsed with the fast tokenizer, nothing swapped (a check only: no text extracted)
        self.regions: list[tuple[tuple, Any]] = []
        self.forms_seen = 0
        self.swapped: list[tuple[Any, Any, Any]] = []  # (/XObject dict, name, original entry)

    def restore(self) -> None:
        """Put the original form XObjects back, so parsed operators do not outlive the page."""
        for xobjects, name, original in reversed(self.swapped):
            xobjects[name] = original
        self.swapped.clear()

    def background(self, x: float, y: float) -> Any:
        for (x0, y0, x1, y1), colour in reversed(self.regions):
            if x0 <= x <= x1 and y0 <= y <= y1:
                return colour
        return WHITE

    def paint(self, box: tuple, colour: Any) -> None:
        if box[2] - box[0] < 1 or box[3] - box[1] < 1:  # rules and hairlines are not backgrounds
            return
        if colour == WHITE and not self.regions:
            return
        self.regions.append((box, colour))
        if len(self.regions) > MAX_REGIONS:
            del self.regions[: MAX_REGIONS // 4]

    def scan(self, ops: list, resources: Any, gs: State, stack: tuple = ()) -> Scan:
        result = Scan()
        saved: list[State] = []
        tm = tlm = IDENTITY
        path = Path()
        clip_pending = False
        for index, (operands, op) in enumerate(ops):
            try:
                if op in _SHOW:
                    if op in (b"'", b'"'):
                        tlm = tm = _mul((1, 0, 0, 1, 0, -gs.leading), tlm)
                    total, inked = _text_bytes(op, operands)
                    result.shows[index] = self.classify(gs, tm, total) if inked else set()
                    advance = 0.0
                    if op == b"TJ" and operands:
                        advance = sum(-_num(x) / 1000 for x in operands[0] if not isinstance(x, (str, bytes)))
                    advance = (advance + 0.2 * total) * gs.size * gs.scale  # an under-estimate of the width
                    tm = _mul((1, 0, 0, 1, advance, 0), tm)
                elif op == b"q":
                    saved.append(gs.copy())
                elif op == b"Q":
                    if saved:
                        gs = saved.pop()
                elif op == b"cm" and len(operands) >= 6:
                    gs.ctm = _mul(tuple(_num(x) for x in operands[:6]), gs.ctm)
                elif op == b"BT":
                    tm = tlm = IDENTITY
                elif op in (b"Td", b"TD") and len(operands) >= 2:
                    if op == b"TD":
                        gs.leading = -_num(operands[1])
                    tlm = tm = _mul((1, 0, 0, 1, _num(operands[0]), _num(operands[1])), tlm)
                elif op == b"Tm" and len(operands) >= 6:
                    tlm = tm = tuple(_num(x) for x in operands[:6])
                elif op == b"T*":
                    tlm = tm = _mul((1, 0, 0, 1, 0, -gs.leading), tlm)
                elif op == b"Tf" and len(operands) >= 2:
                    gs.size = _num(operands[1], gs.size)
                    gs.unit = _font_unit(_get(_get(resources, "/Font"), operands[0]))
                elif op in _TEXT_SCALARS and operands:  # Tr, Tz, Ts, TL
                    name, factor = _TEXT_SCALARS[op]
                    setattr(gs, name, _num(operands[0], getattr(gs, name) / factor) * factor)
                elif op in _COLOUR:
                    _set_colour(gs, op, operands, resources)
                elif op == b"gs" and operands:
                    state = _get(_get(resources, "/ExtGState"), operands[0])
                    gs.fill_alpha = _num(_get(state, "/ca"), gs.fill_alpha)
                    gs.stroke_alpha = _num(_get(state, "/CA"), gs.stroke_alpha)
                    font = _get(state, "/Font")
                    if isinstance(font, list) and len(font) >= 2:
                        gs.size = _num(font[1], gs.size)
                elif op in (b"m", b"l") and len(operands) >= 2:
                    path.add(_apply(gs.ctm, _num(operands[0]), _num(operands[1])), start=op == b"m")
                elif op in (b"c", b"v", b"y"):
                    nums = [_num(x) for x in operands]
                    path.curve([_apply(gs.ctm, nums[i], nums[i + 1]) for i in range(0, len(nums) - 1, 2)])
                elif op == b"re" and len(operands) >= 4:
                    x, y, w, h = (_num(v) for v in operands[:4])
                    path.rect([_apply(gs.ctm, px, py) for px, py in ((x, y), (x + w, y), (x, y + h), (x + w, y + h))])
                elif op == b"h":
                    path.close()
                elif op == b"w" and operands:
                    gs.line = _num(operands[0], gs.line)
                elif op in (b"W", b"W*"):
                    clip_pending = True
                elif op in _PAINT:
                    path.close()
                    if path.points and op in _FILL and gs.fill_alpha > MIN_ALPHA:
                        for rect in path.rects:  # rectangles are backgrounds of their fill colour
                            self.paint(rect, gs.fill if gs.fill is not None else UNKNOWN)
                        if path.irregular and gs.fill != WHITE:  # other shapes (frames, rounded boxes): unknown
                            self.paint(_bbox(path.points), UNKNOWN)
                    width = gs.line * math.hypot(gs.ctm[0], gs.ctm[1])
                    if path.points and op in _STROKE and width >= 3 and gs.stroke_alpha > MIN_ALPHA:  # a band
                        x0, y0, x1, y1 = _bbox(path.points)
                        self.paint((x0 - width / 2, y0 - width / 2, x1 + width / 2, y1 + width / 2), UNKNOWN)
                    if path.points and clip_pending:
                        gs.clip = _intersect(gs.clip, _bbox(path.points))
                    path, clip_pending = Path(), False
                elif op == b"sh" and gs.clip is not None:
                    self.paint(gs.clip, UNKNOWN)
                elif op == b"INLINE IMAGE":
                    self.paint(_bbox([_apply(gs.ctm, x, y) for x in (0, 1) for y in (0, 1)]), IMAGE)
                elif op == b"Do" and operands:
                    self.draw(index, operands[0], resources, gs, stack, result)
            except (MemoryError, RecursionError):
                raise
            except Exception:  # a malformed operator is skipped, as pypdf does
                continue
        return result

    def draw(self, index: int, name: Any, resources: Any, gs: State, stack: tuple, result: Scan) -> None:
        xobjects = _get(resources, "/XObject")
        xobject = _get(xobjects, name)
        if xobject is None:
            return
        subtype = _get(xobject, "/Subtype")
        if subtype == "/Image":
            self.paint(_bbox([_apply(gs.ctm, x, y) for x in (0, 1) for y in (0, 1)]), IMAGE)
            return
        if subtype != "/Form" or id(xobject) in stack or len(stack) >= MAX_FORM_DEPTH:
            return
        self.forms_seen += 1
        if self.forms_seen > MAX_FORM_INVOCATIONS:
            return
        if self.fast:
            ops = tokens.operations(xobject.get_data()) or _parsed(xobject, self.pdf).operations
        else:
            parsed = _parsed(xobject, self.pdf)
            if parsed is not xobject:  # pypdf's extract_text() then reuses the parsed operators (see restore())
                self.swapped.append((xobjects, name, xobjects.raw_get(name)))
                xobjects[name] = xobject = parsed
            ops = xobject.operations
        matrix = _get(xobject, "/Matrix")
        inner = gs.copy()
        if isinstance(matrix, list) and len(matrix) == 6:
            inner.ctm = _mul(tuple(_num(x) for x in matrix), gs.ctm)
        bbox = _get(xobject, "/BBox")
        if isinstance(bbox, list) and len(bbox) == 4:
            x0, y0, x1, y1 = (_num(v) for v in bbox)
            inner.clip = _intersect(gs.clip, _bbox([_apply(inner.ctm, x, y) for x in (x0, x1) for y in (y0, y1)]))
        form_resources = _get(xobject, "/Resources") or resources
        scan = self.scan(ops, form_resources, inner, (*stack, id(xobject)))
        result.forms[index] = (xobject, form_resources, ops, scan)

    def classify(self, gs: State, tm: tuple, nbytes: int) -> set[str]:
        reasons: set[str] = set()
        sx, sy = gs.unit
        m = _mul(_mul((gs.size * gs.scale * sx, 0, 0, gs.size * sy, 0, gs.rise), tm), gs.ctm)  # ems -> device
        background = self.background(*_apply(m, 0.1, 0.3))  # under the first glyph's body
        mode = gs.render
        if mode in (3, 7):
            if background != IMAGE:  # invisible text over an image is a scan's OCR layer
                reasons.add(INVISIBLE)
        else:
            painted = [(colour, alpha) for colour, alpha, modes in ((gs.fill, gs.fill_alpha, (0, 2, 4, 6)),
                                                                     (gs.stroke, gs.stroke_alpha, (1, 2, 5, 6)))
                       if mode in modes]
            if painted and all(alpha <= MIN_ALPHA for _, alpha in painted):
                reasons.add(TRANSPARENT)
            elif painted and all(alpha <= MIN_ALPHA or _same(colour, background) for colour, alpha in painted):
                reasons.add(SAME_COLOUR)
        if math.hypot(m[2], m[3]) < MIN_FONT_PT or math.hypot(m[0], m[1]) < MIN_WIDTH_PT:
            reasons.add(TINY)
        width = 0.7 * max(nbytes, 1)  # an over-estimate of the run's width, in ems
        extent = _bbox([_apply(m, x, y) for x in (0, width) for y in (-0.25, 1.0)])
        if _intersect(extent, gs.clip) is None:
            reasons.add(OFF_PAGE)
        return reasons


def _parsed(stream: Any, pdf: Any) -> Any:
    """``stream`` as a ContentStream built the way pypdf's extract_text() builds one (same operators)."""
    if isinstance(stream, ContentStream):
        return stream
    parsed = ContentStream(stream, pdf, "bytes")
    for key, value in stream.items():
        if key not in ("/Length", "/Filter", "/DecodeParms"):
            parsed[NameObject(key)] = value
    return parsed
