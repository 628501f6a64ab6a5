"""Clause types a team defines, measured on CUAD (issue 22 item 4): 5 examples against the supervised model.

    python bench/custom_categories.py [--examples 5] [--train-contracts 120] [--json FILE]

For each CUAD clause category with at least 10 HOLDOUT contracts that have it, the category is *hidden*: it is
defined as a playbook would define it (``clausegate.review.custom_categories.CustomCategory``: CUAD's question
and ``--examples`` example clauses, no keywords) and found by similarity alone; its own supervised scores are
never used.  The examples are CUAD spans of that category from TRAIN contracts (40-1,500 characters, the first
by sha256 of their text: a fixed, arbitrary pick).  The shared TF-IDF vocabulary and idf are the shipped model's
(fitted on TRAIN passages, without labels).

Threshold: one similarity threshold for every category, chosen on TRAIN (``--train-contracts`` TRAIN contracts,
first by sha256 of the file name, the examples' own contracts left out) leaving the category out: for category
c, the grid value maximising the mean contract-level F1 of the *other* categories.  ``DEFAULT_THRESHOLD`` of
``custom_categories`` is the value chosen with no category left out (printed).

Scored on the 78 HOLDOUT contracts (pages as the pre-filter makes them, ``page_passages``; every passage, no
pre-filter): a contract has the category when a passage's similarity reaches the threshold.  Against the
supervised model (``cuad-tfidf-lr`` shipped: a passage probability at or above the category's extraction
threshold).  Contract-level precision / recall / F1 per category, and their means.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate.review.categories import CATEGORY_QUESTIONS, METADATA_CATEGORIES  # noqa: E402
from clausegate.review.offline.model import load_model, score_passages  # noqa: E402
from clausegate.review.passages import page_passages  # noqa: E402
from tools import cuad  # noqa: E402

GRID = [round(0.04 + 0.02 * k, 3) for k in range(24)]  # 0.04 .. 0.50
MIN_HOLDOUT = 10


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _matrix(texts: list[str], model) -> sp.csr_matrix:
    rows, cols, vals = [], [], []
    for i, t in enumerate(texts):
        c, w = model.vectorizer.row(t)
        rows.extend([i] * len(c))
        cols.extend(c.tolist())
        vals.extend(w.tolist())
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(texts), len(model.vectorizer.idf)))


def _contracts(entries, model):
    """Per contract: its passages' TF-IDF matrix and passage texts."""
    out = []
    for e in entries:
        texts = [t for ps in page_passages(cuad.load_pages(e)) for t, _ in ps] or [""]
        out.append((e["filename"], texts, _matrix(texts, model)))
    return out


def _prf(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp, fp, fn = int((pred & truth).sum()), int((pred & ~truth).sum()), int((~pred & truth).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--train-contracts", type=int, default=120)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    model = load_model()
    ann = cuad.load_annotations()
    manifest = cuad.load_manifest()
    train = [e for e in manifest if not cuad.is_holdout(e["filename"])]
    hold = sorted((e for e in manifest if cuad.is_holdout(e["filename"])), key=lambda e: e["filename"])
    labels = {e["filename"]: {r["category"] for r in ann.get(e["filename"], [])} for e in manifest}
    cats = [c for c in model.categories if c not in METADATA_CATEGORIES
            and sum(c in labels[e["filename"]] for e in hold) >= MIN_HOLDOUT]
    examples, sources = {}, set()
    for c in cats:
        spans = sorted({(r["text"].strip(), e["filename"]) for e in train for r in ann.get(e["filename"], [])
                        if r["category"] == c and 40 <= len(r["text"].strip()) <= 1500}, key=lambda s: _sha(s[0]))
        examples[c] = [t for t, _ in spans[: args.examples]]
        sources |= {f for _, f in spans[: args.examples]}
    tune = sorted((e for e in train if e["filename"] not in sources), key=lambda e: _sha(e["filename"]))
    tune = tune[: args.train_contracts]
    print(f"custom categories from {args.examples} TRAIN examples: {len(cats)} categories with >= {MIN_HOLDOUT} "
          f"holdout contracts; threshold on {len(tune)} TRAIN contracts, scored on {len(hold)} HOLDOUT contracts",
          file=sys.stderr)
    E = {c: _matrix(examples[c], model) for c in cats}

    def best_sims(docs) -> np.ndarray:  # contracts x categories: the largest passage-example cosine
        out = np.zeros((len(docs), len(cats)))
        for d, (_, _, X) in enumerate(docs):
            for j, c in enumerate(cats):
                out[d, j] = (X @ E[c].T).max()
        return out

    tr_docs = _contracts(tune, model)
    S_tr = best_sims(tr_docs)
    T_tr = np.array([[c in labels[f] for c in cats] for f, _, _ in tr_docs])
    f1_grid = np.array([[_prf(S_tr[:, j] >= g, T_tr[:, j])[2] for g in GRID] for j in range(len(cats))])
    chosen_all = GRID[int(np.argmax(f1_grid.mean(axis=0)))]
    ho_docs = _contracts(hold, model)
    S_ho = best_sims(ho_docs)
    T_ho = np.array([[c in labels[f] for c in cats] for f, _, _ in ho_docs])
    index = model.category_index
    sup = np.zeros_like(T_ho)
    for d, (_, texts, _) in enumerate(ho_docs):
        probs = score_passages(texts, model)
        sup[d] = [probs[:, index[c]].max() >= model.extract_threshold(c) for c in cats]
    rows = []
    print(f"{'category':<36} {'n':>3} | {'thr':>5} {'custom P':>8} {'R':>5} {'F1':>5} | {'supervised P':>12} "
          f"{'R':>5} {'F1':>5}")
    for j, c in enumerate(cats):
        others = [k for k in range(len(cats)) if k != j]
        g = GRID[int(np.argmax(f1_grid[others].mean(axis=0)))]
        cp = _prf(S_ho[:, j] >= g, T_ho[:, j])
        spf = _prf(sup[:, j], T_ho[:, j])
        rows.append({"category": c, "question": CATEGORY_QUESTIONS[c], "n_holdout": int(T_ho[:, j].sum()),
                     "threshold": g,
                     "custom": dict(zip("prf", cp, strict=True)), "supervised": dict(zip("prf", spf, strict=True))})
        print(f"{c:<36} {int(T_ho[:, j].sum()):>3} | {g:>5.3f} {cp[0]:>8.2f} {cp[1]:>5.2f} {cp[2]:>5.2f} | "
              f"{spf[0]:>12.2f} {spf[1]:>5.2f} {spf[2]:>5.2f}")
    mean = {k: {m: float(np.mean([r[k][m] for r in rows])) for m in "prf"} for k in ("custom", "supervised")}
    print(f"{'mean over ' + str(len(rows)) + ' categories':<40} | {'':>5} {mean['custom']['p']:>8.2f} "
          f"{mean['custom']['r']:>5.2f} {mean['custom']['f']:>5.2f} | {mean['supervised']['p']:>12.2f} "
          f"{mean['supervised']['r']:>5.2f} {mean['supervised']['f']:>5.2f}")
    print(f"threshold chosen on TRAIN with every category: {chosen_all}")
    if args.json:
        args.json.write_text(json.dumps({"examples": args.examples, "threshold_all": chosen_all, "rows": rows,
                                         "mean": mean}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
