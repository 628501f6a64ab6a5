"""Batch logic (clausegate/batch/__init__.py) and `clausegate batch` in local mode.

The planning/fan-out loop is tested with a scripted dispatcher (no Prefect); the local mode runs
the real contract-review flow in-process against the session's Prefect server.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from clausegate import batch
from tests.support.pdf_factory import make_encrypted_pdf, make_text_pdf

PAGES = [
    "MASTER SUPPLY AGREEMENT\nThis Master Supply Agreement is entered into by Acme Corp. and Widget Ltd.",
    "Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the "
    "State of New York, without regard to its conflict of laws principles.",
    "Limitation of Liability. In no event shall either party's aggregate liability arising out of or related "
    "to this Agreement exceed the total fees paid by Customer in the twelve months preceding the claim.",
]

NO_GATES_PLAYBOOK = """\
name: batch-test
description: test playbook without human gates (runs complete instead of waiting for a person)
categories: [Governing Law, Cap on Liability, Uncapped Liability, Anti-Assignment]
"""


def playbook_file(tmp_path: Path) -> str:
    path = tmp_path / "batch-test.yaml"
    path.write_text(NO_GATES_PLAYBOOK)
    return str(path)


def contracts(folder: Path, n: int) -> list[Path]:
    return [make_text_pdf(folder / f"contract-{i:02d}.pdf", [f"Contract number {i}.", *PAGES]) for i in range(n)]


def fake_report(out: Path, pdf: Path, playbook: str, status: str) -> None:
    from clausegate.review.document.sandbox import fingerprint

    src = fingerprint(pdf)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{pdf.stem}-{src.contract_id[:12]}-{playbook}.json").write_text(json.dumps({
        "contract_id": src.contract_id, "filename": src.filename, "playbook": playbook, "status": status,
        "clauses": [], "cost": {"eur": 0.0}}))


# ------------------------------------------------------------------------------ sources
def test_folder_source_finds_pdfs_recursively_and_skips_hidden(tmp_path):
    make_text_pdf(tmp_path / "a.pdf", ["A"])
    make_text_pdf(tmp_path / "sub" / "b.PDF", ["B"])
    make_text_pdf(tmp_path / ".hidden" / "c.pdf", ["C"])
    (tmp_path / "notes.txt").write_text("not a contract")
    found = batch.load_source(str(tmp_path)).discover()
    assert [p.name for p in found] == ["a.pdf", "b.PDF"]
    assert batch.load_source(f"folder:{tmp_path}").discover() == found


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(batch.BatchError) as info:
        batch.load_source(tmp_path / "nope").discover()
    assert info.value.code == batch.SOURCE_ERROR and "does not exist" in str(info.value)


def test_pluggable_python_source(tmp_path, monkeypatch):
    make_text_pdf(tmp_path / "x.pdf", ["X"])
    module = tmp_path / "my_source.py"
    module.write_text(
        "from pathlib import Path\n"
        f"class Inbox:\n    name = 'custom'\n    def discover(self):\n        return [Path({str(tmp_path / 'x.pdf')!r})]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = batch.load_source("python:my_source:Inbox")
    assert source.name == "custom" and [p.name for p in source.discover()] == ["x.pdf"]
    with pytest.raises(batch.BatchError):
        batch.load_source("python:my_source:Missing")


def test_list_source_reads_a_manifest(tmp_path):
    files = contracts(tmp_path / "in", 2)
    todo, _ = batch.plan_batch(files, playbook="p", out_dir=tmp_path / "out")
    manifest = batch.write_manifest(tmp_path / "m", "chunk-0", todo)
    assert batch.load_source(f"list:{manifest}").discover() == [Path(c.path) for c in todo]
    with pytest.raises(batch.BatchError):
        batch.load_source(f"list:{tmp_path / 'missing.txt'}").discover()


# ------------------------------------------------------------------------------ planning
def test_plan_skips_reviewed_duplicates_in_flight_and_retries_failed(tmp_path):
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    a, b, c, d, e = contracts(inbox, 5)
    (inbox / "copy-of-a.pdf").write_bytes(a.read_bytes())
    fake_report(out, a, "p", "complete")          # reviewed -> skipped
    fake_report(out, b, "p", "failed")            # failed last time -> reviewed again
    fake_report(out, c, "other", "complete")      # another playbook -> still to review
    fake_report(out, e, "p", "pending_decision")  # its gate could not ask (no deployment) -> ask now
    from clausegate.review.document.sandbox import fingerprint

    in_flight = {fingerprint(d).contract_id[:16]: "Suspended"}
    files = batch.load_source(inbox).discover()
    todo, rows = batch.plan_batch(files, playbook="p", out_dir=out, in_flight=in_flight)
    assert sorted(c_.filename for c_ in todo) == ["contract-01.pdf", "contract-02.pdf", "contract-04.pdf"]
    by_file = {r.file: r for r in rows}
    assert by_file["contract-00.pdf"].status == "skipped"
    assert by_file["copy-of-a.pdf"].status == "duplicate" or by_file["contract-00.pdf"].status == "duplicate"
    assert by_file["contract-03.pdf"].status == "in-flight" and by_file["contract-03.pdf"].gates_waiting == 1

    todo, rows = batch.plan_batch(files, playbook="p", out_dir=out, retry_failed=False, limit=2)
    assert [c_.filename for c_ in todo] == ["contract-02.pdf", "contract-03.pdf"]  # b: failed, no retry; limit 2
    assert any(r.file == "contract-01.pdf" and r.status == "skipped" for r in rows)


def test_plan_reports_unreadable_files_without_submitting_them(tmp_path):
    big = make_text_pdf(tmp_path / "big.pdf", ["x " * 5000])
    todo, rows = batch.plan_batch([big], playbook="p", out_dir=tmp_path / "out", max_file_mb=0.0001)
    assert todo == [] and rows[0].status == "not-submitted" and rows[0].error_code == "CG-PDF-TOO-LARGE"


# ------------------------------------------------------------------------------ the fan-out loop
class ScriptedDispatcher:
    """Finishes each contract after ``delay`` s; scripted failures per file name."""

    mode = "test"

    def __init__(self, delay=0.05, fail_start=(), fail_run=(), wait_gate=(), poll_errors=0):
        self.delay, self.fail_start, self.fail_run, self.wait_gate = delay, set(fail_start), set(fail_run), set(wait_gate)
        self.poll_errors = poll_errors
        self.started: dict[int, tuple[batch.Candidate, float]] = {}
        self.max_open = 0
        self.closed = False
        self._n = 0

    def start(self, candidate):
        if candidate.filename in self.fail_start:
            raise RuntimeError("API said no")
        self._n += 1
        self.started[self._n] = (candidate, time.monotonic())
        self.max_open = max(self.max_open, len(self.started))
        return self._n

    def poll(self, tokens, timeout):
        if self.poll_errors:
            self.poll_errors -= 1
            raise ConnectionError("server blinked")
        time.sleep(timeout)
        done = {}
        for token in tokens:
            candidate, t0 = self.started[token]
            if time.monotonic() - t0 >= self.delay:
                del self.started[token]
                name = candidate.filename
                if name in self.fail_run:
                    state, msg, review = "FAILED", "CG-PDF-ENCRYPTED at step 'parse': report x", None
                elif name in self.wait_gate:
                    state, msg, review = "PAUSED", "", None
                else:
                    state, msg, review = "COMPLETED", "", {"status": "complete", "clauses": [{}, {}], "cost": {"eur": 0.01}}
                done[token] = batch.outcome_from_state(candidate, state_type=state, state_name=state.title(),
                                                       message=msg, review=review)
        return done

    def close(self):
        self.closed = True


def candidates(n: int) -> list[batch.Candidate]:
    return [batch.Candidate(path=f"/x/c{i}.pdf", filename=f"c{i}.pdf", contract_id=f"{i:064x}") for i in range(n)]


def test_run_batch_limits_in_flight_and_survives_failures():
    dispatcher = ScriptedDispatcher(fail_start={"c1.pdf"}, fail_run={"c2.pdf"}, wait_gate={"c3.pdf"}, poll_errors=2)
    events = []
    rows = batch.run_batch(candidates(12), dispatcher, max_in_flight=3, poll_seconds=0.01,
                           on_progress=lambda event, c, r: events.append(event))
    assert dispatcher.max_open <= 3 and dispatcher.closed
    by_file = {r.file: r for r in rows}
    assert len(rows) == 12
    assert by_file["c1.pdf"].status == "not-submitted" and by_file["c1.pdf"].error_code == batch.SUBMIT_FAILED
    assert by_file["c2.pdf"].status == "failed" and by_file["c2.pdf"].error_code == "CG-PDF-ENCRYPTED"
    assert by_file["c3.pdf"].status == "waiting" and by_file["c3.pdf"].gates_waiting == 1
    assert sum(r.status == "reviewed" for r in rows) == 9
    assert events.count("poll-error") == 2

    summary = batch.BatchSummary(source="x", playbook="p", mode="local", started_at=batch.datetime.now(batch.timezone.utc),
                                 rows=rows)
    t = summary.totals
    assert (t.reviewed, t.failed, t.waiting, t.clauses, t.gates_waiting) == (9, 2, 1, 18, 1)
    assert t.cost_eur == pytest.approx(0.09)


def test_run_batch_timeout_marks_the_rest_unfinished():
    dispatcher = ScriptedDispatcher(delay=60)
    rows = batch.run_batch(candidates(5), dispatcher, max_in_flight=2, poll_seconds=0.05, timeout_seconds=0.2)
    assert [r.status for r in rows] == ["unfinished"] * 5
    assert {r.error_code for r in rows} == {batch.BATCH_TIMEOUT}


def test_outcome_mapping_uses_run_state_and_report():
    c = candidates(1)[0]
    crashed = batch.outcome_from_state(c, state_type="CRASHED", state_name="Crashed", message="process killed", review=None)
    assert crashed.status == "failed" and crashed.error_code == batch.RUN_CRASHED
    failed = batch.outcome_from_state(c, state_type="FAILED", state_name="Failed", message="boom", review=None)
    assert failed.error_code == batch.RUN_FAILED
    from_report = batch.outcome_from_state(c, state_type="FAILED", state_name="Failed", message="",
                                           review={"status": "failed", "failure": {"code": "CG-PDF-NO-TEXT"}})
    assert from_report.error_code == "CG-PDF-NO-TEXT"
    pending = batch.outcome_from_state(c, state_type="COMPLETED", state_name="Completed", message="",
                                       review={"status": "pending_decision", "gated_categories": ["A", "B"], "clauses": []})
    assert pending.status == "reviewed" and pending.gates_waiting == 2


def test_summary_files(tmp_path):
    rows = [batch.ContractOutcome(file="a.pdf", status="reviewed", review_status="complete", clauses=3, cost_eur=0.5),
            batch.ContractOutcome(file="b.pdf", status="failed", error_code="CG-PDF-ENCRYPTED"),
            batch.ContractOutcome(file="c.pdf", status="waiting", gates_waiting=1, clauses=2)]
    summary = batch.BatchSummary(source="inbox", playbook="p", mode="deployments",
                                 started_at=batch.datetime(2026, 1, 1, tzinfo=batch.timezone.utc),
                                 finished_at=batch.datetime(2026, 1, 1, 0, 1, tzinfo=batch.timezone.utc), rows=rows)
    csv_path, json_path = batch.write_summary(summary, tmp_path)
    table = list(csv.DictReader(csv_path.open()))
    assert [r["file"] for r in table] == ["a.pdf", "b.pdf", "c.pdf", "TOTAL"]
    assert table[1]["error_code"] == "CG-PDF-ENCRYPTED" and table[3]["clauses"] == "5"
    data = json.loads(json_path.read_text())
    assert data["totals"]["reviewed"] == 1 and data["totals"]["failed"] == 1 and data["totals"]["gates_waiting"] == 1
    assert data["totals"]["contracts_per_minute"] == 3.0
    md = batch.summary_markdown(summary)
    assert "CG-PDF-ENCRYPTED" in md and "1 waiting at a gate" in md
    assert batch.table_rows(summary)[2]["gates waiting"] == 1


# ------------------------------------------------------------------------------ local mode, real flow
@pytest.mark.usefixtures("prefect_server")
def test_local_batch_reviews_skips_and_survives_a_broken_pdf(tmp_path):
    from typer.testing import CliRunner

    from clausegate.cli import app

    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    contracts(inbox, 2)
    make_encrypted_pdf(inbox / "locked.pdf", PAGES)
    book = playbook_file(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["batch", str(inbox), "--playbook", book, "--out", str(out), "--local", "--workers", "2"])
    assert result.exit_code == 1, result.output  # one contract failed: non-zero, but the batch finished
    data = json.loads(next((out / "batches").glob("*.json")).read_text())
    by_file = {r["file"]: r for r in data["rows"]}
    assert by_file["locked.pdf"]["status"] == "failed" and by_file["locked.pdf"]["error_code"] == "CG-PDF-ENCRYPTED"
    for name in ("contract-00.pdf", "contract-01.pdf"):
        assert by_file[name]["status"] == "reviewed" and by_file[name]["clauses"] >= 1
    assert data["totals"]["reviewed"] == 2 and data["totals"]["failed"] == 1

    # Second night: the two reviewed contracts are skipped by content hash; the failed one is tried again.
    for old in (out / "batches").iterdir():
        old.unlink()
    result = runner.invoke(app, ["batch", str(inbox), "--playbook", book, "--out", str(out), "--local"])
    data = json.loads(next((out / "batches").glob("*.json")).read_text())
    statuses = {r["file"]: r["status"] for r in data["rows"]}
    assert statuses == {"contract-00.pdf": "skipped", "contract-01.pdf": "skipped", "locked.pdf": "failed"}
