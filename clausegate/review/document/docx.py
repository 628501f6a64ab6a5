"""A Word .docx read in the sandboxed child (:func:`clausegate.review.document.worker.answer`, ``format`` "docx").

Raw OOXML (``zipfile`` + ``defusedxml``, :mod:`clausegate.review.document.docx_parts`), not python-docx: the review
needs what python-docx does not give (the text of ``w:ins`` runs, ``w:del`` text, comment ranges, run properties
resolved through styles), and a parser whose every XML read forbids DTDs.  What is read:

* **the body** (``word/document.xml``): paragraphs and tables (each cell's paragraphs in reading order, row by
  row), content controls and hyperlinks, and the text boxes a paragraph anchors (after it); then the clauses of the
  headers and footers the sections use (``Header: …``), and the footnotes and endnotes (``Footnote 1: …``), as
  :mod:`clausegate.review.document.docx_extras` says; an ``altChunk`` import is not read and is reported
  (``CG-DOCX-UNREAD-PART``, an integrity notice); field codes (``w:instrText``) are left out, their shown results
  kept;
* **tracked changes accepted**: ``w:ins``/``w:moveTo`` text is kept, ``w:del``/``w:moveFrom`` text dropped; each
  pending change is returned (kind, author, date, text, where) for the report (``CG-DOCX-TRACKED-CHANGES``);
* **comments** (``word/comments.xml``) with the text they are anchored to (``CG-DOCX-COMMENTS``);
* **hidden text** (:mod:`clausegate.review.document.docx_hidden`: vanished, coloured like its highlight or shading,
  too small or squeezed, directly or through a style) is left out of the text and reported per paragraph,
  ``CG-DOCX-HIDDEN-TEXT``: an integrity notice that gates the review like hidden text in a PDF;
* Word's list numbers ("8.5") are written before their paragraphs, so sections are found as in a PDF.

Paragraphs with text are numbered 1, 2, … (¶) and joined with blank lines; the text is cut into parts ("pages") of
about ``PART_CHARS`` characters at paragraph ends, each recording its offset and its paragraphs' offsets.
Caps: ``DOCX_MAX_PARAGRAPHS`` paragraphs and ``max_chars`` characters (``CG-DOCX-TOO-MUCH-TEXT``).
"""

from __future__ import annotations

import re
from typing import Any
from xml.etree.ElementTree import Element

from clausegate.review.document import docx_extras as extras
from clausegate.review.document.codes import (
    DOCX_EMPTY,
    DOCX_MAX_PARAGRAPHS,
    DOCX_TOO_MUCH_TEXT,
    NOTICE_DOCX_COMMENTS,
    NOTICE_DOCX_HIDDEN_TEXT,
    NOTICE_DOCX_TRACKED_CHANGES,
    NOTICE_DOCX_UNREAD_PART,
    PART_CHARS,
    SETTING_MAX_CHARS,
    failure,
)
from clausegate.review.document.docx_hidden import reasons as hidden_reasons
from clausegate.review.document.docx_hidden import shading
from clausegate.review.document.docx_parts import (
    MAIN,
    Numbering,
    Refused,
    Styles,
    W,
    num_ref,
    open_archive,
    read_part,
    run_props,
)
from clausegate.review.document.visibility import hidden_notices

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_DESCEND = frozenset(W + t for t in ("hyperlink", "smartTag", "customXml", "fldSimple", "sdt", "sdtContent", "dir",
                                     "bdo"))
_DRAWN = frozenset({W + "pict", W + "drawing", W + "object", extras.ALTERNATE})
SEPARATOR = "\n\n"


def extract(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The worker's result for a .docx: parts, notices, revisions and comments, or a coded failure."""
    try:
        archive = open_archive(data)
        with archive:
            document = read_part(archive, MAIN, required=True)
            reader = _Reader(Styles(read_part(archive, "word/styles.xml")),
                             Numbering(read_part(archive, "word/numbering.xml")), int(options["max_chars"]))
            rels = extras.relationships(read_part(archive, extras.RELS))
            reader.rels = rels
            body = document.find(W + "body")
            if body is not None:
                reader.blocks(body)
            reader.margins(archive, extras.header_footer_parts(document, rels))
            reader.notes({kind: extras.notes(read_part(archive, f"word/{kind}s.xml"), kind)
                          for kind in ("footnote", "endnote")})
            comments = read_part(archive, "word/comments.xml")
    except Refused as refused:
        return failure(refused.code, refused.message, refused.hint)
    if not reader.paras:
        return failure(DOCX_EMPTY, "the document's body has no text (only empty paragraphs, images or hidden text), "
                                   "so there is nothing to review.",
                       "check that the right file was sent; a scanned contract pasted into Word as images needs "
                       "to be sent as a PDF with text (or OCR'd).")
    return reader.result(comments)


class _Reader:
    def __init__(self, styles: Styles, numbering: Numbering, max_chars: int) -> None:
        self.styles, self.numbering, self.max_chars = styles, numbering, max_chars
        self.paras: list[str] = []
        self.seen = 0
        self.chars = 0
        self.revisions: list[dict[str, Any]] = []  # with "at": (paragraph index, offset) until laid out
        self.marks: dict[str, dict[str, tuple[int, int]]] = {}  # comment id -> "start"/"end"/"ref" -> position
        self.hidden: list[tuple[int, list[str], set[str]]] = []
        # the paragraph being read
        self._buf: list[str] = []
        self._len = 0
        self._pending: list[tuple[str, Any]] = []
        self.rels: dict[str, tuple[str, str]] = {}
        self.note_refs: list[tuple[str, str]] = []  # (footnote|endnote, id) in the order the text refers to them
        self.unread: list[tuple[int, str]] = []  # (paragraph index, what) of parts shown but not read (altChunk)
        self._deferred: list[Element] = []  # text boxes anchored in the paragraph being read
        self._under: tuple | None = None  # the paragraph's (or its cell's) shading
        self._label = ""  # written before the next paragraph with text ("Footnote 1:")
        self._furniture: set[str] | None = None  # reading a header or footer: the texts read so far

    # ------------------------------------------------------------------ parts other than the body
    def margins(self, archive, parts: list[tuple[str, str]]) -> None:
        """The headers' and footers' text that is not page furniture, each text once (module docstring)."""
        self._furniture = set()
        try:
            for kind, name in parts:
                root = read_part(archive, name)
                if root is not None:
                    self._label = f"{kind.capitalize()}:"
                    self.blocks(root)
        finally:
            self._furniture, self._label = None, ""

    def notes(self, found: dict[str, dict[str, Element]]) -> None:
        """Footnotes and endnotes, numbered in the order the text refers to them, each read once."""
        counts = {"footnote": 0, "endnote": 0}
        for kind, note_id in dict.fromkeys(self.note_refs):
            note = found[kind].pop(note_id, None)
            if note is not None:
                counts[kind] += 1
                self._label = f"{kind.capitalize()} {counts[kind]}:"
                self.blocks(note)
        self._label = ""

    # ------------------------------------------------------------------ block level
    def blocks(self, parent: Element, under: tuple | None = None) -> None:
        for child in parent:
            tag = child.tag
            if tag == W + "p":
                self.paragraph(child, under)
            elif tag == W + "tbl":  # reading order: row by row, each cell's paragraphs (and nested tables)
                table = shading(child.find(f"{W}tblPr/{W}shd")) or under
                for row in child.findall(W + "tr"):
                    for cell in row.findall(W + "tc"):
                        self.blocks(cell, shading(cell.find(f"{W}tcPr/{W}shd")) or table)
            elif tag == W + "sdt":
                content = child.find(W + "sdtContent")
                if content is not None:
                    self.blocks(content, under)
            elif tag == W + "customXml":
                self.blocks(child, under)
            elif tag == extras.ALTERNATE:
                chosen = extras.alternative(child)
                if chosen is not None:
                    self.blocks(chosen, under)
            elif tag == W + "altChunk":
                name, _ = self.rels.get(child.get(extras.R + "id") or "", ("", ""))
                self.unread.append((len(self.paras), f"an imported part (w:altChunk {name or 'with no target'})"))

    def paragraph(self, p: Element, under: tuple | None = None) -> None:
        self.seen += 1
        if self.seen > DOCX_MAX_PARAGRAPHS:
            raise Refused(DOCX_TOO_MUCH_TEXT, f"the document has more than {DOCX_MAX_PARAGRAPHS:,} paragraphs, above "
                          "the limit for one contract.", "split the document and review the parts separately.")
        ppr = p.find(W + "pPr")
        style = ppr.find(W + "pStyle") if ppr is not None else None
        style_id = style.get(W + "val") if style is not None else None
        self._buf, self._len, self._pending = [], 0, []
        deferred: list[Element] = []
        self._deferred = deferred
        self._under = (shading(ppr.find(W + "shd")) if ppr is not None else None) or under
        hidden: list[str] = []
        reasons: set[str] = set()
        self._style_props = {**self.styles.defaults, **self.styles.props(style_id)}
        self._inline(p, None, hidden, reasons)
        text = _CONTROL.sub(" ", "".join(self._buf).replace("\r", "\n"))
        index = len(self.paras)
        shift = 0
        if self._furniture is not None and text.strip():  # a header or footer: no furniture, each text once
            key = " ".join(text.split())
            if extras.is_furniture(key) or key in self._furniture:
                text, self._pending = "", []
            self._furniture.add(key)
        if text.strip():
            num = num_ref(ppr.find(W + "numPr")) if ppr is not None else None
            num = num or self.styles.numbering(style_id)
            label = " ".join(x for x in (self._label, self.numbering.label(*num) if num else "") if x)
            if self._furniture is None:
                self._label = ""  # a note's label goes before its first paragraph only
            if label:
                text, shift = f"{label} {text}", len(label) + 1
            self.paras.append(text)
            self.chars += len(text) + len(SEPARATOR)
            if self.chars > self.max_chars:
                raise Refused(DOCX_TOO_MUCH_TEXT, f"the document has more than {self.max_chars:,} characters of text, "
                              "above the limit for one contract.",
                              f"if this really is one contract, raise {SETTING_MAX_CHARS}; otherwise split it and "
                              "review the parts separately.")
        for kind, item in self._pending:  # positions in this paragraph, or (if it is empty) the next one's start
            where = (index, item[1] + shift if text.strip() else 0)
            if kind == "revision":
                item[0]["at"] = where
                item[0]["end_at"] = (index, item[2] + shift if text.strip() else 0)
                self.revisions.append(item[0])
            else:
                self.marks.setdefault(item[0], {})[kind] = where
        if hidden:
            self.hidden.append((index, hidden, reasons))
        for box in deferred:  # a text box's paragraphs follow the paragraph it is anchored in
            self.blocks(box)

    # ------------------------------------------------------------------ inline level
    def _inline(self, parent: Element, change: str | None, hidden: list[str], reasons: set[str]) -> None:
        for child in parent:
            tag = child.tag
            if tag == W + "r":
                self._run(child, hidden, reasons)
            elif tag in (W + "ins", W + "moveTo"):
                start = self._len
                self._inline(child, "ins", hidden, reasons)
                added = "".join(self._buf)[start:self._len] if self._len > start else ""
                if added.strip():
                    self._pending.append(("revision", (self._change("insertion", child, added), start, self._len)))
            elif tag in (W + "del", W + "moveFrom"):
                removed = "".join(t.text or "" for t in child.iter() if t.tag in (W + "delText", W + "t"))
                if removed.strip():
                    self._pending.append(("revision", (self._change("deletion", child, removed), self._len, self._len)))
            elif tag == W + "commentRangeStart":
                self._pending.append(("start", (child.get(W + "id") or "", self._len)))
            elif tag == W + "commentRangeEnd":
                self._pending.append(("end", (child.get(W + "id") or "", self._len)))
            elif tag in _DESCEND:
                self._inline(child, change, hidden, reasons)
            elif tag == extras.ALTERNATE:
                chosen = extras.alternative(child)
                if chosen is not None:
                    self._inline(chosen, change, hidden, reasons)

    def _change(self, kind: str, el: Element, text: str) -> dict[str, Any]:
        return {"kind": kind, "author": el.get(W + "author") or "", "date": el.get(W + "date"),
                "text": " ".join(text.split())}

    def _run(self, r: Element, hidden: list[str], reasons: set[str]) -> None:
        rpr = r.find(W + "rPr")
        rstyle = rpr.find(W + "rStyle") if rpr is not None else None
        props = {**self._style_props, **self.styles.props(rstyle.get(W + "val") if rstyle is not None else None),
                 **run_props(rpr)}
        why = hidden_reasons(props, self._under)
        pieces: list[str] = []
        for child in r:
            tag = child.tag
            if tag == W + "t":
                pieces.append(child.text or "")
            elif tag == W + "tab":
                pieces.append("\t")
            elif tag in (W + "br", W + "cr"):
                pieces.append("\n")
            elif tag == W + "noBreakHyphen":
                pieces.append("-")
            elif tag == W + "commentReference":
                self._pending.append(("ref", (child.get(W + "id") or "", self._len)))
            elif tag in (W + "footnoteReference", W + "endnoteReference"):
                self.note_refs.append((tag[len(W):-len("Reference")], child.get(W + "id") or ""))
            elif tag in _DRAWN:
                self._deferred += extras.textboxes(child)
        text = "".join(pieces)
        if not text:
            return
        if why:
            hidden.append(text)
            reasons.update(why)
            return
        self._buf.append(text)
        self._len += len(text)

    # ------------------------------------------------------------------ layout
    def result(self, comments_root: Element | None) -> dict[str, Any]:
        pages, starts = [], []
        offset, part, first = 0, [], 1
        for number, text in enumerate(self.paras, start=1):
            starts.append(offset)
            part.append(text)
            offset += len(text) + len(SEPARATOR)
            if sum(len(t) for t in part) >= PART_CHARS or number == len(self.paras):
                start = starts[first - 1]
                pages.append({"number": len(pages) + 1, "text": "".join(t + SEPARATOR for t in part), "start": start,
                              "paragraphs": starts[first - 1:number], "first_paragraph": first})
                part, first = [], number + 1

        def at(where: tuple[int, int]) -> tuple[int, int]:
            index, inside = where
            if index >= len(self.paras):
                return len(self.paras), starts[-1] + len(self.paras[-1])
            return index + 1, starts[index] + min(inside, len(self.paras[index]))

        revisions = []
        for rev in self.revisions:
            paragraph, start = at(rev.pop("at"))
            _, end = at(rev.pop("end_at"))
            revisions.append({**rev, "start": start, "end": max(start, end), "paragraph": paragraph})
        comments = self._comments(comments_root, at)
        doc_text = "".join(page["text"] for page in pages)
        notices = self._notices(revisions, comments)
        for c in comments:
            c["anchor"] = " ".join(doc_text[c["start"]:c["end"]].split())[:500]
        return {"ok": True, "format": "docx", "pages": pages, "notices": notices, "revisions": revisions,
                "comments": comments}

    def _comments(self, root: Element | None, at) -> list[dict[str, Any]]:
        if root is None:
            return []
        found = []
        for comment in root.iter(W + "comment"):
            cid = comment.get(W + "id") or ""
            marks = self.marks.get(cid, {})
            begin = marks.get("start") or marks.get("ref")
            if begin is None:
                continue  # a comment of a header, footnote or a deleted range: not anchored in the body
            paragraph, start = at(begin)
            _, end = at(marks.get("end") or marks.get("ref") or begin)
            text = " ".join(" ".join(t.text or "" for t in comment.iter(W + "t")).split())
            found.append({"author": comment.get(W + "author") or "", "date": comment.get(W + "date"),
                          "text": text[:2000], "start": start, "end": max(start, end), "paragraph": paragraph})
        return found

    def _notices(self, revisions: list[dict], comments: list[dict]) -> list[dict[str, Any]]:
        notices = hidden_notices(self.hidden, len(self.paras), NOTICE_DOCX_HIDDEN_TEXT, "Word")
        for index, what in self.unread:
            where = f"¶ {index}" if index else "the start"
            notices.append({"code": NOTICE_DOCX_UNREAD_PART, "page": None, "message": (
                f"{what} after {where} is shown by Word as part of the document, but ClauseGate does not read it: "
                "what it says was not reviewed. Read it in Word, or ask the sender for a copy with its text in the "
                "document itself (or as PDF).")})
        if revisions:
            authors = ", ".join(sorted({r["author"] or "unknown" for r in revisions}))
            notices.append({"code": NOTICE_DOCX_TRACKED_CHANGES, "page": None, "message": (
                f"{len(revisions)} pending tracked change(s) by {authors}: the text was reviewed with them accepted; "
                "the report lists each, flagged where it falls in a gated or high-risk finding.")})
        if comments:
            notices.append({"code": NOTICE_DOCX_COMMENTS, "page": None, "message": (
                f"{len(comments)} comment(s) in the document; the report lists each with the text it is anchored to.")})
        return notices

