"""Issue 23 item 5: the same text is reviewed once.  A re-saved copy of a PDF (pypdf writer round trip: new
bytes, same text) reuses the pre-filter, the extraction and the model answers of the first review (0 new
requests to the fake model), and its report names the review it reused, while naming its own file and
asking for its own decision at the gate."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import json
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
    """The same for Word: a .docx written again (new bytes, the same paragraphs) reuses the first review.  A PDF
    and a .docx of one contract do not share: a PDF's pages and a .docx's parts differ, and findings cite them."""
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
