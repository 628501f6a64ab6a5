"""Annotation in a capped child process: the contract is untrusted, so writing its annotated copy (PDFium on a PDF,
lxml on a .docx) runs like its parsing, in a ``python -I`` child with the parse step's memory cap and time limit, in
its own process group (:mod:`clausegate.review.document.child`).  A crash, a cap hit or a timeout costs the annotated
copy, never the review.

Two ways, like the parse (``pool_size``, the parse step's ``CLAUSEGATE_PARSE_POOL_SIZE``):

* pooled (above 0): the job ``annotate`` of the parse pool's warm worker (:mod:`clausegate.review.document.pool`,
  :data:`clausegate.review.document.worker.JOBS`), the one the parse of the same file just used: same caps (the
  address-space cap it was started with, a per-job alarm and CPU limit, the parent's wall deadline), no new Python
  and imports per copy.  The notes ride in the options, the annotated bytes come back base64 in the JSON answer.
* one-shot (0): a new child per copy.  Wire format: the options (caps, format) on the command line; on stdin a
  4-byte length, the notes as JSON, then the file's bytes; on stdout a 4-byte length, the result as JSON, then the
  annotated bytes.
"""

from __future__ import annotations

import json
import struct
import sys
from types import SimpleNamespace
from typing import Any

from clausegate.review.annotate.notes import Note

BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from clausegate.review.annotate.child import main; sys.exit(main(sys.argv[2:]))")
FAILED = "CG-ANNOTATE-FAILED"
# what the writers read of a finding (the child gets these, not the pydantic Clause: no schemas to import)
CLAUSE_FIELDS = ("category", "text", "pages", "span", "section", "paragraph")


def _pack(head: dict[str, Any], body: bytes) -> bytes:
    raw = json.dumps(head).encode("utf-8")
    return struct.pack(">I", len(raw)) + raw + body


def _unpack(data: bytes) -> tuple[dict[str, Any], bytes]:
    (size,) = struct.unpack(">I", data[:4])
    return json.loads(data[4:4 + size]), data[4 + size:]


def run(data: bytes, fmt: str, notes: list[Note], *, memory_mb: int, timeout_seconds: float,
        pool_size: int = 0) -> tuple[bytes, dict]:
    """The annotated bytes of ``data`` and what was placed (``commented``, ``inserted``, ``skipped``), written in the
    parse pool's warm worker (``pool_size`` above 0) or a new child; a :class:`DocumentError`
    (``CG-ANNOTATE-FAILED``) when it crashed, hit a cap or timed out."""
    from clausegate.errors import DocumentError  # local import: parent side only (the child's start-up stays lean)
    from clausegate.review.document.child import communicate, spawn  # local import: parent side only, as above

    payload = [{"index": n.index, "clause": {k: getattr(n.clause, k) for k in CLAUSE_FIELDS}, "lines": list(n.lines),
                "fallback": n.fallback} for n in notes]
    if pool_size > 0:
        return _pooled_run(data, fmt, payload, memory_mb=memory_mb, timeout_seconds=timeout_seconds,
                           pool_size=pool_size)
    proc = spawn(BOOT, {"format": fmt, "memory_mb": memory_mb, "timeout": timeout_seconds})
    answer = communicate(proc, _pack({"notes": payload}, data), timeout_seconds)
    if answer is None:
        raise DocumentError(f"annotating the {fmt} stopped after {timeout_seconds:g} s (the parse step's time cap).",
                            hint="the review and its report are complete; raise steps.parse.timeout_seconds to get "
                                 "the annotated copy of a very large file.", code=FAILED)
    out, err = answer
    if proc.returncode != 0 or len(out) < 4:
        tail = err[-400:].decode("utf-8", "replace").strip().splitlines()
        raise DocumentError(f"annotating the {fmt} failed in its child process (exit {proc.returncode}: "
                            f"{tail[-1] if tail else 'no message'}).",
                            hint="the review and its report are complete; the annotated copy was not written. "
                                 "If the exit says MemoryError, raise steps.parse.memory_mb.", code=FAILED)
    head, body = _unpack(out)
    if head.get("error"):
        raise DocumentError(f"annotating the {fmt} failed: {head['error']}",
                            hint="the review and its report are complete; the annotated copy was not written.",
                            code=FAILED)
    return body, head


def _pooled_run(data: bytes, fmt: str, payload: list[dict], *, memory_mb: int, timeout_seconds: float,
                pool_size: int) -> tuple[bytes, dict]:
    import base64  # local import: parent side only

    from clausegate.errors import DocumentError  # local import: parent side only
    from clausegate.review.document import pool  # local import: parent side only
    from clausegate.review.document.codes import POOL_MAX_PARSES  # local import: parent side only

    options = {"job": "annotate", "format": fmt, "notes": payload, "memory_mb": int(memory_mb),
               "timeout": float(timeout_seconds)}
    try:
        result = pool.parse(f"annotated {fmt}", data, options, size=pool_size, max_parses=POOL_MAX_PARSES)
    except DocumentError as error:  # the wall deadline passed, or no worker could be started
        raise DocumentError(f"annotating the {fmt} failed in the parser process: {error.message}",
                            hint="the review and its report are complete; the annotated copy was not written. "
                                 "A time cap: raise steps.parse.timeout_seconds.", code=FAILED) from None
    if not result.get("ok"):
        raise DocumentError(f"annotating the {fmt} failed in the parser process: "
                            f"{result.get('message') or result.get('error') or 'no message'}",
                            hint="the review and its report are complete; the annotated copy was not written. "
                                 + str(result.get("hint") or ""), code=FAILED)
    return base64.b64decode(result["data"]), result["placed"]


def pooled(data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """The job ``annotate`` in a pooled parser process (:data:`clausegate.review.document.worker.JOBS`): the same
    writing as the one-shot child, its answer one JSON dict (``ok``, ``placed``, the annotated bytes as base64).
    A MemoryError or RecursionError goes up to the worker, which answers "too complex" and is replaced."""
    import base64  # local import: the pooled worker's side

    from clausegate.review.document.codes import WORKER_FAILED, failure  # local import: as above

    notes = [Note(index=n["index"], clause=SimpleNamespace(**n["clause"]), lines=tuple(n["lines"]),
                  fallback=n["fallback"]) for n in options["notes"]]
    try:
        body, result = write(data, str(options["format"]), notes)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - any failure on a hostile file costs the copy; the worker is replaced
        return failure(WORKER_FAILED, f"{type(exc).__name__}: {exc}"[:300], "")
    if result.get("error"):
        return failure(WORKER_FAILED, str(result["error"]), "")
    return {"ok": True, "placed": result, "data": base64.b64encode(body).decode("ascii")}


def main(argv: list[str]) -> int:
    from clausegate.review.document.limits import arm, cap_memory  # local import: the child's caps, child only

    options = json.loads(argv[0])
    cap_memory(int(options["memory_mb"]))
    arm(float(options["timeout"]))
    out = sys.stdout.buffer
    sys.stdout = sys.stderr
    head, data = _unpack(sys.stdin.buffer.read())
    notes = [Note(index=n["index"], clause=SimpleNamespace(**n["clause"]), lines=tuple(n["lines"]),
                  fallback=n["fallback"]) for n in head["notes"]]
    try:
        body, result = write(data, options["format"], notes)
    except (MemoryError, RecursionError) as exc:
        body, result = b"", {"error": f"the file is too complex to annotate within the caps ({type(exc).__name__})"}
    out.write(_pack(result, body))
    out.flush()
    return 0


def write(data: bytes, fmt: str, notes: list[Note]) -> tuple[bytes, dict]:
    """Annotate in this process (the child's body; tests and the bench call it directly to count)."""
    if fmt == "docx":
        from clausegate.review.annotate import docx  # local import: lxml only for a .docx

        body, placed = docx.annotate(data, notes)
    elif fmt == "pdf":
        from clausegate.review.annotate import pdf  # local import: PDFium and pypdf only for a PDF

        body, placed = pdf.annotate(data, notes)
    else:
        return b"", {"error": f"no annotated copy for the format {fmt!r}"}
    return body, {"commented": placed.commented, "inserted": getattr(placed, "inserted", []),
                  "skipped": placed.skipped}
