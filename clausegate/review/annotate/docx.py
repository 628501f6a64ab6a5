"""An annotated copy of a reviewed Word .docx: a comment on each finding's exact text, and where a finding deviates
from the playbook's position, the playbook's fallback wording as a tracked insertion authored "ClauseGate".

Raw OOXML with lxml, not python-docx's comments API: the comment must sit on the finding's exact characters, which
means splitting runs at the review's own character offsets (python-docx anchors on whole runs and has no notion of
the review's offsets), and every part other than the ones written here must stay as it was (python-docx re-serialises
every XML part it loads).  Only ``word/document.xml`` and ``word/comments.xml`` are rewritten (plus, when the file had
no comments part, its content type and relationship); every other entry is copied byte for byte.  The counterparty's
tracked changes and comments stay where they are: runs inside their ``w:ins`` are split in place, nothing is accepted.

Where each finding is: the review's parser (:mod:`clausegate.review.document.docx`) is run again on the same XML,
recording which run and which character each offset of its text came from, so ``Clause.span`` (offsets in that text)
maps to the exact ``w:t`` characters.  The XML parser forbids DTDs, entities and network access; the file was
accepted by the sandboxed reader first, and this runs in a capped child too (:mod:`clausegate.review.annotate.child`).
"""

from __future__ import annotations

import bisect
import copy
import io
import re
import zipfile
from datetime import UTC, datetime

from lxml import etree

from clausegate.review.annotate import match
from clausegate.review.annotate.notes import AUTHOR, INITIALS, Note
from clausegate.review.document import docx as reader_module
from clausegate.review.document.docx_parts import MAIN, Numbering, Styles, W, open_archive, read_part

W_NS = W[1:-1]
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
COMMENTS = "word/comments.xml"
DOC_RELS = "word/_rels/document.xml.rels"
TYPES = "[Content_Types].xml"
REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
CT_NS = "http://schemas.openxmlformats.org/package/2006/content-types"
COMMENTS_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"
COMMENTS_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.comments+xml"
_TEXT_TAGS = {W + "t": None, W + "tab": "\t", W + "br": "\n", W + "cr": "\n", W + "noBreakHyphen": "-"}


def parser() -> etree.XMLParser:
    """lxml's parser with no DTD, no entities, no network, no huge trees: the contract is untrusted."""
    return etree.XMLParser(resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
                           remove_blank_text=False)


class _Paras(list):
    def __init__(self, owner: _Mapper) -> None:
        super().__init__()
        self.owner = owner

    def append(self, text: str) -> None:  # the reader appends a paragraph's text once it is complete
        self.owner.appended(text)
        super().append(text)


class _Mapper(reader_module._Reader):
    """The review's .docx reader, recording for each paragraph it numbers where each character came from."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.paras = _Paras(self)
        self.stack: list[list] = []  # the paragraphs being read (a text box's paragraphs inside its anchor's)
        self.mapped: list[tuple[int, list]] = []  # per numbered paragraph: (label shift, [(run, start, pieces)])

    def paragraph(self, p, under=None) -> None:
        self.stack.append([])
        try:
            super().paragraph(p, under)
        finally:
            self.stack.pop()

    def appended(self, text: str) -> None:
        self.mapped.append((len(text) - self._len, self.stack[-1]))

    def _run(self, r, hidden, reasons) -> None:
        before = self._len
        super()._run(r, hidden, reasons)
        if self._len > before:
            pieces = []
            for child in r:
                if child.tag in _TEXT_TAGS:
                    text = (child.text or "") if child.tag == W + "t" else _TEXT_TAGS[child.tag]
                    if text:
                        pieces.append((child, text))
            self.stack[-1].append((r, before, pieces))


def _map(archive: zipfile.ZipFile, root) -> tuple[_Mapper, list[int]]:
    mapper = _Mapper(Styles(read_part(archive, "word/styles.xml")), Numbering(read_part(archive, "word/numbering.xml")),
                     10 ** 12)
    mapper.rels = reader_module.extras.relationships(read_part(archive, reader_module.extras.RELS))
    body = root.find(W + "body")
    if body is not None:
        mapper.blocks(body)
    starts, offset = [], 0
    for text in mapper.paras:
        starts.append(offset)
        offset += len(text) + len(reader_module.SEPARATOR)
    return mapper, starts


def _char_at(mapper: _Mapper, starts: list[int], offset: int, *, last: bool):
    """(run, text element, index in it) of the document text's character at ``offset``; a label's or separator's
    character maps to the next real character (``last``: the previous one)."""
    index = bisect.bisect_right(starts, offset) - 1
    if index < 0:
        return None
    order = range(index, -1, -1) if last else range(index, len(starts))
    for i in order:
        shift, runs = mapper.mapped[i]
        local = offset - starts[i] - shift if i == index else (10 ** 12 if last else -1)
        cells = [(run, start + sum(len(t) for _, t in pieces[:k]), child, text)
                 for run, start, pieces in runs for k, (child, text) in enumerate(pieces)]
        if last:
            for run, at, child, text in reversed(cells):
                if at <= local:
                    return run, child, min(local - at, len(text) - 1)
        else:
            for run, at, child, text in cells:
                if local < at + len(text):
                    return run, child, max(local - at, 0)
    return None


class _Cuts:
    """Runs split at character positions of their original text elements, in any order: each original element's
    current pieces are tracked, so a cut always lands in the piece that now holds that character."""

    def __init__(self) -> None:
        self.pieces: dict = {}  # original text element -> [(piece element, its start in the original)]

    def piece(self, orig, k: int):
        """(piece element, offset in it) holding character ``k`` of ``orig``."""
        pieces = self.pieces.get(orig) or [(orig, 0)]
        element, start = max((p for p in pieces if p[1] <= k), key=lambda p: p[1])
        return element, k - start

    def cut(self, orig, k: int):
        """Split before character ``k`` of ``orig`` (``k`` may be its length: after it); returns the element that
        now starts there (None: the cut is at its run's end)."""
        element, local = self.piece(orig, k)
        if element.tag == W + "t" and 0 < local < len(element.text or ""):
            tail = copy.deepcopy(element)
            tail.text, element.text = element.text[local:], element.text[:local]
            for t in (element, tail):
                t.set(XML_SPACE, "preserve")
            element.addnext(tail)
            self.pieces.setdefault(orig, [(orig, 0)]).append((tail, k))
            target = tail
        elif local > 0:
            target = element.getnext()
        else:
            target = element
        if target is None:
            return None
        run = target.getparent()
        kids = [c for c in run if c.tag != W + "rPr"]
        at = kids.index(target)
        if at > 0:
            right = etree.Element(run.tag, attrib=dict(run.attrib))
            rpr = run.find(W + "rPr")
            if rpr is not None:
                right.append(copy.deepcopy(rpr))
            for moved in kids[at:]:
                right.append(moved)
            run.addnext(right)
        return target


def _top(element):
    """``element``'s ancestor (or itself) that is a direct child of its paragraph."""
    while element.getparent() is not None and element.getparent().tag != W + "p":
        element = element.getparent()
    return element


def _w(tag: str, **attrs) -> etree._Element:
    el = etree.Element(W + tag)
    for key, value in attrs.items():
        el.set(W + key, value)
    return el


class Placed:
    """What :func:`annotate` did: the finding indexes commented, and those it could not place (with why)."""

    def __init__(self) -> None:
        self.commented: list[int] = []
        self.inserted: list[int] = []
        self.skipped: list[tuple[int, str]] = []


def annotate(data: bytes, notes: list[Note], *, now: datetime | None = None) -> tuple[bytes, Placed]:
    """The annotated copy of the .docx ``data`` and what was placed."""
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    archive = open_archive(data)  # the reader's archive checks (sizes, ratios, names)
    with archive:
        raw_main = archive.read(MAIN)
        root = etree.fromstring(raw_main, parser())
        mapper, starts = _map(archive, root)
        text = "".join(t + reader_module.SEPARATOR for t in mapper.paras)
        rels_raw = archive.read(DOC_RELS) if DOC_RELS in archive.namelist() else None
        comments_name = _comments_part(rels_raw)
        comments_raw = archive.read(comments_name) if comments_name in archive.namelist() else None
    comments = (etree.fromstring(comments_raw, parser()) if comments_raw
                else etree.Element(W + "comments", nsmap={"w": W_NS}))
    ids = [int(v) for v in root.xpath("//@w:id", namespaces={"w": W_NS}) if str(v).lstrip("-").isdigit()]
    ids += [int(v) for v in comments.xpath("//@w:id", namespaces={"w": W_NS}) if str(v).lstrip("-").isdigit()]
    next_id = max(ids, default=0) + 1
    placed = Placed()
    found = []
    for note in notes:
        spans = _spans(note, text)
        if spans is None:
            placed.skipped.append((note.index, "its text is not in the document's body, whole or in pieces"))
        else:
            found.append((spans, note))
    cuts, ends = _Cuts(), []
    for spans, note in found:
        chars = [(_char_at(mapper, starts, start, last=False), _char_at(mapper, starts, end - 1, last=True))
                 for start, end in spans]
        if any(first is None or last is None for first, last in chars):
            placed.skipped.append((note.index, "no run holds its text"))
            continue
        parts = []
        for first, last in chars:
            begin = cuts.cut(first[1], first[2])
            cuts.cut(last[1], last[2] + 1)
            parts.append((begin, last))
        ends.append((note, parts))
    for note, parts in ends:  # every cut made: the runs that start and end each piece are final
        for k, (begin, last) in enumerate(parts):  # the note on the first piece, the later ones marked continued
            end_run = cuts.piece(last[1], last[2])[0].getparent()
            cid = str(next_id)
            next_id += 1
            begin.getparent().addprevious(_w("commentRangeStart", id=cid))
            range_end = _w("commentRangeEnd", id=cid)
            end_run.addnext(range_end)
            reference = _w("r")
            rpr = reference.makeelement(W + "rPr")
            rpr.append(_w("rStyle", val="CommentReference"))
            reference.append(rpr)
            reference.append(_w("commentReference", id=cid))
            _top(range_end).addnext(reference)
            comments.append(_comment(cid, note.lines if k == 0 else (note.continued,), when))
        placed.commented.append(note.index)
        if note.fallback:  # after the last piece's comment mark: right after the finding's text
            ins = _w("ins", id=str(next_id), author=AUTHOR, date=when)
            next_id += 1
            run = _w("r")
            old = end_run.find(W + "rPr")
            if old is not None:
                run.append(copy.deepcopy(old))
            t = _w("t")
            t.set(XML_SPACE, "preserve")
            t.text = " " + _xml_safe(note.fallback)
            run.append(t)
            ins.append(run)
            reference.addnext(ins)
            placed.inserted.append(note.index)
    if not placed.commented and not placed.inserted:
        return data, placed
    updates = {MAIN: _serialise(root, raw_main), comments_name: _serialise(comments, comments_raw)}
    if comments_raw is None:
        updates[TYPES] = _with_comments_type(data)
        updates[DOC_RELS] = _with_comments_rel(rels_raw)
    return _rewrite(data, updates), placed


def _spans(note: Note, text: str) -> list[tuple[int, int]] | None:
    """The finding's [start, end) pieces in the body's text: one, the review's own span when it holds the quote (page
    furniture aside: :func:`~clausegate.review.annotate.match.same_text`), else the quote found in the text from
    there on (:func:`clausegate.review.annotate.match.span`), else anywhere; else the quote's pieces
    (:func:`clausegate.review.annotate.match.spans`: a sentence cut at a page break continued by text further on, a
    table and the paragraph after it) from the review's span on; None when no place holds the quote, whole or in
    pieces: never a comment on other text.  One piece may run over paragraphs and table cells (a comment's range
    marks may sit in different paragraphs)."""
    quote = note.quote
    if not quote:
        return None
    span = note.clause.span
    if span and span[1] <= len(text) and match.same_text(text[span[0]:span[1]], quote):
        return [(span[0], span[1])]
    for lo in dict.fromkeys((max(span[0] - 200, 0) if span else 0, 0)):
        found = match.span(text[lo:], quote)
        if found is not None and match.same_text(text[lo + found[0]:lo + found[1]], quote):
            return [(lo + found[0], lo + found[1])]
    lo = max(span[0] - 200, 0) if span else 0
    return match.spans(text, quote, lo, lo + 2 * (len(quote) + match.MAX_GAP) if span else None)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub(" ", text)


def _comment(cid: str, lines, when: str):
    comment = _w("comment", id=cid, author=AUTHOR, date=when, initials=INITIALS)
    for i, line in enumerate(lines):
        p = _w("p")
        if i == 0:
            mark = _w("r")
            mark.append(_w("annotationRef"))
            p.append(mark)
        r = _w("r")
        t = _w("t")
        t.set(XML_SPACE, "preserve")
        t.text = _xml_safe(line)
        r.append(t)
        p.append(r)
        comment.append(p)
    return comment


def _comments_part(rels_raw: bytes | None) -> str:
    if rels_raw:
        for rel in etree.fromstring(rels_raw, parser()):
            if rel.get("Type") == COMMENTS_REL and rel.get("TargetMode") != "External":
                target = rel.get("Target") or ""
                return target.lstrip("/") if target.startswith("/") else "word/" + target
    return COMMENTS


def _serialise(root, original: bytes | None) -> bytes:
    standalone = True
    if original is not None:
        standalone = b'standalone="yes"' in original[:200] or b"standalone='yes'" in original[:200]
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=standalone)


def _with_comments_type(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        root = etree.fromstring(z.read(TYPES), parser())
    if not any(o.get("PartName") == "/" + COMMENTS for o in root):
        override = etree.SubElement(root, f"{{{CT_NS}}}Override")
        override.set("PartName", "/" + COMMENTS)
        override.set("ContentType", COMMENTS_TYPE)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


def _with_comments_rel(rels_raw: bytes | None) -> bytes:
    root = (etree.fromstring(rels_raw, parser()) if rels_raw
            else etree.Element(f"{{{REL_NS}}}Relationships", nsmap={None: REL_NS}))
    taken = {rel.get("Id") for rel in root}
    n = 1
    while f"rId{n}" in taken:
        n += 1
    rel = etree.SubElement(root, f"{{{REL_NS}}}Relationship")
    rel.set("Id", f"rId{n}")
    rel.set("Type", COMMENTS_REL)
    rel.set("Target", "comments.xml")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


def _rewrite(data: bytes, updates: dict[str, bytes]) -> bytes:
    """``data``'s archive with ``updates`` replacing (or adding) entries; every other entry copied unchanged."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = updates.pop(info.filename, None)
            dst.writestr(info, body if body is not None else src.read(info.filename), compress_type=info.compress_type)
        for name, body in updates.items():
            dst.writestr(name, body)
    return out.getvalue()
