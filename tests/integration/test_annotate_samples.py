"""The three sample contracts, reviewed offline (the product's steps) and annotated through the capped child: every
finding has exactly one annotation anchored on its quote and none is on other text, counted by reading the file back
(:mod:`clausegate.review.annotate.readback`).  As PDF (samples/), and as .docx (CUAD's text of the same contracts,
``tools/cuad_to_docx.py``: needs CUAD in ../shared, else those skip, saying so).  ``python bench/annotate.py`` runs
the same count on 20 more held-out CUAD contracts (docs/annotate.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.annotate import DOCX_DIR, SAMPLES, review_file
from clausegate.review.annotate import annotate, readback
from clausegate.review.annotate.notes import fallback_wording, notes_for
from tools import cuad

ROOT = Path(__file__).resolve().parents[2]


def count(path: Path) -> tuple[list, readback.Count, object]:
    book, data, document, review = review_file(path)
    found = notes_for(review, fallback_wording(book.positions))
    copy = annotate(review, data, document, book.positions, memory_mb=1024, timeout_seconds=120)
    assert copy is not None, f"{path.name}: no annotated copy"
    read = readback.docx if copy.suffix == ".docx" else readback.pdf
    return found, read(copy.data, found), copy


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_every_finding_of_a_sample_pdf_has_exactly_one_highlight_on_its_quote(sample: str):
    found, counted, copy = count(ROOT / "samples" / sample)
    assert found, "the sample has findings"
    assert counted.wrong == []
    assert counted.exactly_one(found) == [n.index for n in found], copy.skipped


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_every_finding_of_a_sample_docx_has_exactly_one_comment_on_its_quote(sample: str):
    if not cuad.cuad_available():
        pytest.skip(f"CUAD's text (for the .docx of {sample}) is not at {cuad.cuad_dir()}")
    from tools.cuad_to_docx import docx_path  # local import: writes the .docx on first use

    entry = {Path(e["pdf"]).stem: e for e in cuad.load_manifest()}[SAMPLES[sample]]
    found, counted, copy = count(docx_path(entry, DOCX_DIR))
    assert found and counted.wrong == []
    assert counted.exactly_one(found) == [n.index for n in found], copy.skipped
    deviating = [n.index for n in found if n.fallback]
    assert sorted(copy.inserted) == deviating and counted.insertions == {i: 1 for i in deviating}
