"""The parts of a Word .docx a review reads, opened safely (the sandboxed child: clausegate.review.document.docx).

* **One part per name**: an archive with two entries of one name (readers disagree on which is read) is refused,
  ``CG-DOCX-CORRUPT``.
* **Archive caps before anything is inflated**: the declared sizes of all parts (``DOCX_MAX_UNCOMPRESSED``), of a part
  read (``DOCX_MAX_PART_BYTES``) and its inflation ratio (``DOCX_MAX_RATIO`` for a part over 1 MB) are checked from
  the central directory, and a part is read with a cap too (a forged directory cannot lie its way past it):
  ``CG-DOCX-ZIP-BOMB``.
* **XML without DTDs**: every part is parsed by ``defusedxml`` with ``forbid_dtd``: a document type declaration,
  an entity declaration (the "billion laughs" expansion) or an external reference is refused,
  ``CG-DOCX-XML-UNSAFE``; nothing is fetched from a network or disk.  OOXML never needs a DTD.
* **Styles and numbering**: the run properties that hide text (``w:vanish``, colour, highlight, shading, size,
  scale) resolved through
  ``w:docDefaults``, paragraph and character styles (``w:basedOn``); Word's automatic list numbers ("8.5") rendered,
  so sections are found by their numbers as in a PDF.
"""

from __future__ import annotations

import zipfile
from typing import Any
from xml.etree.ElementTree import Element

from clausegate.review.document import office_zip
from clausegate.review.document.codes import (
    DOCX_CORRUPT,
    DOCX_MACROS,
    DOCX_XML_UNSAFE,
    DOCX_ZIP_BOMB,
)
from clausegate.review.document.docx_hidden import shading

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MAIN = "word/document.xml"


Refused = office_zip.Refused
_SAVE_AGAIN = "open it in Word or LibreOffice and save it again as .docx (or as PDF), then resubmit."
DOCX = office_zip.Kind(
    suffix=".docx", corrupt=DOCX_CORRUPT, xml_unsafe=DOCX_XML_UNSAFE, zip_bomb=DOCX_ZIP_BOMB, save_again=_SAVE_AGAIN,
    xml_is="OOXML", unsafe_hint="ask the sender for a copy saved again from Word, or as PDF.",
    bomb_hint="a real contract is far smaller; ask the sender for a copy saved again from Word, or as PDF.",
    twice_hint="ask the sender for a copy saved again from Word (or as PDF); a real .docx never has this.")


def open_archive(data: bytes) -> zipfile.ZipFile:
    """The checked archive (``office_zip.open_archive``) with a main document part and no VBA project."""
    archive, names = office_zip.open_archive(data, DOCX)
    if MAIN not in names:
        raise Refused(DOCX_CORRUPT, f"the archive has no main document part ({MAIN}).", _SAVE_AGAIN)
    if any(n.lower().rsplit("/", 1)[-1] in ("vbaproject.bin", "vbadata.xml") for n in names):
        raise Refused(DOCX_MACROS, "the document holds a VBA project (macros); macros are never run or read.",
                      "save it as a plain .docx or as PDF and submit that.")
    return archive


def read_part(archive: zipfile.ZipFile, name: str, *, required: bool = False) -> Element | None:
    """Part ``name`` parsed without DTDs or entities (``office_zip.read_part``)."""
    return office_zip.read_part(archive, name, DOCX, required=required)


def on(value: str | None) -> bool:
    """An OOXML on/off property's value (absent ``w:val`` is on)."""
    return value is None or value.lower() not in ("0", "false", "off", "none")


def run_props(rpr: Element | None) -> dict[str, Any]:
    """The hiding-relevant properties set in a ``w:rPr``: vanish, specVanish, colour, size (half-points), character
    scale (``w:w``, %), highlight and shading (:mod:`clausegate.review.document.docx_hidden` judges them)."""
    props: dict[str, Any] = {}
    if rpr is None:
        return props
    for child in rpr:
        tag, val = child.tag, child.get(W + "val")
        if tag == W + "vanish":
            props["vanish"] = on(val)
        elif tag == W + "specVanish":
            props["spec_vanish"] = on(val)
        elif tag == W + "color" and val:
            props["color"] = val.upper()
        elif tag == W + "sz" and val and val.isdigit():
            props["sz"] = int(val)
        elif tag == W + "w" and val and val.rstrip("%").isdigit():
            props["w"] = int(val.rstrip("%"))
        elif tag == W + "highlight" and val:
            props["highlight"] = None if val.lower() == "none" else val
        elif tag == W + "shd":
            props["shading"] = shading(child)
    return props


class Styles:
    """Run properties of ``w:docDefaults`` and of each style (``w:basedOn`` followed), and paragraph styles' list
    numbering (``w:numPr``)."""

    def __init__(self, root: Element | None) -> None:
        self.defaults: dict[str, Any] = {}
        self._own: dict[str, tuple[str | None, dict[str, Any], tuple[str, int] | None]] = {}
        if root is None:
            return
        self.defaults = run_props(root.find(f"{W}docDefaults/{W}rPrDefault/{W}rPr"))
        for style in root.iter(W + "style"):
            based = style.find(W + "basedOn")
            num = style.find(f"{W}pPr/{W}numPr")
            self._own[style.get(W + "styleId") or ""] = (
                based.get(W + "val") if based is not None else None, run_props(style.find(W + "rPr")),
                num_ref(num))

    def props(self, style_id: str | None) -> dict[str, Any]:
        chain: list[dict[str, Any]] = []
        seen: set[str] = set()
        while style_id and style_id in self._own and style_id not in seen:
            seen.add(style_id)
            based, own, _ = self._own[style_id]
            chain.append(own)
            style_id = based
        merged: dict[str, Any] = {}
        for own in reversed(chain):
            merged.update(own)
        return merged

    def numbering(self, style_id: str | None) -> tuple[str, int] | None:
        seen: set[str] = set()
        while style_id and style_id in self._own and style_id not in seen:
            seen.add(style_id)
            based, _, num = self._own[style_id]
            if num is not None:
                return num
            style_id = based
        return None


def num_ref(num_pr: Element | None) -> tuple[str, int] | None:
    """(numId, ilvl) of a ``w:numPr``; None when absent or numId 0 (numbering switched off)."""
    if num_pr is None:
        return None
    num_id = num_pr.find(W + "numId")
    level = num_pr.find(W + "ilvl")
    nid = num_id.get(W + "val") if num_id is not None else None
    lvl = level.get(W + "val") if level is not None else "0"
    if not nid or nid == "0":
        return None
    return nid, int(lvl) if lvl and lvl.isdigit() else 0


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


def _format(n: int, fmt: str) -> str:
    if fmt in ("lowerLetter", "upperLetter"):
        s = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        return s.upper() if fmt == "upperLetter" else s
    if fmt in ("lowerRoman", "upperRoman"):
        out, rest = "", n
        for value, digits in _ROMAN:
            while rest >= value:
                out, rest = out + digits, rest - value
        return out.upper() if fmt == "upperRoman" else out
    if fmt == "none":
        return ""
    return str(n)


class Numbering:
    """Word's automatic list numbers, counted in document order: ``label(numId, ilvl)`` -> "8.5." (bullets: "•")."""

    def __init__(self, root: Element | None) -> None:
        self._levels: dict[str, dict[int, tuple[int, str, str]]] = {}  # abstractNumId -> ilvl -> (start, fmt, text)
        self._abstract: dict[str, str] = {}  # numId -> abstractNumId
        self._counts: dict[str, list[int]] = {}
        if root is None:
            return
        for abstract in root.iter(W + "abstractNum"):
            levels = {}
            for lvl in abstract.iter(W + "lvl"):
                start, fmt, text = lvl.find(W + "start"), lvl.find(W + "numFmt"), lvl.find(W + "lvlText")
                levels[int(lvl.get(W + "ilvl") or 0)] = (
                    int(start.get(W + "val") or 1) if start is not None else 1,
                    fmt.get(W + "val") or "decimal" if fmt is not None else "decimal",
                    text.get(W + "val") or "" if text is not None else "")
            self._levels[abstract.get(W + "abstractNumId") or ""] = levels
        for num in root.iter(W + "num"):
            ref = num.find(W + "abstractNumId")
            if ref is not None:
                self._abstract[num.get(W + "numId") or ""] = ref.get(W + "val") or ""

    def label(self, num_id: str, ilvl: int) -> str:
        abstract = self._abstract.get(num_id)
        levels = self._levels.get(abstract or "")
        if not levels or ilvl not in levels:
            return ""
        counts = self._counts.setdefault(abstract or "", [0] * 10)
        ilvl = min(ilvl, 9)
        counts[ilvl] += 1
        for deeper in range(ilvl + 1, 10):
            counts[deeper] = 0
        start, fmt, text = levels[ilvl]
        if fmt == "bullet":
            return "•"
        label = text
        for k in range(ilvl + 1):
            k_start, k_fmt, _ = levels.get(k, (1, "decimal", ""))
            value = counts[k] + k_start - 1 if counts[k] else k_start
            label = label.replace(f"%{k + 1}", _format(value, k_fmt))
        return label.strip()
