"""The same text is reviewed once.  A re-saved copy of a PDF (pypdf writer round trip: new
bytes, same text) reuses the pre-filter, the extraction and the model answers of the first review (0 new
requests to the fake model), and its report names the review it reused, while naming its own file and
asking for its own decision at the gate.  The PDF and the .docx of one text share it too, each finding re-located
in the second file (its own pages, or ¶ and span)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import json
import re
import uuid
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from clausegate.demo.model_server import FakeModelServer
from clausegate.demo.responders import contract_responder
from tests.support.contracts import LIABILITY_PAGES
from tests.support.model_flow import KEY, playbook, review, save_block
from tests.support.pdf_factory import make_text_pdf

pytestmark = pytest.mark.usefixtures("prefect_server")

GATED = "[Uncapped Liability, Liquidated Damages, Cap on Liability]"
GATES = "[{category: Uncapped Liability}, {category: Liquidated Damages}]"


@pytest.fixture
def anthropic():
    server = FakeModelServer("anthropic", api_key=KEY, responder=contract_responder).start()
    yield server
    server.stop()


def _resaved(source: Path, target: Path) -> Path:
    """``source`` written again by pypdf's writer: other bytes, the same pages and text."""
    writer = PdfWriter()
    for page in PdfReader(source).pages:
        writer.add_page(page)
    writer.add_metadata({"/Producer": "a re-save"})
    out = io.BytesIO()
    writer.write(out)
    target.write_bytes(out.getvalue())
    return target


def _pages() -> list[str]:
    """A text of this test's own: other tests review the same pages, and their reviews would be reused."""
    return [*LIABILITY_PAGES, f"Schedule R. Reference {uuid.uuid4().hex}."]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _review_both(tmp_path, first: Path, second: Path, server: FakeModelServer):
    block = save_block("anthropic", server)
    book = playbook(tmp_path, block, generate=block, high_risk=GATED, gates=GATES)
    state, _ = review(tmp_path, first, book)
    assert state.is_completed(), state.message
    calls_first = server.calls
    assert calls_first > 0, "the first review must ask the model"
    again, _ = review(tmp_path, second, book)
    assert again.is_completed(), again.message
    return state.result(), again.result(), calls_first


def test_a_resaved_pdf_reuses_the_first_review_and_asks_the_model_nothing(tmp_path, anthropic):
    first = make_text_pdf(tmp_path / "msa.pdf", _pages())
    second = _resaved(first, tmp_path / "msa-resaved.pdf")
    assert _sha(first) != _sha(second)

    one, two, calls_first = _review_both(tmp_path, first, second, anthropic)
    assert anthropic.calls == calls_first, f"the re-saved copy made {anthropic.calls - calls_first} new model calls"
    assert two.cost.calls == 0 and two.cost.reused_calls == one.cost.calls > 0
    # the same findings, model answers included
    assert [(c.category, c.source, c.text) for c in two.clauses] == [(c.category, c.source, c.text)
                                                                       for c in one.clauses]
    assert any(c.source == "model" for c in two.clauses) and two.suggestions == one.suggestions
    # the report names THIS file and the review it reused
    assert two.contract_id == _sha(second) and two.filename == "msa-resaved.pdf"
    assert two.text_id == one.text_id and one.reused_from is None
    assert two.reused_from.contract_id == _sha(first) and two.reused_from.filename == "msa.pdf"
    report = json.loads(next((tmp_path / "reports").glob(f"*{_sha(second)[:12]}*.json")).read_text())
    assert report["contract_id"] == _sha(second)
    assert report["reused_from"]["filename"] == "msa.pdf" and report["reused_from"]["reviewed_at"]
    markdown = next((tmp_path / "reports").glob(f"*{_sha(second)[:12]}*.md")).read_text()
    assert "**Reused from:** msa.pdf" in markdown
    # reused computation, never decisions: the gate asks about this file on its own
    assert two.gated_categories and two.status == "pending_decision" and two.decisions == []


def _docx_reader_available() -> bool:
    return (importlib.util.find_spec("clausegate.review.document.formats") is not None
            and importlib.util.find_spec("tests.support.docx_factory") is not None)


@pytest.mark.skipif(not _docx_reader_available(), reason="DOCX parsing is not available on this branch "
                    "(clausegate.review.document.formats, tests/support/docx_factory.py; issue 23 item 1)")
def test_a_resaved_docx_asks_the_model_nothing(tmp_path, anthropic):
    """The same for Word: a .docx written again (new bytes, the same paragraphs) reuses the first review."""
    docx_factory = importlib.import_module("tests.support.docx_factory")

    body = [docx_factory.para(docx_factory.run(line)) for page in _pages() for line in page.split("\n")]
    first = docx_factory.make_docx(tmp_path / "draft.docx", body)
    second = docx_factory.make_docx(tmp_path / "draft-resaved.docx", body,
                                    parts={"docProps/custom.xml": "<Properties>saved again</Properties>"})
    first, second = Path(first), Path(second)
    assert _sha(first) != _sha(second)

    one, two, calls_first = _review_both(tmp_path, first, second, anthropic)
    assert anthropic.calls == calls_first, f"the re-saved .docx made {anthropic.calls - calls_first} new model calls"
    assert two.filename == "draft-resaved.docx" and two.contract_id == _sha(second)
    assert two.reused_from is not None and two.reused_from.filename == "draft.docx"
    assert two.decisions == []


def _pdf_and_docx(tmp_path) -> tuple[Path, Path, list[str]]:
    """A PDF and the .docx of the same text (one page a string; one paragraph a line), and the pages."""
    docx_factory = importlib.import_module("tests.support.docx_factory")
    pages = _pages()
    pdf = make_text_pdf(tmp_path / "msa.pdf", pages)
    body = [docx_factory.para(docx_factory.run(line)) for page in pages for line in page.split("\n")]
    return pdf, Path(docx_factory.make_docx(tmp_path / "msa.docx", body)), pages


def _words(text: str) -> str:
    return " ".join(text.removesuffix(" […]").split())


def _cites_own_places(review, pages: list[str]) -> None:
    """Every finding of ``review`` is where it says in its own file: a PDF's on its pages; a .docx's starts in
    its ¶ (one paragraph a line of ``pages``) and its span covers it."""
    lines = [line for page in pages for line in page.split("\n")]
    assert review.clauses
    for clause in review.clauses:
        quote = _words(clause.text)
        if review.format == "pdf":
            assert clause.paragraph is None and clause.span is None, clause
            assert quote in _words(" ".join(pages[n - 1] for n in clause.pages)), clause
        else:
            assert clause.paragraph is not None and clause.span is not None, clause
            assert quote[:40] in _words(" ".join(lines[clause.paragraph - 1:])), clause
            assert _words(lines[clause.paragraph - 1])[:20] in quote or quote[:20] in lines[clause.paragraph - 1]


@pytest.mark.skipif(not _docx_reader_available(), reason="DOCX parsing is not available on this branch")
@pytest.mark.parametrize("order", ["pdf-first", "docx-first"])
def test_the_docx_of_a_reviewed_pdf_asks_the_model_nothing_and_cites_its_own_places(tmp_path, anthropic, order):
    """The same words in another format (a PDF's pages, a .docx's parts): the second review reuses the first's
    pre-filter, extraction and model answers (0 new requests) and re-locates every finding in its own file."""
    pdf, docx, pages = _pdf_and_docx(tmp_path)
    first, second = (pdf, docx) if order == "pdf-first" else (docx, pdf)

    one, two, calls_first = _review_both(tmp_path, first, second, anthropic)
    assert anthropic.calls == calls_first, f"{second.name} made {anthropic.calls - calls_first} new model calls"
    assert two.cost.calls == 0 and two.cost.reused_calls == one.cost.calls > 0
    assert two.text_id != one.text_id  # another layout of the same words
    assert two.reused_from is not None and two.reused_from.filename == first.name
    assert two.reused_from.contract_id == _sha(first)
    assert two.filename == second.name and two.contract_id == _sha(second)
    assert two.format == ("docx" if second == docx else "pdf") and one.reused_from is None
    # the same findings, model answers included, each at this file's own place
    assert sorted((c.category, c.source, c.text) for c in two.clauses) == sorted(
        (c.category, c.source, c.text) for c in one.clauses)
    assert any(c.source == "model" for c in two.clauses)
    _cites_own_places(one, pages)
    _cites_own_places(two, pages)
    assert [s.category for s in two.suggestions] == [s.category for s in one.suggestions]
    markdown = next((tmp_path / "reports").glob(f"*{_sha(second)[:12]}*.md")).read_text()
    assert f"**Reused from:** {first.name}" in markdown
    # reused computation, never decisions
    assert two.gated_categories and two.status == "pending_decision" and two.decisions == []


def test_the_same_bytes_under_another_name_are_reported_under_this_name(tmp_path, monkeypatch):
    """The parse is keyed on the file's bytes: a copy under another name reuses it, and its review and report
    still name the copy (not the cached parse's first name, e.g. ``msa-<hash>-….json`` for ``copy.pdf``)."""
    import asyncio
    import shutil

    from flows.contract_review import contract_review

    monkeypatch.setenv("CLAUSEGATE_SLACK_BLOCK", "no-such-block")
    first = make_text_pdf(tmp_path / "msa.pdf", _pages())
    copy = Path(shutil.copy(first, tmp_path / "copy.pdf"))
    assert _sha(first) == _sha(copy)
    reviews = []
    for pdf in (first, copy):
        state = asyncio.run(contract_review(str(pdf), playbook="default", out_dir=str(tmp_path / pdf.stem),
                                            return_state=True))
        assert state.is_completed(), state.message
        reviews.append(state.result())
    assert [r.filename for r in reviews] == ["msa.pdf", "copy.pdf"]
    assert [p.name.split("-")[0] for p in (tmp_path / "copy").glob("*.json")] == ["copy"]


# ------------------------------------------------------------------ a real CUAD contract in three formats

FUEL = "USASYNTHETICFUELCORP_10_21_2010-EX-10.10-STRATEGIC ALLIANCE AGREEMENT"


@pytest.mark.skipif(not _docx_reader_available(), reason="DOCX parsing is not available on this branch")
def test_a_cuad_contracts_words_as_docx_and_as_pasted_text_ask_the_model_nothing(tmp_path, anthropic, cuad_dir):
    """A real 20-page CUAD contract reviewed as its PDF, then its words as a .docx (one paragraph a line, as
    tools/cuad_to_docx.py writes one) and as pasted text: both reuse the PDF's review, 0 new model calls.  The
    relocation failed on one passage ("(iii) As fuel supply manager…", where the PDF's line-end hyphen
    "one-/third" is re-joined "onethird" by the pre-filter), so each computed its own."""
    from clausegate.review.document.formats import parse_document
    from clausegate.review.schemas import ContractSource
    from tools.cuad_to_docx import docx_bytes

    entry = next(e for e in json.loads((cuad_dir / "manifest.json").read_text()) if e["txt"].endswith(FUEL + ".txt"))
    pdf = cuad_dir / entry["pdf"]
    parsed = parse_document(ContractSource(path=str(pdf), contract_id=_sha(pdf), size_bytes=pdf.stat().st_size,
                                           filename=pdf.name))
    words = "\n".join(page.text for page in parsed.pages)
    assert "As fuel supply manager" in " ".join(words.split()) and re.search(r"one-\s*\n\s*third", words)
    docx, text = tmp_path / "fuel.docx", tmp_path / "fuel.txt"
    docx.write_bytes(docx_bytes(words))
    text.write_text(words)

    book = tmp_path / "fuel-playbook.yaml"  # the categories whose passages hold "(iii) As fuel supply manager…"
    book.write_text(f"""
name: test-fuel
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability]
high_risk: [Revenue/Profit Sharing, Uncapped Liability]
steps:
  extract: {{extractor: "{save_block('anthropic', anthropic)}", retries: 1, retry_delay_seconds: [0.1]}}
""")
    book = str(book)
    first, _ = review(tmp_path, pdf, book)
    assert first.is_completed(), first.message
    one, calls = first.result(), anthropic.calls
    assert calls > 0 and one.cost.calls == calls, "the PDF's review must ask the model"
    for again in (docx, text):
        state, _ = review(tmp_path, again, book)
        assert state.is_completed(), state.message
        two = state.result()
        assert anthropic.calls == calls, f"{again.name} made {anthropic.calls - calls} new model calls"
        assert two.reused_from is not None and two.reused_from.filename == pdf.name
        assert two.cost.calls == 0 and two.cost.reused_calls == one.cost.calls
        assert sorted((c.category, c.source) for c in two.clauses) == sorted((c.category, c.source)
                                                                            for c in one.clauses)
