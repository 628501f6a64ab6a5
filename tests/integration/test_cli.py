"""`clausegate` as a person runs it (a real subprocess against the session's Prefect server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "healthcare-integrated-reseller-2019.pdf"


def clausegate(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "clausegate.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def test_review_sample_prints_findings_and_writes_report(prefect_server, tmp_path):
    done = clausegate("review", str(SAMPLE), "--playbook", "payment-liability", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Cap on Liability" in done.stdout
    assert prefect_server.api_url in done.stdout  # it used the configured server, not a temporary one
    report = json.loads(next(tmp_path.glob("*.json")).read_text())
    # Cap on Liability is gated in this playbook; a plain CLI run cannot suspend, so the gate stays pending
    assert report["status"] == "pending_decision" and report["playbook"] == "payment-liability"
    assert "Cap on Liability" in report["gated_categories"]
    assert any(c["category"] == "Cap on Liability" for c in report["clauses"])


@pytest.mark.parametrize("args, message", [
    (["review", str(SAMPLE), "--playbook", "nope"], "CG-PLAYBOOK-INVALID"),
    (["review", "no/such/file.pdf"], "CG-PDF-NOT-FOUND"),
])
def test_bad_input_fails_fast_with_a_code(args, message):
    done = clausegate(*args, timeout=60)
    assert done.returncode == 2
    assert message in done.stdout + done.stderr


def test_playbooks_lists_builtins():
    done = clausegate("playbooks", timeout=60)
    assert done.returncode == 0 and "payment-liability" in done.stdout
