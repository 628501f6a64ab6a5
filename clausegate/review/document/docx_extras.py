"""The text of a .docx outside the body's paragraphs that a reader still sees (read by
:mod:`clausegate.review.document.docx`):

* **text boxes**: VML (``w:pict``/``v:textbox``) and DrawingML (``wps:txbx``) ``w:txbxContent``; where Word
  writes both inside ``mc:AlternateContent``, only one alternative is read (the ``mc:Choice``, else the
  ``mc:Fallback``), never both;
* **headers and footers** the sections use (``w:headerReference``/``w:footerReference`` followed through
  ``word/_rels/document.xml.rels``); a header's page furniture (running titles, "Page 3 of 9": paragraphs of at most
  ``FURNITURE_MAX_WORDS`` words without an operative verb such as "shall" or "is") is left out and a text repeated
  in several headers is read once;
* **footnotes and endnotes** (``word/footnotes.xml``, ``endnotes.xml``), in the order the body refers to them;
* **imported parts** (``w:altChunk``: HTML, RTF, another document) are not read: they are listed, and the review
  gates on *Document integrity* (``CG-DOCX-UNREAD-PART``).
"""

from __future__ import annotations

import posixpath
import re
from xml.etree.ElementTree import Element

from clausegate.review.document.docx_parts import W

MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
RELS = "word/_rels/document.xml.rels"
FURNITURE_MAX_WORDS = 7  # a header or footer paragraph this short is page furniture, unless it has an _OPERATIVE verb
_OPERATIVE = frozenset({"shall", "will", "must", "may", "is", "are", "be", "agree", "agrees", "waive", "waives",
                        "not", "apply", "applies", "governs", "prevail", "prevails", "supersede", "supersedes"})
ALTERNATE = MC + "AlternateContent"
TEXTBOX = W + "txbxContent"


def alternative(content: Element) -> Element | None:
    """The one branch of an ``mc:AlternateContent`` that is read: its first ``mc:Choice``, else its ``mc:Fallback``."""
    choice = content.find(MC + "Choice")
    return choice if choice is not None else content.find(MC + "Fallback")


def textboxes(el: Element) -> list[Element]:
    """The ``w:txbxContent`` elements drawn by ``el`` (a run's drawing, picture or object), one alternative each."""
    found: list[Element] = []
    if el.tag == ALTERNATE:
        chosen = alternative(el)
        return textboxes(chosen) if chosen is not None else found
    for child in el:
        if child.tag == TEXTBOX:
            found.append(child)
        elif child.tag == ALTERNATE:
            chosen = alternative(child)
            if chosen is not None:
                found += textboxes(chosen)
        else:
            found += textboxes(child)
    return found


def relationships(root: Element | None) -> dict[str, tuple[str, str]]:
    """``document.xml.rels``: relationship id -> (part name in the archive, relationship type's last word)."""
    found: dict[str, tuple[str, str]] = {}
    if root is None:
        return found
    for rel in root.iter(PKG_REL + "Relationship"):
        target, kind = rel.get("Target") or "", (rel.get("Type") or "").rsplit("/", 1)[-1]
        if rel.get("TargetMode") == "External" or not target:
            found[rel.get("Id") or ""] = ("", kind)
            continue
        name = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("word", target))
        found[rel.get("Id") or ""] = (name, kind)
    return found


def header_footer_parts(document: Element, rels: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """(``header``/``footer``, part name) of every header and footer a section uses, in document order, once each."""
    parts: list[tuple[str, str]] = []
    for ref in document.iter():
        if ref.tag in (W + "headerReference", W + "footerReference"):
            name, _ = rels.get(ref.get(R + "id") or "", ("", ""))
            kind = "header" if ref.tag == W + "headerReference" else "footer"
            if name and (kind, name) not in parts:
                parts.append((kind, name))
    return parts


def notes(root: Element | None, kind: str) -> dict[str, Element]:
    """Footnotes or endnotes by id, without Word's separator notes."""
    if root is None:
        return {}
    return {note.get(W + "id") or "": note for note in root.iter(W + kind)
            if (note.get(W + "type") or "normal") == "normal"}


def is_furniture(text: str) -> bool:
    """A header or footer paragraph that is no clause: short, and without a verb a term needs (a running title, a
    page number, "Confidential"); "Liability is unlimited." is short but a clause."""
    words = re.findall(r"[a-z]+", text.lower())
    return len(text.split()) <= FURNITURE_MAX_WORDS and not _OPERATIVE.intersection(words)
