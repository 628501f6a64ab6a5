"""Benchmark: what changed between two versions of a contract, on the scripted revision corpus.

    python tools/make_revisions.py                 # the corpus: .bench/revisions (12 CUAD TRAIN contracts)
    python bench/revisions.py [--corpus .bench/revisions] [--show 5]

Every pair is parsed by the product's sandboxed parser (PDF or .docx, as a review parses it) and compared by
:func:`clausegate.review.versions.align.compare`.  A reported change (any clause not unchanged) is right when its
text overlaps a scripted change's on the same side (normalised, one holds the other or they share a run of
half the shorter's characters: a scripted paragraph may hold several clauses); a scripted change is found
when a reported change is right about it.  Prints changed-clause detection precision and recall over all pairs
(target ≥ 0.98 each), the status agreement (changed / moved / added / removed as scripted), the number of
changes reported for the reflow-only and format-only pairs (target 0), and the untracked flag on the
``tracked`` / ``untracked`` pairs (the same edit: never flagged tracked, always flagged untracked).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clausegate.review.document.formats import parse_document  # noqa: E402
from clausegate.review.document.sandbox import fingerprint  # noqa: E402
from clausegate.review.text_identity import normalise  # noqa: E402
from clausegate.review.versions.align import ClauseChange, compare  # noqa: E402
from clausegate.review.versions.units import display_text  # noqa: E402

DEFAULT_CORPUS = ROOT / ".bench" / "revisions"


def _overlap(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    a, b = normalise(display_text([a])), normalise(display_text([b]))  # the rules and page numbers left out
    if a in b or b in a:
        return True
    match = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match()
    return match.size >= 0.5 * min(len(a), len(b))


def _right(change: ClauseChange, truth: dict) -> bool:
    return _overlap(change.old_text, truth["v1_text"]) or _overlap(change.new_text, truth["v2_text"])


def parse(path: Path):
    return parse_document(fingerprint(path), pool_size=1)


def score(folders: list[Path], show: int) -> dict:
    tally: Counter[str] = Counter()
    wrong: list[str] = []
    for folder in folders:
        truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
        result = compare(parse(folder / truth["v1"]), parse(folder / truth["v2"]))
        reported, scripted = result.changes(), truth["changes"]
        kind = truth["kind"]
        tally["pairs"] += 1
        tally["reported"] += len(reported)
        tally["scripted"] += len(scripted)
        if kind in ("reflow", "format"):
            tally[f"{kind}_pairs"] += 1
            tally[f"{kind}_changes"] += len(reported)
        for change in reported:
            hit = [t for t in scripted if _right(change, t)]
            tally["reported_right"] += bool(hit)
            tally["status_right"] += bool(hit) and hit[0]["type"] == change.status
            if not hit and len(wrong) < show:
                wrong.append(f"  {folder.parent.name}/{kind}: reported {change.status}: "
                             f"{(change.old_text or '')[:90]!r} -> {(change.new_text or '')[:90]!r}")
        for t in scripted:
            found = any(_right(c, t) for c in reported)
            tally["scripted_found"] += found
            if not found and len(wrong) < show:
                text = (t["v1_text"] or t["v2_text"])[:120]
                wrong.append(f"  {folder.parent.name}/{kind}: missed {t['type']}: {text!r}")
        if kind in ("tracked", "untracked"):
            tally[f"{kind}_pairs"] += 1
            tally[f"{kind}_flagged"] += any(c.untracked for c in reported)
    tally["wrong"] = wrong  # type: ignore[assignment]
    return tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--show", type=int, default=5, help="print up to N wrong or missed changes")
    args = ap.parse_args()
    folders = sorted(p.parent for p in Path(args.corpus).glob("*/*/truth.json"))
    if not folders:
        sys.exit(f"no pairs in {args.corpus}: run python tools/make_revisions.py first")
    started = time.perf_counter()
    t = score(folders, args.show)
    precision = t["reported_right"] / t["reported"] if t["reported"] else 1.0
    recall = t["scripted_found"] / t["scripted"] if t["scripted"] else 1.0
    print(f"ClauseGate revisions benchmark - {t['pairs']} pairs, {len({f.parent for f in folders})} CUAD TRAIN "
          f"contracts ({args.corpus}), {time.perf_counter() - started:.0f} s")
    print(f"changed-clause detection: precision {precision:.4f} ({t['reported_right']}/{t['reported']}), "
          f"recall {recall:.4f} ({t['scripted_found']}/{t['scripted']})   target >= 0.98 each")
    print(f"status as scripted (changed/moved/added/removed): {t['status_right']}/{t['reported_right']}")
    print(f"reflow-only pairs: {t['reflow_changes']} changes over {t['reflow_pairs']} pairs; format-only (PDF v1, "
          f".docx v2): {t['format_changes']} changes over {t['format_pairs']} pairs   target 0")
    print(f"tracked edit flagged untracked: {t['tracked_flagged']}/{t['tracked_pairs']} (target 0); the same edit "
          f"untracked flagged: {t['untracked_flagged']}/{t['untracked_pairs']} (target all)")
    for line in t["wrong"]:
        print(line)


if __name__ == "__main__":
    main()
