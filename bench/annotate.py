"""Annotated copies: are they right (read back), and what do they cost next to the review?

    python bench/annotate.py [--count N] [--cpu] [--pages 50] [--repeat 5]
    python bench/annotate.py --images docs/images

``--count N`` (default 20): the three samples (as PDF, and as .docx from CUAD's text via ``tools/cuad_to_docx.py``)
and the first N other HOLDOUT contracts of CUAD (``tools.cuad.is_holdout``, sorted by file name; as PDF and as .docx)
are reviewed offline (the product's steps in plain Python: the sandboxed parse, pre-filter, extraction, assembly, on
the ``payment-liability`` playbook, whose positions have fallback wording), annotated through the product's capped
child, and read back (:mod:`clausegate.review.annotate.readback`): per file the findings, those with exactly one
annotation on their quote, annotations on other text, findings not placed, findings placed in parts (a PDF's pages,
pieces of a quote that is not one passage: one note, the rest marked continued), and a .docx's fallback insertions.

``--cpu``: on the holdout PDF nearest ``--pages`` pages, and its .docx, the CPU seconds of the review and of
annotating it, medians of ``--repeat`` runs, and their ratio (target: annotating at most 20 % of the review), in the
two ways the product runs its sandboxed children: **pooled** (the default, ``CLAUSEGATE_PARSE_POOL_SIZE`` 2: the parse
and the annotation both in the parse pool's warm worker) and **one-shot** (pool size 0: a new child for each).  CPU
counted: this process, its ended children (``RUSAGE_CHILDREN``) and the live pool workers (``/proc/<pid>/schedstat``,
whose CPU ``getrusage`` cannot see until they end); a run during which a worker was replaced is flagged.  The review
here is the plain-Python one (no Prefect, no model): the smallest honest denominator, so the ratio is an upper bound
for a flow run.
``--images DIR``: ``annotate-pdf.png`` (a page of the annotated LeadersOnline sample PDF as PDFium draws it) and
``annotate-docx-libreoffice.png`` (a page of its annotated .docx converted to PDF by LibreOffice headless: comments
exported as PDF notes, the fallback wording shown as a tracked insertion), each with the notes on that page, read
back from the PDF, printed beside it.
CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SAMPLES = {  # samples/README.md: the CUAD PDF each sample is
    "leadersonline-co-branding-2000.pdf": ("LeadersonlineInc_20000427_S-1A_EX-10.8_4991089_EX-10.8_"
                                           "Co-Branding Agreement"),
    "beyondcom-co-hosting-2000.pdf": "BEYONDCOMCORP_08_03_2000-EX-10.2-CO-HOSTING AGREEMENT",
    "healthcare-integrated-reseller-2019.pdf": ("HealthcareIntegratedTechnologiesInc_20190812_8-K_EX-10.1_11776966_"
                                                "EX-10.1_Reseller Agreement"),
}
PLAYBOOK = "payment-liability"
DOCX_DIR = REPO / ".bench" / "docx"
EXPORT = 'pdf:writer_pdf_Export:{"ExportNotes":{"type":"boolean","value":"true"}}'  # comments as PDF notes


def review_file(path: Path, playbook: str = PLAYBOOK, pool_size: int = 0):
    """(playbook, bytes, parsed document, review) of ``path``, reviewed offline by the product's steps (the parse in
    the parse pool when ``pool_size`` is above 0, as a flow run does)."""
    from clausegate.review import assemble
    from clausegate.review.document.formats import sniff
    from clausegate.review.document.sandbox import fingerprint, parse_bytes, read_verified
    from clausegate.review.playbook import load_playbook

    book = load_playbook(playbook)
    source = fingerprint(path)
    data = read_verified(source)
    fmt = sniff(source.filename, data)
    document = parse_bytes(source, data, fmt, pool_size=pool_size)
    filtered = assemble.prefilter_step(document, book.categories)
    extraction = assemble.extract_step(filtered, book.categories)
    review = assemble.assemble_review(document, filtered, extraction, playbook=book.name,
                                      gated=book.gated_categories, positions=book.positions,
                                      protected=[*book.gated_categories, *book.high_risk, *book.position_gated])
    return book, data, document, review


def annotate_and_count(path: Path) -> dict:
    """Review ``path``, annotate it through the product's child, read it back: the figures of one file."""
    from clausegate.review.annotate import annotate, readback
    from clausegate.review.annotate.notes import fallback_wording, notes_for

    book, data, document, review = review_file(path)
    found = notes_for(review, fallback_wording(book.positions))
    copy = annotate(review, data, document, book.positions, memory_mb=1024, timeout_seconds=120)
    if copy is None:
        return {"file": path.name, "format": review.format, "findings": len(found), "exactly_one": 0, "wrong": 0,
                "not_placed": len(found), "in_parts": 0, "fallbacks": 0, "fallbacks_expected": 0}
    count = readback.docx(copy.data, found) if copy.suffix == ".docx" else readback.pdf(copy.data, found)
    return {"file": path.name, "format": review.format, "findings": len(found),
            "exactly_one": len(count.exactly_one(found)), "wrong": len(count.wrong),
            "not_placed": len(copy.skipped), "in_parts": sum(1 for n in count.parts.values() if n > 1),
            "fallbacks": sum(count.insertions.values()),
            "fallbacks_expected": sum(1 for n in found if n.fallback) if copy.suffix == ".docx" else 0,
            "wrong_detail": count.wrong[:2], "skipped_detail": copy.skipped[:2]}


def corpus(limit: int) -> list[Path]:
    """The samples as PDF and .docx, and ``limit`` other holdout contracts as PDF and .docx."""
    from tools import cuad
    from tools.cuad_to_docx import docx_path

    manifest = cuad.load_manifest()
    by_pdf = {Path(e["pdf"]).stem: e for e in manifest}
    files = []
    for sample, name in SAMPLES.items():
        files += [REPO / "samples" / sample, docx_path(by_pdf[name], DOCX_DIR)]
    taken = set(SAMPLES.values())
    others = sorted((e for e in manifest if cuad.is_holdout(e["filename"]) and Path(e["pdf"]).stem not in taken),
                    key=lambda e: e["filename"])[:limit]
    for entry in others:
        files += [cuad.cuad_dir() / entry["pdf"], docx_path(entry, DOCX_DIR)]
    return files


def cpu_now(pool_size: int = 0) -> float:
    """CPU seconds of this process, its ended children and (``pool_size`` above 0) the parse pool's live workers."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + sum(worker_cpu(pool_size).values())


def worker_cpu(pool_size: int) -> dict[int, float]:
    """Per live parse-pool worker, its CPU seconds so far (``/proc/<pid>/schedstat``: nanoseconds on a CPU)."""
    if not pool_size:
        return {}
    from clausegate.review.document import pool
    from clausegate.review.document.codes import POOL_MAX_PARSES

    out = {}
    for pid in pool.get(pool_size, POOL_MAX_PARSES).pids():
        try:
            out[pid] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return out


def nearest(pages: int) -> Path:
    import pypdfium2 as pdfium

    from tools import cuad

    best = None
    for entry in sorted(cuad.load_manifest(), key=lambda e: e["filename"]):
        if not cuad.is_holdout(entry["filename"]):
            continue
        path = cuad.cuad_dir() / entry["pdf"]
        with pdfium.PdfDocument(str(path)) as pdf:
            n = len(pdf)
        if best is None or abs(n - pages) < abs(best[0] - pages):
            best = (n, path, entry)
    return best


def cpu(pages: int, repeat: int) -> None:
    import statistics

    from clausegate.config import settings
    from clausegate.review.annotate import annotate
    from tools.cuad_to_docx import docx_path

    n, pdf_path, entry = nearest(pages)
    pooled = settings().parse_pool_size or 2
    for mode, size in ((f"pooled ({pooled})", pooled), ("one-shot", 0)):
        review_file(pdf_path, pool_size=size)  # warm up: model load, imports (and the pool's first worker)
        for path in (pdf_path, docx_path(entry, DOCX_DIR)):
            reviews, annotations, replaced = [], [], 0
            for _ in range(repeat):
                before = set(worker_cpu(size))
                t0 = cpu_now(size)
                book, data, document, review = review_file(path, pool_size=size)
                t1 = cpu_now(size)
                copy = annotate(review, data, document, book.positions, memory_mb=1024, timeout_seconds=120,
                                pool_size=size)
                t2 = cpu_now(size)
                replaced += set(worker_cpu(size)) != before
                reviews.append(t1 - t0)
                annotations.append(t2 - t1)
            r, a = statistics.median(reviews), statistics.median(annotations)
            ratio = a / r
            print(f"{mode:10} {review.format:5} {path.name[:36]:36} pages {n:3}  findings {len(review.clauses):2}  "
                  f"median of {repeat}: review CPU {r:5.2f} s  annotate CPU {a:5.3f} s  ratio {ratio:6.1%}  "
                  f"(first run {annotations[0]:5.3f} s; {'≤ 20 %: ok' if ratio <= 0.20 else 'ABOVE 20 %'}; "
                  f"{len(copy.commented) if copy else 0} marked"
                  + (f"; a pool worker was replaced in {replaced} runs: rerun" if replaced else "") + ")")


def libreoffice_pdf(docx: Path, out: Path) -> Path:
    """``docx`` converted to PDF by LibreOffice headless (comments exported as PDF notes, tracked changes shown)."""
    import shutil
    import subprocess

    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        sys.exit("LibreOffice is not installed (Debian: apt-get install -y libreoffice-writer-nogui)")
    profile = out / "lo-profile"
    subprocess.run([soffice, f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", EXPORT,
                    "--outdir", str(out), str(docx)], check=True, capture_output=True, timeout=300)
    return out / (docx.stem + ".pdf")


def render_with_notes(pdf_path: Path, page_index: int, png: Path, title: str) -> None:
    """The page as PDFium draws it (its annotations included), and beside it the text of each note on it (the
    PDF's own /Contents of its ClauseGate highlights or LibreOffice's exported comments), numbered as they come."""
    import textwrap

    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw, ImageFont
    from pypdf import PdfReader

    page = PdfReader(str(pdf_path)).pages[page_index]
    notes = [str(a.get_object().get("/Contents")) for a in page.get("/Annots") or []
             if a.get_object().get("/Subtype") in ("/Highlight", "/Text") and "ClauseGate #" in
             str(a.get_object().get("/Contents"))]
    with pdfium.PdfDocument(str(pdf_path)) as pdf:
        image = pdf[page_index].render(scale=1.4, may_draw_forms=True).to_pil().convert("RGB")
    font = ImageFont.load_default()
    panel_w = 520
    out = Image.new("RGB", (image.width + panel_w, image.height), "white")
    out.paste(image, (0, 0))
    draw = ImageDraw.Draw(out)
    y = 12
    draw.text((image.width + 12, y), title, fill="black", font=font)
    y += 24
    for note in notes:
        for line in note.splitlines():
            for piece in textwrap.wrap(line, 84) or [""]:
                draw.text((image.width + 12, y), piece, fill="#333", font=font)
                y += 13
        y += 10
    out.save(png)
    print(f"{png}: page {page_index + 1} of {pdf_path.name}, {len(notes)} notes")


def images(folder: Path) -> None:
    """docs/images/annotate-*.png: an annotated sample PDF page, and the annotated .docx of the same sample as
    LibreOffice headless converts it to PDF (comments as notes, the fallback wording as a tracked insertion)."""
    import tempfile

    from pypdf import PdfReader

    from clausegate.review.annotate import annotate
    from tools import cuad
    from tools.cuad_to_docx import docx_path

    folder.mkdir(parents=True, exist_ok=True)
    sample = REPO / "samples" / "leadersonline-co-branding-2000.pdf"
    by_pdf = {Path(e["pdf"]).stem: e for e in cuad.load_manifest()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for path in (sample, docx_path(by_pdf[SAMPLES[sample.name]], DOCX_DIR)):
            book, data, document, review = review_file(path)
            copy = annotate(review, data, document, book.positions, memory_mb=1024, timeout_seconds=120)
            annotated = work / f"annotated-{path.stem}{copy.suffix}"
            annotated.write_bytes(copy.data)
            pdf = annotated if copy.suffix == ".pdf" else libreoffice_pdf(annotated, work)
            pages = PdfReader(str(pdf)).pages
            counts = [sum("ClauseGate" in str(a.get_object().get("/Contents")) for a in p.get("/Annots") or [])
                      for p in pages]
            fallback = {i for i, p in enumerate(pages) if any(f in p.extract_text() for f in
                                                               [n[:30] for n in _fallbacks(book)])}
            best = max(range(len(pages)), key=lambda i: (i in fallback and counts[i] > 0, counts[i]))
            kind = "pdf" if copy.suffix == ".pdf" else "docx-libreoffice"
            render_with_notes(pdf, best, folder / f"annotate-{kind}.png",
                              f"{path.name}: notes on this page (read from the PDF)")


def _fallbacks(book) -> list[str]:
    from clausegate.review.annotate.notes import fallback_wording

    return list(fallback_wording(book.positions).values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=None, help="held-out contracts besides the samples (default 20)")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5, help="--cpu: runs per file (medians)")
    ap.add_argument("--images", type=Path, default=None, help="render docs/images/annotate-*.png into this folder")
    args = ap.parse_args()
    from tools import cuad

    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    if args.images is not None:
        images(args.images)
        return
    if args.count is not None or not args.cpu:
        total = {"findings": 0, "exactly_one": 0, "wrong": 0, "not_placed": 0, "in_parts": 0, "fallbacks": 0,
                 "fallbacks_expected": 0}
        files = corpus(20 if args.count is None else args.count)
        print(f"{'file':40} {'fmt':5} {'findings':>8} {'exactly 1':>9} {'wrong':>5} {'not placed':>10} "
              f"{'in parts':>8} {'fallbacks':>9}")
        for path in files:
            row = annotate_and_count(path)
            for key in total:
                total[key] += row[key]
            print(f"{path.name[:40]:40} {row['format']:5} {row['findings']:8} {row['exactly_one']:9} "
                  f"{row['wrong']:5} {row['not_placed']:10} {row['in_parts']:8} "
                  f"{row['fallbacks']:4}/{row['fallbacks_expected']:<4}"
                  + (f"  {row.get('wrong_detail') or ''} {row.get('skipped_detail') or ''}"
                     if row["wrong"] or row["not_placed"] else ""))
        print(f"TOTAL {len(files)} files: {total['findings']} findings, {total['exactly_one']} with exactly one "
              f"annotation on their quote, {total['wrong']} on other text, {total['not_placed']} not placed "
              f"({total['in_parts']} placed in parts: pages or pieces); "
              f".docx fallback insertions {total['fallbacks']}/{total['fallbacks_expected']}")
    if args.cpu:
        cpu(args.pages, args.repeat)


if __name__ == "__main__":
    main()
