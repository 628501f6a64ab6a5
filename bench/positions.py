"""Benchmark: playbook positions judged on substance (figures) vs on wording (a commit that judged on wording only).

    python bench/positions.py [--n 20] [--before COMMIT] [--examples 6]

Contracts: the three samples (samples/*.pdf, parsed by the product's sandboxed PDF parser) and the first
``--n`` CUAD holdout contracts (sorted by name; ``tools.cuad.is_holdout``) that CUAD labels with Cap on
Liability, Uncapped Liability, Liquidated Damages or Minimum Commitment (pypdf's text, ``tools.cuad.load_pages``).
Each goes through prefilter + the offline extractor as a review does; every finding of a category with a
position in the built-in ``default`` and ``payment-liability`` playbooks is checked twice:

* **before**: ``clausegate/review/positions.py``, ``figures.py`` and the playbooks as of ``--before`` (git);
* **after**: the working tree, with the contract's text (``check_positions(..., contract_text=...)``).

Prints, per playbook and in total: the checks, the verdicts before (how many ``deviates`` on wording, i.e.
"wording unlike ...", and how many on a walk-away figure), the verdicts after by basis (figures / wording),
how many wording deviations before are judged on figures after (and their verdicts), why the rest still
fall back to wording (no figure rule, no figure in the clause, no fees stated, another currency, a rate, a
redaction), and a few before/after reason texts.  Needs ../shared/data/cuad.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clausegate.review.assemble import extract_step  # noqa: E402
from clausegate.review.document.sandbox import fingerprint, parse_pdf  # noqa: E402
from clausegate.review.playbook import load_playbook  # noqa: E402
from clausegate.review.positions import check_positions  # noqa: E402
from clausegate.review.prefilter import prefilter  # noqa: E402
from clausegate.review.schemas import Page, ParsedDocument  # noqa: E402
from tools import cuad  # noqa: E402

CATEGORIES = {"Cap on Liability", "Uncapped Liability", "Liquidated Damages", "Minimum Commitment"}
PLAYBOOKS = ("default", "payment-liability")
BEFORE = "5388bd9"  # the last commit that judged positions on wording only


def _git(commit: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def old_checker(commit: str):
    """(check_positions, {playbook: positions}) as of ``commit``: its figures.py and positions.py run as
    modules of their own, its playbooks' ``positions:`` parsed by its own Position model."""
    figures = types.ModuleType("old_figures")
    exec(compile(_git(commit, "clausegate/review/figures.py"), "old_figures.py", "exec"), figures.__dict__)
    real = sys.modules["clausegate.review.figures"]
    sys.modules["clausegate.review.figures"] = figures
    try:
        positions = sys.modules["old_positions"] = types.ModuleType("old_positions")
        exec(compile(_git(commit, "clausegate/review/positions.py"), "old_positions.py", "exec"),
             positions.__dict__)
    finally:
        sys.modules["clausegate.review.figures"] = real
    books = {name: [positions.Position(**p) for p in
                    yaml.safe_load(_git(commit, f"clausegate/review/playbooks/{name}.yaml")).get("positions", [])]
             for name in PLAYBOOKS}
    return positions.check_positions, books


def contracts(n: int) -> list[tuple[str, ParsedDocument]]:
    docs = [(f"sample {p.name}", parse_pdf(fingerprint(p))) for p in sorted((ROOT / "samples").glob("*.pdf"))]
    sample_names = {"BEYONDCOMCORP", "LeadersonlineInc", "HealthcareIntegrated"}
    annotations = cuad.load_annotations()
    by_name = {e["filename"]: e for e in cuad.load_manifest()}
    names = sorted(k for k, rows in annotations.items() if cuad.is_holdout(k) and k in by_name
                   and any(r["category"] in CATEGORIES for r in rows)
                   and not any(k.startswith(s) for s in sample_names))[:n]
    for name in names:
        pages = cuad.load_pages(by_name[name])
        docs.append((name, ParsedDocument(contract_id=hashlib.sha256(name.encode()).hexdigest(), filename=name,
                                          pages=[Page(number=i + 1, text=t) for i, t in enumerate(pages)])))
    return docs


def basis(reason: str) -> str:
    return "figures" if "judged on figures" in reason else "wording"


def why_wording(reason: str) -> str:
    """The first reason a verdict fell back to wording (a reason may give several)."""
    for key, label in (("states no recurring fees", "no recurring fees stated"),
                       ("no total value", "no contract value stated"),
                       ("not in", "another currency"), ("is in", "another currency"),
                       ("currency is not stated", "currency not stated"), ("a rate", "a rate, not a total"),
                       ("redacted", "a redacted figure"), ("either side", "cannot say (several fees)"),
                       ("sets no figure", "the position sets no figure"),
                       ("no figure in the clause", "no figure in the clause")):
        if key in reason:
            return label
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--examples", type=int, default=6)
    args = ap.parse_args()
    if not cuad.cuad_available():
        print("CUAD data not found (../shared/data/cuad)")
        return 1
    old_check, old_books = old_checker(args.before)
    rows = []  # (playbook, contract, category, before verdict, before reason, after verdict, after reason)
    docs = contracts(args.n)
    for name, doc in docs:
        text = "\n".join(p.text for p in doc.pages)
        for book_name in PLAYBOOKS:
            book = load_playbook(book_name)
            clauses = extract_step(prefilter(doc, book.categories), book.categories).clauses
            before = [c for c in old_check(clauses, old_books[book_name]) if c.verdict != "missing"]
            after = [c for c in check_positions(clauses, book.positions, contract_text=text) if c.verdict != "missing"]
            old_by = {(c.category, c.clause): c for c in before}
            rows += [(book_name, name, c.category, old_by[(c.category, c.clause)].verdict,
                      old_by[(c.category, c.clause)].reason, c.verdict, c.reason, clauses[c.clause].text)
                     for c in after if (c.category, c.clause) in old_by]
    print(f"contracts: {len(docs)} (3 samples + {len(docs) - 3} CUAD holdout); before = {args.before}, "
          "after = working tree\n")
    for label, subset in [*((b, [r for r in rows if r[0] == b]) for b in PLAYBOOKS), ("all", rows)]:
        wording_dev = [r for r in subset if r[3] == "deviates" and "wording unlike" in r[4]
                       and not r[4].startswith("walk-away")]
        moved = [r for r in wording_dev if basis(r[6]) == "figures"]
        print(f"== {label}: {len(subset)} checks")
        print("  before:", dict(Counter(r[3] for r in subset)), f"| deviates on wording: {len(wording_dev)}, "
              f"on a walk-away figure: {sum(r[4].startswith('walk-away') for r in subset)}")
        print("  after: ", dict(Counter(f"{r[5]} ({basis(r[6])})" for r in subset)))
        print(f"  deviating on wording before -> judged on figures after: {len(moved)} "
              f"{dict(Counter(r[5] for r in moved))}")
        print("  after, on wording because:", dict(Counter(why_wording(r[6]) for r in subset
                                                           if basis(r[6]) == "wording")))
    print("\n== examples (before -> after), judged on figures after")
    shown = [r for r in rows if basis(r[6]) == "figures"]
    seen = set()
    for r in shown:
        if (r[1], r[2], r[6]) in seen or len(seen) >= args.examples:
            continue
        seen.add((r[1], r[2], r[6]))
        print(f"- [{r[0]}] {r[1][:50]} | {r[2]}\n    clause: {' '.join(r[7].split())[:220]}\n"
              f"    before: {r[3]}: {r[4][:220]}\n    after:  {r[5]}: {r[6][:400]}")
    print("\n== examples (before -> after), still on wording after (why)")
    seen = set()
    for r in rows:
        if basis(r[6]) == "figures" or why_wording(r[6]) in seen or why_wording(r[6]) == "the position sets no figure":
            continue
        seen.add(why_wording(r[6]))
        print(f"- [{r[0]}] {r[1][:50]} | {r[2]}\n    before: {r[3]}: {r[4][:200]}\n    after:  {r[5]}: {r[6][:400]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
