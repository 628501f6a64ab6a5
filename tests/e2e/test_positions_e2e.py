"""Playbook positions end to end: a served contract-review deployment (real process, runner
poll 1 s), the fake Slack (real HTTP) and a playbook with no ``gates`` but a position on Cap on Liability.
A contract whose cap is 3 months' fees and one with no cap each reach Suspended at a gate whose Slack
message lists the finding with its verdict (the missing one as "required clause not found", no quote);
answered with ``clausegate resolve``, each completes with the decision in its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clausegate.demo.slack_server import FakeSlack
from tests.support.gates import slack_settings, wait_for_state
from tests.support.pdf_factory import make_text_pdf
from tests.support.positions import NO_CAP_PAGES, POSITIONS_PLAYBOOK, cap_pages
from tests.support.processes import start_served, stop_process_group

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = "positions-e2e"
BLOCK = "positions-e2e"
CLI = str(Path(sys.executable).parent / "clausegate")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


def slack_text(message) -> str:
    return "\n".join(str(b.get("text", {}).get("text", "")) for b in message.args.get("blocks") or [])


def test_a_deviating_cap_and_a_missing_cap_wait_for_a_person(tmp_path):
    from prefect.deployments import run_deployment

    fake = FakeSlack(token="xoxb-positions").start()
    slack_settings(fake).save(BLOCK, overwrite=True)
    env = {**os.environ, "CLAUSEGATE_SLACK_BLOCK": BLOCK}
    book = tmp_path / "positions-test.yaml"
    book.write_text(POSITIONS_PLAYBOOK)
    serve = start_served(["tests.support.serve_review", DEPLOYMENT, "4"], f"contract-review/{DEPLOYMENT}",
                         tmp_path / "serve.log", env)
    try:
        runs = {}
        for label, pages in (("short-cap", cap_pages("three (3)")), ("no-cap", NO_CAP_PAGES)):
            pdf = make_text_pdf(tmp_path / f"{label}.pdf", pages)
            run = run_deployment(f"contract-review/{DEPLOYMENT}", timeout=0, parameters={
                "source": str(pdf), "playbook": str(book), "out_dir": str(tmp_path / label)})
            runs[label] = str(run.id)
        for label, run_id in runs.items():
            assert wait_for_state(run_id, {"Suspended", "Completed", "Failed"}, timeout=300) == "Suspended", label
        deadline = time.monotonic() + 60
        while len(fake.calls("chat.postMessage", ok_only=True)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        posted = {m.args.get("text", ""): slack_text(m) for m in fake.calls("chat.postMessage", ok_only=True)}
        short = next(t for head, t in posted.items() if "short-cap.pdf" in head)
        missing = next(t for head, t in posted.items() if "no-cap.pdf" in head)
        assert "↳ deviates: walk-away: cap below 12 months' fees" in short
        assert "required clause not found" in missing and "↳ missing: required clause not found" in missing

        for label, run_id in runs.items():
            done = subprocess.run([CLI, "resolve", run_id, "approve", "--comment", "accepted for this deal"],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stdout + done.stderr
            assert wait_for_state(run_id, {"Completed", "Failed"}, timeout=300) == "Completed", label
            report = json.loads(next((tmp_path / label).glob("*.json")).read_text())
            assert report["status"] == "complete" and report["gated_categories"] == ["Cap on Liability"]
            assert report["decisions"][0]["decision"] == "approve" and report["decisions"][0]["via"] == "cli"
            assert report["positions"][0]["verdict"] == ("deviates" if label == "short-cap" else "missing")
    finally:
        stop_process_group(serve)
        fake.stop()
