"""Benchmark the offline key terms on CUAD's HOLDOUT split (``tools.cuad.is_holdout``) against CUAD's own
normalised answers (``master_clauses.csv``, the ``*-Answer`` columns).

    python bench/key_terms.py [--split holdout|train [--txt]] [--limit N] [--json FILE] [--show FIELD]

Per holdout contract: pypdf's page text (``tools.cuad.load_pages``, cached under .bench/pages/, as
bench/extractor.py) -> ``clausegate.review.key_terms.extract.read_terms``.  Exact-match accuracy per field, over
every holdout contract: a field is right when the normalised value equals CUAD's normalised answer, or when
both say the contract does not state it (CUAD's empty answer).  Also printed: accuracy on the contracts where
CUAD has an answer, and false finds (a value where CUAD has none).  Normalisation: dates as ISO (CUAD's
``m/d/yy``) or ``perpetual``; durations as months (years x 12) or days (weeks x 7), so "12 months" equals
"1 year" and "successive 1 year" equals "1 year"; governing law as the first jurisdiction named ("Ontario,
Canada" -> ontario; "England; Wales" -> england; "PRC" -> People's Republic of China).  Parties: right when
every party CUAD names (the name before its defined term) appears in the parties read (letters and digits,
case folded).  CPU: ``time.process_time`` of ``read_terms`` per contract, page text given (one core).
The holdout is only read here: nothing is fitted or tuned on it.  ``--split train``
runs the other 330 contracts (the ones the reading rules are developed on), read the same way (pypdf's pages,
cached); ``--txt`` reads CUAD's own ``.txt`` instead (one part per contract, no PDF parsing).
CUAD v1 (Hendrycks et al.), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from prefilter import load_holdout  # noqa: E402  (bench/prefilter.py)

from clausegate.review.key_terms.dates import durations, parse_date  # noqa: E402
from clausegate.review.key_terms.jurisdictions import primary  # noqa: E402
from clausegate.review.key_terms.reading import read_terms  # noqa: E402
from tools import cuad  # noqa: E402

FIELDS = {  # our field -> CUAD's answer column
    "agreement_date": "Agreement Date-Answer",
    "effective_date": "Effective Date-Answer",
    "expiration_date": "Expiration Date-Answer",
    "renewal_term": "Renewal Term-Answer",
    "notice_period": "Notice Period To Terminate Renewal- Answer",
    "governing_law": "Governing Law-Answer",
    "parties": "Parties-Answer",
}
TARGETS = {"agreement_date": 0.85, "effective_date": 0.85, "expiration_date": 0.85, "renewal_term": 0.80,
           "notice_period": 0.80, "governing_law": 0.95}
_ISO_UNIT = {"D": "days", "W": "weeks", "M": "months", "Y": "years"}


def _alnum(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _period_key(count: float, unit: str) -> str:
    if unit in ("years", "months"):
        return f"{count * (12 if unit == 'years' else 1):g} months"
    return f"{count * (7 if unit == 'weeks' else 1):g} days"


def gold_value(name: str, answer: str) -> str | None:
    """CUAD's answer normalised like ours (None: CUAD says the contract does not state it)."""
    answer = answer.strip()
    if not answer or re.search(r"\[\s*●?\s*\]", answer):  # a blank the contract leaves to fill in: no value
        return None
    if name.endswith("_date"):
        if answer.lower().startswith("perpetual"):
            return "perpetual"
        value = parse_date(answer.split(";")[0].strip())
        return value.isoformat() if value else answer.lower()
    if name in ("renewal_term", "notice_period"):
        if answer.lower().startswith("perpetual"):
            return "perpetual"
        found = durations(answer.split(";")[0])
        return _period_key(found[0][0].count, found[0][0].unit) if found else answer.lower()
    if name == "governing_law":
        return primary(answer)
    return answer


def ours(name: str, value: str | None) -> str | None:
    if value is None or name.endswith("_date"):
        return value
    if name in ("renewal_term", "notice_period"):
        m = re.fullmatch(r"P([\d.]+)([DWMY])", value)
        return _period_key(float(m.group(1)), _ISO_UNIT[m.group(2)]) if m else value
    if name == "governing_law":
        return primary(value)
    return value


def parties_right(answer: str, names: list[str]) -> bool | None:
    if not answer.strip():
        return None
    got = _alnum(" ".join(names))
    wanted = [_alnum(re.split(r"\(|“|\"", part)[0]) for part in answer.split(";")]
    wanted = [w for w in wanted if w]
    return bool(got) and all(w in got for w in wanted)


def load_train(limit: int, txt: bool = False) -> list[tuple[dict, list[str], None]]:
    """The contracts outside the holdout, as (manifest entry, page texts, None), sorted by file name; ``txt``:
    CUAD's .txt as one part."""
    train = sorted((e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])), key=lambda e: e["filename"])
    train = train[:limit] if limit else train
    if txt:
        return [(e, [(cuad.cuad_dir() / e["txt"]).read_text(encoding="utf-8", errors="replace")], None) for e in train]
    return [(e, cuad.load_pages(e), None) for e in train]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("holdout", "train"), default="holdout")
    ap.add_argument("--txt", action="store_true", help="--split train: CUAD's .txt instead of pypdf's pages")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--show", help="print the misses of this field")
    args = ap.parse_args()
    rows = {r["Filename"]: r for r in csv.DictReader((cuad.cuad_dir() / "master_clauses.csv").open(encoding="utf-8"))}
    docs = load_holdout(args.limit) if args.split == "holdout" else load_train(args.limit, args.txt)
    stats = {f: {"right": 0, "n": 0, "stated": 0, "stated_right": 0, "false_finds": 0} for f in FIELDS}
    cpu_ms = []
    for entry, pages, _ in docs:
        row = rows[entry["filename"]]
        t0 = time.process_time()
        reading = read_terms(pages)
        cpu_ms.append((time.process_time() - t0) * 1000)
        for name, column in FIELDS.items():
            term = reading.terms[name]
            s = stats[name]
            if name == "parties":
                ok = parties_right(row[column], term.extra.get("names", []))
                if ok is None:
                    continue
                s["n"] += 1
                s["stated"] += 1
                s["right"] += ok
                s["stated_right"] += ok
                continue
            want, got = gold_value(name, row[column]), ours(name, term.value)
            s["n"] += 1
            s["right"] += want == got
            if want is not None:
                s["stated"] += 1
                s["stated_right"] += want == got
            elif got is not None:
                s["false_finds"] += 1
            if args.show == name and want != got:
                print(f"  MISS {entry['filename'][:60]}: CUAD {row[column]!r} -> {want!r}; ours {got!r} | "
                      f"{term.quote[:220]!r}")
    split = f"holdout ({cuad.SPLIT_NAME})" if args.split == "holdout" else \
        f"TRAIN (not holdout{'; CUAD .txt' if args.txt else ''})"
    print(f"ClauseGate key terms - CUAD {split}: {len(docs)} contracts")
    print(f"{'field':18} {'exact':>7} {'target':>7} {'on stated':>10} {'false finds':>12}")
    for name, s in stats.items():
        acc = s["right"] / s["n"] if s["n"] else 0.0
        stated = f"{s['stated_right']}/{s['stated']}"
        target = TARGETS.get(name)
        mark = "" if target is None else (" ok" if acc >= target else " BELOW")
        print(f"{name:18} {acc:7.3f} {target if target else '-':>7} {stated:>10} {s['false_finds']:>12}{mark}")
    median, p90 = statistics.median(cpu_ms), sorted(cpu_ms)[int(0.9 * (len(cpu_ms) - 1))]
    print(f"CPU per contract (read_terms, page text given): median {median:.2f} ms, p90 {p90:.2f} ms, "
          f"max {max(cpu_ms):.2f} ms (target median <= 10 ms)")
    if args.json:
        args.json.write_text(json.dumps({"contracts": len(docs), "fields": stats, "cpu_ms_median": median,
                                         "cpu_ms_p90": p90}, indent=2))


if __name__ == "__main__":
    main()
