"""Read an annotated file back and count, per finding, the ClauseGate annotations anchored on its quote.

Independent of the writers: a .docx is read back by the review's own .docx reader
(:func:`clausegate.review.document.docx.extract`) with ClauseGate's proposed insertions rejected first (the text a
counterparty sees if they reject them), each comment's anchor being the text between its range marks; a PDF's
highlights are read with pypdf and the text under each quadrilateral with PDFium (``FPDFText_GetBoundedText``).
A finding counts as **anchored** when exactly one ClauseGate note carries its tag and the text under it and its
continued pieces (:func:`clausegate.review.annotate.notes.is_continued`: a PDF's later page, a later piece of a quote
that is not one passage), joined in the document's order, is the finding's quote; a finding whose annotations hold
other text is **wrong**, and so is a piece whose tag names no finding.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from clausegate.review.annotate.match import fold, same_text
from clausegate.review.annotate.notes import AUTHOR, TAG, Note, is_continued


@dataclass
class Count:
    """Per finding index: how many annotations anchor on its quote; annotations on other text."""

    anchored: dict[int, int] = field(default_factory=dict)
    wrong: list[tuple[int, str]] = field(default_factory=list)  # (finding index, the text it is anchored on)
    parts: dict[int, int] = field(default_factory=dict)  # annotations per finding, its continued pieces included
    insertions: dict[int, int] = field(default_factory=dict)  # .docx: ClauseGate tracked insertions per finding
    other_comments: int = 0  # comments not by ClauseGate (the counterparty's), still there

    def exactly_one(self, notes: list[Note]) -> list[int]:
        """The notes' indexes with exactly one annotation on their quote and none on other text."""
        bad = {i for i, _ in self.wrong}
        return [n.index for n in notes if self.anchored.get(n.index) == 1 and n.index not in bad]


def same_chars(anchored: str, quote: str) -> bool:
    """A PDF's highlighted text is the quote, blanks and control characters aside (PDFium's text puts blanks around
    punctuation where the parser's does not, and a line-end hyphen may have no box); NFKC-folded like the review's."""
    return "".join(fold(c, False) for c in anchored) == "".join(fold(c, False) for c in quote)


def docx(data: bytes, notes: list[Note]) -> Count:
    from lxml import etree  # local import: lxml only to read a .docx back

    from clausegate.review.annotate.docx import MAIN, W, parser  # local import: lxml only for a .docx
    from clausegate.review.document.docx import extract  # local import: with the .docx reader above

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        root = etree.fromstring(z.read(MAIN), parser())
        count = Count()
        ours = [ins for ins in root.iter(W + "ins") if ins.get(W + "author") == AUTHOR]
        inserted_text = {}
        for ins in ours:
            inserted_text[" ".join("".join(t.text or "" for t in ins.iter(W + "t")).split())] = True
            ins.getparent().remove(ins)
        rejected = _replace(data, MAIN, etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True))
    result = extract(rejected, {"max_chars": 10 ** 9})
    text = "".join(page["text"] for page in result.get("pages", []))
    by_index = {n.index: n for n in notes}
    for note in notes:
        if note.fallback and " ".join(note.fallback.split()) in inserted_text:
            count.insertions[note.index] = count.insertions.get(note.index, 0) + 1
    parts: dict[int, list[tuple[int, int, bool]]] = {}
    for comment in result.get("comments", []):
        if comment["author"] != AUTHOR:
            count.other_comments += 1
            continue
        tag = TAG.search(comment["text"])
        note = by_index.get(int(tag.group(1)) - 1) if tag else None
        if note is None:
            count.wrong.append((-1, comment["anchor"]))
            continue
        parts.setdefault(note.index, []).append((comment["start"], comment["end"], not is_continued(comment["text"])))
    for index, pieces in parts.items():
        pieces.sort()
        count.parts[index] = len(pieces)
        anchored = " ".join(text[start:end] for start, end, _ in pieces)
        if same_text(anchored, by_index[index].quote):
            count.anchored[index] = sum(note for _, _, note in pieces)
        else:
            count.wrong.append((index, anchored))
    return count


def _replace(data: bytes, name: str, body: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, body if info.filename == name else src.read(info.filename))
    return out.getvalue()


class _Page:
    """A page's characters and their boxes (PDFium): the text under a quadrilateral is the characters whose box's
    centre lies in it, in reading order."""

    def __init__(self, textpage) -> None:
        self.chars = []
        for i in range(textpage.count_chars()):
            left, bottom, right, top = textpage.get_charbox(i)
            self.chars.append((textpage.get_text_range(i, 1), (left + right) / 2, (bottom + top) / 2))

    def under(self, quad: list[float]) -> str:
        xs, ys = quad[0::2], quad[1::2]
        return "".join(c for c, x, y in self.chars
                       if min(xs) <= x <= max(xs) and min(ys) <= y <= max(ys))


def pdf(data: bytes, notes: list[Note]) -> Count:
    import pypdfium2 as pdfium  # local import: PDFium only to read a PDF back
    from pypdf import PdfReader  # local import: pypdf only to read a PDF back

    reader = PdfReader(io.BytesIO(data))
    document = pdfium.PdfDocument(data)
    parts: dict[int, list[str]] = {}
    count = Count()
    try:
        for number, page in enumerate(reader.pages):
            annotations = page.get("/Annots") or []
            textpage = None
            for ref in annotations:
                annotation = ref.get_object()
                if annotation.get("/Subtype") != "/Highlight" or annotation.get("/T") != AUTHOR:
                    continue
                tag = TAG.search(str(annotation.get("/Contents", "")))
                if tag is None:
                    count.wrong.append((-1, ""))
                    continue
                textpage = textpage or _Page(document[number].get_textpage())
                quads = [float(v) for v in annotation.get("/QuadPoints", [])]
                text = [textpage.under(quads[q:q + 8]) for q in range(0, len(quads), 8)]
                first = not is_continued(str(annotation.get("/Contents", "")))
                parts.setdefault(int(tag.group(1)) - 1, []).append((first, " ".join(text)))
    finally:
        document.close()
    by_index = {n.index: n for n in notes}
    for index, texts in parts.items():
        note = by_index.get(index)
        joined = " ".join(text for _, text in texts)
        count.parts[index] = len(texts)
        if note is not None and same_chars(joined, note.quote):
            count.anchored[index] = sum(first for first, _ in texts)
        else:
            count.wrong.append((index, joined))
    return count
