"""Threshold, prior and calibration tuning for ``tools/train_offline_model.py``.

Everything here works on out-of-fold (OOF) scores of CUAD's TRAIN split only (contract-level
folds): the holdout is never read.  Scores are logits of the fold models.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from clausegate.review.offline import model as serving


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def logit(p):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def prf(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    tp = int((pred & truth).sum())
    fp = int((pred & ~truth).sum())
    fn = int((~pred & truth).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def best_f1_threshold(scores: np.ndarray, truth: np.ndarray, floor: float) -> tuple[float, float]:
    """Threshold >= ``floor`` (probability) on contract max-scores maximising F1 (midpoint
    between neighbouring scores)."""
    if truth.sum() == 0:
        return 1.01, 0.0
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], truth[order]
    tp = np.cumsum(t)
    fp = np.cumsum(~t)
    f1 = 2 * tp / (tp + fp + t.sum())
    valid = np.r_[s[:-1] > s[1:], True] & (s >= floor)
    f1 = np.where(valid, f1, -1)
    i = int(np.argmax(f1))
    if f1[i] < 0:
        return float(max(floor, s[0] + 1e-6)), 0.0
    nxt = s[i + 1] if i + 1 < len(s) else 0.0
    return float(max(floor, (s[i] + nxt) / 2)), float(f1[i])


def recall_threshold(scores: np.ndarray, truth: np.ndarray, recall: float, min_precision: float,
                     floor: float) -> float | None:
    """The highest threshold whose recall on (scores, truth) reaches ``recall`` while precision
    stays >= ``min_precision``; when none does, the one with the highest recall at that
    precision; None when no cut keeps the precision."""
    if truth.sum() == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], truth[order]
    tp = np.cumsum(t)
    prec = tp / np.arange(1, len(t) + 1)
    rec = tp / t.sum()
    ok = np.r_[s[:-1] > s[1:], True] & (s >= floor) & (prec >= min_precision)
    if not ok.any():
        return None
    valid = ok & (rec >= recall)
    if valid.any():
        i = int(np.argmax(valid))  # the first (highest-threshold) cut that reaches the recall
    else:
        i = int(np.flatnonzero(ok)[np.argmax(rec[ok])])  # the most recall the precision allows
    nxt = s[i + 1] if i + 1 < len(s) else 0.0
    return float(max(floor, (s[i] + nxt) / 2))


def contract_truth(spans, n_docs: int, k: int) -> np.ndarray:
    """Contracts x categories: the contract has a CUAD span of the category (``spans``: (contract, category, _))."""
    truth = np.zeros((n_docs, k), dtype=bool)
    for d, c, _ in spans:
        truth[d, c] = True
    return truth


def cv_threshold(doc_scores, truth, doc_fold, pick) -> np.ndarray:
    """Nested estimate: for each fold, ``pick(scores, truth)`` on the other folds, applied to
    it.  Returns the predicted presence of every contract."""
    pred = np.zeros(len(truth), dtype=bool)
    for f in np.unique(doc_fold):
        tr = doc_fold != f
        th = pick(doc_scores[tr], truth[tr])
        pred[~tr] = doc_scores[~tr] >= th
    return pred


# ---- which passages of a found category are shown (passage level); serving's rule is
# clausegate.review.offline.extract.decide: the category's best passage, plus every passage at or above
# max(extract_threshold, passage_threshold)

PASSAGE_GRID = [0.0, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]


def shown_passages(P, doc_ids, thr, pthr, found=None) -> np.ndarray:
    """Passages x categories: shown as findings under serving's rule (``thr``: extraction thresholds,
    ``pthr``: passage thresholds, both per category; ``found``: passages x categories, the passage's contract
    has the category found, when that is not decided on ``P``'s maxima: the contract prior)."""
    n_docs = int(doc_ids.max()) + 1
    best = np.zeros((n_docs, P.shape[1]))
    np.maximum.at(best, doc_ids, P)
    if found is None:
        found = best[doc_ids] >= thr
    return found & ((P >= np.maximum(thr, pthr)) | (P >= best[doc_ids]))


def choose_passage_threshold(p, truth, doc_ids, thr: float, found=None, grid=PASSAGE_GRID) -> float:
    """For one category: the grid value maximising passage-level F1 of ``shown_passages``."""
    best_g, best_f = 0.0, -1.0
    found = None if found is None else found[:, None]
    for g in grid:
        f1 = prf(shown_passages(p[:, None], doc_ids, np.array([thr]), np.array([g]), found)[:, 0], truth)[2]
        if f1 > best_f + 1e-9:
            best_g, best_f = g, f1
    return float(best_g)


def nested_cv(L_raw, D, fold_weights, Y, truth, doc_ids, doc_fold, pick_extract, pick_possible, recall_first):
    """Per fold ``f``, everything chosen on the other folds and applied to ``f``: the contract prior's weights
    (``fold_weights[f]``, chosen without ``f``; all zero without a prior, ``D`` None), the extraction, possible and
    passage thresholds. Returns contract presence, "possible" (recall-first categories, on the passage scores
    alone) and the passages shown (by the passage scores alone), as serving decides them."""
    n_docs, k = truth.shape
    fold = doc_fold[doc_ids]
    P_raw = sigmoid(L_raw)
    raw_max = np.zeros((n_docs, k))
    np.maximum.at(raw_max, doc_ids, P_raw)
    pred, poss, shown = np.zeros_like(truth), np.zeros_like(truth), np.zeros_like(Y)
    for f in np.unique(doc_fold):
        tr_doc, tr = doc_fold != f, fold != f
        L = L_raw if D is None else L_raw + (fold_weights[f] * D)[doc_ids]
        P = sigmoid(L)
        M = np.zeros((n_docs, k))
        np.maximum.at(M, doc_ids, P)
        thr = np.array([pick_extract(c)(M[tr_doc, c], truth[tr_doc, c]) for c in range(k)])
        pred[~tr_doc] = M[~tr_doc] >= thr
        for c in recall_first:
            poss[~tr_doc, c] = raw_max[~tr_doc, c] >= pick_possible(c)(raw_max[tr_doc, c], truth[tr_doc, c])
        found = M[doc_ids] >= thr
        g = np.array([choose_passage_threshold(P_raw[tr, c], Y[tr, c], doc_ids[tr], thr[c], found[tr, c])
                      for c in range(k)])
        shown[~tr] = shown_passages(P_raw[~tr], doc_ids[~tr], thr, g, found[~tr])
    return pred, poss, shown


# ---- keyword priors (rare categories): logit boosts chosen by cross-validated contract F1; the boost
# itself is serving's (clausegate.review.offline.model.add_keyword_boost), so what is tuned is what is scored

def keyword_hits(texts: list[str], patterns: dict[str, str]) -> np.ndarray:
    """Passages x patterns: which passage each keyword prior matches (serving's matching rule)."""
    columns = [serving.keyword_hits(texts, serving.keyword_pattern(p)) for p in patterns.values()]
    return np.array(columns, dtype=bool).reshape(len(patterns), len(texts)).T


def choose_boosts(oof_logit, kw_hit, doc_ids, doc_fold, truth_doc, patterns, categories, grid, floor, log):
    n_docs = truth_doc.shape[0]
    out = {}
    for j, name in enumerate(patterns):
        c = categories.index(name)
        t = truth_doc[:, c]
        best_b, best_f = 0.0, -1.0
        for b in grid:
            s = sigmoid(serving.add_keyword_boost(oof_logit[:, c].copy(), kw_hit[:, j], b))
            m = np.zeros(n_docs)
            np.maximum.at(m, doc_ids, s)
            pred = cv_threshold(m, t, doc_fold, lambda s_, t_: best_f1_threshold(s_, t_, floor)[0])
            f1 = prf(pred, t)[2]
            if f1 > best_f + 1e-9:
                best_b, best_f = b, f1
        log(f"  keyword prior {name}: boost {best_b} (CV contract F1 {best_f:.3f})")
        out[name] = best_b
    return out


# ---- the pre-filter's keep thresholds (span coverage vs tokens kept)

def lambda_thresholds(oof, tok, span_cat, span_idx, lam: float) -> np.ndarray:
    """Per-category keep thresholds for trade-off ``lam``: for category c, rank passages by
    score_c and keep the prefix maximising ``lam * spans_c covered - tokens_c kept`` (tokens
    in units of corpus_tokens / n_spans)."""
    k = oof.shape[1]
    unit = tok.sum() / max(1, len(span_cat))
    th = np.ones(k)
    for c in range(k):
        s = oof[:, c]
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(s), dtype=int)
        rank[order] = np.arange(len(s))
        firsts = [int(rank[ix].min()) for cc, ix in zip(span_cat, span_idx, strict=True) if cc == c and len(ix)]
        if not firsts:
            continue
        gain = np.zeros(len(s))
        np.add.at(gain, firsts, 1)
        obj = lam * np.cumsum(gain) - np.cumsum(tok[order]) / unit
        th[c] = s[order[int(np.argmax(obj))]]
    return th


def keep_eval(oof, tok, keep_first, top1, span_cat, span_idx, th, cols, metadata_rule) -> tuple[float, float]:
    keep = (oof[:, cols] >= th[cols]).any(axis=1) | top1[:, cols].any(axis=1)
    if metadata_rule:
        keep |= keep_first
    sp = [ix for c, ix in zip(span_cat, span_idx, strict=True) if c in set(cols)]
    recall = float(np.mean([bool(len(ix)) and bool(keep[ix].any()) for ix in sp]))
    return float(tok[keep].sum() / tok.sum()), recall


def interpolate_grid(grid: list[float], rows: list[np.ndarray], lam: float) -> np.ndarray:
    """Thresholds at ``lam``: geometric interpolation between neighbouring grid points
    (mirrors ``clausegate.review.offline.model.OfflineModel.keep_thresholds``)."""
    lg = np.log(np.asarray(grid, dtype=float))
    x = float(np.clip(np.log(lam), lg[0], lg[-1]))
    j = min(max(int(np.searchsorted(lg, x, side="right")) - 1, 0), len(grid) - 2)
    w = (x - lg[j]) / (lg[j + 1] - lg[j])
    a, b = np.log(np.maximum(rows[j], 1e-9)), np.log(np.maximum(rows[j + 1], 1e-9))
    return np.exp((1 - w) * a + w * b)


def effective_lambda(lam: float, n_all: int, n_categories: int) -> float:
    """Playbook-size rule (mirrored in clausegate.review.offline.model): lambda * sqrt(41 / max(6, n))."""
    return lam * float(np.sqrt(n_all / max(6, n_categories)))


# ---- calibration of the confidence shown for a finding

def fit_platt(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Platt scaling sigmoid(a * x + b): a one-feature logistic regression (lbfgs, deterministic)."""
    if len(np.unique(y)) < 2:
        return 1.0, 0.0
    clf = LogisticRegression(C=100.0, max_iter=1000).fit(np.asarray(x, dtype=float).reshape(-1, 1), y.astype(int))
    return float(clf.coef_[0, 0]), float(clf.intercept_[0])


CATEGORY_OFFSET_PRIOR = 50  # findings: a category's offset is shrunk by n / (n + 50)


def category_offsets(z: np.ndarray, y: np.ndarray, cols: np.ndarray, categories: list[str]) -> dict[str, float]:
    """Per-category additive corrections to the Platt logit ``z`` (``calibration.category_b``, read by
    ``OfflineModel.calibrate``): logit(share right) - logit(mean confidence) of the category's findings, shrunk
    towards 0 by n / (n + ``CATEGORY_OFFSET_PRIOR``)."""
    out = {}
    for c in np.unique(cols):
        m = cols == c
        gap = logit(np.clip(y[m].mean(), 0.02, 0.98)) - logit(np.clip(sigmoid(z[m]).mean(), 0.02, 0.98))
        out[categories[int(c)]] = round(float(gap * m.sum() / (m.sum() + CATEGORY_OFFSET_PRIOR)), 4)
    return out


def calibrate_findings(x, y, cols, fold_of, categories) -> tuple[float, float, dict, np.ndarray, np.ndarray]:
    """Platt scaling of the findings' ``x`` (logit - logit(threshold)) plus per-category offsets, fitted on all
    OOF findings; and the nested estimates (fitted on 3 folds, applied to the 4th) without and with the offsets."""
    cal_platt, cal_full = np.zeros(len(x)), np.zeros(len(x))
    for f in np.unique(fold_of):
        tr = fold_of != f
        a_, b_ = fit_platt(x[tr], y[tr])
        off = category_offsets(a_ * x[tr] + b_, y[tr], cols[tr], categories)
        cal_platt[~tr] = sigmoid(a_ * x[~tr] + b_)
        shift = np.array([off.get(categories[int(c)], 0.0) for c in cols[~tr]])
        cal_full[~tr] = sigmoid(a_ * x[~tr] + b_ + shift)
    a, b = fit_platt(x, y)
    return a, b, category_offsets(a * x + b, y, cols, categories), cal_platt, cal_full


def ece(conf: np.ndarray, correct: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error: sum over equal-width confidence bins of
    (share of findings in the bin) * |accuracy - mean confidence|."""
    conf = np.asarray(conf, dtype=float)
    correct = np.asarray(correct, dtype=float)
    if not len(conf):
        return 0.0
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.mean() * abs(correct[m].mean() - conf[m].mean())
    return float(total)


# ---- the pre-filter's keep grid

def keep_grid(P, doc_ids, page_nos, thr, spans, tokens, categories, lambda_grid, recall_levels, first_passages,
              log, found=None) -> dict:
    """The pre-filter's per-category keep thresholds along a grid of trade-offs lambda (``recall_levels``:
    level name -> OOF span recall; ``first_passages``: the metadata rule's passages of the first page; ``found``:
    passages x categories, the contract has the category found, when not decided on ``P``: the contract prior)."""
    n_docs, k = int(doc_ids.max()) + 1, P.shape[1]
    tok = np.array(tokens)
    span_cat = np.array([s[1] for s in spans])
    span_idx = [np.array(s[2], dtype=int) for s in spans]
    best = np.full((n_docs, k), -1.0)
    np.maximum.at(best, doc_ids, P)
    top1 = (P == best[doc_ids]) & ((P >= thr) if found is None else found)
    keep_first = np.zeros(len(doc_ids), dtype=bool)
    for dd in range(n_docs):
        ix = np.where(doc_ids == dd)[0]
        if len(ix):
            keep_first[ix[page_nos[ix] == page_nos[ix].min()][:first_passages]] = True
    grid = {lam: np.maximum(lambda_thresholds(P, tok, span_cat, span_idx, lam), 1e-5) for lam in lambda_grid}
    rows = [grid[x] for x in lambda_grid]
    levels = {}
    for level, recall in recall_levels.items():
        chosen = lambda_grid[-1]
        for lam in [round(2 ** (i / 16), 4) for i in range(0, 161)]:
            th = interpolate_grid(lambda_grid, rows, lam)
            if keep_eval(P, tok, keep_first, top1, span_cat, span_idx, th, list(range(k)), True)[1] >= recall:
                chosen = lam
                break
        levels[level] = chosen
        t41, r41 = keep_eval(P, tok, keep_first, top1, span_cat, span_idx,
                             interpolate_grid(lambda_grid, rows, chosen), list(range(k)), True)
        log(f"keep level {level}: lambda {chosen}: OOF tokens {t41:.1%} spans {r41:.1%}")
    return {
        "keep_rule": "keep a passage if, for any requested category c, score_c >= threshold_c(lambda_level * "
                     "sqrt(41 / max(6, n_requested))) (grid, geometric interpolation), or it is the document's "
                     "best passage for c and score_c >= possible_threshold_c (or extract_threshold_c)",
        "keep_lambda_grid": lambda_grid,
        "keep_threshold_grid": {n: [round(float(grid[lam][c]), 7) for lam in lambda_grid]
                                for c, n in enumerate(categories)},
        "keep_levels": levels,
        "keep_level_oof_recall": recall_levels,
        "keep_default_level": "balanced",
        "metadata_first_passages": first_passages,
    }
