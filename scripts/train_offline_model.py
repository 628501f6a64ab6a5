"""Train ClauseGate's offline clause scorer on CUAD's TRAIN split and write the artifact.

    python scripts/train_offline_model.py [--folds 4] [--out clausegate/models]

Data: ../shared/data/cuad (CUAD v1, Hendrycks et al. 2021, CC BY 4.0).  pypdf page text is
cached under .bench/pages/.  Only contracts with ``is_holdout(filename) == False`` are read
for training and tuning; the holdout is left to ``bench/*.py``.

Model: passages (``clausegate.passages.split_passages`` of each pypdf page) labelled positive
for a category when a CUAD span of that category overlaps them (``cuad_split.locate_span``);
TF-IDF over word 1-2-grams (sublinear tf, min_df, max_features) -> one logistic regression
per category (one-vs-rest).  Out-of-fold scores over a contract-level K-fold of TRAIN tune:

* ``extract_threshold[c]``: the passage-probability threshold maximising contract-level F1
  ("is the clause present": any passage of the contract at or above it);
* ``keep_threshold_grid[c]``: the pre-filter's per-category keep thresholds along a grid of
  trade-offs lambda (for c: rank passages by score, keep the prefix maximising
  lambda * spans covered - tokens kept); ``keep_levels`` maps recall_target names to the
  lambda whose pooled out-of-fold span recall on all 41 categories reaches the level.

The shipped model is the average of the K fold models (each saw (K-1)/K of TRAIN), so its
score distribution matches the out-of-fold scores the thresholds were tuned on.
Artifact (no pickle): ``clausegate/models/offline_model.npz`` (vocabulary, idf, float16
coefficients, intercepts) + ``offline_model.json``.  ``--tune-only`` re-tunes the thresholds
from the out-of-fold scores saved in ``.bench/oof.npz`` without retraining.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate import cuad_split  # noqa: E402
from clausegate.categories import CATEGORIES, METADATA_CATEGORIES  # noqa: E402
from clausegate.passages import MAX_CHARS, MIN_CHARS, split_passages  # noqa: E402

MODEL_VERSION = "cuad-tfidf-lr-1.1"
TOKEN_PATTERN = r"(?u)\b\w\w+\b|\$|%"
FEATURES = {
    "ngram_range": [1, 2],
    "min_df": 3,
    "max_df": 0.5,
    "max_features": 40000,
    "sublinear_tf": True,
    "lowercase": True,
    "token_pattern": TOKEN_PATTERN,
    "norm": "l2",
    "strip_accents": "unicode",
}
C_VALUE = 16.0
# positives up-weighted in each per-category LR (class_weight {0: 1, 1: POS_WEIGHT}): CUAD's
# categories are rare at passage level, and without it the rare ones end with near-zero
# probabilities (and near-zero tuned thresholds)
POS_WEIGHT = 4.0
# extraction thresholds are never below this passage probability: a clause is never reported
# with a near-zero confidence (1.0 tuned thresholds could be ~0.002)
EXTRACT_FLOOR = 0.05
# pre-filter levels: pooled out-of-fold span recall wanted for the all-41-category playbook
RECALL_LEVELS = {"balanced": 0.965, "high": 0.98, "max": 0.99}
DEFAULT_LEVEL = "balanced"
LAMBDA_GRID = [round(2 ** (k / 4), 4) for k in range(0, 41)]  # 1 .. 1024
DUMP = REPO / ".bench" / "oof.npz"
# Keyword priors for rare categories (words of CUAD's category questions): a passage matching
# the category's pattern (case-insensitive) gets ``logit_boost`` added to its logit.  The boost
# is chosen per category from BOOST_GRID on TRAIN only: contract-level F1 with thresholds tuned
# on 3 contract folds of the out-of-fold scores and applied to the 4th (ties -> smaller boost).
KEYWORD_PRIORS = {
    "Most Favored Nation": r"most favou?red|favou?rable (?:terms|prices?|pricing|rates?)|favou?rable than",
    "Unlimited/All-You-Can-Eat-License": r"unlimited|all[- ]you[- ]can[- ]eat|enterprise[- ]wide",
    "Price Restrictions": r"(?:increase|raise|reduce|change)[a-z ]{0,40}price|price (?:increase|protection)",
    "Source Code Escrow": r"escrow",
    "Non-Disparagement": r"disparag",
    "Third Party Beneficiary": r"beneficiar",
}
BOOST_GRID = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
NARROW = ["Revenue/Profit Sharing", "Minimum Commitment", "Price Restrictions",
          "Cap on Liability", "Uncapped Liability", "Liquidated Damages"]
METADATA_FIRST_PASSAGES = 3  # prefilter rule: keep page 1's first N passages for metadata categories


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_corpus(entries: list[dict], annotations: dict[str, list[dict]]):
    """Passages of every page of ``entries`` with their labels and span bookkeeping."""
    cat_index = {c: i for i, c in enumerate(CATEGORIES)}
    texts: list[str] = []
    doc_ids: list[int] = []
    page_nos: list[int] = []
    rows: list[np.ndarray] = []  # per passage label vectors
    spans: list[tuple[int, int, list[int]]] = []  # (doc, category index, passage indices)
    located = missing = 0
    for d, entry in enumerate(entries):
        pages = cuad_split.load_pages(entry)
        page_passages: dict[int, tuple[int, list[str]]] = {}
        for pno, text in enumerate(pages, start=1):
            ps = split_passages(text)
            page_passages[pno] = (len(texts), ps)
            for p in ps:
                texts.append(p)
                doc_ids.append(d)
                page_nos.append(pno)
        labels = np.zeros((len(texts) - len(rows), len(CATEGORIES)), dtype=bool)
        base = len(rows)
        for row in annotations.get(entry["filename"], []):
            c = cat_index[row["category"]]
            idxs: set[int] = set()
            for pno in cuad_split.span_pages(row):
                if pno in page_passages:
                    start, ps = page_passages[pno]
                    idxs |= {start + i for i in cuad_split.locate_span(row["text"], ps)}
            if not idxs:  # unknown or wrong page: search the whole document
                for pno, (start, ps) in page_passages.items():
                    found = cuad_split.locate_span(row["text"], ps)
                    if found:
                        idxs = {start + i for i in found}
                        break
            if idxs:
                located += 1
                for i in idxs:
                    labels[i - base, c] = True
            else:
                missing += 1
            spans.append((d, c, sorted(idxs)))
        rows.extend(labels)
    Y = np.array(rows, dtype=bool).reshape(len(texts), len(CATEGORIES))
    log(f"{len(entries)} contracts, {len(texts)} passages, spans located {located}, not found {missing}")
    return texts, np.array(doc_ids), np.array(page_nos), Y, spans


def fit_predict(X_train, Y_train, X_test) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One LR per category; returns (coef [k, f], intercept [k], test probabilities [n, k])."""
    k = Y_train.shape[1]
    coef = np.zeros((k, X_train.shape[1]), dtype=np.float64)
    intercept = np.full(k, -10.0)
    for c in range(k):
        y = Y_train[:, c]
        if y.sum() < 2:
            continue
        clf = LogisticRegression(
            C=C_VALUE, solver="liblinear", dual=True, max_iter=500, class_weight={False: 1.0, True: POS_WEIGHT}
        )
        clf.fit(X_train, y)
        coef[c] = clf.coef_[0]
        intercept[c] = clf.intercept_[0]
    probs = None
    if X_test is not None:
        probs = 1.0 / (1.0 + np.exp(-(X_test @ coef.T + intercept)))
    return coef, intercept, probs


def best_f1_threshold(scores: np.ndarray, truth: np.ndarray, floor: float = EXTRACT_FLOOR) -> tuple[float, float]:
    """Threshold >= ``floor`` on contract max-scores maximising F1 (midpoint between
    neighbouring scores, never below ``floor``)."""
    if truth.sum() == 0:
        return 1.01, 0.0
    order = np.argsort(-scores)
    s, t = scores[order], truth[order]
    tp = np.cumsum(t)
    fp = np.cumsum(~t)
    f1 = 2 * tp / (tp + fp + t.sum())
    # only cut between distinct scores
    valid = np.r_[s[:-1] > s[1:], True] & (s >= floor)
    f1 = np.where(valid, f1, -1)
    i = int(np.argmax(f1))
    if f1[i] < 0:  # no contract reaches the floor: predict nothing
        return float(max(floor, s[0] + 1e-6)), 0.0
    nxt = s[i + 1] if i + 1 < len(s) else 0.0
    return float(max(floor, (s[i] + nxt) / 2)), float(f1[i])


def keyword_hits(texts: list[str]) -> np.ndarray:
    """[n_passages, len(KEYWORD_PRIORS)] bool: passage matches the category's pattern."""
    import re

    pats = [re.compile(p, re.IGNORECASE) for p in KEYWORD_PRIORS.values()]
    return np.array([[bool(rx.search(t)) for rx in pats] for t in texts], dtype=bool).reshape(
        len(texts), len(pats)
    )


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def choose_boosts(oof, kw_hit, doc_ids, doc_fold, truth_doc) -> dict[str, float]:
    """Per keyword category, the BOOST_GRID value with the best cross-validated contract F1
    (thresholds tuned on 3 folds of TRAIN's out-of-fold scores, applied to the 4th)."""
    n_docs = truth_doc.shape[0]
    out = {}
    for j, name in enumerate(KEYWORD_PRIORS):
        c = CATEGORIES.index(name)
        t = truth_doc[:, c]
        best_b, best_f = 0.0, -1.0
        for b in BOOST_GRID:
            s = 1.0 / (1.0 + np.exp(-(_logit(oof[:, c]) + b * kw_hit[:, j])))
            m = np.zeros(n_docs)
            np.maximum.at(m, doc_ids, s)
            pred = np.zeros(n_docs, dtype=bool)
            for f in np.unique(doc_fold):
                tr = doc_fold != f
                th, _ = best_f1_threshold(m[tr], t[tr])
                pred[~tr] = m[~tr] >= th
            f1 = 2 * (pred & t).sum() / max(1, 2 * (pred & t).sum() + (pred & ~t).sum() + (~pred & t).sum())
            log(f"  keyword prior {name}: boost {b}: CV contract F1 {f1:.3f}")
            if f1 > best_f + 1e-9:
                best_b, best_f = b, f1
        out[name] = best_b
    return out


def apply_boosts(oof, kw_hit, boosts: dict[str, float]) -> np.ndarray:
    oof = oof.copy()
    for j, name in enumerate(KEYWORD_PRIORS):
        b = boosts.get(name, 0.0)
        if b:
            c = CATEGORIES.index(name)
            oof[:, c] = 1.0 / (1.0 + np.exp(-(_logit(oof[:, c]) + b * kw_hit[:, j])))
    return oof


def lambda_thresholds(oof, tok, span_cat, span_idx, lam: float) -> np.ndarray:
    """Per-category keep thresholds for trade-off ``lam``: for category c, rank passages by
    score_c and keep the prefix maximising ``lam * spans_c covered - tokens_c kept`` (tokens
    in units of corpus_tokens / n_spans), i.e. stop where a span costs more than ``lam``
    average-span shares of tokens."""
    k = oof.shape[1]
    unit = tok.sum() / max(1, len(span_cat))
    th = np.ones(k)
    for c in range(k):
        s = oof[:, c]
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(s), dtype=int)
        rank[order] = np.arange(len(s))
        firsts = [int(rank[ix].min()) for cc, ix in zip(span_cat, span_idx) if cc == c and len(ix)]
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
    sp = [ix for c, ix in zip(span_cat, span_idx) if c in set(cols)]
    recall = float(np.mean([bool(len(ix)) and bool(keep[ix].any()) for ix in sp]))
    return float(tok[keep].sum() / tok.sum()), recall


def effective_lambda(lam: float, n_categories: int) -> float:
    """Playbook-size rule (mirrored in clausegate.prefilter): fewer categories -> each span may
    cost more tokens: lambda * sqrt(41 / max(6, n))."""
    return lam * float(np.sqrt(len(CATEGORIES) / max(6, n_categories)))


def tune(dump: Path) -> dict:
    d = np.load(dump, allow_pickle=False)
    oof, Y, doc_ids, page_nos, tok = d["oof"], d["Y"], d["doc_ids"], d["page_nos"], d["tok"]
    span_doc, span_cat = d["span_doc"], d["span_cat"]
    span_idx = [np.array(list(map(int, x.split(";"))) if x else [], dtype=int) for x in d["span_idx"]]
    n_docs = int(doc_ids.max()) + 1
    k = len(CATEGORIES)
    truth_doc = np.zeros((n_docs, k), dtype=bool)
    truth_doc[span_doc, span_cat] = True

    # keyword priors for rare categories (boosted scores are what the runtime produces)
    doc_fold = np.zeros(n_docs, dtype=int)
    doc_fold[doc_ids] = d["fold"]
    boosts = choose_boosts(oof, d["kw_hit"], doc_ids, doc_fold, truth_doc)
    log(f"keyword prior boosts: {boosts}")
    oof = apply_boosts(oof, d["kw_hit"], boosts)

    # extraction thresholds: contract-level F1 on out-of-fold max scores
    max_doc = np.zeros((n_docs, k))
    np.maximum.at(max_doc, doc_ids, oof)
    extract_thr, oof_f1 = {}, {}
    for c, name in enumerate(CATEGORIES):
        thr, f1 = best_f1_threshold(max_doc[:, c], truth_doc[:, c])
        extract_thr[name] = round(thr, 6)
        oof_f1[name] = round(f1, 4)
    ext = np.array([extract_thr[c] for c in CATEGORIES])
    tp = fp = fn = 0
    for c, name in enumerate(CATEGORIES):
        if name in METADATA_CATEGORIES:
            continue
        pred = max_doc[:, c] >= ext[c]
        tp += int((pred & truth_doc[:, c]).sum())
        fp += int((pred & ~truth_doc[:, c]).sum())
        fn += int((~pred & truth_doc[:, c]).sum())
    micro = 2 * tp / max(1, 2 * tp + fp + fn)
    macro = float(np.mean([oof_f1[c] for c in CATEGORIES if c not in METADATA_CATEGORIES]))
    log(f"OOF contract-level micro-F1 {micro:.3f} macro-F1 {macro:.3f} (36 clause categories)")

    # pre-filter: per-category thresholds along the lambda grid, plus the per-document rule
    # "a category's best passage is kept when it reaches the extraction threshold"
    top1 = np.zeros_like(oof, dtype=bool)
    for c in range(k):
        best = np.full(n_docs, -1.0)
        np.maximum.at(best, doc_ids, oof[:, c])
        top1[:, c] = (oof[:, c] == best[doc_ids]) & (oof[:, c] >= ext[c])
    keep_first = np.zeros(len(doc_ids), dtype=bool)
    for dd in range(n_docs):
        ix = np.where(doc_ids == dd)[0]
        if len(ix):
            ix = ix[page_nos[ix] == page_nos[ix].min()][:METADATA_FIRST_PASSAGES]
            keep_first[ix] = True
    grid = {}
    for lam in LAMBDA_GRID:
        grid[lam] = np.maximum(lambda_thresholds(oof, tok, span_cat, span_idx, lam), 1e-5)
    all_cols = list(range(k))
    narrow_cols = [CATEGORIES.index(c) for c in NARROW]

    def thresholds_at(lam_eff: float) -> np.ndarray:
        return interpolate_grid(LAMBDA_GRID, [grid[x] for x in LAMBDA_GRID], lam_eff)

    levels = {}
    for level, recall in RECALL_LEVELS.items():
        chosen = LAMBDA_GRID[-1]
        for lam in [round(2 ** (i / 16), 4) for i in range(0, 161)]:
            _, r = keep_eval(oof, tok, keep_first, top1, span_cat, span_idx, thresholds_at(lam), all_cols, True)
            if r >= recall:
                chosen = lam
                break
        levels[level] = chosen
        t41, r41 = keep_eval(oof, tok, keep_first, top1, span_cat, span_idx, thresholds_at(chosen), all_cols, True)
        lam6 = effective_lambda(chosen, len(NARROW))
        t6, r6 = keep_eval(oof, tok, keep_first, top1, span_cat, span_idx, thresholds_at(lam6), narrow_cols, False)
        log(f"keep level {level}: lambda {chosen}: OOF all-41 tokens {t41:.1%} spans {r41:.1%}; "
            f"narrow-6 (lambda {lam6:.1f}) tokens {t6:.1%} spans {r6:.1%}")
    return {
        "keyword_priors": {
            name: {"pattern": KEYWORD_PRIORS[name], "logit_boost": b} for name, b in boosts.items() if b
        },
        "extract_threshold": extract_thr,
        "extract_threshold_floor": EXTRACT_FLOOR,
        "keep_rule": (
            "keep a passage if, for any requested category c, score_c >= threshold_c(lambda_level * "
            "sqrt(41 / max(6, n_requested))) (grid, geometric interpolation), or it is the document's best "
            "passage for c and score_c >= extract_threshold_c"
        ),
        "keep_lambda_grid": LAMBDA_GRID,
        "keep_threshold_grid": {
            name: [round(float(grid[lam][c]), 7) for lam in LAMBDA_GRID] for c, name in enumerate(CATEGORIES)
        },
        "keep_levels": levels,
        "keep_level_oof_recall": RECALL_LEVELS,
        "keep_default_level": DEFAULT_LEVEL,
        "metadata_first_passages": METADATA_FIRST_PASSAGES,
        "tuning": {
            "method": "out-of-fold scores, contract-level folds of TRAIN",
            "oof_contract_f1": oof_f1,
            "oof_micro_f1_clause": round(micro, 4),
            "oof_macro_f1_clause": round(macro, 4),
        },
    }


def interpolate_grid(grid: list[float], rows: list[np.ndarray], lam: float) -> np.ndarray:
    """Thresholds at ``lam``: geometric interpolation between neighbouring grid points
    (mirrors ``clausegate.offline_model.OfflineModel.keep_thresholds``)."""
    lg = np.log(np.asarray(grid, dtype=float))
    x = float(np.clip(np.log(lam), lg[0], lg[-1]))
    j = int(np.searchsorted(lg, x, side="right")) - 1
    j = min(max(j, 0), len(grid) - 2)
    w = (x - lg[j]) / (lg[j + 1] - lg[j])
    a, b = np.log(np.maximum(rows[j], 1e-9)), np.log(np.maximum(rows[j + 1], 1e-9))
    return np.exp((1 - w) * a + w * b)


def fold_of_docs(train: list[dict], folds: int) -> np.ndarray:
    """Contract-level fold of each TRAIN contract (deterministic hash of the file name)."""
    return np.array([int(hashlib.sha256(e["filename"].encode()).hexdigest()[8:16], 16) % folds for e in train])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--out", default=str(REPO / "clausegate" / "models"))
    ap.add_argument("--limit", type=int, default=0, help="use only N train contracts (debug)")
    ap.add_argument("--tune-only", action="store_true", help="re-tune thresholds from .bench/oof.npz")
    args = ap.parse_args()
    if args.tune_only:
        meta_path = Path(args.out) / "offline_model.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        for key in ("extract_threshold", "keep_threshold", "keep_recall_levels"):
            meta.pop(key, None)
        d = dict(np.load(DUMP, allow_pickle=False))
        if "kw_hit" not in d or "fold" not in d or d["kw_hit"].shape[1] != len(KEYWORD_PRIORS):
            # older dump: rebuild the passages (cached page text) for keyword hits and folds
            manifest = cuad_split.load_manifest()
            train = sorted([e for e in manifest if not cuad_split.is_holdout(e["filename"])],
                           key=lambda e: e["filename"])
            texts, doc_ids, _, _, _ = build_corpus(train, cuad_split.load_annotations())
            assert len(texts) == len(d["oof"]), "dump does not match the TRAIN corpus"
            d["kw_hit"] = keyword_hits(texts)
            d["fold"] = fold_of_docs(train, args.folds)[doc_ids]
            np.savez_compressed(DUMP, **d)
        meta.update(tune(DUMP))
        meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        log(f"re-tuned {meta_path}")
        return
    t0 = time.time()

    manifest = cuad_split.load_manifest()
    annotations = cuad_split.load_annotations()
    train = [e for e in manifest if not cuad_split.is_holdout(e["filename"])]
    train.sort(key=lambda e: e["filename"])
    if args.limit:
        train = train[: args.limit]
    log(f"train contracts: {len(train)} (holdout excluded: {len(manifest) - len(train)})")
    texts, doc_ids, page_nos, Y, spans = build_corpus(train, annotations)
    n_docs = len(train)

    vec = TfidfVectorizer(
        ngram_range=tuple(FEATURES["ngram_range"]),
        min_df=FEATURES["min_df"],
        max_df=FEATURES["max_df"],
        max_features=FEATURES["max_features"],
        sublinear_tf=True,
        lowercase=True,
        token_pattern=TOKEN_PATTERN,
        strip_accents="unicode",
        dtype=np.float32,
    )
    X = vec.fit_transform(texts).tocsr()
    log(f"features: {X.shape[1]}; {time.time() - t0:.0f}s")

    # ---- out-of-fold scores (folds by contract, deterministic)
    fold_of_doc = fold_of_docs(train, args.folds)
    fold = fold_of_doc[doc_ids]
    oof = np.zeros(Y.shape, dtype=np.float64)
    coefs, intercepts = [], []
    for f in range(args.folds):
        tr, te = fold != f, fold == f
        coef_f, intercept_f, probs = fit_predict(X[tr], Y[tr], X[te])
        oof[te] = probs
        coefs.append(coef_f)
        intercepts.append(intercept_f)
        log(f"fold {f} done; {time.time() - t0:.0f}s")

    from clausegate.passages import count_tokens

    tok = np.array([count_tokens(t) for t in texts])
    DUMP.parent.mkdir(exist_ok=True)
    np.savez_compressed(
        DUMP, oof=oof, Y=Y, doc_ids=doc_ids, page_nos=page_nos, tok=tok,
        span_doc=np.array([s[0] for s in spans]), span_cat=np.array([s[1] for s in spans]),
        span_idx=np.array([";".join(map(str, s[2])) for s in spans]),
        kw_hit=keyword_hits(texts), fold=fold,
    )
    tuning = tune(DUMP)

    # ---- final model: the average of the K fold models (a linear model whose logit is the
    # mean of the fold models' logits).  Its scores are distributed like the out-of-fold
    # scores the thresholds were tuned on, unlike a refit on all of TRAIN (more confident).
    coef = np.mean(coefs, axis=0)
    intercept = np.mean(intercepts, axis=0)
    vocab = vec.get_feature_names_out()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out / "offline_model.npz",
        vocabulary=np.array(vocab, dtype=str),
        idf=vec.idf_.astype(np.float32),
        coef=coef.astype(np.float16),
        intercept=intercept.astype(np.float32),
        categories=np.array(CATEGORIES, dtype=str),
    )
    meta = {
        "version": MODEL_VERSION,
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "data": "CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0 - https://www.atticusprojectai.org/cuad",
        "split": cuad_split.SPLIT_NAME,
        "n_train_contracts": n_docs,
        "n_train_passages": int(len(texts)),
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "model": f"one-vs-rest LogisticRegression(C={C_VALUE}, class_weight={{0: 1, 1: {POS_WEIGHT}}}, liblinear dual) "
        "per category, "
        f"average of the {args.folds} fold models",
        "features": {**FEATURES, "vocabulary_size": int(len(vocab))},
        "passages": {"max_chars": MAX_CHARS, "min_chars": MIN_CHARS},
        "categories": list(CATEGORIES),
        "folds": args.folds,
        **tuning,
    }
    (out / "offline_model.json").write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.glob("offline_model.*"))
    log(f"wrote {out} ({size / 1e6:.2f} MB) in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
