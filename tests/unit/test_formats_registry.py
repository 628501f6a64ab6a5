"""The one format table (clausegate/review/document/registry.py): the type Literals are its rows,
and the places that judge bytes (the parse's sniff, the inbox, e-mail attachments, `clausegate review -`, the batch
folder, the sandboxed child's dispatch) give one answer for one file."""

from __future__ import annotations

import importlib
import io
import sys
import zipfile
from pathlib import Path
from typing import get_args

import pytest

from clausegate.batch.sources import FolderSource
from clausegate.cli.review_input import review_input
from clausegate.errors import ClauseGateError, DocumentError
from clausegate.inbox import email_intake
from clausegate.inbox.kinds import ContentProbe, kind_of
from clausegate.review.document import formats, registry
from clausegate.review.schemas import DocumentFormat
from tests.support import pdf_factory
from tests.support.messages import attach, docx_bytes, eml_bytes, message

ODT_XML = ('<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
           '<text:p>{}</text:p></office:text></office:body></office:document-content>')
LIMITS = email_intake.MessageLimits(max_upload_bytes=10 << 20, max_upload_mb=10, max_attachments=10)
CLAUSE = "The Supplier shall deliver the goods on time."


def odt_bytes(text: str) -> bytes:
    """A minimal .odt (tests/unit/test_odt.py builds fuller ones): the stored mimetype first, then content.xml."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), registry.ODT_MIMETYPE, compress_type=zipfile.ZIP_STORED)
        z.writestr("content.xml", ODT_XML.format(text))
    return buffer.getvalue()


@pytest.fixture
def samples(tmp_path) -> dict[str, bytes]:
    """One file of each contract format, and bytes of none."""
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("data.csv", "a,b\n")
    return {"pdf": pdf_factory.make_text_pdf(tmp_path / "a.pdf", [CLAUSE]).read_bytes(),
            "docx": docx_bytes([CLAUSE]),
            "odt": odt_bytes(CLAUSE),
            "text": CLAUSE.encode(), "zip": zipped.getvalue(), "png": b"\x89PNG\r\n\x1a\n" + b"\0" * 64}


def test_the_format_literals_are_the_rows_of_the_table():
    assert set(get_args(registry.FormatName)) == set(registry.CONTRACT_FORMATS)
    assert set(get_args(registry.Kind)) == set(registry.FORMATS)
    assert set(get_args(DocumentFormat)) == set(registry.CONTRACT_FORMATS)  # the review's schema
    assert [row.name for row in registry.ROWS if row.envelope] == ["eml"]  # an e-mail is no contract format


def test_every_parsed_format_has_a_parser_the_child_can_import():
    for name in registry.CONTRACT_FORMATS:
        row = registry.FORMATS[name]
        if row.parser is None:
            assert name == "text"  # read in the parent
            continue
        module, function = registry.parser(name)
        assert callable(getattr(importlib.import_module(module), function))
    with pytest.raises(ValueError):
        registry.parser("eml")


@pytest.mark.parametrize("name", ["upload", "upload.pdf", "upload.docx", "upload.odt", "upload.txt"])
def test_the_inbox_and_the_parse_agree_on_every_file(samples, name):
    """With the whole file at hand, the inbox's kind is the parse's format, or both refuse it."""
    for what, data in samples.items():
        try:
            parsed = formats.sniff(name, data)
        except DocumentError:
            parsed = None
        try:
            taken = kind_of(name, ContentProbe.of(data), data)
        except ClauseGateError:
            taken = None
        if parsed is None or taken is None:
            # a name that claims a ZIP format keeps a ZIP the parse refuses (the parse says why); text named .pdf is
            # refused at the inbox only
            assert (parsed, taken) in ((None, None), (None, "docx"), (None, "odt"), ("text", None)), (what, name)
        else:
            assert taken == parsed, (what, name)


def test_the_batch_folder_picks_every_folder_format_and_no_text(tmp_path):
    for name in ("c.pdf", "c.docx", "c.odt", "upper.ODT", "notes.txt", "README.md"):
        (tmp_path / name).write_bytes(b"x")
    found = sorted(p.suffix.lower() for p in FolderSource(tmp_path).discover())
    assert found == [".docx", ".odt", ".odt", ".pdf"]  # upper.ODT too; no .txt, no .md


@pytest.mark.parametrize("fmt", ["pdf", "docx", "odt", "text"])
def test_piped_bytes_get_their_formats_suffix(monkeypatch, samples, fmt):
    class Stdin:
        buffer = io.BytesIO(samples[fmt])

    monkeypatch.setattr(sys, "stdin", Stdin)
    with review_input(Path("-"), None) as path:
        assert path.suffix == registry.FORMATS[fmt].suffixes[0]
        assert formats.sniff(path.name, path.read_bytes()) == fmt


def test_e_mail_attachments_are_the_tables_attachment_formats(samples):
    msg = message("Drafts", "See the attached drafts.")
    attach(msg, samples["pdf"], "draft.pdf")
    attach(msg, samples["docx"], "draft.docx", registry.FORMATS["docx"].mime_types[0])
    attach(msg, samples["odt"], "draft.odt", "application/vnd.oasis.opendocument.text")
    parsed = email_intake.read_message(eml_bytes(msg), LIMITS)
    kinds = sorted(d.kind for d in parsed.documents if d.part != "body")
    assert kinds == sorted(k for k in ("pdf", "docx", "odt") if k in registry.ATTACHMENT_FORMATS)
    skipped = [n.message for n in parsed.skipped if n.filename == "draft.odt"]
    assert ("odt" in registry.ATTACHMENT_FORMATS) == (not skipped)
    assert all("PDF and Word .docx" in s for s in skipped)
