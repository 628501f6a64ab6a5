"""An annotated copy of a reviewed PDF: a highlight annotation with the finding's note on each finding's text.

Where the text is comes from PDFium, the parser's own text reader (:func:`clausegate.review.document.text.open_pdfium`
reads the page text the review's quotes were taken from): the quote is found in the pages the finding names
(whitespace-insensitive, its first and last words anchoring it as :mod:`clausegate.review.locate` does for a .docx),
and each of its characters' boxes (``FPDFText_GetCharBox``) give one quadrilateral per line.  The highlight is written
by PDFium too (``FPDFPage_CreateAnnot``) and saved as an **incremental update** (``FPDF_INCREMENTAL``): the original
bytes are kept unchanged in front (a signed PDF stays verifiable up to its signature) and only the annotations and the
pages that list them are appended.  A file with cross-reference streams (``/XRef``) is saved whole instead: PDFium's
incremental xref stream for it lacks its ``/Type`` and strict readers (pypdf) refuse it.  One library for reading and
writing keeps the capped child's start-up small (no pypdf: ``python bench/annotate.py --cpu``).  A finding whose
quote runs over a page break gets one highlight per page, the later ones tagged ``(continued)``; the read-back counts
them as one.  A quote that is not one passage (:func:`clausegate.review.annotate.match.pieces`) gets its pieces
highlighted the same way: one highlight per page, one quadrilateral per line of each piece, nothing in between.
"""

from __future__ import annotations

import ctypes
import io
from difflib import SequenceMatcher

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from clausegate.review.annotate import match
from clausegate.review.annotate.match import fold
from clausegate.review.annotate.notes import AUTHOR, Note

COLOR = "ffe066"
XREF_STREAM = b"/XRef"
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
        self.folds: dict[tuple, tuple[str, list[tuple[str, int]]]] = {}

    def page(self, index: int):
        if index not in self.cache:
            textpage = self.pdf[index].get_textpage()
            count = textpage.count_chars()
            text = textpage.get_text_range(0, count) if count else ""
            if len(text) != count:  # a range that is not one character per index: read them one by one
                text = "".join(chr(pdfium.raw.FPDFText_GetUnicode(textpage, i) or 32) for i in range(count))
            self.cache[index] = (textpage, text)
        return self.cache[index]

    def folded(self, indexes: list[int], hyphens: bool = True) -> tuple[str, list[tuple[str, int]]]:
        """The joined pages' text, and each of its folded characters with its offset in it (kept: the findings on
        the same pages share them)."""
        key = (tuple(indexes), hyphens)
        if key not in self.folds:
            text, _ = self.joined(indexes)
            self.folds[key] = text, [(c, i) for i, ch in enumerate(text) for c in fold(ch, hyphens)]
        return self.folds[key]

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
    _, where = pages.joined(indexes)
    text, folded = pages.folded(indexes)
    page = "".join(c for c, _ in folded)
    theirs = "".join(fold(ch) for ch in quote)
    found = match.region(page, theirs)
    bare = "".join(fold(ch, False) for ch in quote)
    chosen = None
    if found is not None:
        chars = folded[found[0]:found[1]]
        mine = "".join(c for c, _ in chars)
        if mine == theirs:
            chosen = [i for _, i in chars]
        else:  # page furniture the review took out of its text (a running header, a page number) is not highlighted
            blocks = [b for b in SequenceMatcher(None, mine, theirs, autojunk=False).get_matching_blocks()
                      if b.size >= MIN_BLOCK]
            if sum(b.size for b in blocks) >= COVERED * len(theirs):
                chosen = [chars[b.a + k][1] for b in blocks for k in range(b.size)]
            if chosen and "".join(fold(text[i], False) for i in dict.fromkeys(chosen)) != bare:
                chosen = None  # the aligned characters are not the quote (e.g. a redaction line for the one it keeps)
    if chosen is None:  # not one passage: its pieces, in order, exactly the quote (hyphens aside), or nothing
        _, folded_bare = pages.folded(indexes, hyphens=False)
        got = match.pieces("".join(c for c, _ in folded_bare), bare)
        if got is None:
            return None  # never a highlight on other text
        chosen = [folded_bare[k][1] for a, b in got for k in range(a, b)]
    return [where[i] for i in dict.fromkeys(chosen) if where[i][1] >= 0]


def _runs(text: str, chars: list[int]) -> list[list[int]]:
    """``chars`` (indexes in a page's ``text``, in order) cut where the text between two of them has a character of
    its own (not blank): each run is one stretch of the page, so a line's box never spans text between two pieces."""
    runs: list[list[int]] = []
    for i in chars:
        if runs and not any(fold(c, False) for c in text[runs[-1][-1] + 1:i]):
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


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
                textpage, text = pages.page(index)
                runs = _runs(text, [i for p, i in chars if p == index])
                lines = [box for run in runs for box in _lines(textpage, run)]
                if lines:
                    boxes[index] = lines
            if not boxes:
                placed.skipped.append((note.index, "its characters have no boxes on the page"))
                continue
            found.append((note, boxes))
        if not found:
            return data, placed
        for note, boxes in found:
            for part, (index, lines) in enumerate(boxes.items()):
                _highlight(pdf[index], note, lines, part)
            placed.commented.append(note.index)
        out = io.BytesIO()
        # incremental (the original bytes kept in front) unless the file has cross-reference streams: PDFium's
        # incremental xref stream then lacks its /Type and strict readers (pypdf) refuse the file; rewritten whole
        pdf.save(out, flags=pdfium_c.FPDF_NO_INCREMENTAL if XREF_STREAM in data else pdfium_c.FPDF_INCREMENTAL)
        return out.getvalue(), placed
    finally:
        pdf.close()


def _highlight(page: pdfium.PdfPage, note: Note, lines: list[tuple], part: int) -> None:
    """A highlight on ``page``: one quadrilateral per line, the note as its contents, ClauseGate its author."""
    annotation = pdfium_c.FPDFPage_CreateAnnot(page.raw, pdfium_c.FPDF_ANNOT_HIGHLIGHT)
    if not annotation:
        raise RuntimeError("PDFium could not create a highlight annotation")
    try:
        r, g, b = (int(COLOR[i:i + 2], 16) for i in (0, 2, 4))
        pdfium_c.FPDFAnnot_SetColor(annotation, pdfium_c.FPDFANNOT_COLORTYPE_Color, r, g, b, 255)
        for left, bottom, right, top in lines:
            quad = pdfium_c.FS_QUADPOINTSF(left, top, right, top, left, bottom, right, bottom)
            pdfium_c.FPDFAnnot_AppendAttachmentPoints(annotation, quad)
        rect = pdfium_c.FS_RECTF(min(b[0] for b in lines), max(b[3] for b in lines), max(b[2] for b in lines),
                                 min(b[1] for b in lines))
        pdfium_c.FPDFAnnot_SetRect(annotation, rect)
        text = note.text if part == 0 else note.continued
        for key, value in (("Contents", text), ("T", AUTHOR), ("Subj", note.clause.category),
                           ("NM", f"clausegate-{note.index + 1}-{part + 1}")):
            wide = ctypes.create_string_buffer((value + "\x00").encode("utf-16-le"))  # kept alive over the call
            pdfium_c.FPDFAnnot_SetStringValue(annotation, key.encode("ascii"),
                                              ctypes.cast(wide, ctypes.POINTER(pdfium_c.FPDF_WCHAR)))
        pdfium_c.FPDFAnnot_SetFlags(annotation, pdfium_c.FPDF_ANNOT_FLAG_PRINT)
    finally:
        pdfium_c.FPDFPage_CloseAnnot(annotation)
