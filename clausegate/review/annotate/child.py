"""Annotation in a capped child process: the contract is untrusted, so writing its annotated copy (PDFium and pypdf
on a PDF, lxml on a .docx) runs like its parsing, in a ``python -I`` child with the parse step's memory cap and
time limit, in its own process group (:mod:`clausegate.review.document.child`).  A crash, a cap hit or a timeout
costs the annotated copy, never the review.

Wire format: the options (caps, format) on the command line; on stdin a 4-byte length, the notes as JSON, then the
file's bytes; on stdout a 4-byte length, the result as JSON, then the annotated bytes.
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


def run(data: bytes, fmt: str, notes: list[Note], *, memory_mb: int, timeout_seconds: float) -> tuple[bytes, dict]:
    """The annotated bytes of ``data`` and what was placed (``commented``, ``inserted``, ``skipped``), written in the
    child; a :class:`DocumentError` (``CG-ANNOTATE-FAILED``) when the child crashed, hit a cap or timed out."""
    from clausegate.errors import DocumentError  # local import: parent side only (the child's start-up stays lean)
    from clausegate.review.document.child import communicate, spawn  # local import: parent side only, as above

    payload = [{"index": n.index, "clause": {k: getattr(n.clause, k) for k in CLAUSE_FIELDS}, "lines": list(n.lines),
                "fallback": n.fallback} for n in notes]
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
