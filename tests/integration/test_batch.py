"""Batch logic (clausegate/batch/) and `clausegate batch` (the batch job, clausegate/pipeline/batch.py).

The planning/fan-out loop is tested with a scripted dispatcher (no Prefect); the CLI runs the real batch
job in-process against the session's Prefect server: reviews as tasks of one nightly-batch run.
"""

from __future__ import annotations

import csv
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clausegate.batch.claims import CLAIMS_LINE, Claims, claims_of_manifest
from clausegate.batch.dispatch import BATCH_TIMEOUT, SUBMIT_FAILED, TaskDispatcher, outcome_from_state, run_batch
from clausegate.batch.plan import Candidate, ContractOutcome, plan_batch
from clausegate.batch.sources import SOURCE_ERROR, BatchError, load_source, write_manifest
from clausegate.batch.summary import BatchSummary, summary_markdown, table_rows, write_summary
from clausegate.cli import app
from clausegate.pipeline.batch import run_count
from clausegate.review.document.sandbox import fingerprint
from clausegate.runs.states import RUN_CRASHED, RUN_FAILED
from tests.support.contracts import BATCH_PAGES
from tests.support.flow_runs import prefect_log_records, review_artifact_keys
from tests.support.pdf_factory import make_encrypted_pdf, make_text_pdf

PAGES = BATCH_PAGES

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
    found = load_source(str(tmp_path)).discover()
    assert [p.name for p in found] == ["a.pdf", "b.PDF"]
    assert load_source(f"folder:{tmp_path}").discover() == found


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(BatchError) as info:
        load_source(tmp_path / "nope").discover()
    assert info.value.code == SOURCE_ERROR and "does not exist" in str(info.value)


def test_pluggable_python_source(tmp_path, monkeypatch):
    make_text_pdf(tmp_path / "x.pdf", ["X"])
    module = tmp_path / "my_source.py"
    module.write_text(
        "from pathlib import Path\n"
        "class Inbox:\n    name = 'custom'\n    def discover(self):\n"
        f"        return [Path({str(tmp_path / 'x.pdf')!r})]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = load_source("python:my_source:Inbox")
    assert source.name == "custom" and [p.name for p in source.discover()] == ["x.pdf"]
    with pytest.raises(BatchError):
        load_source("python:my_source:Missing")


def test_list_source_reads_a_manifest(tmp_path):
    files = contracts(tmp_path / "in", 2)
    todo, _ = plan_batch(files, playbook="p", out_dir=tmp_path / "out")
    manifest = write_manifest(tmp_path / "m", "chunk-0", [c.path for c in todo])
    assert load_source(f"list:{manifest}").discover() == [Path(c.path) for c in todo]
    with pytest.raises(BatchError):
        load_source(f"list:{tmp_path / 'missing.txt'}").discover()


# ------------------------------------------------------------------------------ planning
def test_plan_skips_reviewed_duplicates_in_flight_and_retries_failed(tmp_path):
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    a, b, c, d, e = contracts(inbox, 5)
    (inbox / "copy-of-a.pdf").write_bytes(a.read_bytes())
    fake_report(out, a, "p", "complete")          # reviewed -> skipped
    fake_report(out, b, "p", "failed")            # failed last time -> reviewed again
    fake_report(out, c, "other", "complete")      # another playbook -> still to review
    fake_report(out, e, "p", "pending_decision")  # its gate could not ask (no deployment) -> ask now
    in_flight = {fingerprint(d).contract_id[:16]: "Suspended"}
    files = load_source(inbox).discover()
    todo, rows = plan_batch(files, playbook="p", out_dir=out, in_flight=in_flight)
    assert sorted(c_.filename for c_ in todo) == ["contract-01.pdf", "contract-02.pdf", "contract-04.pdf"]
    by_file = {r.file: r for r in rows}
    assert by_file["contract-00.pdf"].status == "skipped"
    assert by_file["copy-of-a.pdf"].status == "duplicate" or by_file["contract-00.pdf"].status == "duplicate"
    assert by_file["contract-03.pdf"].status == "in-flight" and by_file["contract-03.pdf"].gates_waiting == 1

    todo, rows = plan_batch(files, playbook="p", out_dir=out, retry_failed=False, limit=2)
    assert [c_.filename for c_ in todo] == ["contract-02.pdf", "contract-03.pdf"]  # b: failed, no retry; limit 2
    assert any(r.file == "contract-01.pdf" and r.status == "skipped" for r in rows)


def test_plan_reports_unreadable_files_without_submitting_them(tmp_path):
    big = make_text_pdf(tmp_path / "big.pdf", ["x " * 5000])
    todo, rows = plan_batch([big], playbook="p", out_dir=tmp_path / "out", max_file_mb=0.0001)
    assert todo == [] and rows[0].status == "not-submitted" and rows[0].error_code == "CG-PDF-TOO-LARGE"


# ------------------------------------------------------------------------------ the fan-out loop
class ScriptedDispatcher:
    """Finishes each contract after ``delay`` s; scripted failures per file name."""

    def __init__(self, delay=0.05, fail_start=(), fail_run=(), wait_gate=(), poll_errors=0):
        self.delay, self.fail_start, self.fail_run = delay, set(fail_start), set(fail_run)
        self.wait_gate = set(wait_gate)
        self.poll_errors = poll_errors
        self.started: dict[int, tuple[Candidate, float]] = {}
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
                    state, msg = "COMPLETED", ""
                    review = {"status": "complete", "clauses": [{}, {}], "cost": {"eur": 0.01}}
                done[token] = outcome_from_state(candidate, state_type=state, state_name=state.title(),
                                                       message=msg, review=review)
        return done

    def close(self):
        self.closed = True


def candidates(n: int) -> list[Candidate]:
    return [Candidate(path=f"/x/c{i}.pdf", filename=f"c{i}.pdf", contract_id=f"{i:064x}") for i in range(n)]


def test_run_batch_limits_in_flight_and_survives_failures():
    dispatcher = ScriptedDispatcher(fail_start={"c1.pdf"}, fail_run={"c2.pdf"}, wait_gate={"c3.pdf"}, poll_errors=2)
    events = []
    rows = run_batch(candidates(12), dispatcher, max_in_flight=3, poll_seconds=0.01,
                           on_progress=lambda event, c, r: events.append(event))
    assert dispatcher.max_open <= 3 and dispatcher.closed
    by_file = {r.file: r for r in rows}
    assert len(rows) == 12
    assert by_file["c1.pdf"].status == "not-submitted" and by_file["c1.pdf"].error_code == SUBMIT_FAILED
    assert by_file["c2.pdf"].status == "failed" and by_file["c2.pdf"].error_code == "CG-PDF-ENCRYPTED"
    assert by_file["c3.pdf"].status == "waiting" and by_file["c3.pdf"].gates_waiting == 1
    assert sum(r.status == "reviewed" for r in rows) == 9
    assert events.count("poll-error") == 2

    summary = BatchSummary(source="x", playbook="p", started_at=datetime.now(UTC),
                                 rows=rows)
    t = summary.totals
    assert (t.reviewed, t.failed, t.waiting, t.clauses, t.gates_waiting) == (9, 2, 1, 18, 1)
    assert t.cost_eur == pytest.approx(0.09)


def test_run_batch_timeout_marks_the_rest_unfinished():
    dispatcher = ScriptedDispatcher(delay=60)
    rows = run_batch(candidates(5), dispatcher, max_in_flight=2, poll_seconds=0.05, timeout_seconds=0.2)
    assert [r.status for r in rows] == ["unfinished"] * 5
    assert {r.error_code for r in rows} == {BATCH_TIMEOUT}


def test_runs_sharing_a_list_review_each_contract_once_and_none_waits_for_a_fixed_share(tmp_path):
    """A batch run and its chunk runs go through the same list; each contract goes to the first claim
    (clausegate/batch/claims.py).  A run that starts late takes only what is left."""
    todo = [c.model_copy(update={"contract_id": f"{i:02d}" * 32}) for i, c in enumerate(candidates(12))]
    manifest = write_manifest(tmp_path, "chunk-x", [c.path for c in todo], header=f"{CLAIMS_LINE}{tmp_path / 'cl'}")
    assert load_source(f"list:{manifest}").discover() == [Path(c.path) for c in todo]  # the header is no path
    assert claims_of_manifest(manifest) == tmp_path / "cl" and claims_of_manifest(tmp_path / "none.txt") is None
    early, late = Claims(tmp_path / "cl", "run-early"), Claims(tmp_path / "cl", "run-late")
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(run_batch, todo, ScriptedDispatcher(delay=0.05), max_in_flight=2, poll_seconds=0.01,
                            claim=lambda c: early.take(c.contract_id))
        time.sleep(0.2)  # the chunk run starts late
        second = pool.submit(run_batch, todo, ScriptedDispatcher(delay=0.05), max_in_flight=2, poll_seconds=0.01,
                             claim=lambda c: late.take(c.contract_id))
        rows_early, rows_late = first.result(), second.result()
    assert rows_early and rows_late  # both worked; together exactly once each
    assert sorted(r.file for r in rows_early + rows_late) == sorted(c.filename for c in todo)
    assert len(rows_early) > len(rows_late)
    owners = early.owners()
    assert {r.contract_id for r in rows_early} == {k for k, v in owners.items() if v == "run-early"}
    assert {r.contract_id for r in rows_late} == {k for k, v in owners.items() if v == "run-late"}


def test_outcome_mapping_uses_run_state_and_report():
    c = candidates(1)[0]
    crashed = outcome_from_state(c, state_type="CRASHED", state_name="Crashed", message="process killed", review=None)
    assert crashed.status == "failed" and crashed.error_code == RUN_CRASHED
    failed = outcome_from_state(c, state_type="FAILED", state_name="Failed", message="boom", review=None)
    assert failed.error_code == RUN_FAILED
    from_report = outcome_from_state(c, state_type="FAILED", state_name="Failed", message="",
                                           review={"status": "failed", "failure": {"code": "CG-PDF-NO-TEXT"}})
    assert from_report.error_code == "CG-PDF-NO-TEXT"
    pending = outcome_from_state(c, state_type="COMPLETED", state_name="Completed", message="",
                                 review={"status": "pending_decision", "gated_categories": ["A", "B"], "clauses": []})
    assert pending.status == "reviewed" and pending.gates_waiting == 2


def test_summary_files(tmp_path):
    rows = [ContractOutcome(file="a.pdf", status="reviewed", review_status="complete", clauses=3, cost_eur=0.5),
            ContractOutcome(file="b.pdf", status="failed", error_code="CG-PDF-ENCRYPTED"),
            ContractOutcome(file="c.pdf", status="waiting", gates_waiting=1, clauses=2)]
    summary = BatchSummary(source="inbox", playbook="p",
                                 started_at=datetime(2026, 1, 1, tzinfo=UTC),
                                 finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC), rows=rows)
    csv_path, json_path = write_summary(summary, tmp_path)
    table = list(csv.DictReader(csv_path.open()))
    assert [r["file"] for r in table] == ["a.pdf", "b.pdf", "c.pdf", "TOTAL"]
    assert table[1]["error_code"] == "CG-PDF-ENCRYPTED" and table[3]["clauses"] == "5"
    data = json.loads(json_path.read_text())
    assert data["totals"]["reviewed"] == 1 and data["totals"]["failed"] == 1 and data["totals"]["gates_waiting"] == 1
    assert data["totals"]["contracts_per_minute"] == 3.0
    md = summary_markdown(summary)
    assert "CG-PDF-ENCRYPTED" in md and "1 waiting at a gate" in md
    assert table_rows(summary)[2]["gates waiting"] == 1


def test_reviews_at_once_is_measured_over_the_reviews_not_the_whole_batch():
    """Reviews at once is review time over the reviews phase, never over the whole batch: with start-up and gate runs
    in the denominator, "4 at a time" would show "0.2 at once"."""
    rows = [ContractOutcome(file=f"{i}.pdf", status="reviewed", review_status="complete", seconds=10.0,
                            step_seconds={"parse": 6.0}) for i in range(8)]
    summary = BatchSummary(source="inbox", playbook="p", started_at=datetime(2026, 1, 1, tzinfo=UTC),
                           finished_at=datetime(2026, 1, 1, 0, 1, 40, tzinfo=UTC), rows=rows, max_in_flight=4,
                           phases={"discover": 70.0, "reviews": 20.0, "gate runs": 10.0})
    assert summary.breakdown.reviews_at_once == 4.0  # 80 s of reviews in 20 s; the batch's 100 s gave 0.8


def test_result_table_fits_80_columns_one_line_per_contract():
    """CUAD-style file names (70+ characters) fit one line each in an 80-column terminal, not six."""
    from rich.console import Console

    from clausegate.cli.batch import summary_table, totals_line

    long = "ADAMSGOLFINC_03_21_2005-EX-10.17-ENDORSEMENT AGREEMENT_with a very long file name.pdf"
    rows = [ContractOutcome(file=long, status="reviewed", review_status="pending_decision", clauses=12,
                            gates_waiting=2, cost_eur=0.0123, worker="in-process"),
            ContractOutcome(file="b.pdf", status="failed", error_code="CG-PDF-ENCRYPTED", worker="in-process"),
            ContractOutcome(file="c.pdf", status="skipped", review_status="complete")]
    summary = BatchSummary(source="inbox", playbook="default", started_at=datetime(2026, 1, 1, tzinfo=UTC),
                           finished_at=datetime(2026, 1, 1, 0, 1, tzinfo=UTC), rows=rows)
    for width in (80, 120):
        console = Console(width=width, record=True, color_system=None)
        console.print(summary_table(summary, console.width))
        console.print(totals_line(summary))
        lines = console.export_text().splitlines()
        assert_fits("\n".join(lines), width)
        first = [line for line in lines if line.startswith("ADAMSGOLFINC")]
        assert len(first) == 1 and "…" in first[0] and "pending" in first[0] and "12" in first[0]
        assert any(line.startswith("b.pdf") and "CG-PDF-ENCRYPTED" in line for line in lines)
    assert "0.0123" in "\n".join(lines) and "1 reviewed, 1 failed" in "\n".join(lines)


# ------------------------------------------------------------------------------ reviews as tasks
def test_task_dispatcher_rows_from_reviews_states_and_errors():
    """The default path's dispatcher: whatever ``review(path)`` returns (a review, a Failed state, an
    exception) becomes one row; threads run several at once."""
    from prefect.states import Failed

    from clausegate.review.schemas import Cost, Review

    def review(path: str):
        name = Path(path).name
        if name == "c1.pdf":
            return Failed(message="CG-PDF-ENCRYPTED at step 'parse': report x")
        if name == "c2.pdf":
            raise RuntimeError("worker lost")
        status = "pending_decision" if name == "c3.pdf" else "complete"
        return Review.model_construct(status=status, clauses=[], gated_categories=["Cap on Liability"],
                                      cost=Cost())

    for threads in (1, 3):
        rows = run_batch(candidates(5), TaskDispatcher(review=review, threads=threads), max_in_flight=threads,
                         poll_seconds=0.01)
        by_file = {r.file: r for r in rows}
        assert len(rows) == 5 and all(r.worker == "in-process" or r.status == "failed" for r in rows)
        assert by_file["c1.pdf"].status == "failed" and by_file["c1.pdf"].error_code == "CG-PDF-ENCRYPTED"
        assert by_file["c2.pdf"].status == "failed" and by_file["c2.pdf"].error_code == RUN_FAILED
        assert by_file["c3.pdf"].review_status == "pending_decision" and by_file["c3.pdf"].gates_waiting == 1
        assert {by_file[f"c{i}.pdf"].status for i in (0, 4)} == {"reviewed"}


def test_run_count_splits_only_what_one_run_cannot_take_at_once():
    assert run_count(4, max_in_flight=4, max_parallel_runs=2) == 1   # one run takes them all at once
    assert run_count(5, max_in_flight=4, max_parallel_runs=2) == 2
    assert run_count(400, max_in_flight=4, max_parallel_runs=3) == 3
    assert run_count(9, max_in_flight=4, max_parallel_runs=8) == 3   # at least max_in_flight per run
    assert run_count(400, max_in_flight=4, max_parallel_runs=1) == 1


# ------------------------------------------------------------------------------ the CLI, real batch job
def assert_fits(output: str, width: int) -> None:
    too_wide = [line for line in output.splitlines() if len(line) > width and not line.startswith("Summary: ")]
    assert not too_wide, too_wide


def summary_artifact(flow_run_id: str) -> str:
    """The Markdown of the batch run's summary artifact, as the UI shows it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["nightly-batch-summary"]),
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    assert len(found) == 1, found
    return str(found[0].data)


def assert_time_breakdown(markdown: str, *, reviews: int, max_in_flight: int) -> None:
    """Throughput line + "where the time went" table with plausible figures: every part >= 0, the parts add up
    to the reviews' summed wall time, which no more than ``max_in_flight`` reviews at once can exceed."""
    import re

    rate, wall, at_once = map(float, re.search(
        r"Throughput:\*\* ([\d.]+) contracts/minute · \*\*Wall time:\*\* ([\d.]+) s · "
        r"\*\*Reviews at once:\*\* ([\d.]+)", markdown).groups())
    # the wall time is shown to 0.1 s: the rate must fit the shown value's rounding interval
    assert rate > 0 and wall > 0
    assert reviews / ((wall + 0.05) / 60) * 0.99 <= rate <= reviews / (max(wall - 0.05, 0.01) / 60) * 1.01
    assert 0 < at_once <= max_in_flight
    total = float(re.search(rf"{reviews} contracts reviewed as tasks: ([\d.]+) s", markdown).group(1))
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^\| ([^|]+?) \| ([\d.]+) \| ([\d.]+) \| ", markdown, re.M)}
    parts = {label: seconds for label, (seconds, _) in rows.items()}
    assert {"parse (fingerprint + sandboxed parse)", "pre-filter", "extract (offline)",
            "report (files)", "Prefect / orchestration (the rest)"} <= set(parts), parts
    # seconds are shown to 0.01 s, per contract to 0.001 s: a sandboxed parse takes at least a millisecond
    assert all(v >= 0 for v in parts.values()) and rows["parse (fingerprint + sandboxed parse)"][1] > 0
    assert sum(parts.values()) == pytest.approx(total, abs=0.1 + 0.01 * len(parts))
    assert total <= wall * max_in_flight + 0.1


@pytest.mark.usefixtures("prefect_server")
def test_cli_batch_reviews_skips_and_survives_a_broken_pdf(tmp_path):
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    contracts(inbox, 2)
    make_encrypted_pdf(inbox / "locked.pdf", PAGES)
    book = playbook_file(tmp_path)
    runner = CliRunner()
    with prefect_log_records() as records:
        result = runner.invoke(app, ["batch", str(inbox), "--playbook", book, "--out", str(out), "--local",
                                     "--max-in-flight", "2"])
    assert result.exit_code == 1, result.output  # one contract failed: non-zero, but the batch finished
    # no Prefect "Timeout ... running in a worker thread" warning (it would come once per task run)
    noisy = [r.getMessage()[:60] for r in records if "worker thread" in r.getMessage() and r.levelno >= 30]
    assert records and not noisy, noisy
    data = json.loads(next((out / "batches").glob("*.json")).read_text())
    by_file = {r["file"]: r for r in data["rows"]}
    assert by_file["locked.pdf"]["status"] == "failed" and by_file["locked.pdf"]["error_code"] == "CG-PDF-ENCRYPTED"
    for name in ("contract-00.pdf", "contract-01.pdf"):
        assert by_file[name]["status"] == "reviewed" and by_file[name]["clauses"] >= 1
    assert data["totals"]["reviewed"] == 2 and data["totals"]["failed"] == 1
    assert data["mode"] == "tasks of this run"
    assert len({r["flow_run_id"] for r in data["rows"]}) == 1  # every review is a task of the one batch run
    assert_fits(result.output, 80)  # the result table: one line per contract in an 80-column terminal
    lines = result.output.splitlines()
    assert any(line.startswith("locked.pdf") and "failed" in line and "CG-PDF-ENCRYPTED" in line for line in lines)
    assert sum(line.startswith("contract-0") and "complete" in line for line in lines) == 2
    assert_time_breakdown(summary_artifact(data["rows"][0]["flow_run_id"]), reviews=3, max_in_flight=2)
    # A batch review publishes no Markdown artifact of its own; the summary points at the reports.
    assert review_artifact_keys(data["rows"][0]["flow_run_id"]) == []
    assert f"Reports: `{out.resolve()}/<file>-<contract id" in summary_artifact(data["rows"][0]["flow_run_id"])

    # Second night: the two reviewed contracts are skipped by content hash; the failed one is tried again.
    for old in (out / "batches").iterdir():
        old.unlink()
    result = runner.invoke(app, ["batch", str(inbox), "--playbook", book, "--out", str(out), "--local"])
    data = json.loads(next((out / "batches").glob("*.json")).read_text())
    statuses = {r["file"]: r["status"] for r in data["rows"]}
    assert statuses == {"contract-00.pdf": "skipped", "contract-01.pdf": "skipped", "locked.pdf": "failed"}

    # A deleted report re-reviews the contract (runbook) and its report is on disk again, although
    # every step of that review, the report step included, has a cached result.
    (deleted,) = out.glob("contract-00-*.json")
    deleted.unlink()
    result = runner.invoke(app, ["batch", str(inbox), "--playbook", book, "--out", str(out), "--local"])
    assert deleted.is_file(), result.output
    assert json.loads(deleted.read_text())["status"] == "complete"


@pytest.mark.usefixtures("prefect_server")
def test_cli_batch_without_a_deployment_leaves_gated_contracts_pending(tmp_path):
    """A contract that needs a person and no contract-review deployment to ask in: pending_decision with
    the deferral notice (the next batch sends it again)."""
    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    contracts(inbox, 1)
    book = tmp_path / "batch-gated.yaml"
    book.write_text("name: batch-gated\ndescription: a gate on governing law\ncategories: [Governing Law]\n"
                    "gates:\n  - category: Governing Law\n    sla_hours: 24\n    reason: test gate\n")
    result = CliRunner().invoke(app, ["batch", str(inbox), "--playbook", str(book), "--out", str(out), "--local"])
    assert result.exit_code == 0, result.output
    row = json.loads(next((out / "batches").glob("*.json")).read_text())["rows"][0]
    assert row["status"] == "reviewed" and row["review_status"] == "pending_decision" and row["gates_waiting"] >= 1
    report = json.loads(next(out.glob("*.json")).read_text())
    assert any(w["code"] == "CG-GATE-DEFERRED" for w in report["warnings"])
    todo, _ = plan_batch(load_source(inbox).discover(), playbook=report["playbook"], out_dir=out)
    assert [c.filename for c in todo] == ["contract-00.pdf"]  # pending_decision is not "already reviewed"


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_server")
def test_cli_batch_shows_a_progress_bar_and_says_who_waits(tmp_path):
    """A real `clausegate batch` process: one progress bar instead of Prefect's INFO line per task (not 5+
    "Task run … Finished in state Completed()" lines per contract), a totals line that counts the contracts
    needing a person next to their gates (never "0 waiting … 3 gates"), and a --help that names .docx (not only
    "every new PDF")."""
    import os
    import subprocess
    import sys

    inbox, out = tmp_path / "inbox", tmp_path / "reports"
    contracts(inbox, 3)
    book = tmp_path / "batch-gated.yaml"
    book.write_text("name: batch-gated\ndescription: a gate on governing law\ncategories: [Governing Law]\n"
                    "gates:\n  - category: Governing Law\n    sla_hours: 24\n    reason: test gate\n")
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "clausegate.cli", "batch", str(inbox), "--playbook", str(book),
                           "--out", str(out), "--local"], capture_output=True, text=True, env=env, timeout=400)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "Task run '" not in output and "Finished in state" not in output, output[-3000:]
    assert "3/3" in output and "reviewing" in output, output[-3000:]
    flat = " ".join(output.split())  # the totals line wraps at the terminal's width
    assert "3 contracts: 3 reviewed, 0 failed, 0 waiting at a gate, 3 need a person but not asked " \
           "(pending_decision)" in flat, flat[-2000:]
    helped = subprocess.run([sys.executable, "-m", "clausegate.cli", "batch", "--help"], capture_output=True,
                            text=True, env=env, timeout=120)
    text = " ".join(helped.stdout.split())
    assert "every new PDF" not in text and ".docx" in text, text
