"""Quote quality of the offline review on CUAD's HOLDOUT split: whole sentences, no page furniture.

    python bench/quotes.py [--limit N] [--extractor cache|pypdf|pdfium] [--tree DIR ...] [--show N] [--json FILE]

For each ``--tree`` (a checkout of this repository, default: this one; e.g. ``--tree /tmp/orig --tree .``
for before and after) a child process with ``PYTHONPATH=tree`` reviews every holdout contract offline
(``extract_offline(prefilter(doc, all 41 categories))``, page text as ``bench/extractor.py`` loads it:
pypdf's cached text by default, or the parse worker's with ``--extractor pdfium``).  Every clause it
returns (found and possible) is a *shown quote*, its ``text`` as the report shows it.  The rules below are
applied here, in the parent, the same for every tree, on the contract's own page text (furniture included):

Locating a quote: its letters and digits (lower-cased) are searched in those of the contract's pages
joined; the first 60 and the last 60 of them give where the quote starts and ends in the page text.  A
quote not found (text the pipeline changed, e.g. a removed page number in the middle) is located by its
first and last 60 alone.  A *furniture line* of the page text is a line that, stripped, is one or two
bare numbers of at most three digits ("12", "5 6") not among ``FIGURE_RUN`` (3) or more such lines in a row
inside a page (the edges aside: that is a table's column of figures), "Page N" / "Page N of M" / "- N -", an EDGAR stamp
("Source: NAME, FORM, M/D/YYYY", a number before it allowed), or a *running line*: one of the first or
last 3 lines of a page after the first whose text is among the first or last 3 lines of at least 3 pages
(compared with spaces collapsed and digits masked; at least 10 characters with a letter; a
signature-block field such as "By:", "Name:", "Title:" or "/s/" is contract text, never a running line;
a title on page 1 that later pages repeat as their header is the title there).

1. *Starts on a sentence boundary*: its first character is not a lower-case letter (a list marker such as
   "g." or "(iv)" aside); it does not start with a parenthesised figure followed by a lower-case word
   ("(30) days"); and either it opens with a number or a Section / Article / Exhibit reference followed
   by a capitalised word ("2.1. Appointment.", "Section 9.4 Assignment."), or in the page text what
   precedes it (its own opening quote mark aside), furniture lines skipped, is nothing (the document's
   start), a blank line, a line or text ending in ".", "!", "?", ":" or ";" (closing quotes or brackets
   after it allowed), a list marker ("e.", "(a)", "12."), or a heading line (at most 60 characters with
   no lower-case letter, or Title Case words and numbers without a sentence end).
2. *Ends on a boundary*, one of three, each counted (``ends``):
   a. *sentence*: its last character, closing quotes and brackets aside, is ".", "!" or "?"; its last word is
      not an abbreviation (a.k.a., Inc., No., U.S., POB., Ltd., Corp., Co., St., e.g., i.e.); and in the page
      text what follows it, furniture lines skipped, does not start with a lower-case letter or a parenthesised
      figure ("(30) days");
   b. *line*: text without a sentence end (a table row, a table of contents, a cover page, a signature or
      address block) quoted as whole lines: the quote ends where a line of the page text ends (its own closing
      marks, "…)", "… [*]", aside), does not end with ",", ";" or ":" or on a preposition, article or
      conjunction ("with offices at", "and"), and the next line, furniture skipped, does not start with a
      lower-case letter or a parenthesised figure;
   c. *marked*: it ends with " […]" (cut, and saying so) after whole sentences (the text before the marker
      meets 2a's last-character and abbreviation tests) or after a whole list item or lead-in ("…;", "…; and",
      "…; or", "…:") whose page text goes on with the next item, not in lower case (a list marker such as
      "(b)" or "14.1.4" aside).
   *On a sentence boundary* (strict, the figure of before) counts only 2a with rule 1.
3. *Contains page furniture*: an EDGAR stamp or "Page N of M" / "Page N/M" anywhere in the quote; or a
   furniture line of its contract inside the quote where the page text has it (the line lies within the located
   quote, so a title on page 1 is not the running header that repeats it later): its letters and digits
   with the 12 before and the 12 after it ("THEORY 12 OF LIABILITY") are in the quote's, or the quote
   starts with the line and the 12 after it ("3 18 (d) Audit."), or ends with the 12 before it and the line
   (where the page text has 4 or more of them there).

Printed per tree: quotes, share on a boundary (rule 1 and one of 2a-2c), on a sentence boundary (rule 1 and 2a),
start only, end only, cut (marked), the ends by rule,
share with furniture, and with ``--show N`` the first N quotes failing each rule.  ``--json`` writes the
figures.  The holdout is only read here.  CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROBE = 60  # letters/digits of a quote's start and end searched in the page text
EDGE = 3  # the first and last lines of a page where running headers and footers sit
FIGURE_RUN = 3  # bare-number lines on so many consecutive lines inside a page: a table's figures, not page numbers
_BARE_NUMBERS_RE = re.compile(r"^\d{1,3}(?:\s+\d{1,3})?$")
CONTEXT = 12  # letters/digits before and after a furniture line that must surround it in a quote
_SIGNATURE_RE = re.compile(r"^(?:by|name|title|date|dated|its|attn|attention)\s*:|^/s/", re.IGNORECASE)
_STAMP_RE = re.compile(r"Source:\s+\S[^,\n]{0,100},\s*[0-9A-Z][^,\n]{0,30},\s*\d{1,2}/\d{1,2}/\d{2,4}")
_PAGE_OF_RE = re.compile(r"\bPage\s+\d{1,4}\s*(?:of|/)\s*\d{1,4}\b", re.IGNORECASE)
_FURNITURE_LINE_RE = re.compile(
    r"^(?:\d{1,3}(?:\s+\d{1,3})?|page\s+\d{1,4}(?:\s+of\s+\d{1,4})?|[-–—]\s*\d{1,4}\s*[-–—]"
    r"|(?:\d{1,4}\s+)?Source:\s+\S.{0,100},\s*[0-9A-Z][^,\n]{0,30},\s*\d{1,2}/\d{1,2}/\d{2,4})$",
    re.IGNORECASE)
_CLOSERS = ")]\"'”’»"
CUT = " […]"
_FUNCTION_WORDS = frozenset("a an the of to in at by for with from on and or as that under into between than its their "
                            "such this these any all each".split())
_ITEM_END_RE = re.compile(r"(?:[;:]|;,?\s(?:and|or|and/or),?)$")
_CONJUNCTION_RE = re.compile(r"^(?:and/or|and|or)\b[,;]?\s*", re.IGNORECASE)
_ABBREVIATIONS = ("a.k.a.", "inc.", "no.", "u.s.", "pob.", "ltd.", "corp.", "co.", "st.", "e.g.", "i.e.")
_PAREN_FIGURE_RE = re.compile(r"^\(\d{1,3}\)\s+[a-z]")
_MARKER_RE = re.compile(r"^(?:[a-z]{1,4}[.)]|\([a-z]{1,4}\))\s")  # "g. Governing Law", "b) the", "(iv) the"
_TITLE_WORD_RE = re.compile(r"^[A-Z&\d(]|^(?:a|an|and|as|at|by|for|from|in|of|on|or|the|to|with)$")
# a quote that opens with a numbered heading or item starting a capitalised sentence ("2.1. Appointment.",
# "Section 9.4 Assignment.", "17.1.2. Divert", "Exhibit 10.5 Collaboration Agreement")
_NUMBERED_START_RE = re.compile(
    r"^(?:\d{1,3}(?:\.\d{1,3})*\.?|(?:section|article|clause|exhibit|schedule|annex|appendix)\s+[\dIVXLC][\w.]*)"
    r"\s+[A-Z“\"]", re.IGNORECASE)
_OPENERS = "\"'“‘«([ "
_LIST_MARKER_RE = re.compile(r"^(?:[a-z]{1,4}[.)]|\([a-z0-9]{1,4}\)|\d{1,3}(?:\.\d{1,3})*\.?)$", re.IGNORECASE)


def _ws(text: str) -> str:
    return " ".join(text.split())


def _running_candidate(line: str) -> bool:
    """A line that may be a running header or footer: 10 characters with a letter, no signature-block field."""
    return len(_ws(line)) >= 10 and any(c.isalpha() for c in line) and not _SIGNATURE_RE.match(line.strip())


def _mask(line: str) -> str:
    return re.sub(r"\d+", "#", _ws(line).lower())


class Contract:
    """One contract's page text, prepared for the rules: alnum index, furniture lines and their context."""

    def __init__(self, pages: list[str]) -> None:
        self.text = "\n".join(pages)
        self.lines = self.text.split("\n")
        page_of: list[int] = []
        edge_lines: set[int] = set()
        masks: Counter[str] = Counter()
        at = 0
        for p, page in enumerate(pages, start=1):
            numbers = list(range(at, at + len(page.split("\n"))))
            page_of.extend([p] * len(numbers))
            filled = [n for n in numbers if self.lines[n].strip()]
            edge = set(filled[:EDGE] + filled[-EDGE:])
            edge_lines |= edge
            masks.update({_mask(self.lines[n]) for n in edge if _running_candidate(self.lines[n])})
            at += len(numbers)
        repeated = {m for m, k in masks.items() if k >= 3}
        # a column of figures: FIGURE_RUN or more bare-number lines in a row inside a page (edges aside)
        table_figures: set[int] = set()
        at = 0
        for page in pages:
            numbers = list(range(at, at + len(page.split("\n"))))
            filled = [n for n in numbers if self.lines[n].strip()]
            inside = [n for n in filled[EDGE:-EDGE] if _BARE_NUMBERS_RE.match(self.lines[n].strip())]
            run: list[int] = []
            for n in [*inside, -2]:
                if run and n == run[-1] + 1:
                    run.append(n)
                    continue
                if len(run) >= FIGURE_RUN:
                    table_figures.update(run)
                run = [n]
            at += len(numbers)
        self.furniture = [(bool(_FURNITURE_LINE_RE.match(line.strip())) and n not in table_figures) or (
            n in edge_lines and page_of[n] > 1 and _running_candidate(line) and _mask(line) in repeated)
            for n, line in enumerate(self.lines)]
        chars, self.index = [], []
        char_line: list[int] = []
        for n, line in enumerate(self.lines):
            for ch in line:
                if ch.isalnum():
                    chars.append(ch.lower())
                    char_line.append(n)
        self.key = "".join(chars)
        offset = 0
        for line in self.lines:
            self.index.extend(offset + i for i, ch in enumerate(line) if ch.isalnum())
            offset += len(line) + 1
        # per furniture line: its letters/digits with the CONTEXT before and after it in the page text
        self.glued: list[tuple[str, str, str, int]] = []
        first = {}
        for k, n in enumerate(char_line):
            first.setdefault(n, k)
        for n, flag in enumerate(self.furniture):
            if flag and n in first:
                k = first[n]
                length = sum(1 for ch in self.lines[n] if ch.isalnum())
                self.glued.append((self.key[max(0, k - CONTEXT):k], self.key[k:k + length],
                                   self.key[k + length:k + length + CONTEXT], self.index[k]))
        # line number of every character offset
        self.line_of: list[int] = []
        for n, line in enumerate(self.lines):
            self.line_of.extend([n] * (len(line) + 1))

    def locate(self, quote: str) -> tuple[int, int] | None:
        """(start, end) offsets of ``quote`` in the page text, or None."""
        key = "".join(c.lower() for c in quote.replace(" […]", "") if c.isalnum())
        if not key:
            return None
        at = self.key.find(key)
        if at >= 0:
            return self.index[at], self.index[at + len(key) - 1] + 1
        head, tail = key[:PROBE], key[-PROBE:]
        a = self.key.find(head)
        b = self.key.find(tail, max(a, 0))
        if a < 0 or b < 0:
            return None
        return self.index[a], self.index[b + len(tail) - 1] + 1

    def _before(self, start: int) -> str | None:
        """What precedes offset ``start``: the text before it on its line, else the previous line that is not
        furniture ("" for the document's start, None for a blank line in between: a paragraph break)."""
        n = self.line_of[start]
        line_start = start - len(self.text[:start].rsplit("\n", 1)[-1])
        same = self.text[line_start:start].strip()
        if same:
            return same
        for m in range(n - 1, -1, -1):
            if self.furniture[m]:
                continue
            return self.lines[m].strip() or None
        return ""

    def _after(self, end: int) -> str:
        n = self.line_of[min(end, len(self.line_of) - 1)]
        rest = self.text[end:].split("\n", 1)[0].strip()
        if rest:
            return rest
        for m in range(n + 1, len(self.lines)):
            if not self.furniture[m] and self.lines[m].strip():
                return self.lines[m].strip()
        return ""


def _is_heading_line(line: str) -> bool:
    if len(line) > 60:
        return False
    if not any(c.islower() for c in line):
        return True
    words = line.split()
    return not line.endswith((".", ",", ";")) and all(_TITLE_WORD_RE.match(w) for w in words)


def _ends_sentence(text: str) -> bool:
    return text.rstrip(_CLOSERS)[-1:] in (".", "!", "?", ":", ";")


def starts_on_boundary(quote: str, doc: Contract, where: tuple[int, int] | None) -> bool:
    if (quote[:1].islower() and not _MARKER_RE.match(quote)) or _PAREN_FIGURE_RE.match(quote):
        return False
    if re.match(r"^\d{1,4}\s+\d{1,4}\s", quote):  # "3 18 (d) Audit.": printed page numbers first
        return False
    if where is None or re.match(_NUMBERED_START_RE, quote):
        return True
    before = doc._before(where[0])
    if before is not None:
        before = before.rstrip(_OPENERS)  # the quote's own opening quote mark or bracket
    return (not before or _ends_sentence(before) or _is_heading_line(before)
            or _LIST_MARKER_RE.match(before) is not None)


def ends_on_sentence(quote: str, doc: Contract, where: tuple[int, int] | None) -> bool:
    """Rule 2a: the quote ends where its sentence ends."""
    if quote.endswith(CUT):
        return False
    core = quote.rstrip(_CLOSERS)
    if core[-1:] not in (".", "!", "?"):
        return False
    last = core.split()[-1].lower().lstrip("(\"“‘'") if core.split() else ""
    if last in _ABBREVIATIONS:
        return False
    if where is None:
        return True
    tail = quote[len(quote.rstrip("".join({c for c in quote[-8:] if not c.isalnum()}))):]
    after = doc._after(where[1])
    after = after[len(tail):].lstrip() if after.startswith(tail) else after  # the quote's own closing marks
    return not (after[:1].islower() or _PAREN_FIGURE_RE.match(after))


def ends_on_line(quote: str, doc: Contract, where: tuple[int, int] | None) -> bool:
    """Rule 2b: a block without a sentence end (a table row, a table of contents, a cover page, a signature or
    address block) quoted as whole lines: the quote ends where a line of the page text ends, the next line starts
    a new one, and the last line does not stop inside a phrase."""
    if quote.endswith(CUT) or where is None:
        return False
    core = quote.rstrip()
    if core[-1:] in ",;:" or core.split()[-1].lower().strip(_CLOSERS + _OPENERS) in _FUNCTION_WORDS:
        return False
    own = "".join(quote[len(quote.rstrip("".join(c for c in quote[-12:] if not c.isalnum()))):].split())
    rest = doc.text[where[1]:].split("\n", 1)[0].strip()
    if "".join(rest.split()) not in ("", own):
        return False  # the line goes on after the quote (its own closing marks, "…)", "… [*]", aside)
    after = doc._after(where[1])
    if rest and after.startswith(rest):  # the quote's own closing marks end the line
        after = doc._after(where[1] + doc.text[where[1]:].index(rest) + len(rest))
    return not after or not (after[:1].islower() or _PAREN_FIGURE_RE.match(after))


def ends_marked(quote: str, doc: Contract, where: tuple[int, int] | None) -> bool:
    """Rule 2c: a quote cut and saying so (" […]") after whole sentences or a whole list item: the text before the
    marker ends a sentence (rule 2a's ends) or a list item ("…;", "…; and", "…; or", a lead-in "…:"), and in the
    page text what follows is the next sentence, item or marker, not the rest of a sentence in lower case."""
    if not quote.endswith(CUT):
        return False
    core = quote[: -len(CUT)].rstrip()
    item = _ITEM_END_RE.search(core) is not None
    if not item and not ends_on_sentence(core, doc, where):
        return False
    if where is None or not item:
        return True
    rest = _CONJUNCTION_RE.sub("", doc._after(where[1]).lstrip(" " + _CLOSERS + ";:,"))
    return not rest or not rest[:1].islower() or _MARKER_RE.match(rest) is not None


def ends_on_boundary(quote: str, doc: Contract, where: tuple[int, int] | None) -> str | None:
    """Which of rules 2a-2c the quote's end meets ("sentence", "line", "marked"), or None."""
    for name, rule in (("sentence", ends_on_sentence), ("line", ends_on_line), ("marked", ends_marked)):
        if rule(quote, doc, where):
            return name
    return None


def has_furniture(quote: str, doc: Contract, where: tuple[int, int] | None = None) -> bool:
    flat = _ws(quote)
    if _STAMP_RE.search(flat) or _PAGE_OF_RE.search(flat):
        return True
    key = "".join(c.lower() for c in flat if c.isalnum())
    for before, line, after, at in doc.glued:
        if where is not None and not where[0] <= at < where[1]:
            continue  # that line is elsewhere in the page text: the quote holds the same words, not that line
        if line in key and ((before and after and f"{before}{line}{after}" in key)
                            or (len(after) >= 4 and key.startswith(line + after))
                            or (len(before) >= 4 and key.endswith(before + line))):
            return True
    return False


def child(docs_file: str, out_file: str) -> None:
    """Runs in the tree under test: the shown quotes of every contract."""
    from clausegate.review.categories import CATEGORIES  # local import: from the tree under test
    from clausegate.review.offline.extract import extract_offline  # local import: from the tree under test
    from clausegate.review.prefilter import prefilter  # local import: from the tree under test
    from clausegate.review.schemas import Page, ParsedDocument  # local import: from the tree under test

    cats = list(CATEGORIES)
    out = []
    for d in json.loads(Path(docs_file).read_text(encoding="utf-8")):
        doc = ParsedDocument(contract_id=hashlib.sha256(d["filename"].encode()).hexdigest(), filename=d["filename"],
                             pages=[Page(number=k, text=t, needs_ocr=not t.strip())
                                    for k, t in enumerate(d["pages"] or [""], start=1)])
        out.append([{"category": c.category, "text": c.text, "pages": c.pages, "possible": c.possible,
                     "section": c.section} for c in extract_offline(prefilter(doc, cats), cats)])
    Path(out_file).write_text(json.dumps(out), encoding="utf-8")


def score(docs: list[dict], quotes: list[list[dict]], show: int) -> dict:
    n = start_ok = end_ok = both = cut = furn = strict = 0
    ends: Counter[str] = Counter()
    bad: dict[str, list[str]] = {"start": [], "end": [], "furniture": []}
    for d, shown in zip(docs, quotes, strict=True):
        doc = Contract(d["pages"])
        for q in shown:
            text = q["text"]
            where = doc.locate(text)
            s, e = starts_on_boundary(text, doc, where), ends_on_boundary(text, doc, where)
            f = has_furniture(text, doc, where)
            n += 1
            start_ok += s
            end_ok += e is not None
            both += bool(s and e)
            strict += bool(s and e == "sentence")
            ends[e or "none"] += 1
            cut += text.endswith(" […]")
            furn += f
            for name, ok in (("start", s), ("end", e is not None), ("furniture", not f)):
                if not ok and len(bad[name]) < show:
                    bad[name].append(f"{d['filename'][:40]} [{q['category']}] {text[:160]} … {text[-120:]}")

    def share(k: int) -> float:
        return k / n if n else 0.0

    return {"quotes": n, "on_boundary": share(both), "on_sentence_boundary": share(strict), "start_ok": share(start_ok),
            "end_ok": share(end_ok), "ends": dict(ends), "cut_marked": cut, "with_furniture": share(furn),
            "with_furniture_n": furn, "examples": bad}


def run_tree(tree: Path, docs_file: str) -> list[list[dict]]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, __file__, "--child", docs_file, out], env=env, cwd=str(tree), check=True)
    quotes = json.loads(Path(out).read_text(encoding="utf-8"))
    os.unlink(out)
    return quotes


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        sys.path.insert(0, os.getcwd())
        child(sys.argv[2], sys.argv[3])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N holdout contracts")
    ap.add_argument("--extractor", default="cache", choices=["cache", "pypdf", "pdfium"],
                    help="page text: pypdf's cached by tools.cuad (default), or the parse worker's")
    ap.add_argument("--tree", action="append", type=Path, help="repository checkout to measure (repeatable)")
    ap.add_argument("--show", type=int, default=0, help="print the first N quotes failing each rule")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "bench"))
    from extractor import load_docs  # local import: bench/extractor.py, the holdout as it loads it

    from tools import cuad  # local import: the parent only

    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    docs = [{"filename": e["filename"], "pages": pages} for e, pages, _ in load_docs(args.limit, args.extractor)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(docs, fh)
        docs_file = fh.name
    results = {}
    try:
        print(f"quote quality - CUAD holdout ({cuad.SPLIT_NAME}): {len(docs)} contracts, page text {args.extractor}")
        print(f"{'tree':<34} {'quotes':>6} {'on boundary':>11} {'sentences':>9} {'start':>6} {'end':>6} {'cut':>4} "
              f"{'furniture':>9}  ends by rule")
        for tree in [t.resolve() for t in (args.tree or [REPO])]:
            res = score(docs, run_tree(tree, docs_file), args.show)
            results[str(tree)] = res
            print(f"{str(tree)[-34:]:<34} {res['quotes']:>6} {res['on_boundary']:>11.3f} "
                  f"{res['on_sentence_boundary']:>9.3f} {res['start_ok']:>6.3f} {res['end_ok']:>6.3f} "
                  f"{res['cut_marked']:>4} {res['with_furniture']:>9.3f}  {res['ends']}")
            for name, examples in res["examples"].items():
                for ex in examples:
                    print(f"    not {name}: {ex}")
    finally:
        os.unlink(docs_file)
    if args.json:
        args.json.write_text(json.dumps({"extractor": args.extractor, "contracts": len(docs), "trees": results},
                                        indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
