"""Write CUAD's held-out contracts as Word .docx files, for ``bench/extractor.py --format docx``.

    python tools/cuad_to_docx.py [--out .bench/docx] [--limit N]

Each HOLDOUT contract (``tools.cuad.is_holdout``) of CUAD's text release (``full_contract_txt/``: one paragraph per
line) becomes ``<out>/<sha256(file name)[:24]>.docx``: one ``w:p`` per non-empty line, written as raw OOXML with
``zipfile`` (the parts Word needs: content types, the package relationship, ``word/document.xml``).  Characters XML
cannot hold (control characters) become spaces.  Existing files are kept (delete the folder to rebuild).
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools import cuad  # noqa: E402  (the checkout on sys.path first: run as `python tools/cuad_to_docx.py`)

DEFAULT_OUT = REPO / ".bench" / "docx"
_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_TYPES = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/'
          'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
          'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
          'document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"'
          '/></Types>')
_RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.'
         'org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
         'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def docx_bytes(text: str) -> bytes:
    """A .docx holding ``text``: one paragraph per non-empty line."""
    paragraphs = "".join(f'<w:p><w:r><w:t xml:space="preserve">{escape(_NOT_XML.sub(" ", line.strip()))}</w:t></w:r>'
                         "</w:p>" for line in text.splitlines() if line.strip())
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {_NS}><w:body>{paragraphs}'
                "<w:sectPr/></w:body></w:document>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", document)
    return buffer.getvalue()


def docx_path(entry: dict, out: Path = DEFAULT_OUT) -> Path:
    """The .docx of a manifest entry, written on first use."""
    path = out / (hashlib.sha256(entry["filename"].encode("utf-8")).hexdigest()[:24] + ".docx")
    if not path.is_file():
        text = (cuad.cuad_dir() / entry["txt"]).read_text(encoding="utf-8", errors="replace")
        out.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(docx_bytes(text))
        tmp.replace(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    entries = sorted((e for e in cuad.load_manifest() if cuad.is_holdout(e["filename"])), key=lambda e: e["filename"])
    for entry in entries[:args.limit or None]:
        docx_path(entry, Path(args.out))
    print(f"{len(entries[:args.limit or None])} held-out contracts as .docx in {args.out}")


if __name__ == "__main__":
    main()
