"""The annotated PDF and the HTML page of a text review: a highlight (a mark) with the finding's note on each finding's
text, counted by reading the file back; the PDF's original bytes kept in front (an incremental update)."""

from __future__ import annotations

import io
from html.parser import HTMLParser

from fpdf import FPDF
from pypdf import PdfReader

from clausegate.review import annotate as annotating
from clausegate.review.annotate import html, readback
from clausegate.review.annotate.notes import notes_for
from clausegate.review.document.plain_text import cut_parts
from clausegate.review.locate import place
from clausegate.review.schemas import Clause, GateReason, Page, ParsedDocument, Review

LIABILITY = ("8.2 In no event shall the liability of the Supplier under this Agreement be limited in any way, and the "
             "Supplier shall indemnify the Customer for every loss, cost and damage of whatever kind.")
PAYMENT = "9.1 The Customer shall pay each invoice within thirty (30) days of its date."
OTHER = "10. This Agreement is governed by the laws of England and Wales."


def pdf_bytes() -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for text in ("1. Definitions. The Supplier is the party that supplies the Services.", LIABILITY):
        pdf.multi_cell(0, 6, text)
        pdf.ln(3)
    pdf.add_page()
    for text in (PAYMENT, OTHER):
        pdf.multi_cell(0, 6, text)
        pdf.ln(3)
    return bytes(pdf.output())


def review(fmt: str, clauses: list[Clause], **extra) -> Review:
    return Review(contract_id="1" * 64, filename=f"c.{fmt}", playbook="test", status="pending_decision",
                  extractor="offline", clauses=clauses, format=fmt, gated_categories=["Uncapped Liability"],
                  gate_reasons=[GateReason(category="Uncapped Liability", why="found", detail="confidence 0.90")],
                  **extra)


def clauses() -> list[Clause]:
    return [Clause(category="Uncapped Liability", text=LIABILITY, pages=[1], confidence=0.9, source="offline"),
            Clause(category="Revenue/Profit Sharing", text=PAYMENT, pages=[2], confidence=0.7, source="offline")]


def test_one_highlight_on_each_findings_text_with_its_note():
    data = pdf_bytes()
    r = review("pdf", clauses())
    copy = annotating.annotate(r, data, None, memory_mb=1024, timeout_seconds=60)  # through the capped child
    assert copy is not None and copy.suffix == ".pdf" and sorted(copy.commented) == [0, 1]
    found = notes_for(r)
    count = readback.pdf(copy.data, found)
    assert count.exactly_one(found) == [0, 1] and count.wrong == []
    assert copy.data.startswith(data)  # an incremental update: the original bytes unchanged in front
    pages = PdfReader(io.BytesIO(copy.data)).pages
    notes = [str(a.get_object()["/Contents"]) for page in pages for a in page.get("/Annots") or []]
    assert len(notes) == 2 and "Uncapped Liability" in notes[0] and "Gates: found" in notes[0]
    assert "Decision: pending" in notes[0]


def test_a_highlight_on_other_text_is_counted_wrong():
    data = pdf_bytes()
    r = review("pdf", clauses())
    copy = annotating.annotate(r, data, None, memory_mb=1024, timeout_seconds=60)
    shifted = [n.__class__(index=n.index, clause=n.clause.model_copy(update={"text": OTHER}), lines=n.lines)
               if n.index == 1 else n for n in notes_for(r)]
    count = readback.pdf(copy.data, shifted)
    assert count.exactly_one(shifted) == [0] and [i for i, _ in count.wrong] == [1]


def test_a_quote_not_in_the_file_gets_no_highlight():
    data = pdf_bytes()
    stitched = Clause(category="Cap on Liability", text="8.2 In no event shall the liability of the Supplier be capped "
                      "at the fees paid in the last twelve months.", pages=[1], confidence=0.9, source="offline")
    copy = annotating.annotate(review("pdf", [stitched, clauses()[1]]), data, None, memory_mb=1024,
                               timeout_seconds=60)
    assert copy.commented == [1] and [i for i, _ in copy.skipped] == [0]


def test_a_quote_over_a_page_break_gets_one_note_and_its_later_part_marked_continued():
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, "12.1 Either party may terminate this Agreement on ninety (90) days written notice, "
                   "provided", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    for text in ("- 7 -", "that all fees accrued up to the date of termination are paid in full."):
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    data = bytes(pdf.output())
    quote = ("12.1 Either party may terminate this Agreement on ninety (90) days written notice, provided that all "
             "fees accrued up to the date of termination are paid in full.")
    r = review("pdf", [Clause(category="Termination for Convenience", text=quote, pages=[1, 2], confidence=0.8,
                              source="offline")])
    copy = annotating.annotate(r, data, None, memory_mb=1024, timeout_seconds=60)
    assert copy is not None and copy.commented == [0] and copy.skipped == []
    notes = [[str(a.get_object()["/Contents"]) for a in page.get("/Annots") or []]
             for page in PdfReader(io.BytesIO(copy.data)).pages]
    assert len(notes[0]) == 1 and notes[0][0].startswith("ClauseGate #1 · Termination for Convenience")
    assert notes[1] == ["ClauseGate #1 (continued)"]  # the page number "- 7 -" between them is not highlighted
    found = notes_for(r)
    count = readback.pdf(copy.data, found)
    assert count.exactly_one(found) == [0] and count.wrong == []


def test_a_quote_that_leaves_a_redaction_line_out_is_highlighted_without_it():
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    for text in ("7.6 Effects of Termination.", "(a) If this Agreement is terminated for any reason, then:", "[***].",
                 "(b) [***].", "7.7 Survival."):
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    data = bytes(pdf.output())
    quote = "7.6 Effects of Termination. (a) If this Agreement is terminated for any reason, then: (b) [***]."
    r = review("pdf", [Clause(category="Liquidated Damages", text=quote, pages=[1], confidence=0.5, source="offline")])
    copy = annotating.annotate(r, data, None, memory_mb=1024, timeout_seconds=60)
    assert copy is not None and copy.commented == [0]
    found = notes_for(r)
    count = readback.pdf(copy.data, found)
    assert count.exactly_one(found) == [0] and count.wrong == []  # the text under it is the quote: no first [***].
    annotation = PdfReader(io.BytesIO(copy.data)).pages[0]["/Annots"][0].get_object()
    assert len(annotation["/QuadPoints"]) == 8 * 3  # three lines: the heading, (a), (b); not the line between


class _Marks(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.by_finding: dict[int, list[str]] = {}
        self.anchors: list[str] = []
        self.notes: dict[str, str] = {}
        self._open: list[int] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("mark", "a") and "id" in attrs:
            self.anchors.append(attrs["id"])
            self.notes[attrs["id"]] = attrs.get("title", "")
        if tag == "mark":
            self._open = [int(i) for i in attrs["data-findings"].split()]

    def handle_endtag(self, tag):
        if tag == "mark":
            self._open = None

    def handle_data(self, data):
        for i in self._open or []:
            self.by_finding.setdefault(i, []).append(data)


def test_a_text_review_gets_an_html_page_with_each_finding_marked_once():
    text = "\n\n".join(("1. Definitions.", LIABILITY, PAYMENT, OTHER, "<script>alert(1)</script>"))
    pages = [Page(number=i + 1, text=text[a:b], start=a) for i, (a, b) in enumerate(cut_parts(text, size=120))]
    assert len(pages) > 1  # the findings' spans are in the parts' joined text
    document = ParsedDocument(contract_id="2" * 64, filename="c.txt", pages=pages, format="text")
    overlapping = Clause(category="Cap on Liability", text="the liability of the Supplier under this Agreement",
                         pages=[1], confidence=0.6, source="offline")
    placed, _, _ = place(document, [*clauses(), overlapping], [])
    r = review("text", placed)
    copy = annotating.annotate(r, b"", document, memory_mb=512, timeout_seconds=10)
    page = copy.data.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    marks = _Marks()
    marks.feed(page)
    assert sorted(marks.anchors) == ["finding-1", "finding-2", "finding-3"]
    assert " ".join("".join(marks.by_finding[1]).split()) == LIABILITY
    assert " ".join("".join(marks.by_finding[3]).split()) == overlapping.text
    assert page.count('href="#finding-') == 3
    assert html.STYLE in page


def test_two_findings_on_the_same_text_each_get_an_anchor_and_a_note_in_the_html_page():
    text = "\n\n".join(("1. Definitions.", LIABILITY, PAYMENT))
    document = ParsedDocument(contract_id="2" * 64, filename="c.txt", format="text",
                              pages=[Page(number=1, text=text, start=0)])
    twice = [Clause(category=c, text=LIABILITY, pages=[1], confidence=0.8, source="offline")
             for c in ("Uncapped Liability", "Cap on Liability")]
    placed, _, _ = place(document, twice, [])
    copy = annotating.annotate(review("text", placed), b"", document, memory_mb=512, timeout_seconds=10)
    marks = _Marks()
    marks.feed(copy.data.decode())
    assert sorted(marks.anchors) == ["finding-1", "finding-2"] and copy.data.decode().count('href="#finding-') == 2
    assert marks.notes["finding-1"].startswith("ClauseGate #1 · Uncapped Liability")
    assert marks.notes["finding-2"].startswith("ClauseGate #2 · Cap on Liability")
    assert " ".join("".join(marks.by_finding[1]).split()) == " ".join("".join(marks.by_finding[2]).split()) == LIABILITY
