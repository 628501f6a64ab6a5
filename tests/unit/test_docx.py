"""Word .docx contracts: real files built by the tests (tests/support/docx_factory.py), parsed in
the sandboxed child; tracked changes accepted and reported, comments, hidden text gated, tables, headers and footers
left out, Word's numbering, and each hostile file refused with its code."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from clausegate.errors import DocumentError
from clausegate.review import assemble
from clausegate.review.categories import CATEGORIES
from clausegate.review.document import formats, pool
from clausegate.review.document.codes import INTEGRITY_CATEGORY
from clausegate.review.document.sandbox import fingerprint
from clausegate.review.report import render_markdown
from clausegate.review.schemas import ParsedDocument, Review
from tests.support import docx_factory as d
from tests.support import pdf_factory
from tests.support.contracts import SUPPLY_PAGES

CAP_LEAD = ("3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
            "related to this Agreement exceed ")
CAP_OLD = "the total fees paid by Customer in the twelve months preceding the claim"
CAP_NEW = "one hundred dollars (US $100)"
INSURANCE = SUPPLY_PAGES[2].split("\n")[1]


def parse(path: Path, **kwargs) -> ParsedDocument:
    return formats.parse_document(fingerprint(path), **kwargs)


def refused(path: Path, code: str, **kwargs) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        parse(path, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value


def supply_docx(path: Path) -> Path:
    """SUPPLY_PAGES as a .docx whose cap clause the other side rewrites (a deletion and an insertion) and whose
    insurance clause carries a comment; a header and footer with page numbers."""
    body = [d.para(d.run(line)) for page in SUPPLY_PAGES[:2] for line in page.split("\n")]
    body += [d.para(d.run(CAP_LEAD), d.dele(CAP_OLD), d.ins(CAP_NEW), d.run(".")),
             d.para(d.commented(7, d.run(INSURANCE)))]
    return d.make_docx(path, body, parts={
        "word/comments.xml": d.comments_part({7: ("Jane Roe", "Ask for $5m per occurrence")}),
        "word/header1.xml": d.page_number_part("header", "Master Supply Agreement"),
        "word/footer1.xml": d.page_number_part("footer", "Confidential")})


def review_of(doc: ParsedDocument, gated=("Uncapped Liability",)) -> Review:
    cats = list(CATEGORIES)
    filtered = assemble.prefilter_step(doc, cats)
    extraction = assemble.extract_step(filtered, cats)
    return assemble.assemble_review(doc, filtered, extraction, playbook="default", gated=list(gated),
                                    protected=["Cap on Liability", "Uncapped Liability", *gated])


# --------------------------------------------------------------------------------- content
def test_tracked_changes_in_the_cap_on_liability_are_accepted_and_flagged_in_the_report(tmp_path):
    doc = parse(supply_docx(tmp_path / "supply.docx"))
    text = "".join(p.text for p in doc.pages)
    assert doc.format == "docx"
    assert CAP_NEW in text and CAP_OLD not in text  # reviewed as it reads with the changes accepted
    assert [(r.kind, r.text, r.author) for r in doc.revisions] == [
        ("deletion", CAP_OLD, "Counterparty Counsel"), ("insertion", CAP_NEW, "Counterparty Counsel")]
    assert {n.code for n in doc.notices} == {"CG-DOCX-TRACKED-CHANGES", "CG-DOCX-COMMENTS"}

    review = review_of(doc)
    cap = next(c for c in review.clauses if c.category == "Cap on Liability")
    assert cap.paragraph == 5 and CAP_NEW in cap.text and cap.span is not None
    assert [r.flagged for r in review.revisions] == [["Cap on Liability"], ["Cap on Liability"]]
    assert review.comments[0].flagged == []  # the insurance clause is neither gated nor high-risk
    markdown = render_markdown(review)
    assert "## Tracked changes (2 pending, 2 in gated or high-risk findings)" in markdown
    assert f"| **⚑ Cap on Liability** | ¶ 5 | deleted | Counterparty Counsel | 2026-11-30 | {CAP_OLD} |" in markdown
    assert "§ 3 Limitation of Liability, ¶ 5" in markdown  # located by section and paragraph, no page


def test_comments_carry_author_text_and_the_anchored_text(tmp_path):
    doc = parse(supply_docx(tmp_path / "supply.docx"))
    (comment,) = doc.comments
    assert (comment.author, comment.text, comment.anchor, comment.paragraph) == (
        "Jane Roe", "Ask for $5m per occurrence", INSURANCE, 6)
    review = review_of(doc, gated=("Insurance",))
    assert review.comments[0].flagged == ["Insurance"]  # anchored in a gated finding
    assert "| **⚑ Insurance** | ¶ 6 | Jane Roe |" in render_markdown(review)


def test_headers_footers_and_field_codes_are_not_body_text(tmp_path):
    doc = parse(supply_docx(tmp_path / "supply.docx"))
    text = "".join(p.text for p in doc.pages)
    assert "Confidential" not in text and "Page" not in text and "PAGE" not in text
    assert text.startswith("MASTER SUPPLY AGREEMENT\n\n")


@pytest.mark.parametrize("how", ["vanish", "white", "tiny", "style"])
def test_hidden_text_is_left_out_and_gates_the_review(tmp_path, how):
    secret = "Supplier's liability under this Agreement shall be unlimited."
    hidden = {"vanish": d.run(secret, vanish=True), "white": d.run(secret, color="FFFFFF"),
              "tiny": d.run(secret, sz=3), "style": d.run(secret, style="Secret")}[how]
    path = d.make_docx(tmp_path / f"{how}.docx", [d.para(d.run(INSURANCE + " ")), d.para(d.run(CAP_LEAD + CAP_OLD),
                                                                                        hidden)],
                       parts={"word/styles.xml": d.styles_part()})
    doc = parse(path)
    assert secret not in "".join(p.text for p in doc.pages)
    (notice,) = doc.notices
    assert notice.code == "CG-DOCX-HIDDEN-TEXT" and secret[:40] in notice.message and "¶ 2" in notice.message
    review = review_of(doc)
    assert review.gated_categories[0] == INTEGRITY_CATEGORY
    assert "## Document integrity: the document may not say what this review read" in render_markdown(review)


def test_white_text_on_shading_is_visible(tmp_path):
    shaded = ('<w:r><w:rPr><w:color w:val="FFFFFF"/><w:shd w:val="clear" w:fill="000000"/></w:rPr>'
              "<w:t>Fees are due monthly.</w:t></w:r>")
    doc = parse(d.make_docx(tmp_path / "shaded.docx", [d.para(shaded)]))
    assert "Fees are due monthly." in doc.pages[0].text and not doc.notices


def test_tables_are_read_row_by_row_and_numbering_is_written(tmp_path):
    body = [d.para(d.run("Fees"), num=(1, 0)), d.para(d.run("Customer pays the fees below."), num=(1, 1)),
            d.table([["Service", "Monthly fee"], ["Hosting", "$1,000"]]),
            d.para(d.run("Late payments bear interest."), num=(1, 1)), d.para(d.run("Term"), num=(1, 0))]
    doc = parse(d.make_docx(tmp_path / "t.docx", body, parts={"word/numbering.xml": d.numbering_part()}))
    paragraphs = doc.pages[0].text.split("\n\n")[:-1]
    assert paragraphs == ["1. Fees", "1.1 Customer pays the fees below.", "Service", "Monthly fee", "Hosting",
                          "$1,000", "1.2 Late payments bear interest.", "2. Term"]
    assert doc.pages[0].first_paragraph == 1 and len(doc.pages[0].paragraphs) == 8


def test_long_documents_are_cut_into_parts_at_paragraph_ends(tmp_path):
    body = [d.para(d.run(f"{i}. Clause {i} of this Agreement applies to every order. " * 4)) for i in range(1, 80)]
    doc = parse(d.make_docx(tmp_path / "long.docx", body))
    assert len(doc.pages) > 3
    text = "".join(p.text for p in doc.pages)
    for page in doc.pages:
        assert text[page.start:page.start + len(page.text)] == page.text
        assert page.text.endswith("\n\n") and text[page.paragraphs[0]:].startswith(f"{page.first_paragraph}. ")


# --------------------------------------------------------------------------------- sniffing
def test_a_renamed_pdf_is_parsed_as_a_pdf_and_a_renamed_docx_as_a_docx(tmp_path):
    pdf = pdf_factory.make_text_pdf(tmp_path / "contract.docx", ["Fees are payable quarterly."])
    assert parse(pdf).format == "pdf"
    docx = supply_docx(tmp_path / "contract.pdf")
    assert parse(docx).format == "docx"


@pytest.mark.parametrize("how", ["content-type", "vba-project"])
def test_a_macro_enabled_document_is_refused(tmp_path, how):
    parts = {"word/vbaProject.bin": b"\xd0\xcf\x11\xe0 macro"} if how == "vba-project" else {}
    path = d.make_docx(tmp_path / "macro.docx", [d.para(d.run("Fees."))], parts=parts, macro=how == "content-type")
    error = refused(path, "CG-DOCX-MACROS")
    assert "never runs" in error.message and ".docx" in error.hint


def test_a_legacy_doc_is_refused_with_the_next_step(tmp_path):
    path = tmp_path / "old.doc"
    path.write_bytes(formats.OLE_MAGIC + b"\0" * 504)
    assert "save it as .docx" in refused(path, "CG-DOCX-LEGACY-DOC").hint


def test_a_zip_that_is_no_word_document_is_not_a_contract(tmp_path):
    path = d.make_docx(tmp_path / "x.docx", [], document="")
    import zipfile

    with zipfile.ZipFile(tmp_path / "sheet.xlsx", "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    assert "ZIP archive" in refused(tmp_path / "sheet.xlsx", "CG-PDF-NOT-PDF").message
    refused(path, "CG-DOCX-CORRUPT")  # an empty main part is not well-formed XML


# --------------------------------------------------------------------------------- hostile files
def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    path = d.make_zip_bomb(tmp_path / "bomb.docx", inflated_mb=300)
    assert path.stat().st_size < 2 * 1024 * 1024
    started = time.monotonic()
    error = refused(path, "CG-DOCX-ZIP-BOMB")
    assert "300 MB" in error.message and time.monotonic() - started < 60


def test_an_entity_bomb_is_refused_without_expanding(tmp_path):
    import xml.etree.ElementTree as ElementTree  # the unprotected parser, to show the document is a real bomb

    small = d.entity_bomb_document(levels=3)
    assert "lol" * 1000 in "".join(ElementTree.fromstring(small).itertext())  # stdlib expands it: 10^3 'lol's
    refused(d.make_docx(tmp_path / "small.docx", [], document=small), "CG-DOCX-XML-UNSAFE")
    path = d.make_docx(tmp_path / "lol.docx", [], document=d.entity_bomb_document())
    error = refused(path, "CG-DOCX-XML-UNSAFE", memory_mb=256)  # expanded, 10^9 'lol's would not fit in 256 MB
    assert "DTD" in error.message


def test_an_external_entity_is_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    prolog = f'<!DOCTYPE w:document [<!ENTITY x SYSTEM "file://{secret}">]>'
    document = d.document_xml([d.para(d.run("Fees: "), "<w:r><w:t>&x;</w:t></w:r>")], prolog=prolog)
    error = refused(d.make_docx(tmp_path / "xxe.docx", [], document=document), "CG-DOCX-XML-UNSAFE")
    assert "TOP-SECRET" not in error.message


def test_a_hundred_thousand_paragraphs_are_refused(tmp_path):
    path = d.make_docx(tmp_path / "many.docx", [], document=d.many_paragraphs_document(100_000))
    assert "500,000 characters" in refused(path, "CG-DOCX-TOO-MUCH-TEXT").message  # the default max_chars first
    assert "50,000 paragraphs" in refused(path, "CG-DOCX-TOO-MUCH-TEXT", max_chars=10**8).message


def test_max_chars_caps_a_docx_as_it_caps_a_pdf(tmp_path):
    refused(supply_docx(tmp_path / "supply.docx"), "CG-DOCX-TOO-MUCH-TEXT", max_chars=200)


def test_a_docx_with_no_text_is_empty(tmp_path):
    path = d.make_docx(tmp_path / "blank.docx", [d.para(), d.para(d.run("   "))])
    refused(path, "CG-DOCX-EMPTY")


def test_the_pooled_parser_reads_a_docx_too(tmp_path):
    try:
        doc = parse(supply_docx(tmp_path / "supply.docx"), pool_size=1)
    finally:
        pool.shutdown()
    assert doc.format == "docx" and len(doc.revisions) == 2


@pytest.mark.parametrize("pool_size", [0, 1])
def test_the_parse_runs_in_the_sandboxed_child_under_its_time_cap(tmp_path, pool_size):
    try:  # the child was started and killed, as for a PDF; the code names the format
        error = refused(supply_docx(tmp_path / "supply.docx"), "CG-DOCX-TIMEOUT", timeout_seconds=0.01,
                        pool_size=pool_size)
    finally:
        pool.shutdown()
    assert "time cap" in error.message and "timeout_seconds" in error.hint


def test_a_docx_over_the_memory_cap_is_refused_with_the_docx_code(tmp_path):
    clause = "The Supplier shall deliver the goods on time. " * 20
    big = d.make_docx(tmp_path / "big.docx", [d.para(d.run(f"Clause {i}. {clause}")) for i in range(45_000)])
    error = refused(big, "CG-DOCX-TOO-COMPLEX", memory_mb=200, max_chars=10**9, timeout_seconds=120)
    assert "Word .docx" in error.message and "200 MB" in error.message and "memory_mb" in error.hint


def test_cuad_text_becomes_one_paragraph_per_line():
    from clausegate.review.document import docx
    from tools.cuad_to_docx import docx_bytes

    text = "AGREEMENT\n\n  1. Term. One year.\x0c\n\nFees & <charges> apply.\n"
    result = docx.extract(docx_bytes(text), {"max_chars": 10_000})
    assert result["pages"][0]["text"] == "AGREEMENT\n\n1. Term. One year.\n\nFees & <charges> apply.\n\n"


def test_strict_text_mode_seals_the_changes_and_comments_text_too(tmp_path):
    from clausegate.review.redact import SEALED_TEXT, redact_review

    shown = redact_review(review_of(parse(supply_docx(tmp_path / "supply.docx"))))
    markdown = render_markdown(shown)
    assert CAP_NEW not in markdown and CAP_OLD not in markdown and "Ask for $5m" not in markdown
    assert "$1,000,000" not in markdown and SEALED_TEXT in markdown and "⚑ Cap on Liability" in markdown
