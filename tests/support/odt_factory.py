"""OpenDocument .odt files for tests, written with zipfile (mimetype first, stored): a body of ODF XML inside
``office:text``, and a manifest that may carry extra entries (e.g. encryption data)."""

from __future__ import annotations

import zipfile
from pathlib import Path

NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
      'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
      'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
      'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
      'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
      'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"')
MANIFEST = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
            'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
            '<manifest:file-entry manifest:full-path="/" '
            'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">{extra}'
            '</manifest:file-entry></manifest:manifest>')
STYLES = ('<office:automatic-styles>'
          '<style:style style:name="Hide" style:family="text"><style:text-properties text:display="none"/>'
          '</style:style>'
          '<style:style style:name="White" style:family="text"><style:text-properties fo:color="#ffffff"/>'
          '</style:style>'
          '<style:style style:name="Tiny" style:family="text"><style:text-properties fo:font-size="1pt"/></style:style>'
          '</office:automatic-styles>')


def content(body: str, styles: str = STYLES, prolog: str = "") -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?>{prolog}<office:document-content {NS} office:version="1.2">'
            f'{styles}<office:body><office:text>{body}</office:text></office:body></office:document-content>')


def make_odt(path: Path, body: str = "", *, xml: str | None = None, manifest_extra: str = "",
             extra: dict[str, bytes] | None = None, mimetype_first: bool = True) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        entries = [("content.xml", (xml or content(body)).encode()),
                   ("META-INF/manifest.xml", MANIFEST.format(extra=manifest_extra).encode()),
                   *(extra or {}).items()]
        mimetype = ("mimetype", b"application/vnd.oasis.opendocument.text")
        if mimetype_first:
            z.writestr(zipfile.ZipInfo(mimetype[0]), mimetype[1], compress_type=zipfile.ZIP_STORED)
        for name, data in entries:
            z.writestr(name, data)
        if not mimetype_first:
            z.writestr(mimetype[0], mimetype[1])
    return path
