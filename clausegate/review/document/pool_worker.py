"""A pooled parser process (child side of :mod:`clausegate.review.document.pool`): started once as
``python -I -c <boot>`` under the address-space cap, it serves one parse after another on its stdin/stdout.

Request: a 12-byte header (options length, data length; big-endian unsigned 32- and 64-bit), the options as JSON,
the PDF's bytes.  Answer: a 4-byte length and the result as JSON (what the one-shot worker would print).
Each parse runs under its own alarm and CPU limit (:func:`clausegate.review.document.limits.arm`); the parent
also keeps a wall deadline and kills the process group when it passes.  End of stdin ends the process.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

from clausegate.review.document.codes import EXIT_NO_MEMORY
from clausegate.review.document.limits import arm, cap_memory
from clausegate.review.document.worker import answer

REQUEST = struct.Struct(">IQ")  # kept in step with clausegate.review.document.pool
ANSWER = struct.Struct(">I")


def _read_exactly(stream: Any, size: int) -> bytes | None:
    chunks, missing = [], size
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def serve(argv: list[str]) -> int:
    config = json.loads(argv[0])
    cap_memory(config["memory_mb"])
    requests, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers may reach the parent's stdout
    while True:
        header = _read_exactly(requests, REQUEST.size)
        if header is None:
            return 0  # the parent closed the pipe: the pool is shutting down (or the parent died)
        options_size, data_size = REQUEST.unpack(header)
        body = _read_exactly(requests, options_size + data_size)
        if body is None:
            return 0
        options = json.loads(body[:options_size])
        arm(options["timeout"])
        result = answer(body[options_size:], options)
        del body
        try:
            payload = json.dumps(result).encode("ascii")
            out.write(ANSWER.pack(len(payload)) + payload)
            out.flush()
        except MemoryError:
            os._exit(EXIT_NO_MEMORY)
        arm(0)
