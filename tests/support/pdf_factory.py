"""Build real PDF files for tests (fpdf2 + pypdf + hand-written bytes).

Every function writes to ``path`` (creating parent folders) and returns it as a ``Path``.
The public, stable helper other tests use is::

    make_text_pdf(path, pages: list[str]) -> Path

Text is set in Helvetica with the Windows-1252 encoding, so ASCII, Latin-1 accents, €, curly
quotes, dashes and … round-trip through pypdf's ``extract_text()``; characters outside
Windows-1252 are written as "?".  Long lines wrap, so extracted text has line breaks where
the PDF wrapped.
"""

from __future__ import annotations

import io
import zlib
from pathlib import Path

from fpdf import FPDF
from pypdf import PdfWriter

__all__ = [
    "make_text_pdf",
    "make_image_pdf",
    "make_mixed_pdf",
    "make_encrypted_pdf",
    "make_empty_password_pdf",
    "make_truncated_pdf",
    "make_not_pdf",
    "make_zero_page_pdf",
    "make_huge_text_pdf",
    "make_slow_pdf",
    "make_memory_hungry_pdf",
    "make_hidden_text_pdf",
    "make_garbled_pdf",
    "HIDING_METHODS",
    "minimal_pdf",
]


def _prepare(path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def _cp1252(text: str) -> str:
    return text.encode("cp1252", "replace").decode("cp1252")


def _new_pdf() -> FPDF:
    pdf = FPDF(format="A4")
    pdf.core_fonts_encoding = "windows-1252"
    pdf.set_auto_page_break(True, margin=15)
    pdf.set_font("helvetica", size=11)
    return pdf


def _text_pdf_bytes(pages: list[str]) -> bytes:
    pdf = _new_pdf()
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 5, _cp1252(text))
    return bytes(pdf.output())


def make_text_pdf(path: str | Path, pages: list[str]) -> Path:
    """A PDF with one page per string in ``pages`` (a very long string may spill onto extra pages)."""
    if not pages:
        raise ValueError("make_text_pdf needs at least one page; use make_zero_page_pdf for an empty PDF")
    p = _prepare(path)
    p.write_bytes(_text_pdf_bytes(pages))
    return p


def _text_image_png(text: str, size: tuple[int, int] = (1240, 400)) -> bytes:
    """A white PNG with ``text`` drawn in black (large enough for a real tesseract to read)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    try:
        font = ImageFont.load_default(size=40)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    y = 40
    for line in text.splitlines() or [""]:
        draw.text((40, y), line, fill="black", font=font)
        y += 60
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _add_image_page(pdf: FPDF, text: str) -> None:
    pdf.add_page()
    pdf.image(io.BytesIO(_text_image_png(text)), x=10, y=10, w=190)


def make_image_pdf(
    path: str | Path, pages: int = 1, text: str = "GOVERNING LAW\nThis Agreement is governed by\nthe laws of Delaware."
) -> Path:
    """A scanned-style PDF: every page holds only an image (of ``text``), no text layer."""
    pdf = _new_pdf()
    for _ in range(pages):
        _add_image_page(pdf, text)
    p = _prepare(path)
    p.write_bytes(bytes(pdf.output()))
    return p


def make_mixed_pdf(path: str | Path, pages: list[str | None]) -> Path:
    """Text pages for strings, an image-only page for each ``None``."""
    pdf = _new_pdf()
    for text in pages:
        if text is None:
            _add_image_page(pdf, "SCANNED PAGE\nLiability is capped at the fees paid.")
        else:
            pdf.add_page()
            pdf.multi_cell(0, 5, _cp1252(text))
    p = _prepare(path)
    p.write_bytes(bytes(pdf.output()))
    return p


def _encrypt(path: str | Path, pages: list[str], user_password: str, owner_password: str, algorithm: str) -> Path:
    writer = PdfWriter(clone_from=io.BytesIO(_text_pdf_bytes(pages)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    p = _prepare(path)
    with p.open("wb") as fh:
        writer.write(fh)
    return p


def make_encrypted_pdf(
    path: str | Path,
    pages: list[str] | None = None,
    *,
    user_password: str = "secret",
    owner_password: str = "owner-secret",
    algorithm: str = "AES-256",
) -> Path:
    """A PDF that needs ``user_password`` to open (pypdf ``PdfWriter.encrypt``)."""
    return _encrypt(path, pages or ["Confidential supply agreement."], user_password, owner_password, algorithm)


def make_empty_password_pdf(
    path: str | Path, pages: list[str] | None = None, *, algorithm: str = "AES-128"
) -> Path:
    """An encrypted PDF whose user password is empty (opens in any viewer; owner password restricts editing)."""
    return _encrypt(path, pages or ["Payment is due within 30 days of invoice."], "", "owner-secret", algorithm)


def make_truncated_pdf(path: str | Path, fraction: float = 0.5) -> Path:
    """The first ``fraction`` of a valid multi-page PDF's bytes (an interrupted download)."""
    data = _text_pdf_bytes([f"Page {i} of a contract. " * 40 for i in range(1, 5)])
    p = _prepare(path)
    p.write_bytes(data[: int(len(data) * fraction)])
    return p


def make_not_pdf(path: str | Path, kind: str = "png") -> Path:
    """A file that is not a PDF, whatever its extension: kind = 'png', 'text', 'docx', 'html' or 'empty'."""
    if kind == "png":
        data = _text_image_png("not a pdf", (200, 60))
    elif kind == "text":
        data = b"This is a plain text contract, saved with a .pdf extension.\n" * 20
    elif kind == "docx":
        import zipfile

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("[Content_Types].xml", "<Types/>")
            archive.writestr("word/document.xml", "<w:document/>")
        data = buffer.getvalue()
    elif kind == "html":
        data = b"<!DOCTYPE html><html><body>Session expired, please log in.</body></html>"
    elif kind == "empty":
        data = b""
    else:
        raise ValueError(f"unknown kind {kind!r}")
    p = _prepare(path)
    p.write_bytes(data)
    return p


def minimal_pdf(objects: list[str | bytes], root: int = 1) -> bytes:
    """Hand-written PDF bytes: ``objects[i]`` becomes object i+1; a correct xref table and trailer are added."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        data = body if isinstance(body, bytes) else body.encode("latin-1")
        out += f"{number} 0 obj\n".encode() + data + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def make_zero_page_pdf(path: str | Path) -> Path:
    """A well-formed PDF whose page tree is empty: /Pages << /Kids [] /Count 0 >>."""
    p = _prepare(path)
    p.write_bytes(minimal_pdf(["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [] /Count 0 >>"]))
    return p


def make_huge_text_pdf(path: str | Path, pages: int = 10, chars_per_page: int = 3000) -> Path:
    """A text PDF with about ``pages * chars_per_page`` characters of text."""
    sentence = "The Supplier shall indemnify the Customer against all losses. "
    body = (sentence * (chars_per_page // len(sentence) + 1))[:chars_per_page]
    return make_text_pdf(path, [body] * pages)


def _single_stream_page_pdf(content: bytes) -> bytes:
    compressed = zlib.compress(content, 9)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed) + compressed + b"\nendstream"
    return minimal_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        stream,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ])


def make_slow_pdf(path: str | Path, operations: int = 300_000) -> Path:
    """A hostile one-page PDF: a tiny file whose compressed content stream holds ``operations`` text
    operations.  pypdf needs roughly 0.1 ms per operation (100 000 ≈ 10 s), so it trips time caps."""
    content = b"BT /F1 12 Tf 10 10 Td (x) Tj ET\n" * operations
    p = _prepare(path)
    p.write_bytes(_single_stream_page_pdf(content))
    return p


def make_memory_hungry_pdf(path: str | Path, megabytes: int = 15) -> Path:
    """A tiny one-page PDF whose content stream inflates to ``megabytes`` MB of one-glyph text objects
    (under the parser's 16 MB per-page inflate budget): every reader builds an object per operator, so
    parsing it needs many times ``megabytes`` (a memory-cap test; a single-stream bomb is
    :func:`make_flate_bomb_pdf`)."""
    operator = b"BT /F1 1 Tf 9 9 Td (x) Tj ET\n"
    content = operator * (megabytes * 1024 * 1024 // len(operator))
    p = _prepare(path)
    p.write_bytes(_single_stream_page_pdf(content))
    return p


def make_flate_bomb_pdf(path: str | Path, megabytes: int = 2048) -> Path:
    """A one-page PDF (about 1 KB per inflated MB) whose content stream inflates to
    ``megabytes`` MB of one text string: far over pypdf's 75 MB stream cap and any parser's memory cap.

    Built in a second: each 1 MB block is compressed after a full flush, so every block after the first has
    the same bytes and is repeated, not recompressed; the checksum is computed over the whole."""
    chunk = b"A" * (1 << 20)
    deflater = zlib.compressobj(9)
    head = deflater.compress(b"BT /F1 12 Tf 10 10 Td (" + chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    block = deflater.compress(chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    end = b") Tj ET\n"
    tail = deflater.compress(end) + deflater.flush()
    checksum = zlib.adler32(b"BT /F1 12 Tf 10 10 Td (")
    for _ in range(megabytes):
        checksum = zlib.adler32(chunk, checksum)
    checksum = zlib.adler32(end, checksum)
    compressed = head + block * (megabytes - 1) + tail[:-4] + checksum.to_bytes(4, "big")
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed) + compressed + b"\nendstream"
    p = _prepare(path)
    p.write_bytes(minimal_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        stream,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]))
    return p


# ------------------------------------------------------------------------------------ hostile text
def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", "replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _lines(text: str, width: int = 95) -> list[str]:
    import textwrap

    return [line for paragraph in text.split("\n") for line in (textwrap.wrap(paragraph, width) or [""])]


def _page_pdf(content: bytes, *, resources: str = "", extra: list[str | bytes] = (),
              font: list[str] | None = None) -> bytes:
    """One Letter page drawing ``content`` with /F1 (Helvetica, WinAnsi unless ``font`` gives objects 5.. )."""
    compressed = zlib.compress(content, 9)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed) + compressed + b"\nendstream"
    fonts = font or ["<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    return minimal_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        f"/Resources << /Font << /F1 5 0 R >> {resources} >> >>",
        stream,
        *fonts,
        *extra,
    ])


# How make_hidden_text_pdf hides its text: content-stream operators around "BT /F1 <size> Tf <x> <y> Td (text) Tj ET".
HIDING_METHODS = {
    "render-mode-3": dict(before=b"", in_bt=b"3 Tr"),  # invisible text (PDF 1.7 table 106)
    "render-mode-7": dict(before=b"", in_bt=b"7 Tr"),  # clip only, never painted
    "white-gray": dict(before=b"1 g"),  # white on the (white) page
    "white-rgb": dict(before=b"1 1 1 rg"),
    "white-cmyk": dict(before=b"0 0 0 0 k"),
    "black-on-black": dict(before=b"0 g 60 %(box_y)d 500 20 re f"),  # a black box, then black text on it
    "transparent": dict(before=b"/Hide gs"),  # ExtGState /ca 0
    "off-page": dict(x=72, y=-300),
    "off-page-right": dict(x=900, y=400),
    "clipped": dict(before=b"0 0 5 5 re W n"),  # a 5 pt clip in the corner
    "tiny": dict(size=0.4),  # 0.4 pt glyphs
    "small-2.5pt": dict(size=2.5),  # 2.5 pt glyphs: unreadable at 100 % (the shared threshold is 3 pt, as for a .docx)
    "tiny-matrix": dict(before=b"0.02 0 0 0.02 72 %(y)d cm", x=0, y=0),  # 11 pt text scaled to 0.22 pt
    "same-line": dict(same_line=True),  # visible and invisible runs inside one BT/ET (3 Tr between Tj)
    "in-form": dict(form=True),  # invisible text inside a form XObject the page draws
}


def make_hidden_text_pdf(path: str | Path, visible: str, hidden: str, how: str = "render-mode-3") -> Path:
    """A one-page PDF showing ``visible`` (Helvetica 11, wrapped) with ``hidden`` drawn after the first
    visible line in a way a reader cannot see: ``how`` is one of ``HIDING_METHODS``.  Text extractors
    that ignore the graphics state read both."""
    spec = HIDING_METHODS[how]
    lines = _lines(visible)
    y = 740
    hidden_y = y - 14
    parts: list[bytes] = []
    resources = "/ExtGState << /Hide << /Type /ExtGState /ca 0 /CA 0 >> >>"
    extra: list[str | bytes] = []
    for index, line in enumerate(lines):
        if spec.get("same_line") and index == 0:
            parts.append(b"BT /F1 11 Tf 72 %d Td %s Tj 3 Tr %s Tj 0 Tr ( end of line.) Tj ET"
                         % (y, _pdf_string(line + " "), _pdf_string(hidden + " ")))
        else:
            parts.append(b"BT /F1 11 Tf 72 %d Td %s Tj ET" % (y, _pdf_string(line)))
        y -= 14
        if index == 0:
            y -= 14  # the hidden line's slot
    if spec.get("form"):
        form = b"BT 3 Tr /F1 11 Tf 0 0 Td " + _pdf_string(hidden) + b" Tj ET"
        extra.append(b"<< /Type /XObject /Subtype /Form /BBox [0 0 500 20] /Resources << /Font << /F1 5 0 R >> >> "
                     b"/Length %d >>\nstream\n" % len(form) + form + b"\nendstream")
        resources += " /XObject << /Fm1 6 0 R >>"
        parts.insert(1, b"q 1 0 0 1 72 %d cm /Fm1 Do Q" % hidden_y)
    elif not spec.get("same_line"):
        before = (spec.get("before", b"").replace(b"%(y)d", b"%d" % hidden_y)
                  .replace(b"%(box_y)d", b"%d" % (hidden_y - 5)))
        x, hy = spec.get("x", 72), spec.get("y", hidden_y)
        size = spec.get("size", 11)
        parts.insert(1, b"q %s BT %s /F1 %s Tf %d %d Td %s Tj ET Q" % (
            before, spec.get("in_bt", b""), str(size).encode(), x, hy, _pdf_string(hidden)))
    p = _prepare(path)
    p.write_bytes(_page_pdf(b"\n".join(parts), resources=resources, extra=extra))
    return p


def make_garbled_pdf(path: str | Path, text: str, *, with_image: bool = False) -> Path:
    """A one-page PDF whose text is set in a subset TrueType font with Identity-H encoding and **no
    /ToUnicode map** (codes are glyph ids, as in many real exports): viewers draw the right glyphs, a
    text extractor gets mojibake (e.g. ``7KH\\x036XSSOLHU`` for "The Supplier").  ``with_image`` also
    draws a small image (a scanned page's picture), so OCR has something to read."""
    lines = _lines(text)
    parts = []
    y = 740
    for line in lines:
        codes = b"".join((3 if ch == " " else max(ord(ch) - 29, 1)).to_bytes(2, "big") for ch in line)
        parts.append(b"BT /F1 11 Tf 72 %d Td <%s> Tj ET" % (y, codes.hex().encode()))
        y -= 14
    font = [
        "<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+Arial /Encoding /Identity-H /DescendantFonts [6 0 R] >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+Arial /CIDSystemInfo << /Registry (Adobe) "
        "/Ordering (Identity) /Supplement 0 >> /FontDescriptor 7 0 R /DW 500 >>",
        "<< /Type /FontDescriptor /FontName /ABCDEF+Arial /Flags 4 /FontBBox [0 -200 1000 900] /ItalicAngle 0 "
        "/Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >>",
    ]
    resources, extra = "", []
    if with_image:
        png = _text_image_png("GOVERNING LAW", (200, 60))
        from PIL import Image

        image = Image.open(io.BytesIO(png)).convert("L")
        raw = zlib.compress(image.tobytes())
        extra.append(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                     b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
                     % (image.width, image.height, len(raw)) + raw + b"\nendstream")
        resources = "/XObject << /Im1 8 0 R >>"
        parts.append(b"q 200 0 0 60 72 100 cm /Im1 Do Q")
    p = _prepare(path)
    p.write_bytes(_page_pdf(b"\n".join(parts), resources=resources, extra=extra, font=font))
    return p
