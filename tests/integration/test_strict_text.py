"""Strict text mode (docs/security.md, *Contract text at rest*): no clause text in Prefect's database or an
unsealed file.

A real in-process review on the session Prefect server, once as today and once with
``CLAUSEGATE_STRICT_TEXT=true`` + ``CLAUSEGATE_SEAL_REPORTS=true``: the strict run's Markdown artifact (read back
from Prefect) and its report files hold none of the clause texts the first run found, the files are owner-only,
and the sealed full review next to the report gives the text back through ``clausegate report-text``.
"""

from __future__ import annotations

import json
import stat

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
from typer.testing import CliRunner

from clausegate.cli import app
from clausegate.review.redact import SEALED_TEXT
from tests.support.contracts import LIABILITY_PAGES
from tests.support.model_flow import playbook, review
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")

GATED = "[Uncapped Liability, Liquidated Damages, Cap on Liability]"


def artifact_markdown(flow_run_id) -> str:
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return "\n".join(str(a.data) for a in found if (a.key or "").startswith("review-"))


def snippets(texts) -> list[str]:
    """A 40-character piece of each clause text (what a leak would show, even cut for a table)."""
    return [" ".join(t.split())[:40] for t in texts]


def test_strict_text_keeps_clause_text_out_of_artifacts_and_reports(tmp_path, monkeypatch):
    pdf = make_text_pdf(tmp_path / "msa.pdf", LIABILITY_PAGES)
    book = playbook(tmp_path, "offline", high_risk=GATED)
    plain, _ = review(tmp_path, pdf, book, out="plain")
    texts = snippets(c.text for c in plain.result().clauses)
    assert texts and all(t in artifact_markdown(plain.state_details.flow_run_id) for t in texts[:1])

    monkeypatch.setenv("CLAUSEGATE_STRICT_TEXT", "true")
    monkeypatch.setenv("CLAUSEGATE_SEAL_REPORTS", "true")
    strict, _ = review(tmp_path, pdf, book, out="strict")
    assert strict.is_completed(), strict.message
    markdown = artifact_markdown(strict.state_details.flow_run_id)
    assert SEALED_TEXT in markdown
    folder = tmp_path / "strict"
    files = [p for p in folder.iterdir() if not p.name.endswith(".sealed")]
    assert {p.suffix for p in files} == {".json", ".md", ".ics"}  # the calendar: dates and the file name only
    for where, text in [("artifact", markdown), *((p.name, p.read_text()) for p in files)]:
        leaked = [t for t in texts if t in " ".join(text.split())]
        assert not leaked, f"clause text in the {where}: {leaked}"
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    report = json.loads(next(folder.glob("*.json")).read_text())
    assert {c["category"] for c in report["clauses"]} == {c.category for c in plain.result().clauses}

    (sealed,) = folder.glob("*.json.sealed")
    assert not any(t.encode() in sealed.read_bytes() for t in texts)
    out = CliRunner().invoke(app, ["report-text", str(sealed)])
    assert out.exit_code == 0, out.output
    assert all(t in " ".join(out.output.split()) for t in texts)
