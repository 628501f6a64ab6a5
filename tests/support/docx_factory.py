"""Real Word .docx files for the tests, written as raw OOXML with zipfile (what Word writes, minus the optional parts).

``make_docx(path, [para(run("text")), ...])`` builds a document; the helpers build its XML: runs (hidden, white,
tiny, highlighted, shaded, scaled), tracked insertions and deletions, comment ranges, tables, a header and footer
with a page-number field, headers and footers used by a section, text boxes (VML, DrawingML in
mc:AlternateContent), footnotes and endnotes, an altChunk, list numbering.  The hostile builders make a zip bomb,
an XML entity bomb, a .docm, 100k paragraphs, two entries of one name and an encrypted (password-protected) .docx.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
      'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
      'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" '
      'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
      'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
      'xmlns:v="urn:schemas-microsoft-com:vml"')
DATE = "2026-11-30T10:00:00Z"

CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.{main}"/>
</Types>"""
MAIN_DOCX = "openxmlformats-officedocument.wordprocessingml.document.main+xml"
MAIN_DOCM = "ms-word.document.macroEnabled.main+xml"
RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
 Target="word/document.xml"/></Relationships>"""


def run(text: str, *, vanish: bool = False, color: str | None = None, sz: int | None = None,
        style: str | None = None, highlight: str | None = None, fill: str | None = None,
        spec_vanish: bool = False, scale: int | None = None) -> str:
    props = ((f'<w:rStyle w:val="{style}"/>' if style else "") + ("<w:vanish/>" if vanish else "")
             + ("<w:specVanish/>" if spec_vanish else "")
             + (f'<w:color w:val="{color}"/>' if color else "") + (f'<w:w w:val="{scale}"/>' if scale else "")
             + (f'<w:sz w:val="{sz}"/>' if sz else "") + (f'<w:highlight w:val="{highlight}"/>' if highlight else "")
             + (f'<w:shd w:val="clear" w:color="auto" w:fill="{fill}"/>' if fill else ""))
    return (f"<w:r>{'<w:rPr>' + props + '</w:rPr>' if props else ''}"
            f'<w:t xml:space="preserve">{escape(text)}</w:t></w:r>')


def ins(text: str, author: str = "Counterparty Counsel", rid: int = 1) -> str:
    return f'<w:ins w:id="{rid}" w:author="{author}" w:date="{DATE}">{run(text)}</w:ins>'


def dele(text: str, author: str = "Counterparty Counsel", rid: int = 2) -> str:
    return (f'<w:del w:id="{rid}" w:author="{author}" w:date="{DATE}"><w:r>'
            f'<w:delText xml:space="preserve">{escape(text)}</w:delText></w:r></w:del>')


def commented(cid: int, inner: str) -> str:
    """``inner`` (runs) anchored to comment ``cid``."""
    return (f'<w:commentRangeStart w:id="{cid}"/>{inner}<w:commentRangeEnd w:id="{cid}"/>'
            f'<w:r><w:commentReference w:id="{cid}"/></w:r>')


def para(*parts: str, style: str | None = None, num: tuple[int, int] | None = None, fill: str | None = None) -> str:
    ppr = (f'<w:pStyle w:val="{style}"/>' if style else "") + (
        f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>' if num else "") + (
        f'<w:shd w:val="clear" w:color="auto" w:fill="{fill}"/>' if fill else "")
    return f"<w:p>{'<w:pPr>' + ppr + '</w:pPr>' if ppr else ''}{''.join(parts)}</w:p>"


def table(rows: list[list[str]], *, fill: str | None = None) -> str:
    """A table of ``rows`` of cell texts (or cell XML: a string starting with "<"), cells shaded ``fill``."""
    tcpr = f'<w:tcPr><w:shd w:val="clear" w:color="auto" w:fill="{fill}"/></w:tcPr>' if fill else ""
    cells = "".join("<w:tr>" + "".join(f"<w:tc>{tcpr}{c if c.startswith('<') else para(run(c))}</w:tc>"
                                      for c in row) + "</w:tr>" for row in rows)
    return f"<w:tbl>{cells}</w:tbl>"


def vml_textbox(*paragraphs: str) -> str:
    """A run drawing a VML text box (w:pict/v:shape/v:textbox) holding ``paragraphs``."""
    return (f'<w:r><w:pict><v:shape style="width:300pt;height:80pt"><v:textbox><w:txbxContent>{"".join(paragraphs)}'
            "</w:txbxContent></v:textbox></v:shape></w:pict></w:r>")


def drawing_textbox(*paragraphs: str, fallback: bool = True) -> str:
    """A run with a DrawingML text box (wps:txbx) as Word writes it: inside mc:AlternateContent, with the same
    text box again as VML in mc:Fallback (``fallback``)."""
    drawing = ('<w:drawing><wp:anchor><wp:extent cx="3810000" cy="1016000"/><a:graphic><a:graphicData uri="http://'
               'schemas.microsoft.com/office/word/2010/wordprocessingShape"><wps:wsp><wps:txbx><w:txbxContent>'
               f'{"".join(paragraphs)}</w:txbxContent></wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor>'
               "</w:drawing>")
    vml = vml_textbox(*paragraphs)[len("<w:r>"):-len("</w:r>")]
    return (f'<w:r><mc:AlternateContent><mc:Choice Requires="wps">{drawing}</mc:Choice>'
            f'{"<mc:Fallback>" + vml + "</mc:Fallback>" if fallback else ""}</mc:AlternateContent></w:r>')


def note_reference(kind: str, nid: int) -> str:
    """A run referring to footnote (``kind`` "footnote") or endnote ``nid``."""
    return f'<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:{kind}Reference w:id="{nid}"/></w:r>'


def notes_part(kind: str, notes: dict[int, str]) -> str:
    """footnotes.xml / endnotes.xml: Word's two separator notes, then id -> text."""
    tag = f"w:{kind}"
    seps = (f'<{tag} w:type="separator" w:id="-1">{para("<w:r><w:separator/></w:r>")}</{tag}>'
            f'<{tag} w:type="continuationSeparator" w:id="0">{para("<w:r><w:continuationSeparator/></w:r>")}</{tag}>')
    body = "".join(f'<{tag} w:id="{nid}">{para(run(text))}</{tag}>' for nid, text in notes.items())
    return f'<?xml version="1.0" encoding="UTF-8"?><w:{kind}s {NS}>{seps}{body}</w:{kind}s>'


def margin_part(kind: str, *paragraphs: str) -> str:
    """A header (``kind`` "header") or footer part holding ``paragraphs``."""
    tag = "hdr" if kind == "header" else "ftr"
    return f'<?xml version="1.0" encoding="UTF-8"?><w:{tag} {NS}>{"".join(paragraphs)}</w:{tag}>'


def document_rels(targets: dict[str, tuple[str, str]]) -> str:
    """word/_rels/document.xml.rels: relationship id -> (type's last word, target)."""
    base = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
    rels = "".join(f'<Relationship Id="{rid}" Type="{base}{kind}" Target="{target}"/>'
                   for rid, (kind, target) in targets.items())
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships '
            f'xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>')


def section(headers: dict[str, str] = {}, footers: dict[str, str] = {}) -> str:  # noqa: B006 (read only)
    """A w:sectPr using header and footer relationships: type (default, first, even) -> relationship id."""
    refs = "".join(f'<w:headerReference w:type="{t}" r:id="{rid}"/>' for t, rid in headers.items())
    refs += "".join(f'<w:footerReference w:type="{t}" r:id="{rid}"/>' for t, rid in footers.items())
    return f"<w:sectPr>{refs}</w:sectPr>"


def alt_chunk(rid: str) -> str:
    return f'<w:altChunk r:id="{rid}"/>'


def encrypted_docx_bytes() -> bytes:
    """A password-protected .docx as Word writes one: an OLE compound file (CFB) whose directory names the
    EncryptionInfo and EncryptedPackage streams (a minimal, structurally plausible one: header + directory)."""
    header = bytearray(512)
    header[:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    header[0x18:0x1C] = b"\x3e\x00\x03\x00"  # minor/major version 3
    header[0x1C:0x20] = b"\xfe\xff\x09\x00"  # little-endian, 512-byte sectors
    directory = bytearray()
    for name in ("Root Entry", "EncryptionInfo", "EncryptedPackage", "\x06DataSpaces"):
        entry = bytearray(128)
        encoded = (name + "\0").encode("utf-16-le")
        entry[:len(encoded)] = encoded
        entry[64:66] = len(encoded).to_bytes(2, "little")
        entry[66] = 5 if name == "Root Entry" else 2
        directory += entry
    return bytes(header) + bytes(directory) + b"\0" * 512


def page_number_part(kind: str, words: str) -> str:
    """A header or footer part: ``words`` and a PAGE field ("Page 3")."""
    tag = "hdr" if kind == "header" else "ftr"
    return (f'<?xml version="1.0" encoding="UTF-8"?><w:{tag} {NS}><w:p>{run(words + " Page ")}'
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> PAGE </w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>3</w:t></w:r>'
            f'<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p></w:{tag}>')


def comments_part(comments: dict[int, tuple[str, str]]) -> str:
    """comments.xml: id -> (author, text)."""
    body = "".join(f'<w:comment w:id="{cid}" w:author="{author}" w:date="{DATE}">{para(run(text))}</w:comment>'
                   for cid, (author, text) in comments.items())
    return f'<?xml version="1.0" encoding="UTF-8"?><w:comments {NS}>{body}</w:comments>'


def numbering_part() -> str:
    """numId 1: "1." / "1.1" / "(a)" levels."""
    levels = [("decimal", "%1."), ("decimal", "%1.%2"), ("lowerLetter", "(%3)")]
    lvls = "".join(f'<w:lvl w:ilvl="{i}"><w:start w:val="1"/><w:numFmt w:val="{fmt}"/><w:lvlText w:val="{text}"/>'
                   "</w:lvl>" for i, (fmt, text) in enumerate(levels))
    return (f'<?xml version="1.0" encoding="UTF-8"?><w:numbering {NS}><w:abstractNum w:abstractNumId="0">{lvls}'
            '</w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>')


def styles_part(hidden_style: str = "Secret") -> str:
    """styles.xml with a character style ``hidden_style`` that is white 1 pt text."""
    return (f'<?xml version="1.0" encoding="UTF-8"?><w:styles {NS}><w:docDefaults><w:rPrDefault><w:rPr>'
            '<w:sz w:val="22"/></w:rPr></w:rPrDefault></w:docDefaults>'
            f'<w:style w:type="character" w:styleId="{hidden_style}"><w:rPr><w:color w:val="FFFFFF"/>'
            '<w:sz w:val="2"/></w:rPr></w:style></w:styles>')


def document_xml(body: list[str] | str, *, prolog: str = "", sect: str = "<w:sectPr/>") -> str:
    inner = body if isinstance(body, str) else "".join(body)
    return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prolog}<w:document {NS}><w:body>{inner}' \
           f'{sect}</w:body></w:document>'


def make_docx(path: str | Path, body: list[str] | str, *, parts: dict[str, str | bytes] | None = None,
              macro: bool = False, document: str | None = None, sect: str = "<w:sectPr/>",
              duplicate: str | None = None) -> Path:
    """A .docx at ``path``: ``body`` (block XML strings) in word/document.xml, plus ``parts`` (name -> content);
    ``duplicate``: a second word/document.xml entry after the first (the same name twice in the ZIP)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES.format(main=MAIN_DOCM if macro else MAIN_DOCX))
        archive.writestr("_rels/.rels", RELS)
        archive.writestr("word/document.xml", document if document is not None else document_xml(body, sect=sect))
        for name, content in (parts or {}).items():
            archive.writestr(name, content)
        if duplicate is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # zipfile warns "Duplicate name": that is the point
                archive.writestr("word/document.xml", duplicate)
    return p


def make_zip_bomb(path: str | Path, inflated_mb: int = 200) -> Path:
    """A .docx whose document.xml inflates to ``inflated_mb`` MB of spaces (a few hundred KB on disk)."""
    p = Path(path)
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES.format(main=MAIN_DOCX))
        with archive.open("word/document.xml", "w", force_zip64=True) as fh:
            fh.write(document_xml([para(run("Fees."))]).encode()[:-len("</w:document>")])
            chunk = b" " * (1 << 20)
            for _ in range(inflated_mb):
                fh.write(chunk)
            fh.write(b"</w:document>")
    return p


def entity_bomb_document(levels: int = 9) -> str:
    """document.xml with the "billion laughs" entity expansion (10^levels 'lol's if a parser expands it)."""
    lols = "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, levels + 1))
    prolog = f'<!DOCTYPE w:document [<!ENTITY lol0 "lol">{lols}]>'
    return document_xml([para(run("Fees: "), f"<w:r><w:t>&lol{levels};</w:t></w:r>")], prolog=prolog)


def many_paragraphs_document(count: int) -> str:
    return document_xml("".join(f"<w:p><w:r><w:t>Clause {i} of the schedule applies.</w:t></w:r></w:p>"
                                for i in range(count)))
