"""Text extraction per extractor: speed (pages/s on one core) and quality (CUAD's labelled spans found).

    python bench/parse.py [--limit N] [--extractors pypdf,pdfium]
    python bench/parse.py --sandbox [--limit 30] [--threads 1,2]

For each CUAD HOLDOUT contract (``tools.cuad.is_holdout``; data in ``../shared/data/cuad``) and each
extractor, the PDF is parsed by the sandboxed worker's own code (``clausegate.review.document.worker._extract``,
in this process, pinned to one core, OCR off: the per-page path of the product — pypdf's open/decrypt/structure
checks, the hidden-text check, the extractor's page text, the garbled-text check — without the child process's
start-up).  Figures:

* pages/s: pages parsed per CPU second (and per wall second; the machine may be loaded: compare ratios);
* span recall: the share of CUAD's labelled answer spans found in the document's text after the product's
  normalisation — the worker's ``normalise_text``, then ``split_passages`` (whitespace collapsed, lines joined,
  line-end hyphens re-joined) — as whitespace-normalised lower-case text ("exact"), and as letters/digits only
  ("alnum": robust to punctuation and spacing differences between CUAD's .txt and any PDF extractor);
* notices: the CG-PDF-* notices per extractor (the integrity checks must agree).

``--sandbox``: the whole ``parse_pdf`` as the product calls it (fingerprint, a sandboxed child with its caps,
default limits, OCR off) per contract, one-shot children (``pool_size=0``) vs the parse pool (``pool_size=2``,
started by the first parse: its start-up is included), sequentially and from N threads at once; per-contract
wall ms and the one-shot/pool ratio, in one run.

CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate.review.document import pool, worker  # noqa: E402
from clausegate.review.document.sandbox import fingerprint, parse_pdf  # noqa: E402
from clausegate.review.document.text import EXTRACTORS  # noqa: E402
from clausegate.review.passages import split_passages  # noqa: E402
from tools import cuad  # noqa: E402

TARGET_PAGES_PER_SECOND = 150.0


def _options(extractor: str) -> dict:
    return {"timeout": 3600.0, "max_chars": 10**9, "memory_mb": 4096, "ocr": "off", "extractor": extractor}


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def document_text(result: dict) -> str:
    """The reviewed text of a parsed document: every page's passages, in order."""
    return " ".join(" ".join(split_passages(page["text"])) for page in result.get("pages", []))


def _timed_parse(path: Path, pool_size: int) -> tuple[float, int]:
    started = time.perf_counter()
    document = parse_pdf(fingerprint(path), ocr="off", pool_size=pool_size)
    return (time.perf_counter() - started) * 1000, len(document.pages)


def sandbox_bench(limit: int, thread_counts: list[int]) -> None:
    """parse_pdf per contract: one-shot children vs the parse pool, sequentially and from threads."""
    files = [cuad.cuad_dir() / e["pdf"] for e in cuad.load_manifest() if cuad.is_holdout(e["filename"])][:limit]
    modes = {"one-shot": 0, "pool": 2}
    runs: dict[tuple[str, int], tuple[list[float], float]] = {}
    pages: list[int] = []
    for threads in thread_counts:
        for mode, size in modes.items():
            pool.shutdown()  # each pool run starts cold: the workers' start-up is part of its figures
            started = time.perf_counter()
            with ThreadPoolExecutor(threads) as executor:
                done = list(executor.map(lambda f, size=size: _timed_parse(f, size), files))
            runs[(mode, threads)] = ([ms for ms, _ in done], time.perf_counter() - started)
            pages = [n for _, n in done]
    pool.shutdown()
    print(f"bench/parse.py --sandbox: {len(files)} CUAD holdout contracts ({sum(pages)} pages), parse_pdf with default "
          f"caps, OCR off; pool = 2 workers; {os.cpu_count()} cores, the machine may be shared (compare ratios)")
    if 1 in thread_counts:
        print(f"{'contract':<60} {'pages':>5} {'one-shot ms':>12} {'pool ms':>8}")
        one, pooled = runs[("one-shot", 1)][0], runs[("pool", 1)][0]
        for path, n, a, b in zip(files, pages, one, pooled, strict=True):
            print(f"{path.name[:60]:<60} {n:>5} {a:>12.0f} {b:>8.0f}")
    print(f"{'threads':>7} {'mode':<9} {'median ms':>10} {'mean ms':>8} {'p90 ms':>7} {'wall s':>7} "
          f"{'contracts/s':>12}")
    for threads in thread_counts:
        for mode in modes:
            times, wall = runs[(mode, threads)]
            p90 = sorted(times)[int(0.9 * (len(times) - 1))]
            print(f"{threads:>7} {mode:<9} {statistics.median(times):>10.0f} {statistics.fmean(times):>8.0f} "
                  f"{p90:>7.0f} {wall:>7.2f} {len(times) / wall:>12.2f}")
        one, pooled = runs[("one-shot", threads)], runs[("pool", threads)]
        ratio = statistics.median(one[0]) / statistics.median(pooled[0])
        print(f"{threads:>7} one-shot/pool: median per contract {ratio:.1f}x, wall {one[1] / pooled[1]:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N holdout contracts (0 = all; --sandbox: 30)")
    parser.add_argument("--extractors", default=",".join(reversed(EXTRACTORS)), help="comma-separated, in order")
    parser.add_argument("--sandbox", action="store_true", help="parse_pdf per contract: one-shot children vs pool")
    parser.add_argument("--threads", default="1,2", help="--sandbox: parses at once, comma-separated")
    args = parser.parse_args()
    if not cuad.cuad_available():
        sys.exit(f"CUAD data not found at {cuad.cuad_dir()}")
    if args.sandbox:
        sandbox_bench(args.limit or 30, [int(t) for t in args.threads.split(",") if t.strip()])
        return
    extractors = [e.strip() for e in args.extractors.split(",") if e.strip()]
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    annotations = cuad.load_annotations()
    holdout = [e for e in cuad.load_manifest() if cuad.is_holdout(e["filename"])]
    holdout = holdout[: args.limit] if args.limit else holdout

    stats = {x: Counter() for x in extractors}
    notices = {x: Counter() for x in extractors}
    found_by = {x: set() for x in extractors}
    spans = 0
    for entry in holdout:
        data = (cuad.cuad_dir() / entry["pdf"]).read_bytes()
        rows = [r for r in annotations.get(entry["filename"], []) if _alnum(r["text"])]
        texts = {}
        for extractor in extractors:
            wall, cpu = time.perf_counter(), time.process_time()
            result = worker._extract(data, _options(extractor))
            stats[extractor]["cpu"] += time.process_time() - cpu
            stats[extractor]["wall"] += time.perf_counter() - wall
            stats[extractor]["pages"] += len(result.get("pages", []))
            stats[extractor]["failed"] += not result.get("ok")
            notices[extractor].update(n["code"] for n in result.get("notices", []))
            texts[extractor] = document_text(result)
        for index, row in enumerate(rows):
            key = (entry["filename"], index)
            for extractor in extractors:
                norm, alnum = cuad.norm_ws(texts[extractor]), _alnum(texts[extractor])
                if cuad.norm_ws(row["text"]) in norm:
                    stats[extractor]["exact"] += 1
                    found_by[extractor].add(key)
                if _alnum(row["text"]) in alnum:
                    stats[extractor]["alnum"] += 1
        spans += len(rows)

    print(f"bench/parse.py: {len(holdout)} CUAD holdout contracts ({cuad.SPLIT_NAME}), {spans} labelled spans; "
          "one core, OCR off; the machine may be shared (compare ratios)")
    print(f"{'extractor':<10} {'pages':>6} {'pages/s cpu':>12} {'pages/s wall':>13} {'recall exact':>13} "
          f"{'recall alnum':>13} {'failed':>7}")
    for extractor in extractors:
        s = stats[extractor]
        print(f"{extractor:<10} {s['pages']:>6} {s['pages'] / max(s['cpu'], 1e-9):>12.1f} "
              f"{s['pages'] / max(s['wall'], 1e-9):>13.1f} {s['exact'] / max(spans, 1):>13.4f} "
              f"{s['alnum'] / max(spans, 1):>13.4f} {s['failed']:>7}")
    for extractor in extractors:
        others = set().union(*(found_by[x] for x in extractors if x != extractor)) if len(extractors) > 1 else set()
        print(f"  {extractor}: notices {dict(sorted(notices[extractor].items()))}; spans found only by it "
              f"(exact): {len(found_by[extractor] - others)}")
    if len(extractors) > 1:
        base, new = extractors[0], extractors[-1]
        rate = {x: stats[x]["pages"] / max(stats[x]["cpu"], 1e-9) for x in (base, new)}
        ok_speed = rate[new] >= TARGET_PAGES_PER_SECOND
        ok_recall = all(stats[new][k] >= stats[base][k] for k in ("exact", "alnum"))
        print(f"{new} vs {base}: {rate[new] / max(rate[base], 1e-9):.1f}x pages/s; target >= "
              f"{TARGET_PAGES_PER_SECOND:.0f} pages/s: {'met' if ok_speed else 'NOT met'}; "
              f"span recall at least as good: {'yes' if ok_recall else 'NO'}")


if __name__ == "__main__":
    main()
