"""Real Word .docx files for the tests, written as raw OOXML with zipfile (what Word writes, minus the optional parts).

``make_docx(path, [para(run("text")), ...])`` builds a document; the helpers build its XML: runs (hidden, white,
tiny), tracked insertions and deletions, comment ranges, tables, a header and footer with a page-number field,
list numbering.  The hostile builders make a zip bomb, an XML entity bomb, a .docm and 100k paragraphs.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
      'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
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
        style: str | None = None) -> str:
    props = ((f'<w:rStyle w:val="{style}"/>' if style else "") + ("<w:vanish/>" if vanish else "")
             + (f'<w:color w:val="{color}"/>' if color else "") + (f'<w:sz w:val="{sz}"/>' if sz else ""))
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


def para(*parts: str, style: str | None = None, num: tuple[int, int] | None = None) -> str:
    ppr = (f'<w:pStyle w:val="{style}"/>' if style else "") + (
        f'<w:numPr><w:ilvl w:val="{num[1]}"/><w:numId w:val="{num[0]}"/></w:numPr>' if num else "")
    return f"<w:p>{'<w:pPr>' + ppr + '</w:pPr>' if ppr else ''}{''.join(parts)}</w:p>"


def table(rows: list[list[str]]) -> str:
    cells = "".join("<w:tr>" + "".join(f"<w:tc>{para(run(c))}</w:tc>" for c in row) + "</w:tr>" for row in rows)
    return f"<w:tbl>{cells}</w:tbl>"


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


def document_xml(body: list[str] | str, *, prolog: str = "") -> str:
    inner = body if isinstance(body, str) else "".join(body)
    return f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prolog}<w:document {NS}><w:body>{inner}' \
           '<w:sectPr/></w:body></w:document>'


def make_docx(path: str | Path, body: list[str] | str, *, parts: dict[str, str | bytes] | None = None,
              macro: bool = False, document: str | None = None) -> Path:
    """A .docx at ``path``: ``body`` (block XML strings) in word/document.xml, plus ``parts`` (name -> content)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES.format(main=MAIN_DOCM if macro else MAIN_DOCX))
        archive.writestr("_rels/.rels", RELS)
        archive.writestr("word/document.xml", document if document is not None else document_xml(body))
        for name, content in (parts or {}).items():
            archive.writestr(name, content)
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
