"""False gates of the offline extractor, without and with the consistency rules (``offline/consistency.py``).

    python tools/train_offline_model.py --dump .bench/oof.npz --out /tmp/m   # TRAIN's OOF logits, once (~8 min)
    python bench/offline_gates.py --dump .bench/oof.npz [--ablation] [--no-holdout]

A *false gate* is a contract x gated category (the default playbook gates Uncapped Liability, Liquidated Damages,
Minimum Commitment) where the extractor finds the category or lists it as "possible" and CUAD does not label it;
the share is over all contracts x those 3 categories. Printed for both, with the change:

* **TRAIN, 330 contracts, nested**: the training script's 4 contract folds, its out-of-fold passage logits with the
  shipped keyword-prior boosts and the contract prior (weights chosen per fold on the other 3, as
  ``bench/contract_prior.py``); per fold the extraction and "possible" thresholds are chosen on the other 3 folds'
  scores *without* the rules (the shipped artifact was tuned without them) and applied to the held fold's scores
  with them, as served. 95 % paired-bootstrap intervals over contracts (1,000 resamples).
  ``--ablation``: each rule alone and all but one, and the rules measured and not kept (``NOT_KEPT``; "one reading":
  under a gated category's threshold, a passage that is a finding of another clause category is not its "possible"
  passage, ``read_otherwise``; it reads the other categories' findings at the shipped extraction thresholds, tuned on
  all of TRAIN, so it is not nested).
* **held out, 78 contracts** (``tools.cuad.is_holdout``; pypdf text cached by ``tools/cuad.py``): the pre-filter
  (unchanged by the rules) and ``extract_offline`` with the layer off and on, as ``bench/extractor.py`` runs them.

``--cascade-sim`` (TRAIN): the noisy cascade simulated on the nested margins, for choosing a rule or the
cascade's margin on TRAIN: a contract x category within ``W`` log-odds of its fold's threshold is decided by the
model's answer, right with probability 0.85 (expected counts), any other by the offline reading; printed for
``W`` in ``SIM_MARGINS`` with the rules and without. ``--exclusions`` (TRAIN): what listing every exclusion of
indirect or consequential damages with no carve-out as a "possible" Uncapped Liability would add.

Also: contract micro / macro F1 (36 clause categories), found-or-possible recall of the six high-risk categories,
and, for the contracts where a high-risk category is only "possible" and CUAD labels it, the share whose shown
passage is a CUAD passage of that category ("possible shows its clause"). CUAD v1, CC BY 4.0.
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
sys.path.insert(0, str(REPO / "bench"))

import tools.train_offline_model as T  # noqa: E402
from clausegate.review.offline import consistency  # noqa: E402
from clausegate.review.offline.model import MODEL_DIR, make_vectorizer  # noqa: E402
from tools import contract_prior as prior  # noqa: E402
from tools import cuad  # noqa: E402
from tools import offline_tuning as tune  # noqa: E402

# ---- the rules measured on TRAIN and not kept (docs/quality/offline-gates.md) ----------------------------------
_rx = consistency._rx
LICENSOR_AFFILIATES = _rx(r"affiliates?[^.;]{0,60}(?:hereby )?grants?\b|(?:owned|controlled|licensable|held|developed)"
                          r"[^.;]{0,40}\b(?:by|of)\b[^.;]{0,40}affiliates?|affiliates?(?:'s?|’s?)? (?:patents?|"
                          r"intellectual|technology|know-how|trade ?marks?|marks|ip\b|rights|software|copyrights?)"
                          r"|(?:on behalf of|for) (?:itself and )?(?:each of )?its affiliates|cause its affiliates"
                          r"|and its affiliates,? (?:hereby )?grants?")
LICENSEE_AFFILIATES = _rx(r"(?:grants?|licen[cs]ed?|sublicen[cs]e)[^.;]{0,80}\bto\b[^.;]{0,60}affiliates?")
ANY_FEE = _rx(r"\bfees?\b|\$|\bpay|payment|charge|price|royalt")
EXCLUSIVE_OWNERSHIP = _rx(r"(?:sole and )?exclusive (?:property|owner|ownership|title)|exclusive right,? title"
                          r"|(?:owns?|owner)[^.;]{0,80}exclusive right|exclusive remed|exclusive (?:jurisdiction|venue"
                          r"|forum)|exclusive of|exclusively (?:by|in) the (?:courts?|laws?)")
MC_SUBJECT = _rx(r"purchas|\border|\bbuy|pay|\bfees?\b|royalt|\$|volume|\bunits?\b|quantit|sales|\bsell|revenue"
                 r"|spend|commit|dollar|euro|usd|price|amount|guarantee")
MC_SPEND = _rx(r"purchas|\border|\bbuy|\bunits?\b|quantit|volume|spend|commit")
TIME_MINIMUM = _rx(r"minimum (?:period|term|duration|age)|(?:minimum|at least) (?:of )?(?:\w+ )?\(?\d*\)? ?"
                   r"(?:calendar |business )?(?:days|months|years)|minimum of [\d.]+ ?(?:percent|%)|uptime|availability"
                   r"|notice")


def _exclusive_negated_or_owned(t: str) -> bool:
    n = len(consistency.EXCLUSIVE.findall(t))
    return (n > 0 and n == len(consistency.NEGATED_EXCLUSIVE.findall(t)) + len(EXCLUSIVE_OWNERSHIP.findall(t))
            and consistency.EXCLUSIVITY_CUE.search(t) is None)


Rule = consistency.Rule
NOT_KEPT = (
    Rule("a licence to affiliates is no licensor-affiliate licence", ("Affiliate License-Licensor",), -3.0,
         lambda t: LICENSEE_AFFILIATES.search(t) is not None and LICENSOR_AFFILIATES.search(t) is None),
    Rule("a fee without a word of damages is no liquidated damages", ("Liquidated Damages",), -3.0,
         lambda t: ANY_FEE.search(t) is not None and consistency.DAMAGES_CUE.search(t) is None),
    Rule("non-exclusive or exclusive ownership is no exclusivity (instead of the kept rule)", ("Exclusivity",), -3.0,
         _exclusive_negated_or_owned),
    Rule("no word of buying, paying or amounts: no minimum commitment", ("Minimum Commitment",), -3.0,
         lambda t: MC_SUBJECT.search(t) is None),
    Rule("a minimum of time, uptime or notice is no minimum commitment", ("Minimum Commitment",), -3.0,
         lambda t: TIME_MINIMUM.search(t) is not None and MC_SPEND.search(t) is None),
)

CATS = list(T.CATEGORIES)
CLAUSE = [c for c, n in enumerate(CATS) if n not in T.METADATA_CATEGORIES]
HIGH_RISK = [CATS.index(n) for n in T.RECALL_FIRST]
GATED = [CATS.index(n) for n in ("Uncapped Liability", "Liquidated Damages", "Minimum Commitment")]


def figures(pred, poss, truth, docs=None) -> np.ndarray:
    """micro-F1, macro-F1, false-gate share, false gates (count) on contracts ``docs``."""
    docs = np.arange(len(truth)) if docs is None else docs
    p, t, asked = pred[docs], truth[docs], (pred | poss)[docs]
    micro = tune.prf(p[:, CLAUSE], t[:, CLAUSE])[2]
    macro = float(np.mean([tune.prf(p[:, c], t[:, c])[2] for c in CLAUSE]))
    false = int((asked[:, GATED] & ~t[:, GATED]).sum())
    return np.array([micro, macro, false / (len(docs) * len(GATED)), false])


def intervals(before, after, truth, n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    m = len(truth)
    diffs = np.array([figures(*after, truth, s) - figures(*before, truth, s)
                      for s in (rng.integers(0, m, m) for _ in range(n))])
    return np.percentile(diffs, 2.5, axis=0), np.percentile(diffs, 97.5, axis=0)


def print_table(title: str, before, after, truth, shown_before, shown_after, boot: bool = True) -> dict:
    b, a = figures(*before, truth), figures(*after, truth)
    lo, hi = intervals(before, after, truth) if boot else (np.full(4, np.nan), np.full(4, np.nan))
    print(f"\n{title}: before -> after (change [95 % interval])")
    names = ("contract micro-F1", "contract macro-F1", "false gates, share of contracts x 3 gated", "false gates")
    for i, name in enumerate(names):
        fmt = "{:.0f}" if i == 3 else "{:.4f}"
        print(f"  {name:44s} {fmt.format(b[i])} -> {fmt.format(a[i])}  "
              f"({a[i] - b[i]:+.4f} [{lo[i]:+.4f}, {hi[i]:+.4f}])")
    for c in GATED:
        fb = int(((before[0] | before[1])[:, c] & ~truth[:, c]).sum())
        fa = int(((after[0] | after[1])[:, c] & ~truth[:, c]).sum())
        print(f"    false gates, {CATS[c]:28s} {fb} -> {fa} (of {int((~truth[:, c]).sum())} without it)")
    out = {"before": b.tolist(), "after": a.tolist(), "low": lo.tolist(), "high": hi.tolist(), "recall": {}}
    for c in HIGH_RISK:
        (pb, rb, _), (pa, ra, _) = (tune.prf(r[0][:, c] | r[1][:, c], truth[:, c]) for r in (before, after))
        fb, fa = tune.prf(before[0][:, c], truth[:, c])[2], tune.prf(after[0][:, c], truth[:, c])[2]
        print(f"  found or possible, {CATS[c]:24s} (n={int(truth[:, c].sum()):3d}) R / P {rb:.3f} / {pb:.3f} -> "
              f"{ra:.3f} / {pa:.3f}; found F1 {fb:.3f} -> {fa:.3f}")
        out["recall"][CATS[c]] = [rb, ra]
    print(f"  possible shows its clause (possible-only, labelled, high-risk): {shown_before[0]}/{shown_before[1]} -> "
          f"{shown_after[0]}/{shown_after[1]}")
    for c in CLAUSE:
        fb, fa = tune.prf(before[0][:, c], truth[:, c])[2], tune.prf(after[0][:, c], truth[:, c])[2]
        if abs(fa - fb) >= 0.005:
            print(f"  {CATS[c]:40s} contract F1 {fb:.3f} -> {fa:.3f}")
    return out


# ---- TRAIN cross-validation -----------------------------------------------------------------------------------

def load_train(dump: Path):
    entries = sorted((e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])),
                     key=lambda e: e["filename"])
    texts, _, doc_ids, _, Y, spans = T.build_corpus(entries, cuad.load_annotations())
    saved = np.load(dump, allow_pickle=False)
    assert saved["L"].shape == Y.shape and np.array_equal(saved["Y"], Y), "the dump is of another corpus"
    L, doc_fold = saved["L"].copy(), saved["doc_fold"]
    n_docs, k = int(doc_ids.max()) + 1, len(CATS)
    truth = tune.contract_truth(spans, n_docs, k)
    shipped = json.loads((MODEL_DIR / "offline_model.json").read_text())["keyword_priors"]
    kw = tune.keyword_hits(texts, T.KEYWORD_PRIORS)
    for j, name in enumerate(T.KEYWORD_PRIORS):  # the shipped boosts: what serving adds
        T.add_keyword_boost(L[:, CATS.index(name)], kw[:, j], float(shipped.get(name, {}).get("logit_boost", 0.0)))
    vec = make_vectorizer(T.FEATURES)
    vec.fit(texts)
    D = prior.fit(vec, texts, doc_ids, spans, doc_fold, k)[0]
    max_logit = np.full((n_docs, k), -40.0)
    np.maximum.at(max_logit, doc_ids, L)
    allowed = np.array([n not in T.METADATA_CATEGORIES for n in CATS])
    weights = np.array(prior.nested_figures(max_logit, D, truth, doc_fold, T.pick_extract, CLAUSE, allowed)
                       ["fold_weights"])
    return texts, doc_ids, Y, L, doc_fold, truth, D, weights


def nested(L_tuned, L_served, doc_ids, doc_fold, truth, D, weights):
    """Found and "possible" per contract: thresholds chosen on ``L_tuned`` of the other folds, applied to
    ``L_served``; also each contract's best passage per category on ``L_served`` (what a "possible" shows)."""
    n_docs, k = truth.shape
    pred, poss = np.zeros_like(truth), np.zeros_like(truth)
    best = np.zeros((n_docs, k), dtype=int)
    for c in range(k):
        order = np.lexsort((L_served[:, c], doc_ids))
        last = np.r_[doc_ids[order][1:] != doc_ids[order][:-1], True]
        best[doc_ids[order][last], c] = order[last]
    for f in np.unique(doc_fold):
        tr = doc_fold != f
        maxima = []
        for LL in (L_tuned, L_served):
            with_prior, raw = np.zeros((n_docs, k)), np.zeros((n_docs, k))
            np.maximum.at(with_prior, doc_ids, tune.sigmoid(LL + (weights[f] * D)[doc_ids]))
            np.maximum.at(raw, doc_ids, tune.sigmoid(LL))
            maxima.append((with_prior, raw))
        (mt, rt), (ms, rs) = maxima
        for c in range(k):
            pred[~tr, c] = ms[~tr, c] >= T.pick_extract(c)(mt[tr, c], truth[tr, c])
        for c in HIGH_RISK:
            poss[~tr, c] = rs[~tr, c] >= T.pick_possible(c)(rt[tr, c], truth[tr, c])
    return pred, poss, best


def possible_shows(pred, poss, best, truth, Y) -> tuple[int, int]:
    hits = total = 0
    for c in HIGH_RISK:
        for d in np.flatnonzero(poss[:, c] & ~pred[:, c] & truth[:, c]):
            total += 1
            hits += bool(Y[best[d, c], c])
    return hits, total


SHIPPED_THRESHOLDS = np.array([max(float(json.loads((MODEL_DIR / "offline_model.json").read_text())
                                          ["extract_threshold"][c]), T.EXTRACT_FLOOR) for c in CATS])


def read_otherwise(probs: np.ndarray, thresholds: np.ndarray, target: str) -> np.ndarray:
    """Measured, not kept ("one clause, one reading"): the passages that are a finding of a clause category other
    than ``target`` (at the shipped thresholds, the rules applied) while ``target`` scores under its own threshold,
    and at least ``FLOOR``; they get ``OTHER_READING_DELTA`` for ``target`` (not its "possible" passage)."""
    t = CATS.index(target)
    others = [j for j in CLAUSE if j != t]
    found_other = (probs[:, others] >= thresholds[others]).any(axis=1)
    return found_other & (probs[:, t] >= consistency.FLOOR) & (probs[:, t] < thresholds[t])


OTHER_READING_DELTA = -10.0


def served(texts, L, rules=consistency.RULES, one_reading=()) -> np.ndarray:
    """The logits as served with the layer: the rules' log-odds changes (reading the passages as serving does,
    ``FLOOR``), then ``one_reading`` for those categories (other categories' findings at the shipped thresholds)."""
    out = L.copy()
    P = tune.sigmoid(L)
    for c, d in consistency.deltas(texts, CATS, rules, {n: P[:, i] for i, n in enumerate(CATS)}).items():
        out[:, CATS.index(c)] += d
    P = tune.sigmoid(out)
    for target in one_reading:
        out[read_otherwise(P, SHIPPED_THRESHOLDS, target), CATS.index(target)] += OTHER_READING_DELTA
    return out


SIM_MARGINS, SIM_NOISE = (1.5, 1.73, 2.0, 2.5, 3.0), 0.15
EXCLUSION = consistency._rx(r"(?:in no event|under no circumstances?|neither party|not be liable|no liability)"
                            r"[^.;]{0,200}(?:indirect|incidental|special|consequential|punitive|exemplary)")


def margins(L_served, doc_ids, doc_fold, truth, D, weights, L_tuned=None) -> np.ndarray:
    """Contracts x categories: log-odds of the best passage (with the contract prior) over the fold's extraction
    threshold (chosen on the other folds' ``L_tuned``), as ``pipeline.cascade`` computes the margin it asks by."""
    L_tuned = L_served if L_tuned is None else L_tuned
    n_docs, k = truth.shape
    out = np.zeros((n_docs, k))
    for f in np.unique(doc_fold):
        tr = doc_fold != f
        mt, ms = np.zeros((n_docs, k)), np.zeros((n_docs, k))
        np.maximum.at(mt, doc_ids, tune.sigmoid(L_tuned + (weights[f] * D)[doc_ids]))
        np.maximum.at(ms, doc_ids, tune.sigmoid(L_served + (weights[f] * D)[doc_ids]))
        for c in range(k):
            out[~tr, c] = tune.logit(ms[~tr, c]) - tune.logit(T.pick_extract(c)(mt[tr, c], truth[tr, c]))
    return out


def simulated_noisy_f1(M: np.ndarray, truth: np.ndarray, weight: float, noise: float = SIM_NOISE) -> float:
    """Expected contract micro-F1 when the pairs within ``weight`` of the threshold take a ``noise``-wrong answer."""
    expected = np.where(np.abs(M) < weight, np.where(truth, 1 - noise, noise), (M >= 0).astype(float))
    e, t = expected[:, CLAUSE], truth[:, CLAUSE]
    tp, fp, fn = (e * t).sum(), (e * ~t).sum(), ((1 - e) * t).sum()
    return float(2 * tp / (2 * tp + fp + fn))


def cascade_sim(texts, L, doc_ids, doc_fold, truth, D, weights) -> dict:
    out = {}
    print("\nsimulated noisy cascade (TRAIN, nested margins; 15 % wrong answers): expected micro-F1 / share asked")
    for name, rules in (("without the rules", ()), ("with the rules", consistency.RULES)):
        M = margins(served(texts, L, rules), doc_ids, doc_fold, truth, D, weights, L)
        row = {w: (simulated_noisy_f1(M, truth, w), float((np.abs(M[:, CLAUSE]) < w).mean())) for w in SIM_MARGINS}
        print(f"  {name:18s} " + "  ".join(f"W {w}: {f:.4f} / {a:.3f}" for w, (f, a) in row.items()))
        out[name] = {str(w): v for w, v in row.items()}
    return out


def exclusions(texts, doc_ids, truth, pred, poss) -> dict:
    """Contracts with an exclusion of indirect damages and no carve-out, against Uncapped Liability's labels."""
    c = CATS.index("Uncapped Liability")
    hit = np.zeros(len(truth), dtype=bool)
    for i, t in enumerate(texts):
        low = t.lower()
        if EXCLUSION.search(low) and consistency.CARVE_OUT.search(low) is None:
            hit[doc_ids[i]] = True
    listed, t = pred[:, c] | poss[:, c], truth[:, c]
    out = {"positives": int(t.sum()), "listed": int(listed.sum()), "listed_labelled": int((listed & t).sum()),
           "with_exclusion": int(hit.sum()), "with_exclusion_labelled": int((hit & t).sum()),
           "new_listed": int((hit & ~listed).sum()), "new_listed_labelled": int((hit & ~listed & t).sum())}
    print("\nUncapped Liability, every exclusion of indirect damages with no carve-out listed as possible (TRAIN): "
          f"{out['positives']} labelled contracts, {out['listed_labelled']} found or possible of {out['listed']} "
          f"listed; {out['with_exclusion']} contracts hold such an exclusion ({out['with_exclusion_labelled']} "
          f"labelled); it would list {out['new_listed']} more, {out['new_listed_labelled']} of them labelled")
    return out


def train_cv(dump: Path, ablation: bool, sim: bool = False, excl: bool = False) -> dict:
    t0 = time.time()
    texts, doc_ids, Y, L, doc_fold, truth, D, weights = load_train(dump)
    print(f"TRAIN loaded in {time.time() - t0:.0f}s", file=sys.stderr)
    base = nested(L, L, doc_ids, doc_fold, truth, D, weights)
    after = nested(L, served(texts, L), doc_ids, doc_fold, truth, D, weights)
    out = print_table(f"TRAIN, {len(truth)} contracts, nested (thresholds as tuned without the rules)", base[:2],
                      after[:2], truth, possible_shows(*base, truth, Y), possible_shows(*after, truth, Y))
    if sim:
        out["cascade_sim"] = cascade_sim(texts, L, doc_ids, doc_fold, truth, D, weights)
    if excl:
        out["exclusions"] = exclusions(texts, doc_ids, truth, *after[:2])
    if ablation:
        print("\nablation (TRAIN, nested): micro-F1 / macro-F1 / false gates; found-or-possible recall, high-risk")

        def line(name, rules, one=()):
            r = nested(L, served(texts, L, rules, one), doc_ids, doc_fold, truth, D, weights)
            f = figures(r[0], r[1], truth)
            rec = " ".join(f"{tune.prf(r[0][:, c] | r[1][:, c], truth[:, c])[1]:.3f}" for c in HIGH_RISK)
            print(f"  {name[:62]:62s} {f[0]:.4f} / {f[1]:.4f} / {f[3]:.0f}; {rec}", flush=True)

        line("none", [])
        for rule in consistency.RULES:
            line(f"only: {rule.name}", [rule])
        for rule in consistency.RULES:
            line(f"all but: {rule.name}", [r for r in consistency.RULES if r is not rule])
        for rule in NOT_KEPT:
            line(f"not kept, alone: {rule.name}", [rule])
        kept_but_exclusivity = [r for r in consistency.RULES if r.categories != ("Exclusivity",)]
        line("not kept: all, the Exclusivity rule with ownership", [*kept_but_exclusivity, NOT_KEPT[2]])
        for target in ("Minimum Commitment", "Liquidated Damages", "Uncapped Liability"):
            line(f"not kept: all + one reading, {target}", consistency.RULES, (target,))
    return out


# ---- held out -------------------------------------------------------------------------------------------------

def held_out() -> dict:
    from prefilter import load_holdout, parsed_document  # bench/prefilter.py

    from clausegate.review.offline.extract import extract_offline
    from clausegate.review.passages import page_passages
    from clausegate.review.prefilter import prefilter

    docs = load_holdout(0)
    k = len(CATS)
    truth = np.zeros((len(docs), k), dtype=bool)
    res = {on: (np.zeros((len(docs), k), dtype=bool), np.zeros((len(docs), k), dtype=bool)) for on in (False, True)}
    shows = {False: [0, 0], True: [0, 0]}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    extract_offline(prefilter(parsed_document(docs[0][0], docs[0][1]), CATS), CATS)  # warm-up
    for d, (entry, pages, rows) in enumerate(docs):
        by_page = {pno: [t for t, _ in ps] for pno, ps in enumerate(page_passages(pages), start=1) if ps}
        true_passages: set[tuple[int, int, int]] = set()
        for row in rows:
            c = CATS.index(row["category"])
            truth[d, c] = True
            for pno in cuad.span_pages(row):
                true_passages |= {(c, pno, i) for i in cuad.locate_span(row["text"], by_page.get(pno, []))}
        for on in (False, True):
            consistency.ENABLED = on
            t0 = time.process_time()
            clauses = extract_offline(prefilter(parsed_document(entry, pages), CATS), CATS)
            cpu[on].append(time.process_time() - t0)
            found, poss = res[on]
            for cl in clauses:
                c = CATS.index(cl.category)
                (poss if cl.possible else found)[d, c] = True
                if cl.possible and truth[d, c] and c in HIGH_RISK:
                    shows[on][1] += 1
                    shows[on][0] += any((c, pno, i) in true_passages for pno in cl.pages
                                        for i in cuad.locate_span(cl.text, by_page.get(pno, [])))
    from extractor import evaluate  # bench/extractor.py: passage-level F1 and the findings' calibration

    full = {}
    for on in (False, True):
        consistency.ENABLED = on
        full[on] = evaluate(docs)
    consistency.ENABLED = True
    out = print_table(f"held out, {len(docs)} contracts (extract_offline, layer off -> on)", res[False], res[True],
                      truth, tuple(shows[False]), tuple(shows[True]))
    for key, name in (("passage_micro", "passage micro-F1 (bench/extractor.py)"), ("ece", "findings ECE")):
        b, a = (full[on][key][2] if key == "passage_micro" else full[on][key] for on in (False, True))
        out[key] = [b, a]
        print(f"  {name:44s} {b:.4f} -> {a:.4f}")
    out["cpu_ms"] = {("on" if on else "off"): [1000 * float(np.median(v)), 1000 * float(np.percentile(v, 95))]
                     for on, v in cpu.items()}
    print("  CPU per contract, pre-filter + extraction, median / p95: layer off {:.0f} / {:.0f} ms, "
          "on {:.0f} / {:.0f} ms".format(*out["cpu_ms"]["off"], *out["cpu_ms"]["on"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", default=".bench/oof.npz", help="the training script's --dump (OOF logits of TRAIN)")
    ap.add_argument("--ablation", action="store_true", help="each rule alone, all but one, and the rules not kept")
    ap.add_argument("--cascade-sim", action="store_true", help="TRAIN: the noisy cascade simulated per margin")
    ap.add_argument("--exclusions", action="store_true", help="TRAIN: every damages exclusion listed as possible UL")
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--no-holdout", action="store_true")
    ap.add_argument("--json", default="", help="write the figures here")
    args = ap.parse_args()
    out = {}
    if not args.no_train:
        out["train"] = train_cv(Path(args.dump), args.ablation, args.cascade_sim, args.exclusions)
    if not args.no_holdout:
        out["held_out"] = held_out()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
