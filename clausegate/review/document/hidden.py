"""Hidden text in a PDF page: find it, leave it out of the extracted text, say what it said.

A contract can carry text that a person reading the PDF never sees but a text extractor (and a
language model after it) reads: invisible text (render mode 3 or 7), text in the colour of what
is behind it (white on white, black on a black box) or fully transparent, text placed outside
the page or its clipping area, and microscopic text.  ``read_page`` walks the page's content
stream (and the form XObjects it draws) with a small graphics-state machine — q/Q, cm, Tr, Tf,
Tz, Ts, the text matrix, fill/stroke colour operators and colour spaces, ExtGState alpha, filled
paths, images and clip paths — and classifies every text-showing operator (Tj, TJ, ', ").

* No hidden operator: the page text is exactly pypdf's ``extract_text()`` (the parsed content
  stream is reused, so the page is parsed once).
* Hidden operators: the page is re-extracted from a rewritten content stream without them (the
  visible text), and once more with only them (the excerpt for the warning).

``has_hidden`` is the same check, faster (the content parsed by :mod:`clausegate.review.document.tokens`,
nothing rewritten or extracted): the worker reads a page that passes it with PDFium and gives a page that
fails it to ``read_page``.

Invisible text lying over an image is a scanner's OCR text layer, not hidden: it is kept.  The
page background is assumed white where nothing was painted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject
from pypdf.generic import ArrayObject, ContentStream, DictionaryObject, NameObject, StreamObject

from clausegate.review.document import tokens
from clausegate.review.document.geometry import intersect as _intersect
from clausegate.review.document.graphics import Scan, Scanner, State, _get

MIN_HIDDEN_CHARS = 3  # letters/digits the hidden text must decode to before it is reported
EXCERPT_CHARS = 200
_TEXT_OPERATOR = re.compile(rb"Tj|TJ|Do|'|\"")
_ALNUM = re.compile(r"[^\W_]")


@dataclass
class HiddenText:
    """What was hidden on a page: why, and what it said."""

    reasons: list[str]
    text: str
    pieces: int

    @property
    def excerpt(self) -> str:
        flat = " ".join(self.text.split())
        return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rstrip() + "…"


def page_box(page: Any) -> tuple | None:
    """The visible area: media box ∩ crop box (None when the boxes are unreadable or do not overlap)."""
    try:
        boxes = [[float(v) for v in box[:4]] for box in (page.mediabox, page.cropbox)]
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        return None
    return _intersect(*((min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])) for b in boxes))


def _rewrite(ops: list, scan: Scan, keep_hidden: bool, resources: Any, pdf: Any, names: list[int]) -> tuple[list, Any]:
    """The operators without the hidden text (or, keep_hidden, without the visible text); new resources
    when a form had to be rewritten (it gets a new name in a copy of the /XObject dictionary)."""
    out: list = []
    xobjects = None
    for index, (operands, op) in enumerate(ops):
        if index in scan.shows:
            if bool(scan.shows[index]) != keep_hidden:  # drop the text, keep the line move
                if op == b"'":
                    out.append(([], b"T*"))
                elif op == b'"' and len(operands) >= 2:
                    out += [(operands[:1], b"Tw"), (operands[1:2], b"Tc"), ([], b"T*")]
                continue
        elif index in scan.forms:
            form, form_resources, form_ops, inner = scan.forms[index]
            if not inner.has_hidden():
                if not keep_hidden:
                    out.append((operands, op))
                continue
            new_ops, new_resources = _rewrite(form_ops, inner, keep_hidden, form_resources, pdf, names)
            copy = ContentStream(None, pdf)
            for key, value in form.items():
                if key not in ("/Length", "/Filter", "/DecodeParms"):
                    copy[NameObject(key)] = value
            if new_resources is not None:
                copy[NameObject("/Resources")] = new_resources
            copy.operations = new_ops
            if xobjects is None:
                xobjects = DictionaryObject(_get(resources, "/XObject") or {})
            names.append(len(names))
            name = NameObject(f"/CGForm{len(names)}")
            xobjects[name] = copy
            out.append(([name], b"Do"))
            continue
        out.append((operands, op))
    if xobjects is None:
        return out, None
    new_resources = DictionaryObject(resources or {})
    new_resources[NameObject("/XObject")] = xobjects
    return out, new_resources


def _extract_rewritten(page: Any, ops: list, scan: Scan, keep_hidden: bool, resources: Any, pdf: Any) -> str:
    new_ops, new_resources = _rewrite(ops, scan, keep_hidden, resources, pdf, [])
    clone = PageObject(pdf=pdf)
    clone.update(page)
    content = ContentStream(None, pdf)
    content.operations = new_ops
    clone[NameObject("/Contents")] = content
    if new_resources is not None:
        clone[NameObject("/Resources")] = new_resources
    return clone.extract_text()


def _noop(*_: Any) -> None:
    return None


def read_page(page: Any, pdf: Any) -> tuple[str, HiddenText | None]:
    """The page's text without hidden text, and what was hidden (None when nothing was)."""
    contents = page.get("/Contents")
    if not isinstance(contents.get_object() if contents is not None else None, (ArrayObject, StreamObject)):
        return page.extract_text() or "", None  # no content stream: nothing to check
    original = page.raw_get("/Contents")
    content = ContentStream(contents, pdf, "bytes")  # exactly what extract_text() would build
    page[NameObject("/Contents")] = content  # and extract_text() reuses it (and its parsed operators)
    scanner = Scanner(pdf)
    try:
        return _read_checked(page, pdf, content, scanner)
    finally:  # the reader keeps the page: do not let it keep the parsed operators (memory)
        page[NameObject("/Contents")] = original
        scanner.restore()


def has_hidden(page: Any, pdf: Any) -> bool:
    """Does the page draw any hidden text?  (``read_page``'s check; True also for hidden text it would keep.)"""
    contents = page.get("/Contents")
    if not isinstance(contents.get_object() if contents is not None else None, (ArrayObject, StreamObject)):
        return False
    content = ContentStream(contents, pdf, "bytes")
    data = content.get_data()
    if not _TEXT_OPERATOR.search(data):
        return False
    ops = tokens.operations(data)
    if ops is None:
        ops = content.operations  # pypdf parses what the tokenizer does not handle (and applies its limits)
    resources = page.get_inherited("/Resources", None)
    resources = resources.get_object() if resources is not None else None
    box = page_box(page) or (-1e9, -1e9, 1e9, 1e9)
    return Scanner(pdf, fast=True).scan(ops, resources, State(clip=box)).has_hidden()


def _read_checked(page: Any, pdf: Any, content: Any, scanner: Scanner) -> tuple[str, HiddenText | None]:
    if not _TEXT_OPERATOR.search(content.get_data()):
        return page.extract_text() or "", None
    resources = page.get_inherited("/Resources", None)
    resources = resources.get_object() if resources is not None else None
    box = page_box(page) or (-1e9, -1e9, 1e9, 1e9)  # a degenerate page box: do not call everything off-page
    scan = scanner.scan(content.operations, resources, State(clip=box))
    # A visitor makes pypdf use the parsed operators as they are instead of re-serialising them.
    text = page.extract_text(visitor_operand_after=_noop) or ""
    if not scan.has_hidden():
        return text, None
    hidden = _extract_rewritten(page, content.operations, scan, True, resources, pdf) or ""
    if len(_ALNUM.findall(hidden)) < MIN_HIDDEN_CHARS:  # nothing readable was hidden: keep the page as it is
        return text, None
    visible = _extract_rewritten(page, content.operations, scan, False, resources, pdf) or ""
    reasons = list(dict.fromkeys(scan.reasons()))
    pieces = sum(1 for rs in scan.shows.values() if rs) + sum(s.has_hidden() for *_, s in scan.forms.values())
    return visible, HiddenText(reasons=reasons, text=hidden, pieces=pieces)
