"""`clausegate versions sign`: a decided version's signature is written to the audit log of a real Prefect server
(``version.signed``) and beside its report, and the version list and the Markdown report show it as signed."""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest
from typer.testing import CliRunner

from clausegate import audit
from clausegate.cli import app
from clausegate.cli.typer_app import console
from clausegate.review.versions.signing import read_signatures
from tests.support.waiting import wait_until

pytestmark = pytest.mark.usefixtures("prefect_server")


def _events(run_id: str) -> list:
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            return await audit.read(client, prefix=audit.PREFIX + "version.", flow_run_id=run_id)

    return asyncio.run(read())


def test_a_decided_version_is_signed_in_the_audit_log_and_shown_as_signed(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(console, "width", 220)
    run_id = str(uuid.uuid4())
    review = {"contract_id": "e" * 64, "filename": "acme-v2.docx", "status": "complete", "flow_run_id": run_id,
              "clauses": [{"category": "Parties", "text": "Acme Inc. and Beta LLC"}],
              "gated_categories": ["Cap on Liability"],
              "decisions": [{"gate": "g", "categories": ["Cap on Liability"], "decision": "approve"}]}
    report = tmp_path / "acme-v2.json"
    report.write_text(json.dumps(review))
    (tmp_path / "acme-v2.md").write_text("# Review: acme-v2.docx\n")
    os.utime(report, (1_000, 1_000))

    result = CliRunner().invoke(app, ["versions", "sign", run_id[:8], "--by", "Dana Lee", "--date", "2026-12-01",
                                      "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [signature] = read_signatures(report)
    assert (signature.signed_by, signature.signed_on.isoformat(), signature.flow_run_id) == (
        "Dana Lee", "2026-12-01", run_id)

    [event] = wait_until(lambda: _events(run_id), 30, what="the version.signed audit event", step=0.2)
    assert event.event == audit.PREFIX + "version.signed" and str(event.id) == signature.audit_event
    assert (event.payload["signed_by"], event.payload["signed_on"], event.payload["filename"]) == (
        "Dana Lee", "2026-12-01", "acme-v2.docx")

    listing = CliRunner().invoke(app, ["versions", "--out", str(tmp_path)])
    assert "signed (Dana Lee, 2026-12-01)" in listing.output, listing.output
    markdown = (tmp_path / "acme-v2.md").read_text()
    assert markdown.startswith("# Review: acme-v2.docx") and "## Version status: signed" in markdown
    assert "Signed by Dana Lee on 2026-12-01" in markdown and signature.audit_event in markdown

    # a countersignature adds a line; the section is written once
    again = CliRunner().invoke(app, ["versions", "sign", str(report), "--by", "Bo Beta", "--date", "2026-12-02",
                                     "--out", str(tmp_path)])
    assert again.exit_code == 0, again.output
    markdown = (tmp_path / "acme-v2.md").read_text()
    assert markdown.count("## Version status: signed") == 1 and "Signed by Bo Beta on 2026-12-02" in markdown
    assert [s.signed_by for s in read_signatures(report)] == ["Dana Lee", "Bo Beta"]
