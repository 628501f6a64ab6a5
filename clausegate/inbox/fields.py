"""A submission's fields, checked before anything is stored or created: sender, topic, priority,
playbook, idempotency key, source path/URL, revises (its characters; whose task it names: the service); and the
opaque list cursor.

Every refusal is a ``BadSubmission`` (422) naming the field, repeating at most ~100 characters of
what the client sent (``clip``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import unicodedata
from typing import Literal
from urllib.parse import urlsplit

from clausegate.inbox.errors import BadSubmission, clip
from clausegate.inbox.keys import SENDER_PATTERN, Caller

Priority = Literal["high", "normal", "low"]  # = the work queues of the clausegate pool (prefect.yaml)
PRIORITIES: tuple[str, ...] = Priority.__args__  # type: ignore[attr-defined]
TOPIC_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:/@-]{0,79}$"
IDEMPOTENCY_PATTERN = r"^[A-Za-z0-9._:/@-]{1,128}$"


# Longest values a submission field may carry (the form parser also caps every field at a few KB).
MAX_PATH_CHARS, MAX_NAME_BYTES, MAX_PATH_BYTES = 1024, 255, 4095
MAX_URL_CHARS, MAX_PLAYBOOK_CHARS = 2048, 100


def _invisible(value: str) -> str | None:
    """The first control, invisible-format or surrogate character in ``value`` (NUL, newline, U+202E...)."""
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return ch
    return None


def check_text_fields(**fields: str | None) -> None:
    """BadSubmission (422) for a text field no later step could handle: control or invisible characters,
    paths the file system cannot hold (over-long names: ENAMETOOLONG), URLs that do not parse."""
    for name, value in fields.items():
        if value is None:
            continue
        bad = _invisible(value)
        if bad is not None:
            raise BadSubmission(f"field '{name}' contains the control or invisible character {clip(bad)}",
                                hint="send plain text: no NUL bytes, line breaks, tabs or direction marks")
    path = fields.get("source_path")
    if path:
        names = path.replace("\\", "/").split("/")
        try:
            encoded = os.fsencode(path)
        except UnicodeError:
            encoded = b""
        if (len(path) > MAX_PATH_CHARS or len(encoded) > MAX_PATH_BYTES or not encoded
                or any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in names)):
            raise BadSubmission(f"field 'source_path' is too long or not a file name this server can hold "
                                f"(at most {MAX_PATH_CHARS} characters, {MAX_NAME_BYTES} bytes per name)",
                                hint="reference the file by its path relative to the source folder, with shorter names")
    url = fields.get("source_url")
    if url:
        if len(url) > MAX_URL_CHARS:
            raise BadSubmission(f"field 'source_url' is longer than {MAX_URL_CHARS} characters",
                                hint="use a shorter URL, or upload the file")
        try:
            parts = urlsplit(url)
            _ = parts.port  # raises ValueError for a port out of range or not a number
        except ValueError:
            raise BadSubmission(
                f"field 'source_url' is not a URL: '{clip(url)}'",
                hint="send an absolute http(s) URL, e.g. https://docs.example.com/contract.pdf") from None
    playbook = fields.get("playbook")
    if playbook is not None and len(playbook) > MAX_PLAYBOOK_CHARS:
        raise BadSubmission(f"field 'playbook': no playbook named '{clip(playbook)}'", hint="use a playbook name")


def validate_fields(*, caller: Caller, sender: str | None, topic: str | None, priority: str, playbook: str,
                    idempotency_key: str | None, playbooks: dict[str, str], source_path: str | None = None,
                    source_url: str | None = None, revises: str | None = None) -> str:
    """The sender the task is filed under; BadSubmission (422) naming the field that is wrong.

    Every message repeats at most ~100 characters of what the client sent (``clip``)."""
    check_text_fields(source_path=source_path, source_url=source_url, sender=sender, topic=topic, priority=priority,
                      playbook=playbook, idempotency_key=idempotency_key, revises=revises)
    who = sender or caller.sender
    if not re.fullmatch(SENDER_PATTERN, who):
        raise BadSubmission(f"field 'sender': '{clip(who)}' is not a sender name",
                            hint="lowercase letters, digits, '.', '_', '-'")
    if who != caller.sender and not caller.admin:
        raise BadSubmission(f"field 'sender': this API key belongs to '{caller.sender}' and cannot submit as '{who}'",
                            hint=f"leave 'sender' out or send '{caller.sender}'")
    if priority not in PRIORITIES:
        raise BadSubmission(f"field 'priority': '{clip(priority)}' is not one of {', '.join(PRIORITIES)}",
                            hint="use high, normal or low")
    if playbook not in playbooks:
        raise BadSubmission(f"field 'playbook': no playbook named '{clip(playbook)}'",
                            hint=f"use one of: {', '.join(playbooks)} (GET /inbox/playbooks lists them)")
    if topic is not None and not re.fullmatch(TOPIC_PATTERN, topic):
        raise BadSubmission("field 'topic': 1-80 characters, starting with a letter or digit; letters, digits, "
                            "spaces and . _ : / @ - only", hint="shorten or simplify the topic")
    if idempotency_key is not None and not re.fullmatch(IDEMPOTENCY_PATTERN, idempotency_key):
        raise BadSubmission("field 'idempotency_key': 1-128 characters of letters, digits and . _ : / @ -",
                            hint="use e.g. a UUID or your own message id")
    return who


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["o"]
        if isinstance(offset, int) and 0 <= offset <= 1_000_000:
            return offset
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    raise BadSubmission("parameter 'cursor' is not a cursor this API returned", hint="start again without 'cursor'")
