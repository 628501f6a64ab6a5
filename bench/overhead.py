"""Prefect overhead: the same review as plain function calls vs. as the contract-review flow.

    python bench/overhead.py [--repeat 3]

Each sample contract is reviewed (a) by calling the plain modules directly, (b) by the flow with
no cache hit (the PDF gets a unique trailing comment, so its content hash is new), and (c) by the
flow again on the same bytes (all cache hits).  Uses PREFECT_API_URL if set, else a temporary
local server (its start-up is excluded by a warm-up run).  Prints seconds, the ratios and whether the
targets are met: flow / plain <= 1.3x, fully cached rerun <= 0.25 s (medians).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 1.3  # flow / plain, medians
TARGET_CACHED_S = 0.25  # a fully cached rerun, median seconds


def plain_review(pdf: Path, out: Path) -> None:
    from clausegate.review import assemble
    from clausegate.review.document.sandbox import fingerprint, parse_pdf
    from clausegate.review.playbook import load_playbook
    from clausegate.review.report import write_report

    book = load_playbook("default")
    source = fingerprint(pdf)
    document = parse_pdf(source)
    filtered = assemble.prefilter_step(document, book.categories)
    extraction = assemble.extract_step(filtered, book.categories)
    review = assemble.assemble_review(document, filtered, extraction, playbook=book.name, gated=book.gated_categories)
    write_report(review, out)


def unique_copy(pdf: Path, folder: Path) -> Path:
    target = folder / f"{pdf.stem}-{uuid.uuid4().hex[:8]}.pdf"
    target.write_bytes(pdf.read_bytes() + f"\n%bench {uuid.uuid4().hex}\n".encode())
    return target


CPU_SECONDS: list[float] = []  # CPU seconds (this process + reaped parse children) of each timed call, in order


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args) -> float:
    start, cpu = time.perf_counter(), _cpu()
    fn(*args)
    CPU_SECONDS.append(_cpu() - cpu)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from flows.contract_review import contract_review

    samples = sorted((ROOT / "samples").glob("*.pdf"))
    work = Path(tempfile.mkdtemp(prefix="cg-overhead-"))

    def flow(pdf: Path):
        run = contract_review(str(pdf), out_dir=str(work / "flow"))
        return asyncio.run(run) if inspect.iscoroutine(run) else run  # the flow is async

    flow(unique_copy(samples[0], work))  # warm-up: server start, imports, model load
    plain_review(samples[0], work / "plain")

    rows = []
    for pdf in samples:
        for _ in range(args.repeat):
            copy = unique_copy(pdf, work)
            rows.append((pdf.name, timed(plain_review, copy, work / "plain"), timed(flow, copy), timed(flow, copy)))
    print(f"{'contract':45} {'plain s':>8} {'flow s':>8} {'cached s':>9}")
    for name, plain, cold, warm in rows:
        print(f"{name:45} {plain:8.2f} {cold:8.2f} {warm:9.2f}")
    plain_m = statistics.median(r[1] for r in rows)
    cold_m = statistics.median(r[2] for r in rows)
    warm_m = statistics.median(r[3] for r in rows)
    print(f"\nmedian: plain {plain_m:.2f}s, flow {cold_m:.2f}s, flow all-cached {warm_m:.2f}s")
    print(f"flow / plain = {cold_m / plain_m:.2f}x  (Prefect overhead {cold_m - plain_m:+.2f}s per contract)")
    print(f"cached rerun / plain = {warm_m / plain_m:.2f}x")
    ratio_met, cached_met = cold_m / plain_m <= TARGET_RATIO, warm_m <= TARGET_CACHED_S
    print(f"target flow / plain <= {TARGET_RATIO}x: {cold_m / plain_m:.2f}x -> {'met' if ratio_met else 'NOT met'}")
    print(f"target cached rerun <= {TARGET_CACHED_S:.2f} s: {warm_m:.2f} s -> {'met' if cached_met else 'NOT met'}")
    cpu = [CPU_SECONDS[i:i + 3] for i in range(0, len(CPU_SECONDS), 3)]  # plain, flow, cached per sample
    cpu_plain, cpu_cold, cpu_warm = (statistics.median(c[k] for c in cpu) for k in range(3))
    print(f"CPU seconds (wall times swing with the machine's load; CPU much less): plain {cpu_plain:.2f}, "
          f"flow {cpu_cold:.2f} ({cpu_cold / cpu_plain:.2f}x), cached rerun {cpu_warm:.2f}")
    print(f"(2 cores shared with other work: load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
