"""Benchmark the pre-filter on CUAD's HOLDOUT split (``tools.cuad.is_holdout``).

    python bench/prefilter.py [--limit N]

For each playbook category list and each recall_target level it prints, aggregated over the
holdout contracts:

* tokens kept: sum of ``tokens_kept`` / sum of ``tokens_total`` (``count_tokens``);
* spans kept: share of the holdout's labelled spans of the playbook's categories (spans whose
  PDF page is known) that lie in the kept passages of their page(s).  Rule
  (``cuad.span_in_passages``): the span's whitespace-normalised lower-cased text is
  contained in a kept passage, or, for spans of >= 4 words, >= 50% of its words occur in one
  kept passage, or its text is contained in the page's kept passages joined in order (a long
  clause cut into adjacent passages, all kept);
* label pages kept: share of (contract, page) pairs holding such a span that are in pages_kept.

Baseline: whole pages ranked by TF-IDF cosine between the page and the playbook's CUAD category
questions (max over categories; vectorizer fitted on the holdout pages + questions), kept in
descending order until the same token share as ClauseGate's default level, and until >= the
span target; a span counts as kept when its first page is kept.

CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clausegate.review.categories import CATEGORIES, CATEGORY_QUESTIONS
from clausegate.review.passages import count_tokens
from clausegate.review.prefilter import RECALL_TARGETS, prefilter
from clausegate.review.schemas import Page, ParsedDocument
from tools import cuad

# Fallback playbook category lists, used when ``clausegate.review.playbook.load_playbook`` (written
# separately) is not importable yet.  DEFAULT = all 41 CUAD categories; NARROW = the
# "payment & liability" playbook.
FALLBACK_PLAYBOOKS: dict[str, list[str]] = {
    "default": list(CATEGORIES),
    "payment-liability": [
        "Revenue/Profit Sharing",
        "Minimum Commitment",
        "Price Restrictions",
        "Cap on Liability",
        "Uncapped Liability",
        "Liquidated Damages",
    ],
}
TARGETS = {"default": (0.50, 0.96), "payment-liability": (0.30, 0.95)}  # (max tokens, min spans)


def playbooks() -> dict[str, tuple[list[str], str]]:
    out = {}
    for name, fallback in FALLBACK_PLAYBOOKS.items():
        try:
            from clausegate.review.playbook import load_playbook  # type: ignore[import-not-found]

            out[name] = (list(load_playbook(name).categories), "playbook")
        except Exception:  # loader absent or playbook missing: use the hard-coded list
            out[name] = (fallback, "fallback list")
    return out


def parsed_document(entry: dict, pages: list[str]) -> ParsedDocument:
    cid = hashlib.sha256(entry["filename"].encode("utf-8")).hexdigest()
    if not pages:
        pages = [""]
    return ParsedDocument(
        contract_id=cid,
        filename=entry["filename"],
        pages=[Page(number=i, text=t, needs_ocr=not t.strip()) for i, t in enumerate(pages, start=1)],
    )


def load_holdout(limit: int, pages: bool = True, only: set[str] | None = None):
    """HOLDOUT contracts as (manifest entry, page texts, CUAD rows), sorted by file name; ``only``: these files."""
    manifest = cuad.load_manifest()
    annotations = cuad.load_annotations()
    hold = sorted((e for e in manifest if cuad.is_holdout(e["filename"]) and (only is None or e["filename"] in only)),
                  key=lambda e: e["filename"])
    if limit:
        hold = hold[:limit]
    docs = []
    for entry in hold:
        docs.append((entry, cuad.load_pages(entry) if pages else [], annotations.get(entry["filename"], [])))
    return docs


def evaluate(docs, cats: list[str], level: str) -> dict:
    cat_set = set(cats)
    tok_kept = tok_total = 0
    spans_total = spans_kept = 0
    lpages_total = lpages_kept = 0
    for entry, pages, rows in docs:
        fd = prefilter(parsed_document(entry, pages), cats, recall_target=level)
        tok_kept += fd.tokens_kept
        tok_total += fd.tokens_total
        by_page: dict[int, list[str]] = {}
        for p in fd.passages:
            by_page.setdefault(p.page, []).append(p.text)
        label_pages = set()
        for row in rows:
            if row["category"] not in cat_set:
                continue
            sp = cuad.span_pages(row)
            if not sp:
                continue
            spans_total += 1
            label_pages.add(sp[0])
            if cuad.span_in_passages(row["text"], [t for pg in sp for t in by_page.get(pg, [])]):
                spans_kept += 1
        lpages_total += len(label_pages)
        lpages_kept += len(label_pages & set(fd.pages_kept))
    return {
        "tokens": tok_kept / max(1, tok_total),
        "spans": spans_kept / max(1, spans_total),
        "pages": lpages_kept / max(1, lpages_total),
        "n_spans": spans_total,
        "tok_total": tok_total,
    }


def baseline(docs, cats: list[str], token_share: float, span_target: float) -> list[tuple[str, dict]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    page_texts, page_tokens, page_key = [], [], []
    for d, (_, pages, _) in enumerate(docs):
        for pno, t in enumerate(pages, start=1):
            page_texts.append(t)
            page_tokens.append(count_tokens(t))
            page_key.append((d, pno))
    questions = [CATEGORY_QUESTIONS[c] for c in cats]
    vec = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit(page_texts + questions)
    sims = (vec.transform(page_texts) @ vec.transform(questions).T).toarray().max(axis=1)
    order = np.argsort(-sims, kind="stable")
    tokens = np.array(page_tokens, dtype=float)
    cum_tokens = np.cumsum(tokens[order]) / max(1.0, tokens.sum())
    rank = {page_key[i]: r for r, i in enumerate(order)}
    cat_set = set(cats)
    span_rank = []  # rank of each span's first page
    label_pages = set()
    for d, (_, _, rows) in enumerate(docs):
        for row in rows:
            if row["category"] in cat_set and cuad.span_pages(row):
                pno = cuad.span_pages(row)[0]
                span_rank.append(rank.get((d, pno), len(order)))
                label_pages.add((d, pno))
    span_rank = np.sort(np.array(span_rank))
    page_rank = np.sort(np.array([rank.get(k, len(order)) for k in label_pages]))

    def at_cut(n_pages: int) -> dict:
        return {
            "tokens": float(cum_tokens[n_pages - 1]) if n_pages else 0.0,
            "spans": float(np.mean(span_rank < n_pages)),
            "pages": float(np.mean(page_rank < n_pages)),
        }

    n_same = int(np.searchsorted(cum_tokens, token_share) + 1)
    need = int(np.ceil(span_target * len(span_rank)))
    n_target = int(span_rank[min(need, len(span_rank)) - 1] + 1) if len(span_rank) else 0
    return [("baseline @ same tokens", at_cut(min(n_same, len(order)))), ("baseline @ span target", at_cut(n_target))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N holdout contracts")
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()
    t0 = time.time()
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    docs = load_holdout(args.limit)
    from clausegate.review.offline.model import load_model

    model = load_model()
    print(f"ClauseGate pre-filter benchmark - CUAD holdout ({cuad.SPLIT_NAME}): {len(docs)} contracts")
    print(f"model {model.version} trained {model.metadata['trained_at']} "
          f"on {model.metadata['n_train_contracts']} TRAIN contracts")
    header = f"{'playbook':<19} {'method':<26} {'tokens kept':>11} {'spans kept':>11} {'label pages kept':>17}  target"
    for name, (cats, source) in playbooks().items():
        max_tok, min_span = TARGETS[name]
        print()
        print(f"== {name} ({len(cats)} categories, {source}); "
              f"target <= {max_tok:.0%} tokens at >= {min_span:.0%} spans")
        print(header)
        print("-" * len(header))
        default_res = None
        for level in RECALL_TARGETS:
            res = evaluate(docs, cats, level)
            if level == "balanced":
                default_res = res
            ok = res["tokens"] <= max_tok and res["spans"] >= min_span
            tag = f"recall_target={level}" + ("*" if level == "balanced" else "")
            verdict = ("MET" if ok else "missed") if level == "balanced" else ""
            print(
                f"{name:<19} {tag:<26} {res['tokens']:>10.1%} {res['spans']:>10.1%} {res['pages']:>16.1%}  {verdict}"
            )
        if not args.no_baseline:
            for label, res in baseline(docs, cats, default_res["tokens"], min_span):
                print(f"{name:<19} {label:<26} {res['tokens']:>10.1%} {res['spans']:>10.1%} {res['pages']:>16.1%}")
        print(f"(* default level, judged against the target; {default_res['n_spans']} labelled spans with a "
              f"known page; {default_res['tok_total']:,} tokens)")
    print(f"\n{time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
