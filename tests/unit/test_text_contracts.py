"""Plain-text contracts (UTF-8 .txt / .md, a pasted clause) through the parse step's sniffing:
parts with offsets, a single clause as a valid review located by character span, the limits and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from clausegate.errors import DocumentError
from clausegate.review import assemble
from clausegate.review.document import formats
from clausegate.review.document.plain_text import cut_parts, is_text
from clausegate.review.document.sandbox import fingerprint
from clausegate.review.report import render_markdown

CLAUSE = ("Limitation of Liability. In no event shall either party's aggregate liability arising out of or related to "
          "this Agreement exceed the total fees paid by Customer in the twelve months preceding the claim.")


def parse(path: Path, **kwargs):
    return formats.parse_document(fingerprint(path), **kwargs)


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_a_single_clause_is_a_valid_review_located_by_character_span(tmp_path):
    text = "\ufeffNotes from the call:\r\n\r\n" + CLAUSE + "\r\n"
    doc = parse(write(tmp_path, "clause.txt", text.encode("utf-8")))
    assert doc.format == "text" and len(doc.pages) == 1 and doc.pages[0].start == 0
    cats = ["Cap on Liability", "Governing Law"]
    filtered = assemble.prefilter_step(doc, cats)
    review = assemble.assemble_review(doc, filtered, assemble.extract_step(filtered, cats), playbook="default",
                                      gated=[], protected=["Cap on Liability"])
    cap = next(c for c in review.clauses if c.category == "Cap on Liability")
    start, end = cap.span
    shown = doc.pages[0].text[start:end]
    # the quote is the clause's sentence (its run-in heading "Limitation of Liability." may be its section)
    assert " ".join(shown.split()) == " ".join(cap.text.split()) and shown.startswith(("Limitation", "In no event"))
    assert shown.endswith("preceding the claim.")
    assert cap.paragraph is None
    assert f"chars {start}–{end}" in render_markdown(review)
    assert "Format:** plain text" in render_markdown(review)


def test_form_feeds_and_long_texts_make_contiguous_parts(tmp_path):
    body = "\n\n".join(f"{i}. Clause {i} applies to every order placed under this Agreement." for i in range(200))
    doc = parse(write(tmp_path, "contract.md", "Cover page\f" + body))
    whole = "".join(p.text for p in doc.pages)
    assert doc.pages[0].text == "Cover page\n" and len(doc.pages) > 3
    assert all(whole[p.start:p.start + len(p.text)] == p.text for p in doc.pages)
    assert all(len(p.text) <= 3000 for p in doc.pages)
    assert cut_parts("  \n\nabc") == [(0, 7)]


@pytest.mark.parametrize(("data", "code"), [
    (b"   \n\n  ", "CG-TEXT-EMPTY"),
    (b"<!DOCTYPE html><html><body>Session expired</body></html>", "CG-PDF-NOT-PDF"),
    (b"{\\rtf1\\ansi Fees are due.}", "CG-PDF-NOT-PDF"),
    (b"\x00\x01\x02binary" * 50, "CG-PDF-NOT-PDF"),
    ("Fees are due.".encode("utf-16"), "CG-PDF-NOT-PDF"),
])
def test_what_is_not_a_text_contract_is_refused_with_a_code(tmp_path, data, code):
    with pytest.raises(DocumentError) as caught:
        parse(write(tmp_path, "x.txt", data))
    assert caught.value.code == code


def test_max_chars_caps_a_text(tmp_path):
    with pytest.raises(DocumentError) as caught:
        parse(write(tmp_path, "long.txt", CLAUSE * 10), max_chars=500)
    assert caught.value.code == "CG-TEXT-TOO-MUCH-TEXT"


def test_is_text_allows_a_character_cut_at_the_sniffing_window():
    data = ("é" * 40_000).encode("utf-8")  # 80,000 bytes: the 64 KiB window ends inside no character here
    assert is_text(data) and is_text(data[:65537])
    assert not is_text(b"") and not is_text(b"abc\x00def")


def test_stored_name_follows_the_sniffed_format():
    assert formats.stored_name("draft", "docx") == "draft.docx"
    assert formats.stored_name("draft.docx", "docx") == "draft.docx"
    assert formats.stored_name("notes.md", "text") == "notes.md"
    assert formats.stored_name("contract.pdf", "docx") == "contract.pdf.docx"


ANSI_TEXT = "\x1b[1;31mWARNING\x1b[0m \x1b[32mThe Supplier shall pay\x1b[0m the fees.\n" * 40  # terminal output


@pytest.mark.parametrize(("data", "looks_like"), [
    (b"\x00\x01\x02binary" * 50, "binary data"),
    (b"\xff\xfe not UTF-8 \xc3\x28" * 50, "not UTF-8"),
    (ANSI_TEXT.encode(), "control characters (terminal colour"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "PNG image"),
])
def test_bytes_of_no_known_format_say_what_is_read_not_only_pdf(tmp_path, data, looks_like):
    """Unrecognised bytes (and control-character text) are refused with what is read (.docx and UTF-8 text too),
    not only "export or print the contract to PDF"."""
    with pytest.raises(DocumentError) as caught:
        parse(write(tmp_path, "upload.bin", data))
    error = caught.value
    assert error.code == "CG-PDF-NOT-PDF"
    assert all(name in error.message for name in ("PDF", "Word .docx", "OpenDocument .odt", "UTF-8")), error.message
    assert looks_like in error.message, error.message
    assert "print the contract to PDF" not in error.hint
