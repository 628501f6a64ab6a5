"""`clausegate review -` (stdin) and `clausegate review --text "…"` as a person runs them: a real subprocess
against the session's Prefect server; a single clause is a review, and the private copy is deleted after."""

from __future__ import annotations

import json
import os
import signal
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_empty_or_binary_input_is_refused_with_a_code(tmp_path):
    for args, stdin in ((["review", "-"], b"  \n"), (["review", "-"], b"\xff\xfe\x00binary"),
                        (["review", "--text", ""], None), (["review"], None)):
        done = clausegate(*args, stdin=stdin, tmpdir=Path(tempfile.gettempdir()))
        output = done.stdout.decode() + done.stderr.decode()
        assert done.returncode == 2 and "CG-REVIEW-INPUT" in output and "Next step" in output, (args, output)


def test_stdin_over_the_cap_is_refused_before_a_review(tmp_path):
    """A 50 MB stdin review must not hang (a cap of 64 MB would let it on to the review): stdin over
    STDIN_MAX_BYTES (20 MB) is one coded line, exit 2, and nothing is reviewed."""
    words = (CLAUSE + "\n").encode()
    big = words * (21 * 1024 * 1024 // len(words) + 1)
    done = clausegate("review", "-", "--out", str(tmp_path / "out"), stdin=big, tmpdir=tmp_path)
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 2 and "CG-REVIEW-INPUT" in output and "larger than 20 MB" in output, output[-2000:]
    assert not (tmp_path / "out").exists()


def test_terminal_text_on_stdin_is_refused_as_the_parser_would(tmp_path):
    """Text full of ANSI colour codes is refused at once as the parser would (CG-REVIEW-INPUT, control characters),
    not taken as .txt to fail CG-PDF-NOT-PDF ("export to PDF") later."""
    ansi = ("\x1b[1;31mERROR\x1b[0m \x1b[32m" + CLAUSE + "\x1b[0m\n") * 20
    done = clausegate("review", "-", "--out", str(tmp_path / "out"), stdin=ansi.encode(), tmpdir=tmp_path)
    output = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 2 and "CG-REVIEW-INPUT" in output and "control characters" in output, output[-2000:]
    assert "CG-PDF-NOT-PDF" not in output


def test_sigterm_while_stdin_is_read_stops_the_command_at_once(tmp_path):
    """A review reading a slow stdin stops on SIGTERM.  The writer here never finishes; once the command
    has taken 2 MB (the pipe holds 64 KB, so the writes return only as it reads), SIGTERM stops it."""
    env = {**os.environ, "COLUMNS": "160", "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "clausegate.cli", "review", "-", "--out", str(tmp_path / "out")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    try:
        for _ in range(32):
            proc.stdin.write((CLAUSE + "\n").encode() * 400)  # 64 KB a write: blocks until the command reads
        proc.stdin.flush()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)  # a generous deadline: the point is that it ends, not how fast
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    output = proc.stdout.read().decode()
    assert code == 2 and "stopped by SIGTERM while reading stdin" in output, (code, output[-2000:])
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_single_clause_is_not_a_contract_missing_every_other_category(prefect_server, tmp_path):
    """One pasted clause is said to be a clause, lists what it has and reports no category missing (no
    "Missing (40): …" in the output, no 40 names in the report)."""
    scratch, out = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    done = clausegate("review", "--text", CLAUSE + " This cap applies to every claim.", "--playbook", "default",
                      "--out", str(out), tmpdir=scratch)
    output = " ".join((done.stdout.decode() + done.stderr.decode()).split())
    assert done.returncode == 0, output[-3000:]
    assert "Missing (" not in output and "a single clause" in output, output[-3000:]
    assert "Cap on Liability" in output, output[-3000:]
    report = json.loads(next(out.glob("*.json")).read_text())
    assert report["scope"] == "clause" and report["missing_categories"] == [], report["missing_categories"]
    markdown = next(out.glob("*.md")).read_text()
    assert "## Missing categories" not in markdown and "a single clause" in markdown
