"""An ``.eml`` is untrusted input like any contract: it is read in a child process under a time and a memory cap.

The gateway never parses a message itself.  :func:`parse_message` starts ``python -I`` (a minimal environment, no
API keys, its own process group, the contract parser's helpers: :mod:`clausegate.review.document.child`), hands it
the message on stdin and reads back what :func:`clausegate.inbox.email_intake.read_message` found.  The child caps
its own address space (``CLAUSEGATE_INBOX_EML_MEMORY_MB``, default 1024) and CPU time; the parent kills its group
at ``CLAUSEGATE_INBOX_EML_TIMEOUT_SECONDS`` (default 30).  A message that hits a cap is refused whole with
``CG-INBOX-EML-TOO-COMPLEX`` (422); one the parser refuses keeps its ``CG-INBOX-EML-MALFORMED``.  A child that cannot
start or answers garbage is ``CG-INBOX-UNAVAILABLE`` (503: nothing was created, the client retries).

The answer on stdout: one JSON line (the message's metadata, each document's part, kind, file name and size, the
refused and skipped parts), then the documents' bytes one after the other.  The parent checks it (sizes, kinds, file
names) before it believes it: the child handled hostile input.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from clausegate.inbox import email_intake
from clausegate.inbox.email_intake import Document, MessageLimits, ParsedMessage, PartNote
from clausegate.inbox.errors import MalformedMessage, MessageTooComplex, Unavailable
from clausegate.review.document import child, limits, registry
from clausegate.review.document.codes import EXIT_NO_MEMORY

if TYPE_CHECKING:
    from clausegate.config import InboxSettings

log = logging.getLogger(__name__)

BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); "
        "from clausegate.inbox.eml_sandbox import child_main; sys.exit(child_main(sys.argv[2]))")
KINDS = frozenset(registry.CONTRACT_FORMATS)
_NAME = re.compile(r"[A-Za-z0-9._-]{1,140}")  # email_intake's safe names: no folder, no space, no control
_PART = re.compile(r"[0-9]+(\.[0-9]+)*(\.body)?|body")
_RAISE_CAPS = ("send the attachments themselves, or ask the operator to raise CLAUSEGATE_INBOX_EML_TIMEOUT_SECONDS / "
               "CLAUSEGATE_INBOX_EML_MEMORY_MB")


def parse_message(data: bytes, settings: InboxSettings) -> ParsedMessage:
    """The message's documents, refusals and skipped parts, read in the sandboxed child (module docstring)."""
    limits = MessageLimits(max_upload_bytes=settings.max_upload_bytes, max_upload_mb=settings.max_upload_mb,
                           max_attachments=settings.max_attachments)
    options = {"limits": asdict(limits), "timeout": settings.eml_timeout_seconds, "memory_mb": settings.eml_memory_mb}
    try:
        proc = child.spawn(BOOT, options)
    except OSError as exc:
        raise Unavailable(f"the e-mail parser process could not be started ({exc})",
                          hint="the gateway's machine may be out of processes or memory; retry later") from None
    answer = child.communicate(proc, data, float(settings.eml_timeout_seconds))
    if answer is None:
        raise _too_slow(settings.eml_timeout_seconds)
    out, err = answer
    if proc.returncode != 0:
        raise _ended(proc.returncode, err[-child.STDERR_TAIL:].decode("utf-8", "replace"), settings)
    return _answer(out)


def _too_slow(timeout: float) -> MessageTooComplex:
    return MessageTooComplex(f"the e-mail could not be read within {timeout:g} s, the time cap for one message "
                             "(it is very large or built to be slow to parse)", hint=_RAISE_CAPS)


def _ended(rc: int, tail: str, settings: InboxSettings) -> Exception:
    if rc in (-signal.SIGALRM, -getattr(signal, "SIGXCPU", -999)):
        return _too_slow(settings.eml_timeout_seconds)
    if rc == EXIT_NO_MEMORY or rc < 0:
        return MessageTooComplex(f"reading the e-mail needed more than the {settings.eml_memory_mb} MB memory cap "
                                 "(it is very large or built to exhaust the parser)", hint=_RAISE_CAPS)
    log.warning("the e-mail parser process failed with exit status %s: %s", rc, tail)
    return Unavailable(f"the e-mail parser process failed (exit status {rc})",
                       hint="retry; if it repeats, the gateway's log has the parser's error output")


def _answer(out: bytes) -> ParsedMessage:
    """The child's answer, checked: a coded refusal (raised), or the parsed message."""
    head, _, blobs = out.partition(b"\n")
    try:
        answer = json.loads(head)
        if not answer.get("ok"):
            raise MalformedMessage(str(answer["message"]), hint=str(answer.get("hint", "")),
                                   code=str(answer["code"]))
        documents, offset = [], 0
        for entry in answer["documents"]:
            size = int(entry["size"])
            if entry["kind"] not in KINDS or not _NAME.fullmatch(entry["filename"]) \
                    or not _PART.fullmatch(entry["part"]) or size < 0 or offset + size > len(blobs):
                raise ValueError(f"an unexpected document entry {str(entry)[:200]}")
            documents.append(Document(entry["part"], entry["kind"], entry["filename"], blobs[offset:offset + size]))
            offset += size
        if offset != len(blobs):
            raise ValueError(f"{len(blobs) - offset} bytes after the last document")
        return ParsedMessage(message_id=str(answer["message_id"]), header_message_id=answer["header_message_id"],
                             subject=answer["subject"], from_header=answer["from_header"], documents=documents,
                             refused=[PartNote(**n) for n in answer["refused"]],
                             skipped=[PartNote(**n) for n in answer["skipped"]])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # json's errors are ValueErrors
        log.warning("the e-mail parser process answered garbage: %s", exc)
        raise Unavailable("the e-mail parser process returned an unreadable answer",
                          hint="retry; if it repeats, report it with the message (a ClauseGate bug)") from None


def child_main(options_json: str) -> int:
    """The child: caps itself, reads the message from stdin, writes the answer (module docstring) to stdout."""
    options = json.loads(options_json)
    limits.cap_memory(int(options["memory_mb"]))
    limits.arm(float(options["timeout"]))
    out = sys.stdout.buffer
    try:
        data = sys.stdin.buffer.read()
        try:
            parsed = email_intake.read_message(data, MessageLimits(**options["limits"]))
        except MalformedMessage as error:
            out.write(json.dumps({"ok": False, "code": error.code, "message": error.message,
                                  "hint": error.hint}).encode())
            return 0
        except MemoryError:
            raise
        except Exception as exc:  # the stdlib parser failing on hostile input in a way it does not report as a defect
            out.write(json.dumps({"ok": False, "code": MalformedMessage.code,
                                  "message": f"the e-mail could not be read ({type(exc).__name__})",
                                  "hint": "export the message again from the mail client (unedited), or send the "
                                          "attachments themselves"}).encode())
            return 0
        out.write(json.dumps(_header(parsed)).encode() + b"\n")
        for document in parsed.documents:
            out.write(document.data)
        out.flush()
    except MemoryError:
        os._exit(EXIT_NO_MEMORY)  # (unflushed: the parent goes by the exit status and reads nothing)
    return 0


def _header(parsed: ParsedMessage) -> dict[str, Any]:
    return {"ok": True, "message_id": parsed.message_id, "header_message_id": parsed.header_message_id,
            "subject": parsed.subject, "from_header": parsed.from_header,
            "documents": [{"part": d.part, "kind": d.kind, "filename": d.filename, "size": len(d.data)}
                          for d in parsed.documents],
            "refused": [asdict(n) for n in parsed.refused], "skipped": [asdict(n) for n in parsed.skipped]}
