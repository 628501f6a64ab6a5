"""An annotated copy of a reviewed PDF: a highlight annotation with the finding's note on each finding's text.

Where the text is comes from PDFium, the parser's own text reader (:func:`clausegate.review.document.text.open_pdfium`
reads the page text the review's quotes were taken from): the quote is found in the pages the finding names
(whitespace-insensitive, its first and last words anchoring it as :mod:`clausegate.review.locate` does for a .docx),
and each of its characters' boxes (``FPDFText_GetCharBox``) give one quadrilateral per line.  The highlight is written
with pypdf as an **incremental update**: the original bytes are kept unchanged in front (a signed PDF stays verifiable
up to its signature) and only the annotations and the pages that list them are appended.  (PDFium's own incremental
save was tried: on a linearized PDF with cross-reference streams it wrote an xref stream without ``/Type``, which
pypdf and other strict readers refuse.)  A finding whose quote runs
over a page break gets one highlight per page, the later ones tagged ``(continued)``; the read-back counts them as one.
"""

from __future__ import annotations

import io
from difflib import SequenceMatcher

import pypdfium2 as pdfium

from clausegate.review.annotate import match
from clausegate.review.annotate.match import fold
from clausegate.review.annotate.notes import AUTHOR, Note

COLOR = "ffe066"
MIN_BLOCK = 3  # shorter runs of agreement inside furniture are chance
COVERED = 0.95  # of the quote's characters, found in order in the place it was found


class Placed:
    def __init__(self) -> None:
        self.commented: list[int] = []
        self.skipped: list[tuple[int, str]] = []


class _Pages:
    """The pages' PDFium text, joined with a line break, and each character's (page index, char index)."""

    def __init__(self, pdf: pdfium.PdfDocument) -> None:
        self.pdf = pdf
        self.cache: dict[int, tuple[object, str]] = {}

    def page(self, index: int):
        if index not in self.cache:
            textpage = self.pdf[index].get_textpage()
            count = textpage.count_chars()
            text = textpage.get_text_range(0, count) if count else ""
            if len(text) != count:  # a range that is not one character per index: read them one by one
                text = "".join(chr(pdfium.raw.FPDFText_GetUnicode(textpage, i) or 32) for i in range(count))
            self.cache[index] = (textpage, text)
        return self.cache[index]

    def joined(self, indexes: list[int]) -> tuple[str, list[tuple[int, int]]]:
        pieces, where = [], []
        for index in indexes:
            _, text = self.page(index)
            pieces.append(text + "\n")
            where.extend((index, i) for i in range(len(text)))
            where.append((index, -1))
        return "".join(pieces), where


def find_quote(pages: _Pages, quote: str, numbers: list[int], count: int) -> list[tuple[int, int]] | None:
    """The (page index, char index) of each character of ``quote`` in the pages ``numbers`` (1-based; the ones after
    them too, for a quote running on), or None."""
    indexes = sorted({n - 1 for n in numbers if 1 <= n <= count})
    if not indexes:
        return None
    indexes = list(range(indexes[0], min(indexes[-1] + 2, count)))
    text, where = pages.joined(indexes)
    folded = [(c, i) for i, ch in enumerate(text) for c in fold(ch)]
    page = "".join(c for c, _ in folded)
    theirs = "".join(fold(ch) for ch in quote)
    found = match.region(page, theirs)
    if found is None:
        return None
    chars = folded[found[0]:found[1]]
    mine = "".join(c for c, _ in chars)
    if mine == theirs:
        chosen = [i for _, i in chars]
    else:  # page furniture the review took out of its text (a running header, a page number) is not highlighted
        blocks = [b for b in SequenceMatcher(None, mine, theirs, autojunk=False).get_matching_blocks()
                  if b.size >= MIN_BLOCK]
        if sum(b.size for b in blocks) < COVERED * len(theirs):
            return None  # not one passage of this file (a quote joining two places): never a highlight on other text
        chosen = [chars[b.a + k][1] for b in blocks for k in range(b.size)]
    return [where[i] for i in dict.fromkeys(chosen) if where[i][1] >= 0]


def _lines(textpage, chars: list[int]) -> list[tuple[float, float, float, float]]:
    """One box per line of the characters ``chars`` (their tight boxes, blanks left out)."""
    lines: list[list[float]] = []
    for i in chars:
        left, bottom, right, top = textpage.get_charbox(i)
        if right - left <= 0 or top - bottom <= 0:
            continue
        if lines:
            box = lines[-1]
            middle = (bottom + top) / 2
            if box[1] <= middle <= box[3] and left >= box[0] - 1:
                box[0], box[1], box[2], box[3] = min(box[0], left), min(box[1], bottom), max(box[2], right), \
                    max(box[3], top)
                continue
        lines.append([left, bottom, right, top])
    return [tuple(b) for b in lines]


def annotate(data: bytes, notes: list[Note]) -> tuple[bytes, Placed]:
    """The annotated copy of the PDF ``data`` (an incremental update) and what was placed."""
    placed = Placed()
    pdf = pdfium.PdfDocument(data)
    try:
        pages = _Pages(pdf)
        count = len(pdf)
        found: list[tuple[Note, dict[int, list]]] = []
        for note in notes:
            chars = find_quote(pages, note.quote, note.clause.pages, count) if note.quote else None
            if not chars:
                placed.skipped.append((note.index, "its text is not one passage of the pages it names"))
                continue
            boxes: dict[int, list] = {}
            for index in dict.fromkeys(p for p, _ in chars):
                textpage, _ = pages.page(index)
                lines = _lines(textpage, [i for p, i in chars if p == index])
                if lines:
                    boxes[index] = lines
            if not boxes:
                placed.skipped.append((note.index, "its characters have no boxes on the page"))
                continue
            found.append((note, boxes))
    finally:
        pdf.close()
    if not found:
        return data, placed
    from pypdf import PdfWriter  # local import: pypdf only where a PDF gets highlights (the child's start-up)

    writer = PdfWriter(io.BytesIO(data), incremental=True)
    for note, boxes in found:
        for part, (index, lines) in enumerate(boxes.items()):
            writer.add_annotation(page_number=index, annotation=_highlight(note, lines, part))
        placed.commented.append(note.index)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue(), placed


def _highlight(note: Note, lines: list[tuple], part: int):
    from pypdf.annotations import Highlight  # local import: with the writer above
    from pypdf.generic import ArrayObject, FloatObject, NameObject, TextStringObject  # local import: as above

    quads = []
    for left, bottom, right, top in lines:
        quads += [left, top, right, top, left, bottom, right, bottom]
    rect = (min(b[0] for b in lines), min(b[1] for b in lines), max(b[2] for b in lines), max(b[3] for b in lines))
    annotation = Highlight(rect=rect, quad_points=ArrayObject(FloatObject(round(v, 2)) for v in quads),
                           highlight_color=COLOR, printing=True)
    text = note.text if part == 0 else f"{note.tag} (continued)"
    annotation[NameObject("/Contents")] = TextStringObject(text)
    annotation[NameObject("/T")] = TextStringObject(AUTHOR)
    annotation[NameObject("/Subj")] = TextStringObject(note.clause.category)
    annotation[NameObject("/NM")] = TextStringObject(f"clausegate-{note.index + 1}-{part + 1}")
    return annotation
