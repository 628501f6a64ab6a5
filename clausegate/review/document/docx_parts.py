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

import io
import zipfile
from collections import Counter
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from clausegate.review.document.codes import (
    DOCX_CORRUPT,
    DOCX_MACROS,
    DOCX_MAX_PART_BYTES,
    DOCX_MAX_RATIO,
    DOCX_MAX_UNCOMPRESSED,
    DOCX_XML_UNSAFE,
    DOCX_ZIP_BOMB,
)
from clausegate.review.document.docx_hidden import shading

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
MAIN = "word/document.xml"
_RATIO_FLOOR = 1024 * 1024


class Refused(Exception):
    """A definitive failure of the .docx, carried to the parent as a coded result."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def open_archive(data: bytes) -> zipfile.ZipFile:
    """The checked archive: a ZIP with a main document part, no VBA project, within the inflation caps."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise Refused(DOCX_CORRUPT, f"the .docx is not a readable ZIP archive ({exc}).", _SAVE_AGAIN) from None
    names = {i.filename for i in infos}
    if len(names) != len(infos):  # zipfile keeps the last of two entries of one name; another reader the first
        twice = sorted(n for n, count in Counter(i.filename for i in infos).items() if count > 1)
        raise Refused(DOCX_CORRUPT, f"the archive holds {', '.join(twice[:3])} twice (two ZIP entries with one "
                      "name): programs would disagree on which one is the document, so it was not read.",
                      "ask the sender for a copy saved again from Word (or as PDF); a real .docx never has this.")
    if MAIN not in names:
        raise Refused(DOCX_CORRUPT, f"the archive has no main document part ({MAIN}).", _SAVE_AGAIN)
    if any(n.lower().rsplit("/", 1)[-1] in ("vbaproject.bin", "vbadata.xml") for n in names):
        raise Refused(DOCX_MACROS, "the document holds a VBA project (macros); macros are never run or read.",
                      "save it as a plain .docx or as PDF and submit that.")
    total = sum(i.file_size for i in infos)
    if total > DOCX_MAX_UNCOMPRESSED:
        raise _bomb(f"its parts inflate to {total / 1048576:,.0f} MB, over the {DOCX_MAX_UNCOMPRESSED >> 20} MB cap")
    return archive


def read_part(archive: zipfile.ZipFile, name: str, *, required: bool = False) -> Element | None:
    """Part ``name`` parsed without DTDs or entities; None when it is absent and not ``required``."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        if required:
            raise Refused(DOCX_CORRUPT, f"the archive has no {name}.", _SAVE_AGAIN) from None
        return None
    if info.file_size > DOCX_MAX_PART_BYTES:
        raise _bomb(f"{name} inflates to {info.file_size / 1048576:,.0f} MB, over the "
                    f"{DOCX_MAX_PART_BYTES >> 20} MB cap for one part")
    if info.file_size > _RATIO_FLOOR and info.file_size > DOCX_MAX_RATIO * max(info.compress_size, 1):
        raise _bomb(f"{name} inflates {info.file_size // max(info.compress_size, 1):,} times "
                    f"(over {DOCX_MAX_RATIO} is a decompression bomb)")
    try:
        with archive.open(info) as fh:
            raw = fh.read(DOCX_MAX_PART_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise Refused(DOCX_CORRUPT, f"{name} cannot be inflated ({exc}).", _SAVE_AGAIN) from None
    if len(raw) > DOCX_MAX_PART_BYTES:
        raise _bomb(f"{name} inflates past the {DOCX_MAX_PART_BYTES >> 20} MB cap (its declared size is false)")
    try:
        return fromstring(raw, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise Refused(DOCX_XML_UNSAFE, f"{name} declares a DTD or entities ({type(exc).__name__}), which OOXML never "
                      "needs and which can expand without limit (an XML entity bomb); it was not expanded.",
                      "ask the sender for a copy saved again from Word, or as PDF.") from None
    except (ParseError, ValueError) as exc:
        raise Refused(DOCX_CORRUPT, f"{name} is not well-formed XML ({exc}).", _SAVE_AGAIN) from None


_SAVE_AGAIN = "open it in Word or LibreOffice and save it again as .docx (or as PDF), then resubmit."


def _bomb(why: str) -> Refused:
    return Refused(DOCX_ZIP_BOMB, f"the .docx was not read: {why}.",
                   "a real contract is far smaller; ask the sender for a copy saved again from Word, or as PDF.")


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
