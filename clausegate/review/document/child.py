"""The parser's child processes, parent side: how one is started (``python -I``, a minimal environment, its own
process group), killed, and how the way it ended maps to a ``CG-PDF-*`` result.

Two ways to use them (:func:`clausegate.review.document.sandbox.parse_pdf` picks one):

* one-shot (:func:`run_one_shot`): a new child per contract, the file on stdin, one JSON result on stdout
  (:func:`clausegate.review.document.worker._worker_main`);
* pooled (:mod:`clausegate.review.document.pool`): long-lived children serving many parses
  (:mod:`clausegate.review.document.pool_worker`), started with the same command line, environment and caps.

Either way a hostile file ends the same way: the same error codes and messages for a timeout (the parent's wall
deadline, or the child's own alarm / CPU limit), a memory-cap hit, a crash or garbage output.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from clausegate.errors import DocumentError
from clausegate.review.document.codes import (
    EXIT_NO_MEMORY,
    SETTING_MEMORY,
    SETTING_TIMEOUT,
    TIMEOUT,
    TOO_COMPLEX,
    WORKER_FAILED,
    failure,
)

log = logging.getLogger(__name__)

STDERR_TAIL = 2000

# The worker runs the same clausegate source as the caller (even when clausegate is importable only
# through the caller's sys.path), in isolated mode (-I: no PYTHON* variables, no user site, no cwd).
PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
ONE_SHOT_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from clausegate.review.document.worker import _worker_main; sys.exit(_worker_main(sys.argv[2:]))"
)
POOLED_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from clausegate.review.document.pool_worker import serve; sys.exit(serve(sys.argv[2:]))"
)
# The worker handles hostile input: it gets only the variables it needs, never API keys or tokens.
_WORKER_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "HOME", "TESSDATA_PREFIX",
                    "SYSTEMROOT")


class PdfWorkerError(DocumentError):
    """The parser process could not be started or answered garbage: an environment fault, retryable."""

    code = WORKER_FAILED
    transient = True


def worker_env() -> dict[str, str]:
    env = {key: os.environ[key] for key in _WORKER_ENV_KEEP if key in os.environ}
    env["OMP_THREAD_LIMIT"] = "1"  # tesseract: one thread, predictable memory
    return env


def spawn(boot: str, options: dict[str, Any]) -> subprocess.Popen:
    """A new child (``sys.executable -I -c boot PACKAGE_PARENT OPTIONS_JSON``) in its own session, with the minimal
    environment and pipes on stdin/stdout/stderr (also the e-mail parser's: clausegate/inbox/eml_sandbox.py).

    Spawn-style (fork + exec at once, no Python code runs between), so a parent with threads is safe."""
    cmd = [sys.executable, "-I", "-c", boot, PACKAGE_PARENT, json.dumps(options)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, close_fds=True, env=worker_env())


def communicate(proc: subprocess.Popen, data: bytes, timeout: float) -> tuple[bytes, bytes] | None:
    """The child's (stdout, stderr) once it has read ``data`` and ended; None when ``timeout`` passed first (its
    process group is then killed). An interruption (e.g. cancellation) leaves no child behind either."""
    try:
        try:
            return proc.communicate(input=data, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.communicate()
            return None
    finally:
        if proc.returncode is None:
            kill_group(proc)
            proc.wait()


def start(name: str, boot: str, options: dict[str, Any]) -> subprocess.Popen:
    """A new parser child (:func:`spawn`); one that cannot be started is a retryable ``CG-PDF-WORKER-FAILED``."""
    try:
        return spawn(boot, options)
    except OSError as exc:
        raise PdfWorkerError(
            f"'{name}': the PDF parser process could not be started ({exc}).",
            hint="the machine may be out of processes or memory; retry later.",
        ) from exc


def timeout_error(name: str, timeout: float) -> DocumentError:
    """The parent's wall deadline passed: the child was killed."""
    return DocumentError(
        f"'{name}': parsing stopped after {timeout:g} s, the time cap for one contract "
        "(the file is very large or built to be slow to read).",
        hint=f"if the contract is legitimate and long, raise {SETTING_TIMEOUT}; otherwise ask the sender "
        "for a simpler export (e.g. 'print to PDF').",
        code=TIMEOUT,
    )


def run_one_shot(name: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """Run a new sandboxed worker on ``data``; map every way it can end to a result dict."""
    timeout = float(options["timeout"])
    started = time.monotonic()
    proc = start(name, ONE_SHOT_BOOT, options)
    answer = communicate(proc, data, timeout)
    if answer is None:
        raise timeout_error(name, timeout)
    out, err = answer
    tail = err[-STDERR_TAIL:].decode("utf-8", "replace")
    if tail.strip():
        log.debug("pdf worker stderr for %s: %s", name, tail)
    if proc.returncode == 0:
        try:
            result = json.loads(out)
            if isinstance(result, dict):
                return result
        except ValueError:
            pass
        return unreadable_output(len(out))
    return exit_result(proc.returncode, tail, time.monotonic() - started, options["memory_mb"])


def unreadable_output(size: int) -> dict[str, Any]:
    return failure(WORKER_FAILED, f"the parser process returned unreadable output ({size} bytes).",
                   "this is a ClauseGate bug or a broken installation; rerun, and report it if it repeats.")


def exit_result(rc: int, tail: str, elapsed: float, memory_mb: int) -> dict[str, Any]:
    """The result for a child that ended (exit status ``rc``) without answering."""
    if rc == -signal.SIGALRM or rc == -getattr(signal, "SIGXCPU", -999):
        return failure(TIMEOUT, f"parsing stopped after {elapsed:.1f} s, the time cap for one contract.",
                       f"raise {SETTING_TIMEOUT} if the contract is legitimate and long.")
    if rc == EXIT_NO_MEMORY or rc < 0:
        how = "ran out of memory" if rc == EXIT_NO_MEMORY else f"was killed by signal {-rc} ({_signame(-rc)})"
        return failure(
            TOO_COMPLEX,
            f"the parser process {how}: the file needs more than the {memory_mb} MB memory cap "
            "or is built to exhaust the parser.",
            f"if the contract is legitimate, raise {SETTING_MEMORY}; otherwise ask the sender for a simpler "
            "export (e.g. 'print to PDF').",
        )
    return failure(
        WORKER_FAILED,
        f"the parser process failed with exit status {rc}: {_last_line(tail) or 'no error output'}.",
        "check that pypdf is installed in the same environment as ClauseGate; rerun, and report it if it repeats.",
    )


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and any tesseract it started
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return "unknown"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
