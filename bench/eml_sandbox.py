"""Benchmark: what reading an ``.eml`` in its sandboxed child costs, and how much memory a message needs.

    python bench/eml_sandbox.py [--repeat 5]

1. A small message (a clause in the body and one small PDF attached): median wall time of
   ``clausegate.inbox.eml_sandbox.parse_message`` (a new ``python -I`` child per message) against
   ``clausegate.inbox.email_intake.read_message`` in this process (what the gateway did before), and the ratio.
2. The largest message the default limits admit: one attachment of ``CLAUSEGATE_INBOX_MAX_UPLOAD_MB`` (20 MB,
   random bytes behind a PDF header) base64-encoded (~27 MB): its wall time in the child under the default caps
   (and in this process), and the smallest memory cap (``CLAUSEGATE_INBOX_EML_MEMORY_MB``, searched in 32 MB
   steps from 128) under which it is still read, against the default 1024.

Prints the figures; nothing is asserted (the caps themselves are tested in tests/unit/test_email_intake.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clausegate.config import InboxSettings  # noqa: E402
from clausegate.inbox.email_intake import MessageLimits, read_message  # noqa: E402
from clausegate.inbox.eml_sandbox import parse_message  # noqa: E402
from clausegate.inbox.errors import MessageTooComplex  # noqa: E402
from tests.support.messages import attach, eml_bytes, message  # noqa: E402

CLAUSE = "The Supplier's total liability under this Agreement shall not exceed the fees paid in the prior year."


def _median_seconds(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _reads(data: bytes, settings: InboxSettings, memory_mb: int) -> bool:
    try:
        parse_message(data, settings.model_copy(update={"eml_memory_mb": memory_mb}))
        return True
    except MessageTooComplex:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        settings = InboxSettings(data_dir=Path(folder))
        limits = MessageLimits(settings.max_upload_bytes, settings.max_upload_mb, settings.max_attachments)
        small = eml_bytes(attach(message("Cap wording", CLAUSE), b"%PDF-1.4\n" + os.urandom(20_000), "draft.pdf"))
        sandboxed = _median_seconds(lambda: parse_message(small, settings), args.repeat)
        in_process = _median_seconds(lambda: read_message(small, limits), args.repeat)
        print(f"small message ({len(small) / 1024:.0f} KB): sandboxed child {sandboxed * 1000:.0f} ms, in process "
              f"{in_process * 1000:.1f} ms (median of {args.repeat}; the child costs {sandboxed - in_process:.2f} s "
              "more per message)")

        payload = b"%PDF-1.4\n" + os.urandom(settings.max_upload_bytes - 9)
        largest = eml_bytes(attach(message("Largest", "See attached."), payload, "largest.pdf"))
        wall = _median_seconds(lambda: parse_message(largest, settings), max(1, args.repeat // 2))
        wall_in_process = _median_seconds(lambda: read_message(largest, limits), max(1, args.repeat // 2))
        needed = next((mb for mb in range(128, settings.eml_memory_mb + 1, 32) if _reads(largest, settings, mb)),
                      None)
        print(f"largest message ({len(largest) / 1024 / 1024:.1f} MB, one {settings.max_upload_mb:g} MB attachment): "
              f"{wall:.2f} s in the child ({wall_in_process:.2f} s in process); smallest memory cap that reads it: "
              f"{f'{needed} MB' if needed else f'over {settings.eml_memory_mb} MB'} "
              f"(default {settings.eml_memory_mb} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
