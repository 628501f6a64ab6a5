"""The nightly batch writes an annotated copy by default: `clausegate batch` (the real batch job, in-process, on the
session's Prefect server) over two contracts and one the reader refuses leaves, next to each reviewed contract's
report, the annotated PDF its report names (a highlight on each finding, read back), and nothing for the refused
one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.review.annotate import readback
from clausegate.review.annotate.notes import notes_for
from clausegate.review.schemas import Review
from tests.support.contracts import BATCH_PAGES
from tests.support.pdf_factory import make_encrypted_pdf, make_text_pdf

PAGES = BATCH_PAGES
PLAYBOOK = """\
name: annotate-batch
description: no human gates (the batch's reviews complete)
categories: [Governing Law, Cap on Liability, Uncapped Liability]
"""


@pytest.mark.usefixtures("prefect_server")
def test_the_batch_annotates_every_reviewed_contract_and_never_a_refused_one(tmp_path):
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    for i in range(2):
        make_text_pdf(inbox / f"annotate-{i}.pdf", [f"Annotated batch contract {i}.", *PAGES])
    make_encrypted_pdf(inbox / "locked.pdf", PAGES)
    book = tmp_path / "annotate-batch.yaml"
    book.write_text(PLAYBOOK)
    result = CliRunner().invoke(app, ["batch", str(inbox), "--playbook", str(book), "--out", str(out), "--local"])
    assert result.exit_code == 1, result.output  # the locked one failed; the batch finished

    reports = {json.loads(p.read_text())["filename"]: p for p in out.glob("*.json")}
    assert set(reports) == {"annotate-0.pdf", "annotate-1.pdf", "locked.pdf"}, sorted(reports)
    for name in ("annotate-0.pdf", "annotate-1.pdf"):
        review = Review.model_validate_json(reports[name].read_text())
        assert review.clauses and review.annotated == f"{reports[name].stem}.annotated.pdf", review.annotated
        notes = notes_for(review)
        count = readback.pdf((out / review.annotated).read_bytes(), notes)
        assert count.exactly_one(notes) == [n.index for n in notes] and not count.wrong, count
    locked = Review.model_validate_json(reports["locked.pdf"].read_text())
    assert locked.status == "failed" and locked.annotated is None
    assert not list(out.glob(f"{reports['locked.pdf'].stem}.annotated.*"))
    assert len(list(out.glob("*.annotated.*"))) == 2
