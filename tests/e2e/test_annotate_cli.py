"""`clausegate review X.docx --annotate` as a person runs it (a real subprocess against the session's Prefect
server): the command prints the annotated copy's path, the .docx there has one comment on each finding (read back)
and the fallback wording where a finding deviates; `--text "…" --annotate` gets the HTML page with each finding
marked; without `--annotate` the command writes no copy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clausegate.review.annotate import readback
from clausegate.review.annotate.notes import fallback_wording, notes_for
from clausegate.review.playbook import load_playbook
from clausegate.review.schemas import Review
from tests.support.contracts import GATED_PAGES
from tools.cuad_to_docx import docx_bytes

ROOT = Path(__file__).resolve().parents[2]


def clausegate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clausegate.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=300, cwd=ROOT)


def review_in(folder: Path) -> Review:
    (report,) = folder.glob("*.json")
    return Review.model_validate(json.loads(report.read_text()))


@pytest.mark.slow
def test_review_annotate_writes_the_copy_it_prints(prefect_server, tmp_path):
    contract = tmp_path / "msa-cli.docx"
    contract.write_bytes(docx_bytes("\n".join(GATED_PAGES)))
    out = tmp_path / "reports"
    done = clausegate("review", str(contract), "--playbook", "payment-liability", "--out", str(out), "--annotate",
                      "--no-warm-start")
    assert done.returncode == 0, done.stdout + done.stderr
    review = review_in(out)
    assert review.clauses and review.annotated == f"{next(out.glob('*.json')).stem}.annotated.docx"
    printed = re.search(r"Annotated copy: (\S+)", done.stdout)
    assert printed and Path(printed.group(1)) == out / review.annotated, done.stdout
    notes = notes_for(review, fallback_wording(load_playbook("payment-liability").positions))
    count = readback.docx((out / review.annotated).read_bytes(), notes)
    assert count.exactly_one(notes) == [n.index for n in notes] and not count.wrong, count
    assert count.insertions == {n.index: 1 for n in notes if n.fallback}, count  # only where a finding deviates

    plain = tmp_path / "plain"
    done = clausegate("review", str(contract), "--playbook", "payment-liability", "--out", str(plain),
                      "--no-warm-start")
    assert done.returncode == 0 and "Annotated copy" not in done.stdout, done.stdout + done.stderr
    assert not list(plain.glob("*.annotated.*"))


@pytest.mark.slow
def test_review_text_annotate_writes_the_html_page(prefect_server, tmp_path):
    out = tmp_path / "text"
    done = clausegate("review", "--text", "\n".join(GATED_PAGES), "--playbook", "payment-liability", "--out",
                      str(out), "--annotate", "--no-warm-start")
    assert done.returncode == 0, done.stdout + done.stderr
    review = review_in(out)
    assert review.format == "text" and review.annotated and review.annotated.endswith(".annotated.html")
    page = (out / review.annotated).read_text()
    assert review.clauses and all(c.span for c in review.clauses) and "<mark " in page
    for n in range(1, len(review.clauses) + 1):
        assert f"ClauseGate #{n} ·" in page and f'id="finding-{n}"' in page  # its note, and marked in the text
