"""The contract prior (model 2.5) on TRAIN cross-validation: the gain, its intervals, and the variants measured.

    python tools/train_offline_model.py --dump .bench/oof.npz --out /tmp/model   # OOF logits, once (~5 min)
    python bench/contract_prior.py --dump .bench/oof.npz                         # shipped rule vs none (~1 min)
    python bench/contract_prior.py --dump .bench/oof.npz --variants              # the other choices (~10 min)

TRAIN only (CUAD's holdout is never read), the training script's 4 contract folds and its out-of-fold passage
logits with the keyword priors as tuned; everything is fully nested (``tools/offline_tuning.nested_cv``: per fold the
prior's weights and all thresholds chosen on the other 3 folds). Intervals: 95 % paired bootstrap over contracts
(1,000 resamples). ``--variants`` prints contract micro / macro for: the contract model's C; the positive contracts a
category needs, or none; the prior for every category but the high-risk ones; the 41 passage maxima, or the first
two passages' words (the title), as extra features of the contract model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tools.train_offline_model as T  # noqa: E402
from clausegate.review.offline.model import make_vectorizer  # noqa: E402
from tools import contract_prior as prior  # noqa: E402
from tools import cuad  # noqa: E402
from tools import offline_tuning as tune  # noqa: E402


def load(dump: Path):
    entries = sorted((e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])),
                     key=lambda e: e["filename"])
    texts, _, doc_ids, _, Y, spans = T.build_corpus(entries, cuad.load_annotations())
    saved = np.load(dump, allow_pickle=False)
    assert saved["L"].shape == Y.shape and np.array_equal(saved["Y"], Y), "the dump is of another corpus"
    L, doc_fold = saved["L"].copy(), saved["doc_fold"]
    n_docs, k = int(doc_ids.max()) + 1, len(T.CATEGORIES)
    truth = tune.contract_truth(spans, n_docs, k)
    kw = tune.keyword_hits(texts, T.KEYWORD_PRIORS)
    boosts = tune.choose_boosts(L, kw, doc_ids, doc_fold, truth, T.KEYWORD_PRIORS, list(T.CATEGORIES), T.BOOST_GRID,
                                T.EXTRACT_FLOOR, lambda m: None)
    for j, name in enumerate(T.KEYWORD_PRIORS):
        T.add_keyword_boost(L[:, T.CATEGORIES.index(name)], kw[:, j], boosts[name])
    vec = make_vectorizer(T.FEATURES)
    vec.fit(texts)
    return texts, doc_ids, Y, spans, L, doc_fold, truth, vec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", required=True, help="the training script's --dump (OOF logits of TRAIN)")
    ap.add_argument("--variants", action="store_true", help="also the variants measured and not shipped")
    args = ap.parse_args()
    texts, doc_ids, Y, spans, L, doc_fold, truth, vec = load(Path(args.dump))
    n_docs, k = truth.shape
    clause = [c for c, n in enumerate(T.CATEGORIES) if n not in T.METADATA_CATEGORIES]
    allowed = np.array([n not in T.METADATA_CATEGORIES for n in T.CATEGORIES])
    rf = [T.CATEGORIES.index(n) for n in T.RECALL_FIRST]
    max_logit = np.full((n_docs, k), -40.0)
    np.maximum.at(max_logit, doc_ids, L)
    XD = vec.transform(prior.contract_texts(texts, doc_ids, n_docs)).tocsr()
    n_passages = np.bincount(doc_ids, minlength=n_docs)

    def contract_logits(X) -> np.ndarray:
        return prior.bounded(prior.fit_fold_models(X, truth, doc_fold)[0], n_passages)

    D = contract_logits(XD)
    weights = np.array(prior.nested_figures(max_logit, D, truth, doc_fold, T.pick_extract, clause,
                                            allowed)["fold_weights"])
    base = tune.nested_cv(L, None, None, Y, truth, doc_ids, doc_fold, T.pick_extract, T.pick_possible, rf)
    new = tune.nested_cv(L, D, weights, Y, truth, doc_ids, doc_fold, T.pick_extract, T.pick_possible, rf)
    rows_of = [np.flatnonzero(doc_ids == d) for d in range(n_docs)]

    def figures(res, docs) -> np.ndarray:
        pred, _, shown = res
        rows = np.concatenate([rows_of[d] for d in docs])
        return np.array([tune.prf(pred[docs][:, clause], truth[docs][:, clause])[2],
                         np.mean([tune.prf(pred[docs, c], truth[docs, c])[2] for c in clause]),
                         tune.prf(shown[rows][:, clause], Y[rows][:, clause])[2]])

    everyone = np.arange(n_docs)
    b, n = figures(base, everyone), figures(new, everyone)
    rng = np.random.default_rng(0)
    diffs = np.array([figures(new, s) - figures(base, s)
                      for s in (rng.integers(0, n_docs, n_docs) for _ in range(1000))])
    print(f"TRAIN, {n_docs} contracts, fully nested: without -> with the contract prior (95 % interval of the gain)")
    for i, name in enumerate(("contract micro-F1", "contract macro-F1", "passage micro-F1 (shown rule)")):
        lo, hi = np.percentile(diffs[:, i], [2.5, 97.5])
        print(f"  {name:30s} {b[i]:.4f} -> {n[i]:.4f}  ({n[i] - b[i]:+.4f} [{lo:+.4f}, {hi:+.4f}])")
    for c in clause:
        fb, fn = tune.prf(base[0][:, c], truth[:, c])[2], tune.prf(new[0][:, c], truth[:, c])[2]
        if abs(fn - fb) >= 0.01:
            print(f"  {T.CATEGORIES[c]:35s} contract F1 {fb:.3f} -> {fn:.3f}")
    for c in rf:
        (pb, rb, _), (pn, rn, _) = (tune.prf(r[0][:, c] | r[1][:, c], truth[:, c]) for r in (base, new))
        print(f"  found or possible, {T.CATEGORIES[c]:24s} R / P {rb:.3f} / {pb:.3f} -> {rn:.3f} / {pn:.3f}")
    if not args.variants:
        return

    def nested(Dv, allowed_v=allowed) -> str:
        r = prior.nested_figures(max_logit, Dv, truth, doc_fold, T.pick_extract, clause, allowed_v)
        return f"{r['with'][0]:.4f} / {r['with'][1]:.4f}"

    shipped_c, shipped_min = prior.C_VALUE, prior.MIN_POSITIVES
    print(f"variants, contract micro / macro (without the prior: {b[0]:.4f} / {b[1]:.4f})")
    for c_value in (0.3, 1.0, 4.0, 16.0, 64.0):
        prior.C_VALUE = c_value
        Dc = contract_logits(XD)
        for minimum in (20, 40, 60):
            prior.MIN_POSITIVES = minimum
            print(f"  C {c_value:5}, at least {minimum} positive contracts: {nested(Dc)}", flush=True)
        prior.MIN_POSITIVES = shipped_min
    prior.C_VALUE = shipped_c
    for minimum in (0, 5):
        prior.MIN_POSITIVES = minimum
        print(f"  every category with >= {minimum} positives: {nested(D)}")
    prior.MIN_POSITIVES = shipped_min
    no_hr = allowed & ~np.isin(np.arange(k), rf)
    print(f"  not for the high-risk categories: {nested(D, no_hr)}")
    for alpha in (0.1, 1.0):
        stacked = sp.hstack([XD, alpha * tune.sigmoid(max_logit)]).tocsr()
        print(f"  + the 41 passage maxima x {alpha}: {nested(contract_logits(stacked))}")
    first = ["\n".join(texts[i] for i in rows_of[d][:2]) for d in range(n_docs)]
    XT = vec.transform(first).tocsr()
    for beta in (0.3, 1.0):
        titled = sp.hstack([XD, beta * XT]).tocsr()
        print(f"  + the first two passages' words x {beta}: {nested(contract_logits(titled))}")


if __name__ == "__main__":
    main()
