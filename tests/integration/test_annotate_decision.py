"""The annotated copy is written again once a person decided: a served contract review (the session's Prefect server,
the served contract-review deployment, the gateway, the fake Slack) of the gated PDF writes its annotated
copy before the gate, each gated finding's note saying ``Decision: pending``; ``clausegate resolve RUN changes``
resumes it, and the copy next to the report then says the decision, who (the CLI's login) and when, on each gated
finding's highlight, and nothing is pending any more."""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from pypdf import PdfReader

from tests.support.gates import wait_for_state
from tests.support.served_gates import CLI, served_gate_stack, start_gated_review
from tests.support.waiting import wait_until

DEPLOYMENT = "annotate-decision"
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


@pytest.fixture(scope="module")
def stack(prefect_server, tmp_path_factory):
    with served_gate_stack(prefect_server, tmp_path_factory.mktemp("annotate-logs"), name=DEPLOYMENT, slots=1,
                           token="xoxb-annotate") as served:
        yield served


def notes_in(path: Path) -> dict[int, str]:
    """Per finding number, the note of its ClauseGate highlight (a later page's "(continued)" mark left out)."""
    out = {}
    for page in PdfReader(path).pages:
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            text = str(annot.get("/Contents") or "")
            found = re.match(r"ClauseGate #(\d+) ·", text)
            if annot.get("/Subtype") == "/Highlight" and found:
                out[int(found.group(1))] = text
    return out


def test_the_copy_says_pending_at_the_gate_and_the_decision_who_and_when_after_it(stack, tmp_path):
    run_id, out = start_gated_review(DEPLOYMENT, "decided", tmp_path, "payment-liability")
    wait_for_state(run_id, {"Suspended"}, timeout=240)
    (copy,) = wait_until(lambda: list(out.glob("*.annotated.pdf")), 60, what="the annotated copy before the gate")
    pending = notes_in(copy)
    gated = {n for n, text in pending.items() if "\nGates: " in text}
    assert gated and all("Decision: pending" in pending[n] for n in gated), pending
    assert not list(out.glob("*.json")), "no report before the decision"

    done = subprocess.run([CLI, "resolve", run_id, "changes", "--comment", "cap the damages"], capture_output=True,
                          text=True, timeout=180, env={**os.environ, "CLAUSEGATE_SLACK_BLOCK": DEPLOYMENT})
    assert done.returncode == 0, done.stdout + done.stderr
    wait_for_state(run_id, {"Completed"}, timeout=240)

    report = json.loads(next(out.glob("*.json")).read_text())
    (decision,) = report["decisions"]
    assert report["annotated"] == copy.name and decision["via"] == "cli", report["annotated"]
    decided = notes_in(out / report["annotated"])
    assert set(decided) == set(pending)
    when = decision["decided_at"][:16].replace("T", " ")  # the note's minute, UTC
    for n in gated:
        assert "Decision: pending" not in decided[n], decided[n]
        assert f"changes by {decision['reviewer']} via cli, {when} UTC: cap the damages" in decided[n], decided[n]
        assert getpass.getuser() in decided[n]  # who: the CLI's login (its signed receipt)
    for n in set(decided) - gated:  # a finding that does not gate has no decision line
        assert "Decision" not in decided[n] and "Does not gate this review" in decided[n]
