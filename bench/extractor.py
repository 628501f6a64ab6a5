"""Benchmark the offline extractor on CUAD's HOLDOUT split (``clausegate.cuad_split.is_holdout``).

    python bench/extractor.py [--limit N] [--recall-target balanced|high|max]

Pipeline per holdout contract: pypdf page text -> ``prefilter`` (all 41 categories) ->
``extract_offline``.  Prints per-category precision / recall / F1:

* contract level ("is the clause present"): predicted when at least one clause of the
  category is extracted; true when CUAD has at least one span of it for the contract;
* passage level: over every passage of every page (``split_passages``), predicted when the
  passage was extracted as a clause of the category; true when a CUAD span of the category
  overlaps the passage (located as for training: ``cuad_split.locate_span``).

Micro and macro F1 are over the 36 non-metadata categories (metadata rows shown for info).
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from prefilter import load_holdout, parsed_document  # noqa: E402  (bench/prefilter.py)

from clausegate import cuad_split  # noqa: E402
from clausegate.categories import CATEGORIES, CLAUSE_CATEGORIES, METADATA_CATEGORIES  # noqa: E402
from clausegate.extractor import extract_offline  # noqa: E402
from clausegate.passages import split_passages  # noqa: E402
from clausegate.prefilter import prefilter  # noqa: E402


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--recall-target", default=None)
    args = ap.parse_args()
    t0 = time.time()
    if not cuad_split.cuad_available():
        sys.exit(f"CUAD not found at {cuad_split.cuad_dir()}")
    docs = load_holdout(args.limit)
    cats = list(CATEGORIES)
    k = len(cats)
    ci = {c: i for i, c in enumerate(cats)}
    doc_counts = np.zeros((k, 3), dtype=int)  # tp fp fn
    pas_counts = np.zeros((k, 3), dtype=int)
    support = np.zeros(k, dtype=int)

    for entry, pages, rows in docs:
        doc = parsed_document(entry, pages)
        fd = prefilter(doc, cats, recall_target=args.recall_target)
        clauses = extract_offline(fd, cats)
        pred_doc = np.zeros(k, dtype=bool)
        pred_pas: set[tuple[int, int, str]] = set()  # (category, page, passage text)
        for cl in clauses:
            pred_doc[ci[cl.category]] = True
            pred_pas.add((ci[cl.category], cl.pages[0], cl.text))
        truth_doc = np.zeros(k, dtype=bool)
        page_passages = {pno: split_passages(t) for pno, t in enumerate(pages, start=1) if t.strip()}
        truth_pas: set[tuple[int, int, str]] = set()
        for row in rows:
            c = ci[row["category"]]
            truth_doc[c] = True
            for pno in cuad_split.span_pages(row):
                for i in cuad_split.locate_span(row["text"], page_passages.get(pno, [])):
                    truth_pas.add((c, pno, page_passages[pno][i]))
        support += truth_doc
        doc_counts[:, 0] += pred_doc & truth_doc
        doc_counts[:, 1] += pred_doc & ~truth_doc
        doc_counts[:, 2] += ~pred_doc & truth_doc
        for c, _, _ in pred_pas & truth_pas:
            pas_counts[c, 0] += 1
        for c, _, _ in pred_pas - truth_pas:
            pas_counts[c, 1] += 1
        for c, _, _ in truth_pas - pred_pas:
            pas_counts[c, 2] += 1

    print(f"ClauseGate offline extractor benchmark - CUAD holdout ({cuad_split.SPLIT_NAME}): {len(docs)} contracts")
    print("pipeline: pypdf pages -> prefilter(all 41, recall_target="
          f"{args.recall_target or 'default'}) -> extract_offline")
    header = (f"{'category':<36} {'n':>3} | {'contract P':>10} {'R':>6} {'F1':>6} | "
              f"{'passage P':>9} {'R':>6} {'F1':>6}")
    print(header)
    print("-" * len(header))
    f1_doc, f1_pas = {}, {}
    for name in list(CLAUSE_CATEGORIES) + sorted(METADATA_CATEGORIES, key=cats.index):
        c = ci[name]
        dp, dr, df = prf(*doc_counts[c])
        pp, pr, pf = prf(*pas_counts[c])
        f1_doc[name], f1_pas[name] = df, pf
        meta = " (metadata)" if name in METADATA_CATEGORIES else ""
        print(f"{(name + meta)[:36]:<36} {support[c]:>3} | {dp:>10.2f} {dr:>6.2f} {df:>6.2f} | "
              f"{pp:>9.2f} {pr:>6.2f} {pf:>6.2f}")
    idx = [ci[c] for c in CLAUSE_CATEGORIES]
    print("-" * len(header))
    for label, counts, f1s in (("contract", doc_counts, f1_doc), ("passage", pas_counts, f1_pas)):
        tp, fp, fn = counts[idx].sum(axis=0)
        mp, mr, mf = prf(tp, fp, fn)
        macro = float(np.mean([f1s[c] for c in CLAUSE_CATEGORIES]))
        print(f"{label}-level over 36 clause categories: micro P {mp:.3f} R {mr:.3f} F1 {mf:.3f} | macro-F1 {macro:.3f}")
    tp, fp, fn = doc_counts[idx].sum(axis=0)
    micro = prf(tp, fp, fn)[2]
    macro = float(np.mean([f1_doc[c] for c in CLAUSE_CATEGORIES]))
    met = micro >= 0.80 and macro >= 0.65
    print(f"TARGET contract-level micro-F1 >= 0.80 and macro-F1 >= 0.65: {'MET' if met else 'missed'} "
          f"({micro:.3f} / {macro:.3f})")
    print(f"{time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
