"""Train ClauseGate's offline clause scorer on CUAD's TRAIN split and write the artifact.

    python tools/train_offline_model.py [--folds 4] [--out clausegate/review/offline/models]
                                        [--dump .bench/oof.npz [--tune-only]] [--c-value 16]

Data: ../shared/data/cuad (CUAD v1, Hendrycks et al. 2021, CC BY 4.0).  pypdf page text is
cached under .bench/pages/.  Only contracts with ``is_holdout(filename) == False`` are read
for training and tuning; the holdout is left to ``bench/*.py`` (nothing here opens it).

Model: passages (``clausegate.review.passages.split_passages`` of each pypdf page) labelled positive
for a category when a CUAD span of that category overlaps them (``cuad.locate_span``).
Features: TF-IDF over the passage's word 1-2-grams (optionally plus TF-IDF of the words of the
section heading the passage sits under, ``FEATURES["head_weight"]``; off: it measured worse).  One
logistic regression per category (liblinear, fixed ``random_state``: deterministic).

Out-of-fold (OOF) logits over a contract-level K-fold of TRAIN tune (``tools/offline_tuning.py``):

* keyword priors for rare categories (a logit boost for passages matching words of CUAD's
  category question), chosen by nested cross-validated contract F1;
* the contract prior (2.5, ``tools/contract_prior.py``): a per-contract offset from the whole contract's words,
  added to the passage scores when deciding whether a category is found (not which passages are shown);
* ``extract_threshold[c]``: the threshold maximising contract-level F1 on OOF max scores; for
  the recall-first categories (the default playbook's high-risk ones) the highest threshold
  whose OOF contract recall reaches ``RECALL_FIRST`` at precision >= ``MIN_PRECISION``;
* ``passage_threshold[c]``: once ``c`` is found, the passages shown are its best one plus those at or above
  this (grid value maximising OOF passage-level F1, never below ``extract_threshold[c]``);
* ``possible_threshold[c]`` (recall-first categories): below the extraction threshold, the
  score from which the category is listed as "possible" for a person (OOF recall of found or
  possible >= ``POSSIBLE_RECALL``);
* ``calibration``: Platt scaling of (logit - logit(threshold)) on OOF findings, plus a shrunk
  per-category offset (2.3) -> the confidence shown (a finding is right when its passage overlaps a
  CUAD span of the category);
* the pre-filter's ``keep_threshold_grid`` / ``keep_levels`` (span recall vs tokens kept).

The shipped model is the average of the K fold models, so its scores are distributed like the
OOF scores the thresholds were tuned on.  Artifact (no pickle): ``offline_model.npz`` +
``offline_model.json``, which records the split, the features, the tuned values and the
nested cross-validated metrics on TRAIN.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.linear_model import LogisticRegression

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate.review.categories import CATEGORIES, METADATA_CATEGORIES
from clausegate.review.offline.model import (
    MODEL_DIR,
    add_keyword_boost,
    heading_texts,
    make_head_vectorizer,
    make_vectorizer,
)
from clausegate.review.passages import LEAD_CHARS, MAX_CHARS, MIN_CHARS, count_tokens, page_passages, split_passages
from tools import contract_prior as prior
from tools import cuad
from tools import offline_tuning as tune
from tools.keyword_priors import KEYWORD_PRIORS

MODEL_VERSION = "cuad-tfidf-lr-2.5"
FEATURES = {
    "ngram_range": [1, 2],
    "min_df": 3,
    "max_df": 0.5,
    "max_features": 40000,
    "sublinear_tf": True,
    "lowercase": True,
    "token_pattern": r"(?u)\b\w\w+\b|\$|%",
    "norm": "l2",
    "strip_accents": "unicode",
    # heading words as features measured worse in TRAIN cross-validation (contract micro-F1 0.771 vs
    # 0.793, passage 0.573 vs 0.588): 0 turns them off (the runtime still reads sections for evidence)
    "head_weight": 0.0,
    "head_min_df": 3,
}
C_VALUE = 16.0
# "page": each contract's pages as the product makes them (``passages.page_passages``: furniture removed, titled
# paragraphs); "split": ``split_passages`` of each raw page, what 2.3 was trained on (train/serve skew)
PASSAGES = "split"
POS_WEIGHT = 4.0  # positives up-weighted in each per-category LR: CUAD's categories are rare per passage
EXTRACT_FLOOR = 0.05
RECALL_FIRST = ["Uncapped Liability", "Cap on Liability", "Liquidated Damages", "Minimum Commitment",
                "Revenue/Profit Sharing", "Most Favored Nation"]  # the default playbook's high-risk list
RECALL_TARGET, MIN_PRECISION = 0.98, 0.6  # found: recall target at OOF contract precision >= 0.6
# found or possible: per category the highest "possible" threshold whose OOF found-or-possible contract recall
# reaches 0.98 (nested CV: >= 0.97 the target) at precision >= 0.1 (at precision >= 0.35 Most Favored Nation's
# recall was capped at 0.47 and Liquidated Damages' at 0.83)
POSSIBLE_RECALL, POSSIBLE_PRECISION, POSSIBLE_FLOOR = 0.99, 0.1, 0.002
BOOST_GRID = [0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0]
RECALL_LEVELS = {"balanced": 0.965, "high": 0.98, "max": 0.99}
LAMBDA_GRID = [round(2 ** (k / 4), 4) for k in range(0, 41)]  # 1 .. 1024
NARROW = ["Revenue/Profit Sharing", "Minimum Commitment", "Price Restrictions",
          "Cap on Liability", "Uncapped Liability", "Liquidated Damages"]
METADATA_FIRST_PASSAGES = 3
CONTRACT_PRIOR = True  # tools/contract_prior.py (2.5); --no-contract-prior measures 2.4's scorer


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_corpus(entries: list[dict], annotations: dict[str, list[dict]]):
    """Passages of every page of ``entries`` (document order), their heading words, labels and
    span bookkeeping (for the pre-filter's span recall)."""
    cat_index = {c: i for i, c in enumerate(CATEGORIES)}
    texts, heads, doc_ids, page_nos, rows, spans = [], [], [], [], [], []
    for d, entry in enumerate(entries):
        start_doc = len(texts)
        by_page: dict[int, tuple[int, list[str]]] = {}
        pages = cuad.load_pages(entry)
        split = ([[t for t, _ in ps] for ps in page_passages(pages)] if PASSAGES == "page"
                 else [split_passages(text) for text in pages])
        for pno, ps in enumerate(split, start=1):
            by_page[pno] = (len(texts), ps)
            texts.extend(ps)
            doc_ids.extend([d] * len(ps))
            page_nos.extend([pno] * len(ps))
        heads.extend(heading_texts(texts[start_doc:]))
        labels = np.zeros((len(texts) - start_doc, len(CATEGORIES)), dtype=bool)
        for row in annotations.get(entry["filename"], []):
            c = cat_index[row["category"]]
            idxs: set[int] = set()
            for pno in cuad.span_pages(row):
                if pno in by_page:
                    first, ps = by_page[pno]
                    idxs |= {first + i for i in cuad.locate_span(row["text"], ps)}
            if not idxs:  # unknown or wrong page: search the whole document
                for first, ps in by_page.values():
                    found = cuad.locate_span(row["text"], ps)
                    if found:
                        idxs = {first + i for i in found}
                        break
            for i in idxs:
                labels[i - start_doc, c] = True
            spans.append((d, c, sorted(idxs)))
        rows.extend(labels)
    Y = np.array(rows, dtype=bool).reshape(len(texts), len(CATEGORIES))
    log(f"{len(entries)} contracts, {len(texts)} passages, {len(spans)} spans "
        f"({sum(1 for s in spans if not s[2])} not located)")
    return texts, heads, np.array(doc_ids), np.array(page_nos), Y, spans


def fit_models(X, Y) -> tuple[np.ndarray, np.ndarray]:
    """One LR per category; returns (coef [k, f], intercept [k])."""
    k = Y.shape[1]
    coef = np.zeros((k, X.shape[1]))
    intercept = np.full(k, -10.0)
    for c in range(k):
        if Y[:, c].sum() < 2:
            continue
        clf = LogisticRegression(C=C_VALUE, solver="liblinear", dual=True, max_iter=500, random_state=0,
                                 class_weight={False: 1.0, True: POS_WEIGHT})
        clf.fit(X, Y[:, c])
        coef[c], intercept[c] = clf.coef_[0], clf.intercept_[0]
    return coef, intercept


def fold_of_docs(entries: list[dict], folds: int) -> np.ndarray:
    """Contract-level fold of each TRAIN contract (deterministic hash of the file name)."""
    return np.array([int(hashlib.sha256(e["filename"].encode()).hexdigest()[8:16], 16) % folds for e in entries])


def pick_extract(c: int):
    """The extraction-threshold rule of category ``c`` on contract max-scores: best F1, lowered for the high-risk
    categories to the recall target (``pick(scores, truth) -> threshold``)."""
    def pick(s, t):
        th = tune.best_f1_threshold(s, t, EXTRACT_FLOOR)[0]
        if CATEGORIES[c] in RECALL_FIRST:
            r = tune.recall_threshold(s, t, RECALL_TARGET, MIN_PRECISION, EXTRACT_FLOOR)
            th = min(th, r) if r is not None else th
        return th
    return pick


def pick_possible(c: int):
    """The "possible" threshold rule of a high-risk category ``c``: found-or-possible recall first."""
    def pick(s, t):
        r = tune.recall_threshold(s, t, POSSIBLE_RECALL, POSSIBLE_PRECISION, POSSIBLE_FLOOR)
        return min(pick_extract(c)(s, t), r if r is not None else 1.0)
    return pick


def tune_all(L, Y, texts, doc_ids, page_nos, doc_fold, spans, D=None) -> dict:
    """Everything tuned on the OOF logits ``L`` (see module doc); ``D``: the contract prior's OOF logits
    (contracts x categories, ``tools/contract_prior.py``) or None; returns metadata entries."""
    n_docs, k = int(doc_ids.max()) + 1, len(CATEGORIES)
    truth = tune.contract_truth(spans, n_docs, len(CATEGORIES))
    clause = [c for c, name in enumerate(CATEGORIES) if name not in METADATA_CATEGORIES]
    kw = tune.keyword_hits(texts, KEYWORD_PRIORS)
    boosts = tune.choose_boosts(L, kw, doc_ids, doc_fold, truth, KEYWORD_PRIORS, list(CATEGORIES), BOOST_GRID,
                                EXTRACT_FLOOR, log)
    for j, name in enumerate(KEYWORD_PRIORS):
        add_keyword_boost(L[:, CATEGORIES.index(name)], kw[:, j], boosts[name])
    weights, fold_weights, prior_nested = np.zeros(k), None, None
    L_raw = L.copy()
    if D is not None:  # the contract prior: a per-contract offset added to every passage logit (found, shown)
        max_logit = np.full((n_docs, k), -40.0)
        np.maximum.at(max_logit, doc_ids, L)
        allowed = np.array([name not in METADATA_CATEGORIES for name in CATEGORIES])  # metadata: as before
        prior_nested = prior.nested_figures(max_logit, D, truth, doc_fold, pick_extract, clause, allowed)
        weights = prior.choose_weights(max_logit, D, truth, doc_fold, np.ones(n_docs, dtype=bool), pick_extract,
                                       allowed)
        fold_weights = np.array(prior_nested["fold_weights"])
        L = L + (weights * D)[doc_ids]
        log(f"contract prior: {int((weights > 0).sum())} categories; fully nested contract micro / macro "
            f"{prior_nested['without']} -> {prior_nested['with']}")
    P, P_raw = tune.sigmoid(L), tune.sigmoid(L_raw)
    M, M_raw = np.zeros((n_docs, k)), np.zeros((n_docs, k))
    np.maximum.at(M, doc_ids, P)
    np.maximum.at(M_raw, doc_ids, P_raw)

    # found: on the scores with the contract prior; possible (recall-first categories): on the passage scores
    # alone, so the prior never lowers found-or-possible recall
    extract = {name: round(pick_extract(c)(M[:, c], truth[:, c]), 6) for c, name in enumerate(CATEGORIES)}
    possible = {name: round(pick_possible(c)(M_raw[:, c], truth[:, c]), 6)
                for c, name in enumerate(CATEGORIES) if name in RECALL_FIRST}
    thr = np.array([extract[c] for c in CATEGORIES])
    # passages shown for a found category: its best one, plus those whose passage score (without the prior) is
    # >= max(extract, passage threshold); the passage threshold maximises OOF passage-level F1
    found = M[doc_ids] >= thr
    passage = {name: round(tune.choose_passage_threshold(P_raw[:, c], Y[:, c], doc_ids, thr[c], found[:, c]), 4)
               for c, name in enumerate(CATEGORIES)}
    pthr = np.array([passage[c] for c in CATEGORIES])
    cv_pred, cv_poss, shown_cv = tune.nested_cv(
        L_raw, D, fold_weights, Y, truth, doc_ids, doc_fold, pick_extract, pick_possible,
        [CATEGORIES.index(n) for n in RECALL_FIRST])

    # calibration of the confidence shown for a finding (a shown passage): fitted on OOF
    # findings; its error is estimated by fitting on 3 folds and measuring on the 4th
    shown = tune.shown_passages(P_raw, doc_ids, thr, pthr, found)
    rows, cols = np.nonzero(shown)
    x = L[rows, cols] - tune.logit(thr[cols])
    y = Y[rows, cols].astype(float)
    a, b, offsets, cal_platt, cal_cv = tune.calibrate_findings(x, y, cols, doc_fold[doc_ids[rows]], list(CATEGORIES))
    pas_p, pas_r, pas_f = tune.prf((P >= thr)[:, clause], Y[:, clause])  # thresholds in-sample here
    micro = tune.prf(cv_pred[:, clause], truth[:, clause])
    per_cat = {name: round(tune.prf(cv_pred[:, c], truth[:, c])[2], 4) for c, name in enumerate(CATEGORIES)}
    rf_index = {name: CATEGORIES.index(name) for name in RECALL_FIRST}
    cv = {
        "method": "nested: the contract prior's weights and the thresholds tuned on 3 contract folds of TRAIN's OOF "
                  "scores, applied to the 4th",
        "contract_micro_f1": round(micro[2], 4),
        "contract_macro_f1": round(float(np.mean([per_cat[CATEGORIES[c]] for c in clause])), 4),
        "contract_f1": per_cat,
        "passage_micro_f1_in_sample_thresholds": round(pas_f, 4),
        "passage_micro_f1_shown_rule": round(tune.prf(shown_cv[:, clause], Y[:, clause])[2], 4),
        "recall_first": {name: dict(zip(("precision", "recall", "f1"),
                                        (round(v, 4) for v in tune.prf(cv_pred[:, i], truth[:, i])), strict=True))
                         for name, i in rf_index.items()},
        "recall_first_found_or_possible": {name: round(tune.prf(cv_poss[:, i] | cv_pred[:, i], truth[:, i])[1], 4)
                                           for name, i in rf_index.items()},
        "recall_first_found_or_possible_precision": {
            name: round(tune.prf(cv_poss[:, i] | cv_pred[:, i], truth[:, i])[0], 4) for name, i in rf_index.items()},
        "findings_ece_raw": round(tune.ece(P[rows, cols], y), 4),
        "findings_ece_platt_only": round(tune.ece(cal_platt, y), 4),
        "findings_ece_calibrated": round(tune.ece(cal_cv, y), 4),
        "contract_prior_nested": prior_nested,
    }
    log(f"CV (TRAIN): contract micro-F1 {cv['contract_micro_f1']} macro-F1 {cv['contract_macro_f1']}; passage "
        f"micro-F1 {cv['passage_micro_f1_in_sample_thresholds']} -> {cv['passage_micro_f1_shown_rule']} (shown rule); "
        f"findings ECE {cv['findings_ece_raw']} -> {cv['findings_ece_calibrated']}")
    log(f"CV recall-first: {cv['recall_first']}")
    return {
        "keyword_priors": {n: {"pattern": KEYWORD_PRIORS[n], "logit_boost": bb} for n, bb in boosts.items() if bb},
        "contract_prior": {"weights": {name: float(weights[c]) for c, name in enumerate(CATEGORIES) if weights[c]},
                           "c_value": prior.C_VALUE, "min_positive_contracts": prior.MIN_POSITIVES,
                           "min_passages": prior.MIN_PASSAGES, "logit_floor": prior.LOGIT_FLOOR,
                           "description": "per category, weight x (the contract model's logit on the TF-IDF of the "
                                          "contract's passages joined) is added to every passage logit"},
        "extract_threshold": extract,
        "extract_threshold_floor": EXTRACT_FLOOR,
        "passage_threshold": passage,
        "possible_threshold": possible,
        "recall_first": {"categories": RECALL_FIRST, "recall": RECALL_TARGET, "min_precision": MIN_PRECISION,
                         "possible_recall": POSSIBLE_RECALL, "possible_min_precision": POSSIBLE_PRECISION},
        "calibration": {"method": "Platt scaling of logit(p) - logit(extract_threshold) on OOF findings, plus a "
                                  "per-category offset category_b (shrunk by n / (n + 50))",
                        "a": round(a, 6), "b": round(b, 6), "category_b": offsets},
        "cv": cv,
        **tune.keep_grid(P_raw, doc_ids, page_nos, thr, spans, [count_tokens(t) for t in texts], list(CATEGORIES),
                         LAMBDA_GRID, RECALL_LEVELS, METADATA_FIRST_PASSAGES, log, found),
    }


def train(entries: list[dict], out: Path, folds: int = 4, dump: Path | None = None, reuse: bool = False) -> dict:
    """Fit, tune and write the artifact (``dump``: save the OOF logits and fold models there; ``reuse``: take
    them from ``dump`` instead of fitting again: re-tuning only, same corpus; the contract prior is refitted)."""
    t0 = time.time()
    texts, heads, doc_ids, page_nos, Y, spans = build_corpus(entries, cuad.load_annotations())
    vec = make_vectorizer(FEATURES)
    X = vec.fit_transform(texts).tocsr()
    hvec = None
    if FEATURES["head_weight"]:
        hvec = make_head_vectorizer(min_df=FEATURES["head_min_df"])
        X = sp.hstack([X, FEATURES["head_weight"] * hvec.fit_transform(heads)]).tocsr()
    log(f"features: {X.shape[1]}; {time.time() - t0:.0f}s")
    doc_fold = fold_of_docs(entries, folds)
    fold = doc_fold[doc_ids]
    L = np.zeros(Y.shape)
    coefs, intercepts = [], []
    if reuse and dump and dump.is_file():
        saved = np.load(dump, allow_pickle=False)
        assert saved["L"].shape == Y.shape and np.array_equal(saved["Y"], Y), "the dump is of another corpus"
        L, coefs, intercepts = saved["L"], list(saved["coefs"]), list(saved["intercepts"])
        dump = None
    for f in range(folds if not coefs else 0):
        coef_f, icpt_f = fit_models(X[fold != f], Y[fold != f])
        L[fold == f] = X[fold == f] @ coef_f.T + icpt_f
        coefs.append(coef_f)
        intercepts.append(icpt_f)
        log(f"fold {f} done; {time.time() - t0:.0f}s")
    if dump:
        dump.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(dump, L=L, Y=Y, doc_ids=doc_ids, page_nos=page_nos, doc_fold=doc_fold,
                            coefs=np.array(coefs), intercepts=np.array(intercepts))
    D, prior_coefs, prior_intercepts = prior.fit(vec, texts, doc_ids, spans, doc_fold, len(CATEGORIES))
    log(f"contract prior fitted; {time.time() - t0:.0f}s")
    tuned = tune_all(L.copy(), Y, texts, doc_ids, page_nos, doc_fold, spans, D if CONTRACT_PRIOR else None)
    used = np.array([name in tuned["contract_prior"]["weights"] for name in CATEGORIES])
    out.mkdir(parents=True, exist_ok=True)
    vocab = vec.get_feature_names_out()
    hvocab = hvec.get_feature_names_out() if hvec is not None else []
    heading_arrays = ({"head_vocabulary": np.array(hvocab, dtype=str), "head_idf": hvec.idf_.astype(np.float32)}
                      if hvec else {})
    np.savez_compressed(
        out / "offline_model.npz",
        vocabulary=np.array(vocab, dtype=str), idf=vec.idf_.astype(np.float32), **heading_arrays,
        coef=np.mean(coefs, axis=0).astype(np.float16), intercept=np.mean(intercepts, axis=0).astype(np.float32),
        categories=np.array(CATEGORIES, dtype=str),
        prior_coef=(np.mean(prior_coefs, axis=0) * used[:, None]).astype(np.float16),
        prior_intercept=(np.mean(prior_intercepts, axis=0) * used).astype(np.float32),
    )
    meta = {
        "version": MODEL_VERSION,
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "data": "CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0 - https://www.atticusprojectai.org/cuad",
        "split": cuad.SPLIT_NAME,
        "split_rule": "TRAIN = contracts with tools.cuad.is_holdout(filename) False; the holdout is never read",
        "n_train_contracts": len(entries),
        "train_contracts_sha256": hashlib.sha256("\n".join(e["filename"] for e in entries).encode()).hexdigest(),
        "n_train_passages": len(texts),
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "model": f"one-vs-rest LogisticRegression(C={C_VALUE}, class_weight={{0: 1, 1: {POS_WEIGHT}}}, liblinear dual, "
                 f"random_state=0) per category, average of the {folds} fold models; plus the contract prior "
                 f"(LogisticRegression(C={prior.C_VALUE}, class_weight='balanced') per category on the contract's "
                 f"text, average of the {folds} fold models)",
        "features": {**FEATURES, "vocabulary_size": len(vocab), "head_vocabulary_size": len(hvocab),
                     "description": "TF-IDF word 1-2-grams of the passage"
                                    + (" + TF-IDF of its section heading's words" if hvec is not None else "")},
        "passages": {"max_chars": MAX_CHARS, "min_chars": MIN_CHARS, "lead_chars": LEAD_CHARS, "split": PASSAGES},
        "categories": list(CATEGORIES),
        "folds": folds,
        **tuned,
    }
    (out / "offline_model.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.glob("offline_model.*"))
    log(f"wrote {out} ({size / 1e6:.2f} MB) in {time.time() - t0:.0f}s")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--out", default=str(MODEL_DIR))
    ap.add_argument("--limit", type=int, default=0, help="use only the first N train contracts (tests, debugging)")
    ap.add_argument("--dump", default="", help="save the OOF logits and fold models here (e.g. .bench/oof.npz)")
    ap.add_argument("--tune-only", action="store_true", help="re-tune from --dump instead of fitting again")
    ap.add_argument("--passages", default=PASSAGES, choices=["page", "split"],
                    help="page: page_passages as served (furniture removed); split: split_passages per raw page")
    ap.add_argument("--c-value", type=float, default=C_VALUE, help="LR inverse regularisation (experiments)")
    ap.add_argument("--no-contract-prior", action="store_true", help="2.4's scorer: no contract prior (baseline)")
    args = ap.parse_args()
    globals()["CONTRACT_PRIOR"] = not args.no_contract_prior
    globals()["C_VALUE"] = args.c_value
    globals()["PASSAGES"] = args.passages
    manifest = cuad.load_manifest()
    train_set = sorted((e for e in manifest if not cuad.is_holdout(e["filename"])), key=lambda e: e["filename"])
    if args.limit:
        train_set = train_set[: args.limit]
    log(f"train contracts: {len(train_set)} (holdout excluded: {len(manifest) - len(train_set)})")
    train(train_set, Path(args.out), args.folds, Path(args.dump) if args.dump else None, args.tune_only)


if __name__ == "__main__":
    main()
