"""The annotated .docx opens in LibreOffice (headless) and converts to PDF with its comments (exported as PDF notes)
and the fallback wording's tracked insertion visible in the page text.

LibreOffice is a system package: when ``soffice`` is missing and this runs as root with apt-get, the set-up installs
``libreoffice-writer-nogui`` from the Debian registry; otherwise (or if that fails) the test skips, saying why.
``CLAUSEGATE_LIBREOFFICE_TESTS=required`` makes a missing LibreOffice a failure.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from pypdf import PdfReader

from clausegate.review import annotate as annotating
from clausegate.review.locate import place
from clausegate.review.positions import Position
from clausegate.review.schemas import Clause, GateReason, Page, ParsedDocument, PositionCheck, Review
from tools.cuad_to_docx import docx_bytes

pytestmark = pytest.mark.slow
PACKAGE = "libreoffice-writer-nogui"
EXPORT = 'pdf:writer_pdf_Export:{"ExportNotes":{"type":"boolean","value":"true"}}'
QUOTE = "The Supplier's liability under this Agreement shall be unlimited."
FALLBACK = "Each party's liability is capped at the fees paid in the twelve months before the claim."


def _install() -> str:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")):
        return "not root with apt-get, so the set-up cannot install it"
    done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", PACKAGE], capture_output=True,
                          text=True, timeout=1800)
    return "" if done.returncode == 0 else f"apt-get install {PACKAGE} failed: {done.stderr.strip()[-300:]}"


@pytest.fixture(scope="module")
def soffice() -> str:
    found = shutil.which("soffice") or shutil.which("libreoffice")
    why = "" if found else _install()
    found = found or shutil.which("soffice") or shutil.which("libreoffice")
    if found is None:
        message = f"LibreOffice headless is not installed ({PACKAGE}): {why or 'not found after installing'}"
        if os.environ.get("CLAUSEGATE_LIBREOFFICE_TESTS") == "required":
            pytest.fail(message)
        pytest.skip(message)
    return found


def annotated_docx() -> bytes:
    text = "\n".join(("MASTER SERVICES AGREEMENT", "1. Definitions. Fees means the fees in Schedule 1.",
                      f"8.2 {QUOTE} Each party shall bear its own costs.",
                      "9. Payment is due within thirty (30) days of the invoice."))
    data = docx_bytes(text)
    from clausegate.review.document.docx import extract  # local import: the reader, as the review runs it

    result = {k: v for k, v in extract(data, {"max_chars": 10 ** 6}).items() if k != "ok"}
    document = ParsedDocument.model_validate({**result, "contract_id": "3" * 64, "filename": "msa.docx"})
    assert isinstance(document.pages[0], Page)
    clauses, _, _ = place(document, [Clause(category="Uncapped Liability", text=QUOTE, pages=[1], confidence=0.9,
                                            source="offline")], [])
    review = Review(contract_id="3" * 64, filename="msa.docx", playbook="test", status="pending_decision",
                    extractor="offline", clauses=clauses, format="docx", gated_categories=["Uncapped Liability"],
                    gate_reasons=[GateReason(category="Uncapped Liability", why="found", detail="confidence 0.90")],
                    positions=[PositionCheck(category="Uncapped Liability", verdict="deviates", clause=0)])
    copy = annotating.annotate(review, data, document, [Position(category="Uncapped Liability", fallback=[FALLBACK])],
                               memory_mb=1024, timeout_seconds=60)
    assert copy is not None and copy.inserted == [0]
    return copy.data


def test_libreoffice_converts_it_with_the_comment_and_the_tracked_change_visible(soffice, tmp_path: Path):
    source = tmp_path / "annotated.docx"
    source.write_bytes(annotated_docx())
    done = subprocess.run([soffice, f"-env:UserInstallation=file://{tmp_path / 'profile'}", "--headless",
                           "--convert-to", EXPORT, "--outdir", str(tmp_path), str(source)],
                          capture_output=True, text=True, timeout=300)
    converted = tmp_path / "annotated.pdf"
    assert converted.is_file(), f"LibreOffice did not convert it: {done.stdout} {done.stderr}"
    reader = PdfReader(io.BytesIO(converted.read_bytes()))
    notes = [str(a.get_object().get("/Contents")) for p in reader.pages for a in p.get("/Annots") or []
             if a.get_object().get("/Subtype") == "/Text"]
    assert len([n for n in notes if n.startswith("ClauseGate #1")]) == 1
    assert "Uncapped Liability" in notes[0] and "deviates" in notes[0]
    with pdfium.PdfDocument(str(converted)) as pdf:
        text = " ".join(" ".join(pdf[i].get_textpage().get_text_range().split()) for i in range(len(pdf)))
    assert QUOTE in text and FALLBACK in text  # the insertion is shown (LibreOffice shows tracked changes)
