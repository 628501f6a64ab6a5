"""What an English contract's key terms cost the configured model, and whether the model is shown what it needs,
on CUAD's HOLDOUT split (``tools.cuad.is_holdout``; nothing is tuned on it).

    python bench/key_terms_excerpt.py [--limit N] [--split holdout|train [--txt]]

Per contract: the offline key terms (``clausegate.review.key_terms.terms.contract_terms`` over pypdf's page text,
as bench/key_terms.py), then what ``steps.extract.key_terms: missing`` (the default) does: the model is asked when
a term is not found, over ``key_terms.model.excerpt`` (the opening and the passages whose words can state a term).
Printed: the share of contracts asked; the prompt's tokens (``passages.count_tokens``) against the whole
contract's, median and p90; and coverage: for each term the offline reader did not find but CUAD answers (its
evidence text in master_clauses.csv, the column without ``-Answer``), whether that evidence is inside the excerpt
(whitespace, quotes and case folded; the first 80 characters of each evidence span).
"""

from __future__ import annotations

import argparse
import ast
import csv
import re
import statistics
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from key_terms import FIELDS, load_train  # noqa: E402  (bench/key_terms.py)
from prefilter import load_holdout  # noqa: E402

from clausegate.review.key_terms.model import excerpt, terms_prompt  # noqa: E402
from clausegate.review.key_terms.terms import contract_terms  # noqa: E402
from clausegate.review.passages import count_tokens  # noqa: E402
from clausegate.review.schemas import Page, ParsedDocument  # noqa: E402
from clausegate.review.text_identity import normalise  # noqa: E402
from tools import cuad  # noqa: E402

EVIDENCE = {name: column.replace("-Answer", "").replace("- Answer", "").strip() for name, column in FIELDS.items()}


def _fold(text: str) -> str:
    text = text.translate(str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"}))
    return re.sub(r"\s+", " ", text).strip().lower()


def _evidence(cell: str) -> list[str]:
    try:
        spans = ast.literal_eval(cell) if cell.strip().startswith("[") else [cell]
    except (ValueError, SyntaxError):
        spans = [cell]
    return [_fold(s)[:80] for s in spans if s and s.strip()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--split", choices=["holdout", "train"], default="holdout")
    ap.add_argument("--txt", action="store_true", help="--split train: CUAD's .txt instead of pypdf's pages")
    args = ap.parse_args()
    rows = {r["Filename"]: r for r in csv.DictReader((cuad.cuad_dir() / "master_clauses.csv").open(encoding="utf-8"))}
    docs = load_holdout(args.limit) if args.split == "holdout" else load_train(args.limit, args.txt)
    asked, ratios, sent, covered, needed = 0, [], [], 0, 0
    for entry, pages, _ in docs:
        document = ParsedDocument(contract_id="0" * 64, filename=entry["filename"], format="pdf",
                                  pages=[Page(number=i + 1, text=t) for i, t in enumerate(pages)])
        terms = contract_terms(document, today=date(2026, 12, 7))
        missing = [t.name for t in terms.terms if t.value is None]
        if not missing:
            continue
        asked += 1
        text = normalise("\n".join(pages))  # as the flow sends it (clausegate.pipeline.language_model)
        shown = excerpt(text, terms)
        tokens = sum(count_tokens(part) for part in terms_prompt(shown, terms))
        sent.append(tokens)
        ratios.append(tokens / max(1, count_tokens(text)))
        folded, row = _fold(shown), rows[entry["filename"]]
        for name in missing:
            if name not in EVIDENCE or not row.get(EVIDENCE[name], "").strip() or row[EVIDENCE[name]] == "[]":
                continue
            spans = _evidence(row[EVIDENCE[name]])
            if spans:
                needed += 1
                covered += any(s in folded for s in spans)
    p90 = sorted(ratios)[int(0.9 * (len(ratios) - 1))] if ratios else 0.0
    print(f"ClauseGate key terms with a model - CUAD {args.split}: {len(docs)} contracts")
    print(f"asked (a term not found offline): {asked}/{len(docs)} ({asked / max(1, len(docs)):.0%})")
    if sent:
        print(f"prompt tokens per contract asked: median {statistics.median(sent):.0f}; against the whole contract: "
              f"median {statistics.median(ratios):.2f}x, p90 {p90:.2f}x")
    print(f"terms missed offline that CUAD answers, its evidence inside the excerpt: {covered}/{needed} "
          f"({covered / max(1, needed):.0%})")


if __name__ == "__main__":
    main()
