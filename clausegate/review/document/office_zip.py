"""What the Word .docx and OpenDocument .odt readers share: the ZIP archive opened and checked (readable, no entry
name twice, inflation within the caps) and one XML part read without DTDs or entities, within the per-part and
ratio caps.  Each format passes its own codes and words (``Kind``), so a refusal names its format."""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from dataclasses import dataclass
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from clausegate.review.document.codes import DOCX_MAX_PART_BYTES, DOCX_MAX_RATIO, DOCX_MAX_UNCOMPRESSED

_RATIO_FLOOR = 1024 * 1024  # a part smaller than this is never a bomb, whatever its ratio


class Refused(Exception):
    """A definitive failure of the document, carried to the parent as a coded result."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


@dataclass(frozen=True)
class Kind:
    suffix: str  # ".docx", ".odt"
    corrupt: str  # the format's codes
    xml_unsafe: str
    zip_bomb: str
    save_again: str  # the hint for a file that a save-as would mend
    xml_is: str  # "OOXML", "ODF": the XML that never needs a DTD
    unsafe_hint: str
    bomb_hint: str
    twice_hint: str


def open_archive(data: bytes, kind: Kind) -> tuple[zipfile.ZipFile, set[str]]:
    """The checked archive and its entry names: readable, no name twice, the parts' total inflation within the cap."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise Refused(kind.corrupt, f"the {kind.suffix} is not a readable ZIP archive ({exc}).", kind.save_again) \
            from None
    twice = sorted(n for n, count in Counter(i.filename for i in infos).items() if count > 1)
    if twice:  # zipfile keeps the last of two entries of one name; another reader the first
        raise Refused(kind.corrupt, f"the archive holds {', '.join(twice[:3])} twice (two ZIP entries with one name): "
                      "programs would disagree on which one is the document, so it was not read.", kind.twice_hint)
    total = sum(i.file_size for i in infos)
    if total > DOCX_MAX_UNCOMPRESSED:
        raise bomb(kind, f"its parts inflate to {total / 1048576:,.0f} MB, over the {DOCX_MAX_UNCOMPRESSED >> 20} MB "
                         "cap")
    return archive, {i.filename for i in infos}


def read_part(archive: zipfile.ZipFile, name: str, kind: Kind, *, required: bool = False) -> Element | None:
    """Part ``name`` parsed without DTDs or entities, within the caps; None when it is absent and not ``required``."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        if required:
            raise Refused(kind.corrupt, f"the archive has no {name}.", kind.save_again) from None
        return None
    if info.file_size > DOCX_MAX_PART_BYTES:
        raise bomb(kind, f"{name} inflates to {info.file_size / 1048576:,.0f} MB, over the "
                         f"{DOCX_MAX_PART_BYTES >> 20} MB cap for one part")
    if info.file_size > _RATIO_FLOOR and info.file_size > DOCX_MAX_RATIO * max(info.compress_size, 1):
        raise bomb(kind, f"{name} inflates {info.file_size // max(info.compress_size, 1):,} times "
                         f"(over {DOCX_MAX_RATIO} is a decompression bomb)")
    try:
        with archive.open(info) as fh:
            raw = fh.read(DOCX_MAX_PART_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise Refused(kind.corrupt, f"{name} cannot be inflated ({exc}).", kind.save_again) from None
    if len(raw) > DOCX_MAX_PART_BYTES:
        raise bomb(kind, f"{name} inflates past the {DOCX_MAX_PART_BYTES >> 20} MB cap (its declared size is false)")
    try:
        return fromstring(raw, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise Refused(kind.xml_unsafe, f"{name} declares a DTD or entities ({type(exc).__name__}), which {kind.xml_is} "
                      "never needs and which can expand without limit (an XML entity bomb); it was not expanded.",
                      kind.unsafe_hint) from None
    except (ParseError, ValueError) as exc:
        raise Refused(kind.corrupt, f"{name} is not well-formed XML ({exc}).", kind.save_again) from None


def bomb(kind: Kind, why: str) -> Refused:
    return Refused(kind.zip_bomb, f"the {kind.suffix} was not read: {why}.", kind.bomb_hint)
