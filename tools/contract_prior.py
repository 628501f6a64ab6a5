"""The contract prior (model 2.5): a per-contract, per-category logit offset from the whole contract's words.

A passage's words say what the passage is; the whole contract's words say what kind of contract it is (a
distribution agreement carries minimum commitments and revenue sharing more often than a licence does). Per
category, one logistic regression over the TF-IDF of the contract's text (its passages joined, the passage model's
vocabulary and idf, so serving reuses the same transform) is fitted on each contract fold of TRAIN. Its logit,
times a per-category weight, is added to every passage logit of the contract before anything is thresholded; the
weight is chosen by nested contract F1 and is 0 for a category with fewer than ``MIN_POSITIVES`` positive
training contracts (the rare ones lost F1 with it on TRAIN cross-validation: docs/quality.md).

Everything here reads TRAIN's out-of-fold scores only, like ``tools/offline_tuning.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.linear_model import LogisticRegression

from tools import offline_tuning as tune

C_VALUE = 4.0  # the contract model's inverse regularisation (TRAIN CV: C 0.3 / 1 / 4 / 16 / 64 measured)
MIN_POSITIVES = 40  # positive contracts in the training folds a category needs to use the prior
WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0]
# a contract of fewer passages gets no offset (5 % of TRAIN's contracts have under 9: scans, one-page amendments,
# so the contract model has seen few; TRAIN CV unchanged by the rule), and the contract logit is floored at
# LOGIT_FLOOR (TRAIN CV +0.0001), so no contract's words alone can bury a clear clause
MIN_PASSAGES = 10
LOGIT_FLOOR = -2.0

Pick = Callable[[int], Callable[[np.ndarray, np.ndarray], float]]


def contract_texts(texts: list[str], doc_ids: np.ndarray, n_docs: int) -> list[str]:
    """Each contract's passages joined in reading order (serving joins its passages the same way)."""
    out: list[list[str]] = [[] for _ in range(n_docs)]
    for text, d in zip(texts, doc_ids.tolist(), strict=True):
        out[d].append(text)
    return ["\n".join(parts) for parts in out]


def bounded(D: np.ndarray, n_passages: np.ndarray) -> np.ndarray:
    """The contract logits as serving uses them (``clausegate.review.offline.model.contract_offsets``): floored
    at ``LOGIT_FLOOR``, and 0 for a contract of fewer than ``MIN_PASSAGES`` passages."""
    out = np.maximum(D, LOGIT_FLOOR)
    out[n_passages < MIN_PASSAGES] = 0.0
    return out


def fit_fold_models(XD, truth: np.ndarray, doc_fold: np.ndarray):
    """Per fold, one LR per category on the other folds' contracts. Returns the out-of-fold logits
    (contracts x categories) and the fold models' coefficients (folds x categories x features) and intercepts."""
    n_docs, k = truth.shape
    folds = sorted(np.unique(doc_fold).tolist())
    D = np.zeros((n_docs, k))
    coefs = np.zeros((len(folds), k, XD.shape[1]))
    intercepts = np.zeros((len(folds), k))
    for f in folds:
        tr = doc_fold != f
        for c in range(k):
            t = truth[tr, c]
            if t.sum() < 2 or t.all():
                continue  # no model: its weight is 0 (fewer than MIN_POSITIVES positives)
            clf = LogisticRegression(C=C_VALUE, solver="liblinear", class_weight="balanced", random_state=0)
            clf.fit(XD[tr], t)
            coefs[f, c], intercepts[f, c] = clf.coef_[0], clf.intercept_[0]
            D[~tr, c] = XD[~tr] @ clf.coef_[0] + clf.intercept_[0]
    return D, coefs, intercepts


def fit(vec, texts: list[str], doc_ids: np.ndarray, spans, doc_fold: np.ndarray, k: int):
    """The contract prior of TRAIN's passages ``texts`` (``vec``: the fitted passage vectorizer): its bounded
    out-of-fold contract logits and the fold models (``fit_fold_models``)."""
    n_docs = int(doc_ids.max()) + 1
    XD = vec.transform(contract_texts(texts, doc_ids, n_docs)).tocsr()
    D, coefs, intercepts = fit_fold_models(XD, tune.contract_truth(spans, n_docs, k), doc_fold)
    return bounded(D, np.bincount(doc_ids, minlength=n_docs)), coefs, intercepts


def choose_weights(max_logit: np.ndarray, D: np.ndarray, truth: np.ndarray, doc_fold: np.ndarray,
                   rows: np.ndarray, pick: Pick, allowed: np.ndarray) -> np.ndarray:
    """Per category, the weight of ``WEIGHTS`` whose contract F1 on ``rows`` is highest, thresholds chosen on
    the other folds of ``rows`` (``pick(c)``: the category's extraction-threshold rule); 0 for a category not
    ``allowed`` or with fewer than ``MIN_POSITIVES`` positive contracts in ``rows``."""
    k = truth.shape[1]
    weights = np.zeros(k)
    for c in range(k):
        t = truth[rows, c]
        if not allowed[c] or t.sum() < MIN_POSITIVES:
            continue
        best = -1.0
        for w in WEIGHTS:
            s = tune.sigmoid(max_logit[rows, c] + w * D[rows, c])
            f1 = tune.prf(tune.cv_threshold(s, t, doc_fold[rows], pick(c)), t)[2]
            if f1 > best + 1e-9:
                best, weights[c] = f1, w
    return weights


def nested_figures(max_logit: np.ndarray, D: np.ndarray, truth: np.ndarray, doc_fold: np.ndarray, pick: Pick,
                   clause: list[int], allowed: np.ndarray) -> dict:
    """Fully nested contract micro / macro F1 without and with the prior: per fold the weights are chosen on the
    other folds (``choose_weights``) and the thresholds too; the weights each fold chose."""
    k = truth.shape[1]
    base = np.zeros_like(truth)
    prior = np.zeros_like(truth)
    chosen = []
    for f in np.unique(doc_fold):
        tr = doc_fold != f
        w = choose_weights(max_logit, D, truth, doc_fold, tr, pick, allowed)
        chosen.append(w)
        for c in range(k):
            for out, s in ((base, max_logit[:, c]), (prior, max_logit[:, c] + w[c] * D[:, c])):
                p = tune.sigmoid(s)
                out[~tr, c] = p[~tr] >= pick(c)(p[tr], truth[tr, c])

    def figures(pred):
        per = [tune.prf(pred[:, c], truth[:, c])[2] for c in clause]
        return round(tune.prf(pred[:, clause], truth[:, clause])[2], 4), round(float(np.mean(per)), 4)

    return {"without": figures(base), "with": figures(prior), "fold_weights": np.array(chosen).round(2).tolist()}
