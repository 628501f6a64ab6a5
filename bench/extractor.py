"""Benchmark the offline extractor on CUAD's HOLDOUT split (``tools.cuad.is_holdout``).

    python bench/extractor.py [--limit N] [--png docs/quality/extractor.png] [--json FILE]
                              [--previous docs/quality/extractor-previous.json] [--extractor cache|pypdf|pdfium]
                              [--format pdf|docx|text]

Pipeline per holdout contract: page text -> ``prefilter`` (all 41 categories) ->
``extract_offline``.  The page text is pypdf's ``extract_text()`` cached by ``tools.cuad.load_pages``
(``--extractor cache``, the default, what the model was trained on), or the product's parse worker's text
(``clausegate.review.document.worker``, in this process, OCR off) with that extractor (``pypdf`` or ``pdfium``):
compare the two to see what the parse step's extractor does to the extractor's quality.  ``--format docx``: the same
contracts as Word .docx files (CUAD's text release, one paragraph per line, ``tools/cuad_to_docx.py``) read by the
product's .docx reader (``clausegate.review.document.docx``, in this process); ``--format text``: that text read as a
plain-text contract (``clausegate.review.document.plain_text``).  Either also runs the PDF path and prints both
contract-level micro-F1s and their difference (the passage-level figures of a .docx or text use its parts, not CUAD's
pages: compare contract level only).  Prints per-category
precision / recall / F1 and the table of targets:

* contract level ("is the clause present"): predicted when at least one clause of the
  category is found (``possible`` clauses are not findings; "found or possible" is shown apart
  for the high-risk categories); true when CUAD has at least one span of it for the contract;
* passage level ("is this passage the clause?"): over every passage of every page
  (``page_passages``, as the pre-filter makes them); a passage is predicted for a category when a found
  clause's text lies in it (located like CUAD's spans, ``cuad.locate_span``: the shown sentences are part
  of the passage, or the clause runs across it); true when a CUAD span of the category
  overlaps it;
* calibration: a finding is right when one of its passages is a true passage of its category;
  expected calibration error (ECE, 10 equal-width bins) of the findings' confidence;
* latency: CPU time (one core) of ``prefilter`` + ``extract_offline`` per contract, page text given.

Micro and macro F1 are over the 36 non-metadata categories.  ``--previous`` is the JSON this
script wrote for the previous model version (the PNG's bars compare with it); ``--json`` writes
this run's.  The holdout is only read here: nothing is fitted or tuned on it.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
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

from prefilter import load_holdout, parsed_document  # bench/prefilter.py

from clausegate.review.categories import CATEGORIES, CLAUSE_CATEGORIES, METADATA_CATEGORIES
from clausegate.review.offline.extract import extract_offline
from clausegate.review.offline.model import MODEL_DIR, load_model
from clausegate.review.passages import page_passages
from clausegate.review.prefilter import prefilter
from tools import cuad

HIGH_RISK = ["Uncapped Liability", "Cap on Liability", "Liquidated Damages", "Minimum Commitment",
             "Revenue/Profit Sharing", "Most Favored Nation"]  # the default playbook's high_risk list
# the targets (held out): contract micro >= 0.84, macro >= 0.74, passage >= 0.68; high-risk recall / precision, and no
# category under F1 0.5
TARGETS = {"micro": 0.84, "macro": 0.74, "passage": 0.68, "hr_recall": 0.95, "hr_precision": 0.6, "min_f1": 0.5}
DOCS = REPO / "docs" / "quality"


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def ece(conf: list[float], right: list[bool], bins: int = 10) -> tuple[float, list[dict]]:
    conf_a, right_a = np.asarray(conf, dtype=float), np.asarray(right, dtype=float)
    idx = np.minimum((conf_a * bins).astype(int), bins - 1)
    total, table = 0.0, []
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.mean() * abs(right_a[m].mean() - conf_a[m].mean())
            table.append({"bin": b, "n": int(m.sum()), "confidence": float(conf_a[m].mean()),
                          "accuracy": float(right_a[m].mean())})
    return float(total), table


def worker_pages(entry: dict, extractor: str) -> list[str]:
    """The page texts the product's parse worker gives for a CUAD PDF with ``extractor`` (OCR off)."""
    from clausegate.review.document import worker  # local import: only --extractor pypdf/pdfium parses PDFs

    options = {"timeout": 3600.0, "max_chars": 10**9, "memory_mb": 4096, "ocr": "off", "extractor": extractor}
    result = worker._extract((cuad.cuad_dir() / entry["pdf"]).read_bytes(), options)
    return [page["text"] for page in result.get("pages", [])]


def load_docs(limit: int, extractor: str) -> list:
    if extractor == "cache":
        return load_holdout(limit)
    return [(entry, worker_pages(entry, extractor), rows) for entry, _, rows in load_holdout(limit, pages=False)]


def format_pages(entry: dict, fmt: str) -> list[str]:
    """The part texts of a CUAD contract's text release read as a .docx (``tools/cuad_to_docx.py``) or as text."""
    if fmt == "docx":
        from clausegate.review.document import docx  # local import: only --format docx reads .docx files
        from tools.cuad_to_docx import docx_path  # local import: writes the .docx on first use

        result = docx.extract(docx_path(entry).read_bytes(), {"max_chars": 10**9})
        return [page["text"] for page in result.get("pages", [])]
    from clausegate.review.document.plain_text import cut_parts  # local import: only --format text

    text = (cuad.cuad_dir() / entry["txt"]).read_text(encoding="utf-8", errors="replace")
    return [text[a:b] for a, b in cut_parts(text)]


def load_format_docs(limit: int, fmt: str) -> tuple[list, list[float]]:
    """The contracts read as ``fmt``, and the wall time (ms) reading each took (the .docx written beforehand)."""
    docs, read_ms = [], []
    for entry, _, rows in load_holdout(limit, pages=False):
        if fmt == "docx":
            from tools.cuad_to_docx import docx_path  # local import: writes the .docx on first use

            docx_path(entry)
        t0 = time.perf_counter()
        docs.append((entry, format_pages(entry, fmt), rows))
        read_ms.append(1000 * (time.perf_counter() - t0))
    return docs, read_ms


def evaluate(docs) -> dict:
    cats = list(CATEGORIES)
    k, ci = len(cats), {c: i for i, c in enumerate(cats)}
    doc_counts = np.zeros((k, 3), dtype=int)  # tp fp fn
    surf_counts = np.zeros((k, 3), dtype=int)  # found or possible
    pas_counts = np.zeros((k, 3), dtype=int)
    support = np.zeros(k, dtype=int)
    conf, right, cpu = [], [], []
    if docs:  # warm up (model load, nltk import, first-call caches): the CPU figures are per contract, not start-up
        extract_offline(prefilter(parsed_document(docs[0][0], docs[0][1]), cats), cats)
    for entry, pages, rows in docs:
        doc = parsed_document(entry, pages)
        t0 = time.process_time()
        clauses = extract_offline(prefilter(doc, cats), cats)
        cpu.append(time.process_time() - t0)
        page_passages_ = {pno: [text for text, _ in ps]
                          for pno, ps in enumerate(page_passages(pages), start=1) if ps}
        truth_pas: set[tuple[int, int, int]] = set()  # (category, page, passage index)
        truth_doc = np.zeros(k, dtype=bool)
        for row in rows:
            c = ci[row["category"]]
            truth_doc[c] = True
            for pno in cuad.span_pages(row):
                for i in cuad.locate_span(row["text"], page_passages_.get(pno, [])):
                    truth_pas.add((c, pno, i))
        pred_doc, surfaced = np.zeros(k, dtype=bool), np.zeros(k, dtype=bool)
        pred_pas: set[tuple[int, int, int]] = set()
        for cl in clauses:
            c = ci[cl.category]
            surfaced[c] = True
            if getattr(cl, "possible", False):
                continue
            pred_doc[c] = True
            mine = {(c, pno, i) for pno in cl.pages for i in cuad.locate_span(cl.text, page_passages_.get(pno, []))}
            pred_pas |= mine
            conf.append(float(cl.confidence))
            right.append(bool(mine & truth_pas))
        support += truth_doc
        for counts, pred in ((doc_counts, pred_doc), (surf_counts, surfaced)):
            counts[:, 0] += pred & truth_doc
            counts[:, 1] += pred & ~truth_doc
            counts[:, 2] += ~pred & truth_doc
        for c, _, _ in pred_pas & truth_pas:
            pas_counts[c, 0] += 1
        for c, _, _ in pred_pas - truth_pas:
            pas_counts[c, 1] += 1
        for c, _, _ in truth_pas - pred_pas:
            pas_counts[c, 2] += 1
    model = load_model()
    per_cat = {}
    for name in cats:
        c = ci[name]
        dp, dr, df = prf(*doc_counts[c])
        pp, pr, pf = prf(*pas_counts[c])
        sp_, sr, _ = prf(*surf_counts[c])
        per_cat[name] = {"n": int(support[c]), "contract": [dp, dr, df], "passage": [pp, pr, pf],
                         "found_or_possible": [sp_, sr]}
    idx = [ci[c] for c in CLAUSE_CATEGORIES]
    e, bins = ece(conf, right)
    return {
        "model_version": model.version,
        "contracts": len(docs),
        "split": cuad.SPLIT_NAME,
        "per_category": per_cat,
        "contract_micro": prf(*doc_counts[idx].sum(axis=0)),
        "contract_macro_f1": float(np.mean([per_cat[c]["contract"][2] for c in CLAUSE_CATEGORIES])),
        "passage_micro": prf(*pas_counts[idx].sum(axis=0)),
        "passage_macro_f1": float(np.mean([per_cat[c]["passage"][2] for c in CLAUSE_CATEGORIES])),
        "findings": len(conf),
        "ece": e,
        "reliability": bins,
        "cpu_ms_per_contract": {"median": 1000 * float(np.median(cpu)), "p95": 1000 * float(np.percentile(cpu, 95)),
                                "max": 1000 * float(np.max(cpu))},
        "artifact_bytes": sum(p.stat().st_size for p in MODEL_DIR.glob("offline_model.*")),
    }


def print_report(res: dict, prev: dict | None) -> None:
    old = (prev or {}).get("per_category", {})
    print(f"ClauseGate offline extractor - CUAD holdout ({res['split']}): {res['contracts']} contracts, "
          f"page text {res.get('page_text', 'cache')}, "
          f"model {res['model_version']}" + (f" (previous: {prev['model_version']})" if prev else ""))
    header = (f"{'category':<36} {'n':>3} | {'contract P':>10} {'R':>5} {'F1':>5} {'prev':>5} | "
              f"{'passage P':>9} {'R':>5} {'F1':>5}")
    print(header)
    print("-" * len(header))
    for name in list(CLAUSE_CATEGORIES) + [c for c in CATEGORIES if c in METADATA_CATEGORIES]:
        r = res["per_category"][name]
        was = old.get(name, {}).get("contract", [0, 0, float("nan")])[2]
        tag = " (metadata)" if name in METADATA_CATEGORIES else ""
        print(f"{(name + tag)[:36]:<36} {r['n']:>3} | {r['contract'][0]:>10.2f} {r['contract'][1]:>5.2f} "
              f"{r['contract'][2]:>5.2f} {was:>5.2f} | "
              f"{r['passage'][0]:>9.2f} {r['passage'][1]:>5.2f} {r['passage'][2]:>5.2f}")
    print()
    rows = issue_table(res, prev)
    w = max(len(r[0]) for r in rows)
    print(f"{'held out, 36 clause categories':<{w}} | {'previous':>22} | {'now':>22} | target")
    print("-" * (w + 70))
    for label, was, now, target, met in rows:
        verdict = "MET" if met else "missed" if met is not None else ""
        print(f"{label:<{w}} | {was:>22} | {now:>22} | {target} {verdict}")


def issue_table(res: dict, prev: dict | None) -> list[tuple]:
    def fmt(r, key, i=2):
        return f"{r[key][i]:.3f}" if r else "-"

    def low(r):
        if not r:
            return "-"
        f1 = {c: r["per_category"][c]["contract"][2] for c in CLAUSE_CATEGORIES}
        bad = [(c, f) for c, f in f1.items() if f < TARGETS["min_f1"]]
        return "; ".join(f"{c} {f:.2f}" for c, f in bad) or "none"

    rows = [
        ("contract-level micro-F1", fmt(prev, "contract_micro"), fmt(res, "contract_micro"), f">= {TARGETS['micro']}",
         res["contract_micro"][2] >= TARGETS["micro"]),
        ("contract-level macro-F1", f"{prev['contract_macro_f1']:.3f}" if prev else "-",
         f"{res['contract_macro_f1']:.3f}", f">= {TARGETS['macro']}", res["contract_macro_f1"] >= TARGETS["macro"]),
        ("passage-level micro-F1", fmt(prev, "passage_micro"), fmt(res, "passage_micro"), f">= {TARGETS['passage']}",
         res["passage_micro"][2] >= TARGETS["passage"]),
    ]
    for c in HIGH_RISK:
        r, p = res["per_category"][c], (prev or {}).get("per_category", {}).get(c)
        now = f"R {r['contract'][1]:.2f} P {r['contract'][0]:.2f} (n={r['n']})"
        was = f"R {p['contract'][1]:.2f} P {p['contract'][0]:.2f}" if p else "-"
        rows.append((f"high-risk {c}: recall @ precision", was, now, "R >= 0.95 at P >= 0.6",
                     r["contract"][1] >= TARGETS["hr_recall"] and r["contract"][0] >= TARGETS["hr_precision"]))
        fp_ = r["found_or_possible"]
        rows.append(("  ... found or possible", "-", f"R {fp_[1]:.2f} P {fp_[0]:.2f}", "(a person is asked)", None))
    bad_now = low(res)
    rows.append(("categories with F1 < 0.5", low(prev)[:22], bad_now[:22], "none", bad_now == "none"))
    if bad_now != "none":
        rows.append(("  (full list)", "", "", bad_now, None))
    rows.append(("findings ECE (confidence vs right)", f"{prev['ece']:.3f}" if prev else "-", f"{res['ece']:.3f}",
                 "lower", (res["ece"] <= prev["ece"]) if prev else None))
    lat = res["cpu_ms_per_contract"]
    lat_prev = (prev or {}).get("cpu_ms_per_contract")
    was_lat = f"{lat_prev['median']:.0f} / {lat_prev['p95']:.0f}" if lat_prev else "-"
    rows.append(("CPU ms per contract (median / p95)", was_lat,
                 f"{lat['median']:.0f} / {lat['p95']:.0f}", "<= 100", lat["median"] <= 100))
    rows.append(("model artifact", f"{prev['artifact_bytes'] / 1e6:.1f} MB" if prev else "-",
                 f"{res['artifact_bytes'] / 1e6:.1f} MB", "<= 30 MB", res["artifact_bytes"] <= 30e6))
    return rows


def plot(res: dict, prev: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(CLAUSE_CATEGORIES)
    now = [res["per_category"][c]["contract"][2] for c in names]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(16, 9), gridspec_kw={"width_ratios": [2.2, 1]})
    y = np.arange(len(names))
    if prev:
        was = [prev["per_category"][c]["contract"][2] for c in names]
        ax1.barh(y + 0.2, was, height=0.4, color="#bbbbbb", label=f"previous ({prev['model_version']})")
    ax1.barh(y - 0.2, now, height=0.4, color="#2b6cb0", label=f"now ({res['model_version']})")
    ax1.axvline(0.5, color="#c53030", lw=1, ls="--", label="F1 = 0.5")
    ax1.set_yticks(y, [f"{c} ({res['per_category'][c]['n']})" for c in names], fontsize=8)
    ax1.invert_yaxis()
    ax1.set_xlim(0, 1)
    ax1.set_xlabel("contract-level F1 on the CUAD holdout (n = contracts with the clause)")
    ax1.set_title(f"Per-category F1, {res['contracts']} held-out contracts: micro {res['contract_micro'][2]:.2f}, "
                  f"macro {res['contract_macro_f1']:.2f}", fontsize=10)
    ax1.legend(loc="lower right", fontsize=8)
    ax2.plot([0, 1], [0, 1], color="#888888", ls=":", label="perfect calibration")
    for r, color, label in ((prev, "#999999", "previous"), (res, "#2b6cb0", "now")):
        if r and r.get("reliability"):
            xs = [b["confidence"] for b in r["reliability"]]
            ys = [b["accuracy"] for b in r["reliability"]]
            ax2.plot(xs, ys, marker="o", color=color, label=f"{label} ({r['model_version']}): ECE {r['ece']:.3f}")
    ax2.set_xlim(0, 1)
    ax2.set_ylim(0, 1)
    ax2.set_xlabel("confidence shown for a finding")
    ax2.set_ylabel("share of findings that are the clause")
    ax2.set_title("Reliability diagram (held-out findings)", fontsize=10)
    ax2.legend(loc="upper left", fontsize=8)
    fig.text(0.01, 0.005, "Data: CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0. Generated by bench/extractor.py.",
             fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--previous", default=str(DOCS / "extractor-previous.json"))
    ap.add_argument("--json", default=None, help="write this run's results here (e.g. docs/quality/extractor.json)")
    ap.add_argument("--png", default=str(DOCS / "extractor.png"), help="'' for no picture")
    ap.add_argument("--extractor", default="cache", choices=["cache", "pypdf", "pdfium"],
                    help="page text: pypdf's cached by tools.cuad (default), or the parse worker's with this extractor")
    ap.add_argument("--format", default="pdf", choices=["pdf", "docx", "text"],
                    help="docx / text: also read the contracts as .docx files / plain text and compare with the PDF")
    args = ap.parse_args()
    t0 = time.time()
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    res = evaluate(load_docs(args.limit, args.extractor))
    res["page_text"] = args.extractor
    if args.format != "pdf":
        docs, read_ms = load_format_docs(args.limit, args.format)
        pdf_res, res = res, evaluate(docs)
        res["page_text"] = f"{args.format} (CUAD's text release)"
        res["read_ms_per_contract"] = {"median": float(np.median(read_ms)), "max": float(np.max(read_ms))}
        res["pdf_contract_micro"] = pdf_res["contract_micro"]
    prev_path = Path(args.previous) if args.previous else None
    prev = json.loads(prev_path.read_text()) if prev_path and prev_path.is_file() else None
    if prev and prev.get("model_version") == res["model_version"]:
        prev = None  # the same model: nothing to compare with
    print_report(res, prev)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.json}")
    if args.png:
        plot(res, prev, Path(args.png))
    if args.format != "pdf":
        pdf_f1, other_f1 = res["pdf_contract_micro"][2], res["contract_micro"][2]
        print(f"contract-level micro-F1, {res['contracts']} held-out contracts: PDF ({args.extractor}) {pdf_f1:.4f}, "
              f"{args.format} {other_f1:.4f}, difference {other_f1 - pdf_f1:+.4f} "
              f"({'within' if abs(other_f1 - pdf_f1) <= 0.01 else 'NOT within'} 0.01); reading one as {args.format}: "
              f"median {res['read_ms_per_contract']['median']:.0f} ms, max {res['read_ms_per_contract']['max']:.0f} ms")
    print(f"{time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
