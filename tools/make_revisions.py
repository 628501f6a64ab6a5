"""Build a corpus of contract revisions (v1/v2 pairs with their ground truth) from CUAD TRAIN contracts.

    python tools/make_revisions.py [--out .bench/revisions] [--contracts 12]

For each of the first ``--contracts`` TRAIN contracts (``tools.cuad.is_holdout`` False; 2,500–12,000 words, in a
fixed order) of CUAD's text release (one paragraph per line), one folder per edit kind,
``<out>/<contract key>/<kind>/``, holding ``v1.<ext>``, ``v2.<ext>`` and ``truth.json`` (what the script changed):

==============  ======================  ==========================================================================
kind            files                   edit
==============  ======================  ==========================================================================
reword          v1.docx  v2.docx        three words of one clause replaced (untracked)
one_word        v1.docx  v2.docx        one word of one clause replaced
number          v1.docx  v2.docx        one number or duration changed ("thirty (30) days" → "forty-five (45)")
delete          v1.docx  v2.docx        one clause removed
insert          v1.docx  v2.docx        one clause (from another TRAIN contract) inserted
move            v1.docx  v2.docx        one clause moved at least 5 paragraphs away, words unchanged
reflow          v1.pdf   v2.pdf         the same text in another layout: page width, font size, line-end
                                        hyphenation (``termi-``/``nation``), page numbers: 0 changes
format          v1.pdf   v2.docx        the same text as a PDF and as a .docx: 0 changes
tracked         v1.docx  v2.docx        the reword edit as Word tracked changes (``w:del`` + ``w:ins``)
untracked       v1.docx  v2.docx        the same edit, untracked (the text of ``tracked`` with its changes accepted)
pdf_docx_edit   v1.pdf   v2.docx        a number changed, and the format changed
==============  ======================  ==========================================================================

A clause here is a paragraph that ends a sentence (its last character is ".") after a paragraph of 8 words or more
that does too (no heading left without its clause), of 15–150 words: every edit then starts and ends at a sentence
boundary, the unit the comparison (:mod:`clausegate.review.versions`) aligns.  ``truth.json``: ``{"contract",
"kind", "v1", "v2", "changes": [{"type": changed|added|removed|moved, "v1_text", "v2_text", "tracked"}]}``;
``reflow`` and ``format`` have no changes.
Edits are seeded by the contract's name: the same command writes the same corpus.  Nothing here is product code.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import json
import random
import re
import sys
import zipfile
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools import cuad  # noqa: E402  (the checkout on sys.path first)
from tools.cuad_to_docx import _NOT_XML, _NS, _RELS, _TYPES  # noqa: E402

DEFAULT_OUT = REPO / ".bench" / "revisions"
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
KINDS = ("reword", "one_word", "number", "delete", "insert", "move", "reflow", "format", "tracked", "untracked",
         "pdf_docx_edit")
MIN_WORDS, MAX_WORDS = 2_500, 12_000
# word substitutions a counterparty makes (whole words, case kept for the first letter)
SWAPS = {"shall": "will", "any": "each", "all": "every", "reasonable": "appropriate", "written": "signed",
         "promptly": "immediately", "may": "can", "must": "shall", "including": "comprising", "such": "that",
         "party": "signatory", "agreement": "contract", "provide": "supply", "within": "inside",
         "days": "business days", "terminate": "cancel", "prior": "advance", "either": "each", "each": "either",
         "notice": "notification"}
NUMBER_WORDS = {"ten": (10, "fifteen", 15), "fifteen": (15, "twenty", 20), "thirty": (30, "forty-five", 45),
                "sixty": (60, "ninety", 90), "ninety": (90, "one hundred twenty", 120), "five": (5, "seven", 7),
                "seven": (7, "ten", 10), "twelve": (12, "eighteen", 18), "two": (2, "three", 3),
                "three": (3, "four", 4), "one": (1, "two", 2), "six": (6, "nine", 9),
                "forty-five": (45, "sixty", 60), "twenty": (20, "thirty", 30)}
_PAGE_LINE = re.compile(r"^\s*(?:page\s*)?[-–—]?\s*\d{1,4}\s*[-–—]?(?:\s*of\s*\d+)?\s*$", re.I)
_TOKEN = re.compile(r"\S+|\s+")


# -- the source text ----------------------------------------------------------------------------------------------
def paragraphs(text: str) -> list[str]:
    """CUAD's lines as paragraphs: whitespace collapsed; page-number lines, lines without a letter and the filing's
    own running headers (a line found 3 times or more, its figures aside) dropped: this corpus's v1 is a clean draft."""
    lines = [" ".join(_NOT_XML.sub(" ", line).split()) for line in text.splitlines()]
    seen = Counter(re.sub(r"\d+", "#", line) for line in lines)  # "12 13 CONFIDENTIAL MATERIALS OMITTED ..."
    return [line for line in lines if line and not _PAGE_LINE.match(line) and any(c.isalpha() for c in line)
            and seen[re.sub(r"\d+", "#", line)] < 3]


def is_clause(paras: list[str], i: int) -> bool:
    """A paragraph bounded by sentence ends on both sides, of MIN..MAX clause words (module doc)."""
    words = len(paras[i].split())
    return (0 < i < len(paras) - 1 and paras[i].endswith(".") and paras[i - 1].endswith(".")
            and len(paras[i - 1].split()) >= 8
            and 15 <= words <= 150 and paras[i][0].isupper())


def train_contracts(limit: int) -> list[dict]:
    entries = [e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])]
    entries.sort(key=lambda e: hashlib.sha256(e["filename"].encode()).hexdigest())
    out = []
    for entry in entries:
        text = (cuad.cuad_dir() / entry["txt"]).read_text(encoding="utf-8", errors="replace")
        paras = paragraphs(text)
        words = sum(len(p.split()) for p in paras)
        clauses = [i for i in range(len(paras)) if is_clause(paras, i)]
        if MIN_WORDS <= words <= MAX_WORDS and len(clauses) >= 12:
            out.append({"entry": entry, "paragraphs": paras, "clauses": clauses})
        if len(out) == limit:
            break
    return out


# -- edits --------------------------------------------------------------------------------------------------------
def swap_words(text: str, count: int, rng: random.Random) -> str | None:
    """``text`` with ``count`` of its SWAPS words replaced (None when it has fewer)."""
    tokens = _TOKEN.findall(text)
    spots = [i for i, t in enumerate(tokens) if t.lower().strip(",;:.()") in SWAPS and t.strip(",;:.()")]
    if len(spots) < count:
        return None
    for i in sorted(rng.sample(spots, count)):
        core = tokens[i].strip(",;:.()")
        new = SWAPS[core.lower()]
        new = new[0].upper() + new[1:] if core[0].isupper() else new
        tokens[i] = tokens[i].replace(core, new, 1)
    return "".join(tokens)


def change_number(text: str) -> str | None:
    """A duration or a number changed: "thirty (30)" → "forty-five (45)", else the first figure + 15."""
    pair = re.search(r"\b([A-Za-z-]+) \((\d+)\)", text)
    value, word, number = NUMBER_WORDS.get(pair.group(1).lower(), (None, "", 0)) if pair else (None, "", 0)
    if pair and value == int(pair.group(2)):
        word = word[0].upper() + word[1:] if pair.group(1)[0].isupper() else word
        return text[:pair.start()] + f"{word} ({number})" + text[pair.end():]
    figure = re.search(r"(?<![\d.,$])\b(\d{1,3})\b(?![.,]\d)", text)
    if figure:
        return text[:figure.start()] + str(int(figure.group(1)) + 15) + text[figure.end():]
    return None


def pick(rng: random.Random, clauses: list[int], used: set[int], test=None) -> int | None:
    for i in rng.sample(clauses, len(clauses)):
        if i not in used and (test is None or test(i)):
            used.add(i)
            return i
    return None


# -- writers ------------------------------------------------------------------------------------------------------
def _run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{escape(_NOT_XML.sub(" ", text))}</w:t></w:r>'


def tracked_paragraph(old: str, new: str, change_id: int) -> str:
    """``old`` → ``new`` as Word tracked changes, word by word."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    stamp = 'w:author="Counterparty" w:date="2026-12-01T10:00:00Z"'
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(_run("".join(a[i1:i2])))
            continue
        if i2 > i1:
            change_id += 1
            out.append(f'<w:del w:id="{change_id}" {stamp}><w:r><w:delText xml:space="preserve">'
                       f'{escape("".join(a[i1:i2]))}</w:delText></w:r></w:del>')
        if j2 > j1:
            change_id += 1
            out.append(f'<w:ins w:id="{change_id}" {stamp}>{_run("".join(b[j1:j2]))}</w:ins>')
    return f"<w:p>{''.join(out)}</w:p>"


def docx_bytes(paras: list[str], tracked: dict[int, str] | None = None) -> bytes:
    """A .docx with one paragraph per item; ``tracked`` {index: old text}: that paragraph as tracked changes."""
    tracked = tracked or {}
    body = "".join(tracked_paragraph(tracked[i], p, 100 * (i + 1)) if i in tracked else f"<w:p>{_run(p)}</w:p>"
                   for i, p in enumerate(paras))
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {_NS}><w:body>{body}'
                "<w:sectPr/></w:body></w:document>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _TYPES)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", document)
    return buffer.getvalue()


def pdf_bytes(paras: list[str], *, width_mm: float = 170, size: float = 10.5, hyphenate: bool = False) -> bytes:
    """A PDF of the paragraphs, wrapped at ``width_mm``; ``hyphenate``: long words split at line ends ("termi-")."""
    from fpdf import FPDF  # local import: dev tooling only (fpdf2), the corpus's PDFs

    pdf = FPDF(format="A4", unit="mm")
    pdf.set_auto_page_break(False)
    pdf.add_font("serif", "", str(FONT))
    pdf.set_font("serif", size=size)
    line_h = size * 0.45
    top, bottom, left = 20.0, 275.0, (210 - width_mm) / 2
    state = {"y": bottom + 1, "page": 0}

    def newline(text: str) -> None:
        if state["y"] + line_h > bottom:
            pdf.add_page()
            state["page"] += 1
            state["y"] = top
            pdf.text(105, 288, f"Page {state['page']}")  # page furniture: a printed page number
        pdf.text(left, state["y"], text)
        state["y"] += line_h

    for para in paras:
        line = ""
        for word in para.split():
            trial = f"{line} {word}".strip()
            if pdf.get_string_width(trial) <= width_mm:
                line = trial
                continue
            if hyphenate and len(word) >= 8 and word.isalpha() and word[4:].islower():
                for cut in range(len(word) - 3, 3, -1):
                    head = f"{line} {word[:cut]}-".strip()
                    if pdf.get_string_width(head) <= width_mm:
                        newline(head)
                        line, word = "", word[cut:]
                        break
            if line:
                newline(line)
            line = word
        if line:
            newline(line)
        state["y"] += line_h * 0.6
    return bytes(pdf.output())


# -- the corpus ---------------------------------------------------------------------------------------------------
def change(kind: str, old: str | None, new: str | None, tracked: bool | None = None) -> dict:
    return {"type": kind, "v1_text": old, "v2_text": new, "tracked": tracked}


def edits(item: dict, donors: list[str], rng: random.Random) -> dict[str, tuple[list[str], list[dict], dict]]:
    """kind → (v2 paragraphs, truth changes, tracked {index: old text}) for the docx-edited kinds."""
    paras, clauses, used = item["paragraphs"], item["clauses"], set()
    out: dict[str, tuple[list[str], list[dict], dict]] = {}

    def replaced(kind: str, make) -> tuple[int, str] | None:
        i = pick(rng, clauses, used, lambda k: make(paras[k]) is not None)
        return None if i is None else (i, make(paras[i]))

    for kind, make in (("reword", lambda t: swap_words(t, 3, random.Random(t))),
                       ("one_word", lambda t: swap_words(t, 1, random.Random(t))),
                       ("number", change_number)):
        got = replaced(kind, make)
        if got:
            i, new = got
            out[kind] = (paras[:i] + [new] + paras[i + 1:], [change("changed", paras[i], new)], {})
    i = pick(rng, clauses, used)
    out["delete"] = (paras[:i] + paras[i + 1:], [change("removed", paras[i], None)], {})
    i = pick(rng, clauses, used)
    donor = rng.choice(donors)
    out["insert"] = (paras[:i + 1] + [donor] + paras[i + 1:], [change("added", None, donor)], {})
    i = pick(rng, clauses, used)
    targets = [k for k in clauses if abs(k - i) >= 5 and k not in used]
    k = rng.choice(targets)
    rest = paras[:i] + paras[i + 1:]
    at = rest.index(paras[k]) + 1
    out["move"] = (rest[:at] + [paras[i]] + rest[at:], [change("moved", paras[i], paras[i])], {})
    if "reword" in out:
        v2, truth, _ = out["reword"]
        j = next(n for n, (a, b) in enumerate(zip(paras, v2, strict=True)) if a != b)
        out["tracked"] = (v2, [change("changed", paras[j], v2[j], True)], {j: paras[j]})
        out["untracked"] = (v2, [change("changed", paras[j], v2[j], False)], {})
    if "number" in out:
        out["pdf_docx_edit"] = out["number"]
    return out


def write_pair(folder: Path, contract: str, kind: str, v1: tuple[str, bytes], v2: tuple[str, bytes],
               changes: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for stem, (ext, data) in (("v1", v1), ("v2", v2)):
        (folder / f"{stem}.{ext}").write_bytes(data)
    truth = {"contract": contract, "kind": kind, "v1": f"v1.{v1[0]}", "v2": f"v2.{v2[0]}", "changes": changes}
    (folder / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")


def build(out: Path, contracts: int) -> list[Path]:
    items = train_contracts(contracts)
    donors = [p for item in train_contracts(contracts + 6)[contracts:] for i, p in enumerate(item["paragraphs"])
              if is_clause(item["paragraphs"], i)]
    folders = []
    for item in items:
        name = item["entry"]["filename"]
        key = hashlib.sha256(name.encode()).hexdigest()[:16]
        rng = random.Random(key)
        paras = item["paragraphs"]
        v1_docx, v1_pdf = ("docx", docx_bytes(paras)), ("pdf", pdf_bytes(paras))
        for kind, (v2, truth, tracked) in edits(item, donors, rng).items():
            if kind == "pdf_docx_edit":
                write_pair(out / key / kind, name, kind, v1_pdf, ("docx", docx_bytes(v2)), truth)
            else:
                write_pair(out / key / kind, name, kind, v1_docx, ("docx", docx_bytes(v2, tracked)), truth)
            folders.append(out / key / kind)
        write_pair(out / key / "reflow", name, "reflow", v1_pdf,
                   ("pdf", pdf_bytes(paras, width_mm=140, size=11.5, hyphenate=True)), [])
        write_pair(out / key / "format", name, "format", v1_pdf, v1_docx, [])
        folders += [out / key / "reflow", out / key / "format"]
    return folders


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--contracts", type=int, default=12)
    args = ap.parse_args()
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    folders = build(Path(args.out), args.contracts)
    print(f"{len(folders)} revision pairs of {args.contracts} CUAD TRAIN contracts in {args.out}")


if __name__ == "__main__":
    main()
