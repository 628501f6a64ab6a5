"""Retention: expired uploads, persisted results and reports are deleted; fresh ones and whatever an
unfinished run still needs are kept.

The end-to-end test suspends a real gated contract-review run (the served deployment, a
warm-started process worker, the session Prefect server), ages its upload and step results past the period together
with decoys, runs the ``retention`` flow, then resumes the run: it must complete with every finished
step from the cache (the records the sweep kept), while the expired decoys are gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

import pytest

from tests.support.contracts import GATED_PAGES, SUPPLY_PAGES
from tests.support.gates import wait_for_state
from tests.support.pdf_factory import make_text_pdf
from tests.support.processes import start_served, stop_process_group

DEPLOYMENT = "retention-e2e"
DAY = 86400


def age(path: Path, days: float) -> None:
    when = time.time() - days * DAY
    os.utime(path, (when, when))


# ------------------------------------------------------------------------------------ plain logic
def test_retention_days_setting(monkeypatch):
    from clausegate.errors import ConfigurationError
    from clausegate.ops.retention import retention_days

    monkeypatch.delenv("CLAUSEGATE_RETENTION_DAYS", raising=False)
    assert retention_days() == 30
    monkeypatch.setenv("CLAUSEGATE_RETENTION_DAYS", "7.5")
    assert retention_days() == 7.5 and retention_days(2) == 2
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv("CLAUSEGATE_RETENTION_DAYS", bad)
        with pytest.raises(ConfigurationError):
            retention_days()


def test_sweeps_delete_expired_files_and_keep_fresh_and_in_use_ones(tmp_path):
    from clausegate.ops.retention_in_use import InUse
    from clausegate.ops.retention_sweeps import TOMBSTONE_KEY, sweep_reports, sweep_results, sweep_uploads
    from clausegate.security.at_rest import KEY_CHECK_FILE

    uploads, results, reports = tmp_path / "uploads", tmp_path / "storage", tmp_path / "reports"
    files = {}
    for name, folder, rel, days in [
        ("old_upload", uploads, "aaaa/old.pdf", 40), ("fresh_upload", uploads, "bbbb/new.pdf", 2),
        ("used_upload", uploads, "cccc/waiting.pdf", 400), ("old_result", results, "1f" * 32, 31),
        ("fresh_result", results, "2e" * 32, 29), ("used_result", results, "3d" * 32, 90),
        ("key_check", results, KEY_CHECK_FILE, 900), ("batch_csv", reports, "batches/b.csv", 45),
    ]:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 10)
        age(path, days)
        files[name] = path
    # A result Prefect itself considers expired (its cache expiration passed), although the file is new.
    expired_record = results / ("4c" * 32)
    expired_record.write_text(json.dumps({"metadata": {"expiration": "2000-01-01T00:00:00Z", "serializer": {}},
                                          "result": "x"}))
    # Reports: an old pair (short-retention playbook), an old pair of another playbook, a fresh pair.
    report = {"contract_id": "a" * 64, "filename": "old.pdf", "status": "complete", "clauses": [{"text": "secret"}]}
    for stem, playbook, days in (("old-aaaa-short", "short", 10), ("old-bbbb-long", "long", 10),
                                 ("new-cccc-short", "short", 1)):
        (reports / f"{stem}.json").write_text(json.dumps({**report, "playbook": playbook}))
        (reports / f"{stem}.md").write_text("# secret clause text")
        age(reports / f"{stem}.json", days)
        age(reports / f"{stem}.md", days)

    used = InUse()
    used.add(files["used_upload"])
    used.add(files["used_result"])

    up = sweep_uploads(uploads, days=30, in_use=used)
    res = sweep_results(results, days=30, in_use=used)
    rep = sweep_reports(reports, days=30, playbook_days={"short": 7.0}.get, in_use=used)

    assert not files["old_upload"].exists() and not (uploads / "aaaa").exists()  # empty folder removed too
    assert files["fresh_upload"].exists() and files["used_upload"].exists()
    assert (up.deleted, up.kept_fresh, up.kept_in_use) == (1, 1, 1)
    assert not files["old_result"].exists() and not expired_record.exists()
    assert files["fresh_result"].exists() and files["used_result"].exists() and files["key_check"].exists()
    assert (res.deleted, res.kept_fresh, res.kept_in_use) == (2, 1, 1)
    # playbook 'short' keeps reports 7 days: its 10-day-old report is replaced by a tombstone (no text,
    # but the batch still sees the contract as reviewed); playbook 'long' follows the 30 days.
    tomb = json.loads((reports / "old-aaaa-short.json").read_text())
    assert TOMBSTONE_KEY in tomb and "secret" not in json.dumps(tomb) and "clauses" not in tomb
    assert {k: tomb[k] for k in ("contract_id", "playbook", "status")} == {"contract_id": "a" * 64,
                                                                          "playbook": "short", "status": "complete"}
    assert not (reports / "old-aaaa-short.md").exists()
    assert (reports / "old-bbbb-long.md").exists() and "clauses" in (reports / "old-bbbb-long.json").read_text()
    assert (reports / "new-cccc-short.md").exists() and not files["batch_csv"].exists()
    assert (rep.tombstoned, rep.deleted) == (1, 2)

    from clausegate.batch.plan import reviewed_index

    assert reviewed_index(reports, "short") == {"a" * 64: "complete"}  # the nightly batch does not redo it
    again = sweep_reports(reports, days=30, playbook_days={"short": 7.0}.get, now=time.time() + 400 * DAY)
    assert json.loads((reports / "old-aaaa-short.json").read_text()) == tomb  # a tombstone stays as it is
    assert again.tombstoned == 2  # the two other reports, now expired too


def test_what_is_written_beside_a_report_follows_its_playbooks_period(tmp_path):
    """The annotated copy (plain or sealed), the .ics calendar and the sealed full review go with their report at
    its playbook's period, not only at the global one; a file of no report keeps the global period."""
    from clausegate.ops.retention_sweeps import TOMBSTONE_KEY, sweep_reports
    from clausegate.review.annotate import MARK, SUFFIXES
    from clausegate.review.report import SEALED_SUFFIX

    reports = tmp_path / "reports"
    reports.mkdir()
    beside = [".md", ".ics", ".json" + SEALED_SUFFIX, *(MARK + s for s in SUFFIXES.values()),
              *(MARK + s + SEALED_SUFFIX for s in SUFFIXES.values())]
    report = {"contract_id": "c" * 64, "filename": "v2.final.docx", "status": "complete"}
    for stem, playbook, days in (("v2.final-cccc-short", "short", 10), ("v2.final-dddd-long", "long", 10),
                                 ("v3-eeee-short", "short", 1)):
        (reports / f"{stem}.json").write_text(json.dumps({**report, "playbook": playbook}))
        age(reports / f"{stem}.json", days)
        for suffix in beside:
            (reports / f"{stem}{suffix}").write_text("clause text")
            age(reports / f"{stem}{suffix}", days)
    orphan = reports / f"no-report{MARK}.docx"  # no <stem>.json beside it: the global period
    orphan.write_text("clause text")
    age(orphan, 10)

    counts = sweep_reports(reports, days=30, playbook_days={"short": 7.0}.get)

    assert sorted(p.name for p in reports.iterdir() if p.name.startswith("v2.final-cccc")) == [
        "v2.final-cccc-short.json"]  # only the tombstone is left of the expired report
    assert TOMBSTONE_KEY in json.loads((reports / "v2.final-cccc-short.json").read_text())
    for stem in ("v2.final-dddd-long", "v3-eeee-short"):  # the long playbook's, and a fresh one: all kept
        assert all((reports / f"{stem}{suffix}").exists() for suffix in beside), stem
    assert orphan.exists()
    assert (counts.tombstoned, counts.deleted) == (1, len(beside))


def test_dry_run_deletes_nothing(tmp_path):
    from clausegate.ops.retention_in_use import InUse
    from clausegate.ops.retention_sweeps import sweep_uploads

    old = tmp_path / "uploads" / "dddd" / "old.pdf"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"x")
    age(old, 90)
    counts = sweep_uploads(tmp_path / "uploads", days=30, in_use=InUse(), dry_run=True)
    assert counts.deleted == 1 and old.exists()


@pytest.mark.usefixtures("prefect_server")
def test_review_artifacts_older_than_the_period_are_deleted_unless_their_run_waits():
    from prefect import flow
    from prefect.artifacts import Artifact, create_markdown_artifact

    from clausegate.ops.retention_in_use import InUse
    from clausegate.ops.retention_sweeps import sweep_review_artifacts

    prefix = f"review-retentiontest{uuid.uuid4().hex[:8]}"

    @flow
    async def publish():  # as publish_report does, inside a run
        for name in "ab":
            await create_markdown_artifact(key=f"{prefix}-{name}", markdown="clause text")

    import asyncio

    asyncio.run(publish())
    now = time.time()
    fresh = sweep_review_artifacts(days=30, in_use=InUse(), prefix=prefix)
    assert (fresh.deleted, fresh.kept_fresh) == (0, 2)
    later = sweep_review_artifacts(days=30, in_use=InUse(), prefix=prefix, now=now + 31 * DAY)
    assert (later.deleted, later.errors) == (2, 0)
    assert Artifact.get(f"{prefix}-a") is None and Artifact.get(f"{prefix}-b") is None


# ------------------------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def served(prefect_server, tmp_path_factory):
    """The served contract-review deployment (worker poll 1 s), no Slack block: gates wait in the UI."""
    log = tmp_path_factory.mktemp("retention-serve") / "serve.log"
    env = {**os.environ, "CLAUSEGATE_SLACK_BLOCK": "retention-e2e-no-slack"}
    proc = start_served(["tests.support.serve_review", DEPLOYMENT, "4"], f"contract-review/{DEPLOYMENT}", log, env)
    try:
        yield log
    finally:
        stop_process_group(proc)


def _task_runs(run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))


def gated_pages_of_its_own() -> list[str]:
    """The gated contract with a reference line of its own, so its parse and pre-filter run in this test. The line
    is in no kept passage: the extraction of the same passages may come from an earlier review in the session (the
    same passages are extracted once)."""
    return [GATED_PAGES[0] + f"\nReference: CG-{uuid.uuid4().hex[:10].upper()} (retention).", *GATED_PAGES[1:]]


@pytest.mark.slow
@pytest.mark.usefixtures("drained_prefect_workers")
def test_retention_flow_keeps_what_a_suspended_review_needs_and_deletes_the_expired(served, prefect_server, tmp_path):
    from prefect.artifacts import Artifact
    from prefect.deployments import run_deployment
    from prefect.flow_runs import resume_flow_run

    from clausegate.config import InboxSettings
    from clausegate.inbox.intake import store
    from clausegate.ops.retention_in_use import storage_key
    from clausegate.security.at_rest import seal
    from flows.retention import retention

    settings = InboxSettings(data_dir=tmp_path / "inbox")
    reports = tmp_path / "reports"
    pdf = make_text_pdf(tmp_path / "src" / "gated.pdf", gated_pages_of_its_own())
    gated = store(pdf.read_bytes(), "gated.pdf", "upload", settings)
    run = run_deployment(f"contract-review/{DEPLOYMENT}", timeout=0,
                         parameters={"source": str(gated.path), "playbook": "payment-liability",
                                     "out_dir": str(reports)})
    try:
        wait_for_state(run.id, {"Suspended"}, timeout=180, poll=0.5)
    except TimeoutError:
        raise AssertionError(f"the gated run did not suspend:\n{served.read_text()[-4000:]}") from None

    # What the waiting run needs: its upload and the result records of its finished steps.
    first_runs = _task_runs(run.id)
    # (Steps without persistence, e.g. the fingerprint, name a record in their state that is never written.)
    records = {t.name.rsplit("-", 1)[0]: Path(storage_key(t.state.data) or "/nonexistent") for t in first_runs
               if t.state}
    needed = {path for path in records.values() if path.is_file()}
    kept_steps = {step for step, p in records.items() if p in needed}
    assert {"parse-pdf", "prefilter", "extract-clauses"} <= kept_steps, records

    # Decoys: an expired and a fresh upload, result record and report.
    old_upload = store(make_text_pdf(tmp_path / "src" / "old.pdf", SUPPLY_PAGES[:1]).read_bytes(), "old.pdf",
                       "upload", settings)
    fresh_upload = store(make_text_pdf(tmp_path / "src" / "new.pdf", SUPPLY_PAGES[1:2]).read_bytes(), "new.pdf",
                         "upload", settings)
    storage = prefect_server.home / "storage"
    old_result, fresh_result = storage / uuid.uuid4().hex, storage / uuid.uuid4().hex
    for path in (old_result, fresh_result):
        path.write_bytes(seal(b"a cached step"))
    reports.mkdir(exist_ok=True)
    old_report, fresh_report = reports / "old-batch.csv", reports / "fresh-batch.csv"
    old_report.write_text("contract,status\n")
    fresh_report.write_text("contract,status\n")
    for path in (gated.path, *needed, old_upload.path, old_result, old_report):
        age(path, 45)

    rows = asyncio.run(retention(days=30, uploads_dirs=[str(settings.uploads_dir)], reports_dirs=[str(reports)]))
    by_area = {row["area"]: row for row in rows}

    assert gated.path.is_file(), "the suspended run's upload was deleted"
    assert all(p.is_file() for p in needed), "a suspended run's step results were deleted"
    assert not old_upload.path.exists() and not old_result.exists() and not old_report.exists()
    assert fresh_upload.path.is_file() and fresh_result.is_file() and fresh_report.is_file()
    assert by_area["uploads"]["deleted"] == 1 and by_area["uploads"]["kept (in use)"] == 1
    assert by_area["results"]["deleted"] >= 1 and by_area["results"]["kept (in use)"] >= len(needed)
    assert by_area["results"]["folder"] == str(storage.resolve())
    artifact = Artifact.get("retention")
    assert artifact is not None and "uploads" in str(artifact.data)

    # The person decides; the run re-runs from the top and takes every finished step from the kept records.
    resume_flow_run(run.id, run_input={"decision": "approve", "reviewer": "retention-test"})
    assert wait_for_state(run.id, {"Completed", "Failed", "Crashed"}, timeout=180, poll=0.5) == "Completed"
    states: dict[str, list[str]] = {}
    for t in _task_runs(run.id):
        states.setdefault(t.name.rsplit("-", 1)[0], []).append(t.state.name if t.state else "?")
    for step in ("parse-pdf", "prefilter", "extract-clauses"):  # once (gated_pages_of_its_own), then from the cache
        executed = states[step].count("Completed")
        assert (executed == 1 or step == "extract-clauses" and executed == 0) and "Cached" in states[step], states
    report = json.loads(next(reports.glob("gated-*.json")).read_text())
    assert report["decisions"] and report["decisions"][0]["decision"] == "approve"
