"""`clausegate review -` (stdin) and `clausegate review --text "…"` as a person runs them: a real subprocess
against the session's Prefect server; a single clause is a review, and the private copy is deleted after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLAUSE = ("Limitation of Liability. The Supplier's total liability under this Agreement shall not exceed the fees "
          "paid by the Customer in the twelve months preceding the claim.")


def clausegate(*args: str, stdin: bytes | None = None, tmpdir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "160", "TMPDIR": str(tmpdir)}  # where the private copy goes: checked after
    return subprocess.run([sys.executable, "-m", "clausegate.cli", *args], input=stdin, capture_output=True,
                          env=env, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("how", ["stdin", "text"])
def test_a_clause_from_stdin_or_text_is_reviewed_and_its_copy_removed(prefect_server, tmp_path, how):
    scratch, out = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    text = CLAUSE if how == "stdin" else CLAUSE + " Each party shall bear its own costs."  # not the cached one
    args = ["review", "-"] if how == "stdin" else ["review", "--text", text]
    done = clausegate(*args, "--playbook", "payment-liability", "--out", str(out), tmpdir=scratch,
                      stdin=text.encode() if how == "stdin" else None)
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, output
    assert "Cap on Liability" in output and prefect_server.api_url in output, output
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["filename"] == ("stdin.txt" if how == "stdin" else "text.txt"), report["filename"]
    assert any(c["category"] == "Cap on Liability" for c in report["clauses"]), report["clauses"]
    assert not [p for p in scratch.iterdir() if p.name.startswith("clausegate-review-")]  # cleaned up


def test_empty_or_binary_input_is_refused_with_a_code(tmp_path):
    for args, stdin in ((["review", "-"], b"  \n"), (["review", "-"], b"\xff\xfe\x00binary"),
                        (["review", "--text", ""], None), (["review"], None)):
        done = clausegate(*args, stdin=stdin, tmpdir=Path(tempfile.gettempdir()))
        output = done.stdout.decode() + done.stderr.decode()
        assert done.returncode == 2 and "CG-REVIEW-INPUT" in output and "Next step" in output, (args, output)
