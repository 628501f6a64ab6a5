"""The one definition of ClauseGate's CUAD train/holdout split, plus dev-time CUAD loaders.

The split is a stable hash of the contract's file name: ``is_holdout(filename)`` is True for
about 20% of CUAD's contracts.  Training (``tools/train_offline_model.py``) uses only the
contracts for which it is False; the benchmarks (``bench/*.py``) use only the holdout.

The loaders below read ``../shared/data/cuad`` (CUAD v1, Hendrycks et al. 2021, CC BY 4.0) and
cache pypdf's per-page text under ``.bench/pages/`` (gitignored).  They are for the training
script, the benchmarks and tests only: the product never calls them and runs without the data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import defaultdict
from pathlib import Path

from clausegate.review.categories import canonical

SPLIT_NAME = "sha256(filename)%100<20 holdout"
HOLDOUT_PERCENT = 20

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CUAD_DIR = REPO_ROOT.parent / "shared" / "data" / "cuad"
DEFAULT_CACHE_DIR = REPO_ROOT / ".bench" / "pages"


def _bucket(filename: str) -> int:
    digest = hashlib.sha256(filename.strip().encode("utf-8")).hexdigest()
    return int(digest[:8], 16) % 100


def is_holdout(filename: str) -> bool:
    """True if the contract (by its CUAD file name) belongs to the ~20% holdout split."""
    return _bucket(filename) < HOLDOUT_PERCENT


def cuad_dir() -> Path:
    """The CUAD folder (override with ``CLAUSEGATE_CUAD_DIR``)."""
    return Path(os.environ.get("CLAUSEGATE_CUAD_DIR", DEFAULT_CUAD_DIR))


def cuad_available() -> bool:
    return (cuad_dir() / "manifest.json").is_file()


def load_manifest() -> list[dict]:
    return json.loads((cuad_dir() / "manifest.json").read_text(encoding="utf-8"))


def load_annotations() -> dict[str, list[dict]]:
    """Annotations grouped by contract file name, with canonical category names."""
    by_contract: dict[str, list[dict]] = defaultdict(list)
    with open(cuad_dir() / "annotations.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            row["category"] = canonical(row["category"])
            by_contract[row["contract"]].append(row)
    return dict(by_contract)


def _cache_path(filename: str, cache_dir: Path) -> Path:
    return cache_dir / (hashlib.sha256(filename.encode("utf-8")).hexdigest()[:24] + ".json")


def load_pages(entry: dict, cache_dir: Path | None = None) -> list[str]:
    """pypdf's ``extract_text()`` of every page of a manifest entry's PDF (cached as JSON)."""
    cache_dir = cache_dir or DEFAULT_CACHE_DIR
    path = _cache_path(entry["filename"], cache_dir)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))["pages"]
    from pypdf import PdfReader  # local import: only dev tooling parses PDFs here

    reader = PdfReader(str(cuad_dir() / entry["pdf"]))
    pages = []
    for page in reader.pages:
        try:
            pages.append(page.extract_text() or "")
        except Exception:  # a broken page is an empty page for training purposes
            pages.append("")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"filename": entry["filename"], "pages": pages}), encoding="utf-8")
    tmp.replace(path)
    return pages



# ---------------------------------------------------------------------------------------
# Locating CUAD spans in passages (training labels and benchmark "span kept" figures)

_WS_RE = re.compile(r"\s+")
_WORD_RE = re.compile(r"\w+")


def norm_ws(text: str) -> str:
    """Lower-case, NBSP -> space, whitespace runs collapsed."""
    return _WS_RE.sub(" ", text.replace("\u00a0", " ")).strip().lower()


def _alnum_key(text: str) -> tuple[str, list[int]]:
    chars, index = [], []
    for i, ch in enumerate(text):
        if ch.isalnum():
            chars.append(ch.lower())
            index.append(i)
    return "".join(chars), index


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def span_in_passages(span_text: str, passage_texts: list[str]) -> bool:
    """The benchmark rule for "a labelled span is kept": ``span_in_passage`` for one of the
    kept passages of the span's page(s), or the span's whitespace-normalised text is contained
    in those kept passages joined in page order (a long clause cut into adjacent passages that
    were all kept)."""
    if any(span_in_passage(span_text, t) for t in passage_texts):
        return True
    span_n = norm_ws(span_text)
    return bool(span_n) and len(passage_texts) > 1 and span_n in norm_ws(" ".join(passage_texts))


def span_in_passage(span_text: str, passage_text: str) -> bool:
    """The benchmark rule: the span is "in" a passage if its whitespace-normalised, lower-cased
    text is contained in the passage's, or (spans of >= 4 words) >= 50% of its words (as a
    multiset) occur in the passage."""
    span_n = norm_ws(span_text)
    if not span_n:
        return False
    if span_n in norm_ws(passage_text):
        return True
    span_words = words(span_text)
    if len(span_words) < 4:
        return False
    pool: dict[str, int] = {}
    for w in words(passage_text):
        pool[w] = pool.get(w, 0) + 1
    hit = 0
    for w in span_words:
        if pool.get(w, 0) > 0:
            pool[w] -= 1
            hit += 1
    return hit >= 0.5 * len(span_words)


def locate_span(span_text: str, passages: list[str]) -> set[int]:
    """Indices of the passages (of one page) that a span overlaps; empty if not found.

    Tries, in order: alphanumeric-only lower-case containment in the page's passages joined
    (robust to whitespace/hyphenation/punctuation differences between CUAD's .txt and pypdf),
    then the span's first and last 40 alphanumerics (spans that run onto another page or
    differ in the middle), then the best single passage by >= 50% word overlap."""
    if not passages:
        return set()
    bounds = []
    pos = 0
    for p in passages:
        bounds.append((pos, pos + len(p)))
        pos += len(p) + 1
    joined = " ".join(passages)
    key, index = _alnum_key(joined)
    span_key, _ = _alnum_key(span_text)
    if not span_key:
        return set()

    def hits(start_k: int, end_k: int) -> set[int]:
        a, b = index[start_k], index[end_k - 1] + 1
        return {i for i, (s, e) in enumerate(bounds) if s < b and a < e}

    at = key.find(span_key)
    if at >= 0:
        return hits(at, at + len(span_key))
    found: set[int] = set()
    if len(span_key) >= 60:
        head, tail = span_key[:40], span_key[-40:]
        h = key.find(head)
        t = key.find(tail, h + 1 if h >= 0 else 0)
        if h >= 0 and t >= 0:
            return hits(h, t + len(tail))
        if h >= 0:  # runs onto the next page
            found |= hits(h, len(key))
        if t >= 0:  # started on the previous page
            found |= hits(0, t + len(tail))
        if found:
            return found
    best, best_i = 0.0, -1
    for i, p in enumerate(passages):
        if span_in_passage(span_text, p):
            sw = set(words(span_text))
            score = len(sw & set(words(p))) / max(1, len(sw))
            if score > best:
                best, best_i = score, i
    return {best_i} if best_i >= 0 else set()


def span_pages(row: dict) -> list[int]:
    """1-based PDF pages a CUAD annotation row sits on ([] when unknown)."""
    first = row.get("pdf_page")
    if not first:
        return []
    last = row.get("pdf_page_end") or first
    return list(range(int(first), int(max(first, last)) + 1))


if __name__ == "__main__":  # warm the page cache: python -m tools.cuad
    import sys
    import time

    t0 = time.time()
    manifest = load_manifest()
    for i, entry in enumerate(manifest):
        load_pages(entry)
        if i % 25 == 0:
            print(f"{i}/{len(manifest)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    print(f"done {len(manifest)} in {time.time() - t0:.0f}s")
