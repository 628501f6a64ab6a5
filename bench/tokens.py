"""Prompt tokens per contract on held-out CUAD contracts: naive vs. pre-filter vs. pre-filter +
Jinja2 compression + cascade.

    python bench/tokens.py [--limit 40] [--playbook default|payment-liability|all] [--per-contract]

- naive: the whole document + instructions for all 41 categories (one prompt);
- pre-filter: every passage the pre-filter keeps + instructions for the playbook's categories;
- compressed + cascade: only the categories the cascade sends (high-risk or unsure offline),
  each question once, and only the top passages per sent category (what the product sends).
Tokens are ClauseGate's word/punctuation count (``clausegate.review.passages.count_tokens``); provider
tokenizers differ by a roughly constant factor, so the ratios hold.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clausegate.review.llm.extract import (
    PromptPassage,
    build_prompt,
    cascade_categories,
    naive_prompt_tokens,
    render_extraction_prompt,
)
from clausegate.review.offline.extract import category_confidence, extract_thresholds
from clausegate.review.playbook import builtin_playbooks, load_playbook
from clausegate.review.prefilter import prefilter
from clausegate.review.schemas import Page, ParsedDocument
from tools.cuad import cuad_available, is_holdout, load_manifest, load_pages


def measure(entry: dict, book) -> tuple[int, int, int, int]:
    pages = load_pages(entry)
    numbered = [Page(number=i + 1, text=t) for i, t in enumerate(pages)] or [Page(number=1, text="")]
    document = ParsedDocument(contract_id="0" * 64, filename=entry["filename"], pages=numbered)
    filtered = prefilter(document, book.categories)
    naive = naive_prompt_tokens(document)
    all_kept = [PromptPassage(id=f"p{i}", page=p.page, text=p.text, score=p.score)
                for i, p in enumerate(filtered.passages)]
    prefiltered = render_extraction_prompt(list(book.categories), all_kept).tokens
    send = cascade_categories(category_confidence(filtered, book.categories), extract_thresholds(book.categories),
                              book.high_risk, margin=book.steps.extract.cascade_margin)
    compressed = build_prompt(filtered, send).tokens if send and filtered.passages else 0
    return naive, prefiltered, compressed, len(send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--playbook", default="all")
    parser.add_argument("--per-contract", action="store_true")
    args = parser.parse_args()
    if not cuad_available():
        sys.exit("needs ../shared/data/cuad")
    holdout = [e for e in load_manifest() if is_holdout(e["filename"])][: args.limit]
    names = builtin_playbooks() if args.playbook == "all" else [args.playbook]
    for name in names:
        book = load_playbook(name)
        rows = [(e["filename"], *measure(e, book)) for e in holdout]
        print(f"\n== playbook {name} ({len(book.categories)} categories, {len(book.high_risk)} high-risk), "
              f"{len(rows)} held-out contracts ==")
        if args.per_contract:
            print(f"{'contract':60} {'naive':>8} {'prefilt':>8} {'sent':>6} {'cats':>5}")
            for fn, naive, pre, sent, cats in rows:
                print(f"{fn[:60]:60} {naive:8d} {pre:8d} {sent:6d} {cats:5d}")
        total = [sum(r[i] for r in rows) for i in (1, 2, 3)]
        print(f"tokens, total:   naive {total[0]:,}  pre-filter {total[1]:,}  "
              f"pre-filter+compression+cascade {total[2]:,}")
        print(f"tokens, median per contract: naive {statistics.median(r[1] for r in rows):,.0f}  "
              f"pre-filter {statistics.median(r[2] for r in rows):,.0f}  "
              f"compressed+cascade {statistics.median(r[3] for r in rows):,.0f}")
        print(f"share of naive:  pre-filter {total[1] / total[0]:.1%}  compressed+cascade {total[2] / total[0]:.1%}  "
              f"(naive/compressed = {total[0] / max(total[2], 1):.1f}x)")
        print(f"categories sent to the model: median {statistics.median(r[4] for r in rows):.0f} "
              f"of {len(book.categories)}; contracts needing no model call: {sum(1 for r in rows if r[3] == 0)}")


if __name__ == "__main__":
    main()
