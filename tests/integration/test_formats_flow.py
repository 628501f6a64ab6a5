"""Word .docx and plain-text contracts through the contract-review flow on the session's Prefect server:
the parse step sniffs the bytes, the .docx is read in the sandboxed child, the report locates
findings by section and paragraph and lists the other side's pending change inside the Cap on Liability; hidden text
asks a person; a .docm stops the run with its code; a link to a .docx or a text is fetched, typed by its bytes and
reviewed."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from functools import partial

import pytest

from clausegate.demo.model_server import FakeModelServer
from clausegate.demo.responders import contract_responder
from clausegate.gates.model import findings_of
from flows.contract_review import contract_review
from tests.support import docx_factory as d
from tests.support import model_flow
from tests.support import odt_factory as odt
from tests.support.contracts import GATED_PAGES, LIABILITY_PAGES, SUPPLY_PAGES
from tests.support.flow_runs import review_task_states, steps_by_state

pytestmark = pytest.mark.usefixtures("prefect_server")

CAP_LEAD = ("3. Limitation of Liability. In no event shall either party's aggregate liability arising out of or "
            "related to this Agreement exceed ")
CAP_OLD = "the total fees paid by Customer in the twelve months preceding the claim"
CAP_NEW = "one hundred dollars (US $100)"
CLAUSE = ("Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the State "
          "of New York, without regard to its conflict of laws principles.")


def draft_body(extra: list[str] = ()) -> list[str]:
    body = [d.para(d.run(line)) for page in SUPPLY_PAGES[:2] for line in page.split("\n")]
    return body + [d.para(d.run(CAP_LEAD), d.dele(CAP_OLD), d.ins(CAP_NEW), d.run(".")), *extra]


def run(source, out):
    state = asyncio.run(contract_review(str(source), playbook="default", out_dir=str(out), return_state=True))
    return state, review_task_states(state)


def report_of(out) -> tuple[dict, str]:
    return json.loads(next(out.glob("*.json")).read_text()), next(out.glob("*.md")).read_text()


def test_a_word_draft_is_reviewed_with_its_pending_change_in_the_cap_flagged(tmp_path):
    path = d.make_docx(tmp_path / "draft.docx", draft_body(),
                       parts={"word/footer1.xml": d.page_number_part("footer", "Confidential")})
    out = tmp_path / "reports"
    state, states = run(path, out)
    assert state.is_completed(), state.message
    review = state.result()
    assert review.format == "docx" and states["parse-pdf"] == "Completed"
    cap = next(c for c in review.clauses if c.category == "Cap on Liability")
    assert cap.paragraph == 5 and CAP_NEW in cap.text and CAP_OLD not in cap.text
    report, markdown = report_of(out)
    assert [r["flagged"] for r in report["revisions"]] == [["Cap on Liability"], ["Cap on Liability"]]
    assert f"| **⚑ Cap on Liability** | ¶ 5 | inserted | Counterparty Counsel | 2026-11-30 | {CAP_NEW} |" in markdown
    assert "§ 3 Limitation of Liability, ¶ 5" in markdown and "Confidential" not in markdown
    (finding,) = findings_of(review, ["Cap on Liability"])  # what a gate on it would show the person
    assert finding.pages == [] and finding.text.startswith(
        f"§ 3 Limitation of Liability, ¶ 5 [PENDING in the draft: deleted “{CAP_OLD}” by Counterparty Counsel; "
        f"inserted “{CAP_NEW}” by Counterparty Counsel]: 3. Limitation of Liability.")

    again, states = run(path, out)  # the same bytes: the parse and every later step from the cache
    assert again.is_completed() and states["parse-pdf"] == "Cached"
    every_run = {"fingerprint", "annotate-contract"}  # by design: re-hash the file, write the annotated copy
    assert "Completed" not in {state for name, state in states.items() if name not in every_run}


def test_hidden_text_in_a_word_draft_asks_a_person(tmp_path):
    secret = "Supplier's liability under this Agreement shall be unlimited."
    path = d.make_docx(tmp_path / "hidden.docx", draft_body([d.para(d.run(secret, vanish=True))]))
    state, _ = run(path, tmp_path / "reports")
    review = state.result()
    assert review.gated_categories[0] == "Document integrity" and review.status != "complete"
    assert secret not in json.dumps([c.text for c in review.clauses])
    assert any(w.code == "CG-DOCX-HIDDEN-TEXT" for w in review.warnings)


def test_an_uncapped_liability_clause_in_a_text_box_is_reviewed_and_asks_a_person(tmp_path):
    """The same contract with its uncapped-liability clause moved into a text box still asks a person (never
    `complete`): the text box is read."""
    uncapped, payment = GATED_PAGES[2].split("\n")
    body = [d.para(d.run(line)) for line in GATED_PAGES[0].split("\n")] + [d.para(d.run(payment))]
    path = d.make_docx(tmp_path / "boxed.docx", body + [d.para(d.drawing_textbox(d.para(d.run(uncapped))))])
    state, _ = run(path, tmp_path / "reports")
    review = state.result()
    assert "Uncapped Liability" in review.gated_categories and review.status != "complete", review.status
    assert any(c.category == "Uncapped Liability" and "shall be unlimited" in c.text for c in review.clauses)


def test_a_macro_enabled_document_stops_the_run_with_its_code(tmp_path):
    path = d.make_docx(tmp_path / "draft.docx", draft_body(), parts={"word/vbaProject.bin": b"macro"})
    out = tmp_path / "reports"
    state, states = run(path, out)
    assert state.is_failed() and "CG-DOCX-MACROS" in state.message
    report, _ = report_of(out)
    assert report["failure"]["step"] == "parse" and report["failure"]["code"] == "CG-DOCX-MACROS"
    assert not steps_by_state(states, "Completed") & {"prefilter", "extract-clauses"}


@pytest.fixture()
def served(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    d.make_docx(root / "draft", draft_body())  # a link without an extension: the bytes say .docx
    (root / "clause.txt").write_text(CLAUSE + "\n", encoding="utf-8")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.parametrize(("link", "stored", "fmt"), [("draft", "draft.docx", "docx"), ("clause.txt", "clause.txt",
                                                                                       "text")])
def test_a_link_to_a_docx_or_a_text_is_typed_by_its_bytes(tmp_path, served, monkeypatch, link, stored, fmt):
    monkeypatch.setenv("CLAUSEGATE_INBOX_DATA_DIR", str(tmp_path / "inbox"))
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_LIST", served)
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_PRIVATE_HOSTS", "127.0.0.1")
    state, _ = run(f"http://{served}/{link}", tmp_path / "reports")
    assert state.is_completed(), state.message
    review = state.result()
    assert review.format == fmt and review.filename == stored
    assert any((tmp_path / "inbox" / "uploads").rglob(stored))
    if fmt == "text":
        law = next(c for c in review.clauses if c.category == "Governing Law")
        assert law.span[0] == 0 and law.pages == [1]


def test_the_model_cascade_reads_a_word_draft_and_its_quotes_are_located_by_paragraph(tmp_path):
    server = FakeModelServer("anthropic", api_key=model_flow.KEY, responder=contract_responder).start()
    try:
        body = [d.para(d.run(line)) for page in LIABILITY_PAGES for line in page.split("\n")]
        path = d.make_docx(tmp_path / "msa.docx", body)
        book = model_flow.playbook(tmp_path, model_flow.save_block("anthropic", server))
        state, _ = model_flow.review(tmp_path, path, book)
        assert state.is_completed(), state.message
        review = state.result()
        model_clauses = [c for c in review.clauses if c.source == "model"]
        assert model_clauses and server.calls >= 1
        assert all(c.paragraph is not None and c.span is not None for c in model_clauses)
    finally:
        server.stop()


def test_an_opendocument_draft_is_reviewed_located_by_paragraph_and_its_hidden_text_asks_a_person(tmp_path):
    """A format is its parser plus one row of the table; the flow, the report and the gate take it
    from there (an .odt with an uncapped-liability clause, and a hidden sentence)."""
    uncapped, payment = GATED_PAGES[2].split("\n")
    body = "".join(f"<text:p>{line}</text:p>" for line in [*GATED_PAGES[0].split("\n"), payment, uncapped])
    hidden = '<text:p><text:span text:style-name="Hide">Supplier has no liability of any kind.</text:span></text:p>'
    path = odt.make_odt(tmp_path / "draft.odt", body + hidden)
    out = tmp_path / "reports"
    state, states = run(path, out)
    review = state.result()
    assert review.format == "odt" and states["parse-pdf"] == "Completed"
    assert review.gated_categories[0] == "Document integrity" and "Uncapped Liability" in review.gated_categories
    assert any(w.code == "CG-ODT-HIDDEN-TEXT" for w in review.warnings)
    ul = next(c for c in review.clauses if c.category == "Uncapped Liability")
    assert ul.paragraph == 4 and "no liability of any kind" not in json.dumps([c.text for c in review.clauses])
    _, markdown = report_of(out)
    assert "OpenDocument .odt" in markdown and "¶ 4" in markdown
