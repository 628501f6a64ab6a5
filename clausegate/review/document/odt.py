"""An OpenDocument text (.odt) read in the sandboxed child (:func:`clausegate.review.document.worker.answer`, format
"odt", the .odt row of :mod:`clausegate.review.document.registry`).

Raw ODF XML (``zipfile`` + ``defusedxml``), as a .docx is read, not a library: odfdo needs lxml in the child and odfpy
parses with ``xml.sax``/``minidom`` without the DTD and entity refusals every part needs here.  The archive gets the
.docx caps (:mod:`clausegate.review.document.docx_parts`' limits: all parts, one part, the inflation ratio, from the
central directory and while reading; ``CG-ODT-ZIP-BOMB``), every part is parsed with DTDs and entities forbidden
(``CG-ODT-XML-UNSAFE``), an entry twice or a missing ``content.xml`` is ``CG-ODT-CORRUPT``.  An encrypted .odt
(``META-INF/manifest.xml`` names ``manifest:encryption-data``) is refused with ``CG-ODT-ENCRYPTED``.

What is read, in order: the body's paragraphs and headings (``text:p``, ``text:h``, a heading's rendered number
``text:number`` kept), lists item by item, tables row by row and cell by cell, sections, the text boxes a paragraph
anchors and its footnotes (after it); spaces (``text:s``), tabs and line breaks as written.  Left out: annotations
(comments), the tracked-changes region (deleted text: the document is read with its changes accepted) and tables of
contents (they repeat the headings).  **Hidden text** (``text:display="none"`` in a style, a hidden section, a
``text:hidden-paragraph`` or ``text:hidden-text`` that is hidden, text in its background's colour or under 3 pt: the
thresholds of :mod:`clausegate.review.document.visibility`) is left out and reported per paragraph,
``CG-ODT-HIDDEN-TEXT``, as .docx hidden text is.  The text is laid out as a .docx's: numbered paragraphs (¶) joined
with blank lines, cut into parts of about ``PART_CHARS`` characters.
"""

from __future__ import annotations

import re
from typing import Any
from xml.etree.ElementTree import Element

from clausegate.review.document import office_zip
from clausegate.review.document.codes import (
    DOCX_MAX_PARAGRAPHS,
    PART_CHARS,
    SETTING_MAX_CHARS,
    failure,
)
from clausegate.review.document.visibility import MIN_FONT_PT, hidden_notices, same_colour

ODT_ENCRYPTED = "CG-ODT-ENCRYPTED"
ODT_ZIP_BOMB = "CG-ODT-ZIP-BOMB"
ODT_XML_UNSAFE = "CG-ODT-XML-UNSAFE"
ODT_CORRUPT = "CG-ODT-CORRUPT"
ODT_EMPTY = "CG-ODT-EMPTY"
ODT_TOO_MUCH_TEXT = "CG-ODT-TOO-MUCH-TEXT"
NOTICE_ODT_HIDDEN_TEXT = "CG-ODT-HIDDEN-TEXT"  # integrity: text a reader of the .odt does not see, left out

OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
WHITE = (1.0, 1.0, 1.0)
DISPLAY_NONE = 'hidden (text:display="none")'
HIDDEN_FIELD = "a hidden paragraph or hidden-text field"
HIDDEN_SECTION = "in a hidden section"
SAME_COLOUR = "in the colour of its background"
TINY = f"microscopic (under {MIN_FONT_PT:g} pt)"
SEPARATOR = "\n\n"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_SPACES = 1000
_SKIPPED = frozenset({OFFICE + "annotation", OFFICE + "annotation-end", TEXT + "tracked-changes",
                      TEXT + "note-citation", TEXT + "table-of-content", TEXT + "sequence-decls"})
_SAVE_AGAIN = "open it in LibreOffice or Word and save it again as .odt (or as PDF), then resubmit."


class Refused(office_zip.Refused):
    def __init__(self, code: str, message: str, hint: str = _SAVE_AGAIN) -> None:
        super().__init__(code, message, hint)


ODT = office_zip.Kind(
    suffix=".odt", corrupt=ODT_CORRUPT, xml_unsafe=ODT_XML_UNSAFE, zip_bomb=ODT_ZIP_BOMB, save_again=_SAVE_AGAIN,
    xml_is="ODF", unsafe_hint="ask the sender for a copy saved again, or a PDF; treat the file as hostile.",
    bomb_hint="a real contract is far smaller; ask the sender for a copy saved again, or a PDF.",
    twice_hint="ask the sender for a copy saved again (or a PDF); a real .odt never has this.")


def extract(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The worker's result for an .odt: its parts and hidden-text notices, or a coded failure."""
    try:
        with office_zip.open_archive(data, ODT)[0] as archive:
            manifest = office_zip.read_part(archive, "META-INF/manifest.xml", ODT)
            if manifest is not None and any(el.tag == MANIFEST + "encryption-data" for el in manifest.iter()):
                raise Refused(ODT_ENCRYPTED, "the .odt is password-protected (encrypted): its text can only be read "
                              "with the password, which ClauseGate never asks for.",
                              "open it in LibreOffice, remove the password (File > Properties > Security, or Save "
                              "As without 'Save with password') and submit that file, or a PDF.")
            content = office_zip.read_part(archive, "content.xml", ODT, required=True)
            styles = _Styles(office_zip.read_part(archive, "styles.xml", ODT), content)
        reader = _Reader(styles, int(options["max_chars"]))
        for text in content.iter(OFFICE + "text"):
            reader.blocks(text)
    except office_zip.Refused as refused:
        return failure(refused.code, refused.message, refused.hint)
    if not reader.paras:
        return failure(ODT_EMPTY, "the document's body has no text (only empty paragraphs, images or hidden text), "
                                  "so there is nothing to review.",
                       "check that the right file was sent; a scanned contract needs to be sent as a PDF with text.")
    return reader.result()


# ---------------------------------------------------------------------------------------------- styles
def _rgb(value: str | None) -> tuple[float, ...] | None:
    if not value or not re.fullmatch(r"#[0-9A-Fa-f]{6}", value):
        return None
    return tuple(int(value[i:i + 2], 16) / 255 for i in (1, 3, 5))


def _points(value: str | None) -> float | None:
    """``fo:font-size`` in points (``8pt``, ``0.1cm``, ``2mm``, ``0.05in``); None for a percentage or nothing."""
    match = re.fullmatch(r"([0-9.]+)(pt|cm|mm|in|px)", value or "")
    if not match:
        return None
    try:
        return float(match.group(1)) * {"pt": 1, "cm": 72 / 2.54, "mm": 72 / 25.4, "in": 72, "px": 0.75}[match.group(2)]
    except ValueError:
        return None


class _Styles:
    """The hiding-relevant properties of every named and automatic style (``style:parent-style-name`` followed)."""

    def __init__(self, styles_root: Element | None, content: Element) -> None:
        self._own: dict[str, tuple[str | None, dict[str, Any]]] = {}
        for root in (styles_root, content):
            for style in root.iter(STYLE + "style") if root is not None else ():
                props: dict[str, Any] = {}
                text = style.find(STYLE + "text-properties")
                if text is not None:
                    if text.get(TEXT + "display") == "none":
                        props["none"] = True
                    for key, attr in (("color", FO + "color"), ("background", FO + "background-color")):
                        if text.get(attr):
                            props[key] = text.get(attr)
                    if _points(text.get(FO + "font-size")) is not None:
                        props["size"] = _points(text.get(FO + "font-size"))
                para = style.find(STYLE + "paragraph-properties")
                if para is not None and para.get(FO + "background-color"):
                    props["para_background"] = para.get(FO + "background-color")
                self._own[style.get(STYLE + "name") or ""] = (style.get(STYLE + "parent-style-name"), props)

    def props(self, name: str | None) -> dict[str, Any]:
        chain, seen = [], set()
        while name and name in self._own and name not in seen:
            seen.add(name)
            parent, own = self._own[name]
            chain.append(own)
            name = parent
        merged: dict[str, Any] = {}
        for own in reversed(chain):
            merged.update(own)
        return merged


def _reasons(props: dict[str, Any]) -> set[str]:
    why = set()
    if props.get("none"):
        why.add(DISPLAY_NONE)
    colour = _rgb(props.get("color"))
    behind = _rgb(props.get("background")) or _rgb(props.get("para_background")) or WHITE
    if colour is not None and same_colour(colour, behind):
        why.add(SAME_COLOUR)
    if props.get("size") is not None and props["size"] < MIN_FONT_PT:
        why.add(TINY)
    return why


# ---------------------------------------------------------------------------------------------- the body
class _Reader:
    def __init__(self, styles: _Styles, max_chars: int) -> None:
        self.styles, self.max_chars = styles, max_chars
        self.paras: list[str] = []
        self.hidden: list[tuple[int, list[str], set[str]]] = []
        self.seen = self.chars = self.notes = 0

    def blocks(self, parent: Element, hidden_section: bool = False) -> None:
        for child in parent:
            tag = child.tag
            if tag in (TEXT + "p", TEXT + "h"):
                self.paragraph(child, hidden_section)
            elif tag in (TEXT + "list", TEXT + "list-item", TEXT + "list-header", TABLE + "table-row-group",
                         TABLE + "table-header-rows", TABLE + "table-rows", TABLE + "table-row", TABLE + "table-cell",
                         TEXT + "index-body"):
                self.blocks(child, hidden_section)
            elif tag == TABLE + "table":
                self.blocks(child, hidden_section)
            elif tag == TEXT + "section":
                self.blocks(child, hidden_section or child.get(TEXT + "display") == "none")

    def paragraph(self, p: Element, hidden_section: bool) -> None:
        self.seen += 1
        if self.seen > DOCX_MAX_PARAGRAPHS:
            raise Refused(ODT_TOO_MUCH_TEXT, f"the document has more than {DOCX_MAX_PARAGRAPHS:,} paragraphs, above "
                          "the limit for one contract.", "split the document and review the parts separately.")
        props = self.styles.props(p.get(TEXT + "style-name"))
        shown: list[str] = []
        hidden: list[str] = []
        reasons: set[str] = set()
        after: list[tuple[str, Element]] = []
        self._inline(p, props, shown, hidden, reasons, after)
        text = _CONTROL.sub(" ", "".join(shown))
        field_hidden = any(el.get(TEXT + "is-hidden") == "true" for el in p.iter(TEXT + "hidden-paragraph"))
        if hidden_section or field_hidden:  # the whole paragraph is out of sight
            hidden, text = [*hidden, text], ""
            reasons.add(HIDDEN_SECTION if hidden_section else HIDDEN_FIELD)
        index = len(self.paras)
        if text.strip():
            self.paras.append(text)
            self.chars += len(text) + len(SEPARATOR)
            if self.chars > self.max_chars:
                raise Refused(ODT_TOO_MUCH_TEXT, f"the document has more than {self.max_chars:,} characters of text, "
                              "above the limit for one contract.", f"if this really is one contract, raise "
                              f"{SETTING_MAX_CHARS}; otherwise split it and review the parts separately.")
        if any(h.strip() for h in hidden):
            self.hidden.append((index, [h for h in hidden if h.strip()], reasons))
        for label, element in after:  # text boxes and footnotes follow the paragraph they are anchored in
            first = len(self.paras)
            self.blocks(element, hidden_section)
            if label and len(self.paras) > first:
                self.paras[first] = f"{label} {self.paras[first]}"

    def _inline(self, parent: Element, props: dict[str, Any], shown: list[str], hidden: list[str],
                reasons: set[str], after: list[tuple[str, Element]]) -> None:
        why = _reasons(props)

        def put(text: str | None) -> None:
            if text:
                (hidden if why else shown).append(text)
                if why:
                    reasons.update(why)

        put(parent.text)
        for child in parent:
            tag = child.tag
            if tag in _SKIPPED:
                pass
            elif tag == TEXT + "s":
                count = child.get(TEXT + "c") or "1"
                put(" " * min(int(count) if count.isdigit() else 1, _MAX_SPACES))
            elif tag == TEXT + "tab":
                put("\t")
            elif tag == TEXT + "line-break":
                put("\n")
            elif tag == TEXT + "hidden-text":
                if child.get(TEXT + "is-hidden") == "true":
                    hidden.append(child.get(TEXT + "string-value") or "".join(child.itertext()))
                    reasons.add(HIDDEN_FIELD)
                else:
                    put(child.get(TEXT + "string-value") or "".join(child.itertext()))
            elif tag == TEXT + "note":
                body = child.find(TEXT + "note-body")
                if body is not None:
                    self.notes += 1
                    citation = child.find(TEXT + "note-citation")
                    mark = "".join(citation.itertext()).strip() if citation is not None else ""
                    after.append((f"Footnote {mark or self.notes}:", body))
            elif tag == DRAW + "frame":
                after += [("", box) for box in child.iter(DRAW + "text-box")]
            elif tag in (TEXT + "hidden-paragraph", TEXT + "soft-page-break", TEXT + "bookmark",
                         TEXT + "bookmark-start", TEXT + "bookmark-end", TEXT + "change", TEXT + "change-start",
                         TEXT + "change-end"):
                pass
            else:  # spans, links, heading numbers, fields: their text, in their style
                name = child.get(TEXT + "style-name") if tag == TEXT + "span" else None
                self._inline(child, {**props, **self.styles.props(name)} if name else props, shown, hidden, reasons,
                             after)
            put(child.tail)

    # ------------------------------------------------------------------ layout (as a .docx's)
    def result(self) -> dict[str, Any]:
        pages, starts, part, first, offset = [], [], [], 1, 0
        for number, text in enumerate(self.paras, start=1):
            starts.append(offset)
            part.append(text)
            offset += len(text) + len(SEPARATOR)
            if sum(len(t) for t in part) >= PART_CHARS or number == len(self.paras):
                pages.append({"number": len(pages) + 1, "text": "".join(t + SEPARATOR for t in part),
                              "start": starts[first - 1], "paragraphs": starts[first - 1:number],
                              "first_paragraph": first})
                part, first = [], number + 1
        return {"ok": True, "format": "odt", "pages": pages, "notices": self._notices(), "revisions": [],
                "comments": []}

    def _notices(self) -> list[dict[str, Any]]:
        return hidden_notices(self.hidden, len(self.paras), NOTICE_ODT_HIDDEN_TEXT, "LibreOffice or Word")
