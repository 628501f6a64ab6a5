"""CPU time of the offline model per contract (pre-filter + extraction), on the biggest TRAIN contracts.

    python bench/offline_speed.py [--n 12] [--rounds 3] [--tree DIR ...] [--cache DIR] [--out DIR]

The target is <= 100 ms per contract on one core after parsing; ``bench/extractor.py`` reports it on
the holdout, this script on the ``--n`` biggest TRAIN contracts (by CUAD text size; the holdout is never
read), so a speed change can be measured without touching the holdout.  Each ``--tree`` (a checkout of
this repository, default: this one) is run in its own child process (``PYTHONPATH=tree``), the trees
interleaved round by round so that machine load hits them alike; per contract the median of the rounds'
``time.process_time`` of ``extract_offline(prefilter(doc, all categories), all categories)`` is kept
(after one warm-up contract, the next biggest, not timed), and the median / p95 / max over contracts are printed.

With two or more trees it also compares what they return: every kept passage (page, text, section,
per-category score) and every clause (category, text, pages, section, confidence, possible) must be
the same; the first difference is printed.  ``--out`` keeps each tree's results as JSON.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def biggest_train(n: int, cache: Path | None) -> list[dict]:
    sys.path.insert(0, str(REPO))
    from tools import cuad  # local import: the parent only; children import the tree under test

    train = [e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])]
    train.sort(key=lambda e: (-(cuad.cuad_dir() / e["txt"]).stat().st_size, e["filename"]))
    return [{"filename": e["filename"], "pages": cuad.load_pages(e, cache)} for e in train[:n + 1]]


def child(docs_file: str, out_file: str) -> None:
    """Runs in the tree under test: time each contract once, write times and results."""
    from clausegate.review.categories import CATEGORIES  # local import: from the tree under test
    from clausegate.review.offline.extract import extract_offline  # local import: from the tree under test
    from clausegate.review.prefilter import prefilter  # local import: from the tree under test
    from clausegate.review.schemas import Page, ParsedDocument  # local import: from the tree under test

    docs = json.loads(Path(docs_file).read_text(encoding="utf-8"))
    cats = list(CATEGORIES)
    parsed = [ParsedDocument(contract_id=hashlib.sha256(d["filename"].encode()).hexdigest(), filename=d["filename"],
                             pages=[Page(number=k, text=t, needs_ocr=not t.strip())
                                    for k, t in enumerate(d["pages"] or [""], start=1)])
              for d in docs]
    extract_offline(prefilter(parsed[-1], cats), cats)  # warm-up (a contract not timed): model, nltk
    times, results = [], []
    for doc in parsed[:-1]:
        t0 = time.process_time()
        filtered = prefilter(doc, cats)
        clauses = extract_offline(filtered, cats)
        times.append(time.process_time() - t0)
        results.append({
            "passages": [[p.page, p.text, p.section, p.categories] for p in filtered.passages],
            "tokens": [filtered.tokens_total, filtered.tokens_kept],
            "clauses": [[c.category, c.text, c.pages, c.section, c.confidence, c.possible] for c in clauses],
        })
    Path(out_file).write_text(json.dumps({"times": times, "results": results}), encoding="utf-8")


def run_tree(tree: Path, docs_file: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, __file__, "--child", docs_file, out], env=env, cwd=str(tree), check=True)
    data = json.loads(Path(out).read_text(encoding="utf-8"))
    os.unlink(out)
    return data


def first_difference(a: list, b: list) -> str | None:
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        for key in ("passages", "tokens", "clauses"):
            if x[key] != y[key]:
                for i, (u, v) in enumerate(zip(x[key], y[key], strict=False)):
                    if u != v:
                        return f"contract {k} {key}[{i}]:\n  {u}\n  {v}"
                return f"contract {k} {key}: {len(x[key])} vs {len(y[key])} items"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=12, help="biggest TRAIN contracts to time (default 12)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", action="append", type=Path, help="repository checkout to time (repeatable)")
    ap.add_argument("--cache", type=Path, default=None, help="page-text cache (tools/cuad.py's by default)")
    ap.add_argument("--out", type=Path, default=None, help="write each tree's results here")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    trees = [t.resolve() for t in (args.tree or [REPO])]
    docs = biggest_train(args.n, args.cache)  # the n biggest, then the warm-up contract
    chars = [sum(len(p) for p in d["pages"]) for d in docs[:-1]]
    print(f"{len(docs) - 1} biggest TRAIN contracts, {min(chars):,}-{max(chars):,} chars; {args.rounds} rounds; "
          f"load average {os.getloadavg()[0]:.2f}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(docs, fh)
        docs_file = fh.name
    runs: dict[Path, list[dict]] = {t: [] for t in trees}
    try:
        for _ in range(args.rounds):
            for tree in trees:
                runs[tree].append(run_tree(tree, docs_file))
    finally:
        os.unlink(docs_file)
    for tree in trees:
        ms = 1000 * np.median([r["times"] for r in runs[tree]], axis=0)
        print(f"{str(tree):40s} median {np.median(ms):6.1f} ms  p95 {np.percentile(ms, 95):6.1f} ms  "
              f"max {ms.max():6.1f} ms  per contract: {' '.join(f'{x:.0f}' for x in ms)}")
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{tree.name}.json").write_text(json.dumps(runs[tree][0]["results"]), encoding="utf-8")
    base = runs[trees[0]][0]["results"]
    for tree in trees[1:]:
        diff = first_difference(base, runs[tree][0]["results"])
        print(f"results {trees[0].name} vs {tree.name}: " + ("identical" if diff is None else f"DIFFER at {diff}"))


if __name__ == "__main__":
    main()
