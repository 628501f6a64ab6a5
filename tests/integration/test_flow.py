"""The contract-review flow end to end on the embedded default, against a real Prefect server."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from flows.contract_review import contract_review
from tests.support.contracts import SUPPLY_PAGES
from tests.support.flow_runs import MODEL_STEPS, review_artifact_keys, review_task_states, steps_by_state
from tests.support.hostile_playbooks import MARKER, hostile_playbooks
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")


def run_review(pdf: Path, out: Path, playbook: str = "default"):
    state = asyncio.run(contract_review(str(pdf), playbook=playbook, out_dir=str(out), return_state=True))
    return state, review_task_states(state)


def test_review_caches_on_content_and_repeats_no_finished_task(tmp_path):
    pdf = make_text_pdf(tmp_path / "supply.pdf", SUPPLY_PAGES)
    out = tmp_path / "reports"

    first, states = run_review(pdf, out)
    assert first.is_completed(), first.message
    assert steps_by_state(states, "Completed") >= MODEL_STEPS | {"write-report", "fingerprint"}
    review = first.result()
    found = {c.category for c in review.clauses}
    assert {"Governing Law", "Cap on Liability"} <= found
    governing = next(c for c in review.clauses if c.category == "Governing Law")
    assert governing.pages == [2] and governing.source == "offline"
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["contract_id"] == review.contract_id and report["status"] == review.status
    # The cap clause sits near the Uncapped Liability threshold: listed as *possible* (a person checks it),
    # never as a finding, and nothing else is gated.
    assert not any(c.category == "Uncapped Liability" and not c.possible for c in review.clauses)
    assert set(review.gated_categories) <= {"Uncapped Liability"}
    assert review.status == ("pending_decision" if review.gated_categories else "complete")
    assert "Governing Law" in next(out.glob("*.md")).read_text()
    # A contract-review run publishes the review as its Markdown artifact (the batch's reviews do not).
    assert review_artifact_keys(first.state_details.flow_run_id) == [f"review-{review.contract_id[:16]}"]

    # Same PDF again: every content-keyed step comes from cache; only the fingerprint re-reads the file.
    second, states = run_review(pdf, out)
    assert second.is_completed()
    assert steps_by_state(states, "Cached") == MODEL_STEPS | {"write-report"}
    assert steps_by_state(states, "Completed") == {"fingerprint"}

    # Same bytes at another path: still the same contract, still cached.
    moved = tmp_path / "elsewhere" / "supply.pdf"
    moved.parent.mkdir()
    shutil.copy(pdf, moved)
    _, states = run_review(moved, out)
    assert MODEL_STEPS <= steps_by_state(states, "Cached")

    # Same path, edited content: a new contract id, so parsing runs again (no stale review).
    make_text_pdf(pdf, SUPPLY_PAGES[:2])
    edited, states = run_review(pdf, out)
    assert "parse-pdf" in steps_by_state(states, "Completed")
    assert edited.result().contract_id != review.contract_id
    assert "Cap on Liability" not in {c.category for c in edited.result().clauses}


def test_failed_run_rerun_repays_nothing_finished(tmp_path):
    pdf = make_text_pdf(tmp_path / "supply-b.pdf", SUPPLY_PAGES + ["5. Notices. All notices shall be in writing."])
    blocked = tmp_path / "out"
    blocked.write_text("a file where the report folder should be")

    failed, states = run_review(pdf, blocked)
    assert failed.is_failed()
    assert "CG-REPORT-WRITE" in (failed.message or "") or "CG-REPORT-WRITE" in str(states)
    assert MODEL_STEPS <= steps_by_state(states, "Completed")

    blocked.unlink()
    rerun, states = run_review(pdf, blocked)
    assert rerun.is_completed()
    assert steps_by_state(states, "Cached") == MODEL_STEPS
    assert steps_by_state(states, "Completed") == {"fingerprint", "write-report"}


def test_bad_pdf_gives_an_explicit_failed_review(tmp_path):
    not_pdf = tmp_path / "scan.pdf"
    not_pdf.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 200)
    out = tmp_path / "reports"
    state, _ = run_review(not_pdf, out)
    assert state.is_failed()
    assert "CG-PDF-NOT-PDF" in state.message
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["status"] == "failed"
    assert report["failure"]["step"] == "parse" and report["failure"]["code"] == "CG-PDF-NOT-PDF"


def test_a_changed_input_misses_the_cache(tmp_path, monkeypatch):
    """Whatever makes the cache cheaper, a rerun with other categories, another minimum confidence or
    a retrained offline model recomputes what depends on it (and only that)."""
    import clausegate.pipeline.review as review_module

    pdf = make_text_pdf(tmp_path / "supply.pdf", SUPPLY_PAGES)
    out = tmp_path / "reports"

    def book(name: str, categories: str, extra: str = "") -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"name: cache-test\ncategories: [{categories}]\n{extra}")
        return str(path)

    two = book("two", "Governing Law, Cap on Liability")
    first, _ = run_review(pdf, out, two)
    assert first.is_completed(), first.message
    _, states = run_review(pdf, out, two)
    assert steps_by_state(states, "Cached") == MODEL_STEPS | {"write-report"}

    _, states = run_review(pdf, out, book("one", "Governing Law"))  # other categories
    assert "parse-pdf" in steps_by_state(states, "Cached")
    assert {"prefilter", "extract-clauses"} <= steps_by_state(states, "Completed")

    strict = book("strict", "Governing Law, Cap on Liability", "steps:\n  extract:\n    min_confidence: 0.99\n")
    _, states = run_review(pdf, out, strict)  # another minimum confidence: a different review to report
    assert steps_by_state(states, "Cached") == MODEL_STEPS
    assert "write-report" in steps_by_state(states, "Completed")

    monkeypatch.setattr(review_module, "offline_model_version", lambda: "retrained")  # another model version
    _, states = run_review(pdf, out, two)
    assert "parse-pdf" in steps_by_state(states, "Cached")  # (write-report too when the review came out the same)
    assert {"prefilter", "extract-clauses"} <= steps_by_state(states, "Completed")


def test_a_deleted_report_is_written_again_by_a_cached_rerun(tmp_path):
    """The runbook says to delete a report to re-review; the rerun's report step must not be a cache hit that
    writes nothing while the run says it has.  The files are the step's side effect: missing ones are written."""
    pdf = make_text_pdf(tmp_path / "supply.pdf", SUPPLY_PAGES)
    out = tmp_path / "reports"
    first, _ = run_review(pdf, out)
    assert first.is_completed(), first.message
    written = sorted(p.name for p in out.iterdir())
    assert {p.suffix for p in out.iterdir()} == {".json", ".md", ".pdf", ".ics"}  # report, annotated copy, calendar
    for path in out.iterdir():
        path.unlink()

    again, states = run_review(pdf, out)
    assert again.is_completed(), again.message
    assert sorted(p.name for p in out.iterdir()) == written, "the rerun said it wrote the report"
    assert states["write-report"] == "Completed" and MODEL_STEPS <= steps_by_state(states, "Cached")
    assert json.loads(next(out.glob("*.json")).read_text())["contract_id"] == again.result().contract_id

    (md,) = out.glob("*.md")
    md.unlink()  # one file of the two missing is enough
    _, states = run_review(pdf, out)
    assert md.is_file() and states["write-report"] == "Completed"
    _, states = run_review(pdf, out)  # both on disk: the cached step stands
    assert states["write-report"] == "Cached"


@pytest.mark.parametrize("kind", ["deep", "large", "tag"])
def test_a_hostile_playbook_parameter_fails_the_run_with_one_code(tmp_path, kind):
    pdf = make_text_pdf(tmp_path / "c.pdf", SUPPLY_PAGES)
    book = hostile_playbooks(tmp_path)[kind]
    state = asyncio.run(contract_review(str(pdf), playbook=str(book), out_dir=str(tmp_path / "out"),
                                        return_state=True))
    assert state.is_failed()
    assert "CG-PLAYBOOK-INVALID" in state.message and MARKER not in state.message, state.message[:2000]
    assert MARKER.lower() not in state.message and len(state.message) < 1500, state.message[:2000]
