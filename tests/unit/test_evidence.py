"""Clause evidence: the sentences that carry a clause, with section and page (clausegate.review.evidence).

Synthetic passages, plus real CUAD text (skipped when ../shared/data/cuad is absent): the
LeadersOnline co-branding agreement, whose Cap on Liability passage used to be shown as
"POSSIBILITY OF SUCH DAMAGES. 11.4. Indemnification by LeadersOnline." with confidence 1.00.
"""

from __future__ import annotations

import pytest

from clausegate.gates import run_gate
from clausegate.gates.model import findings_of
from clausegate.review.assemble import assemble_review, extract_step
from clausegate.review.evidence import evidence_for, sentences
from clausegate.review.offline.extract import extract_offline
from clausegate.review.offline.model import load_model
from clausegate.review.passages import split_passages
from clausegate.review.playbook import load_playbook
from clausegate.review.prefilter import prefilter
from clausegate.review.report import render_markdown
from clausegate.review.schemas import Passage
from clausegate.review.sections import SectionTracker, from_label, heading_of
from tests.support.contracts import make_doc
from tools import cuad

needs_cuad = pytest.mark.skipif(not cuad.cuad_available(),
                                reason="CUAD data (../shared/data/cuad or CLAUSEGATE_CUAD_DIR) not present")
LEADERS = "LeadersonlineInc_20000427_S-1A_EX-10.8_4991089_EX-10.8_Co-Branding Agreement.pdf"


def _pages(filename: str) -> list[str]:
    entry = next(e for e in cuad.load_manifest() if e["filename"] == filename)
    return cuad.load_pages(entry)


def test_headings_and_sections():
    h = heading_of("11.3. Limitation of Liability. EXCEPT IN CONNECTION WITH")
    assert (h.number, h.title, h.label) == ("11.3", "Limitation of Liability", "11.3 Limitation of Liability")
    assert heading_of("12 OF LIABILITY (INCLUDING NEGLIGENCE)") is None  # a printed page number, not a section
    assert heading_of("9.1 This Agreement is binding on both parties.").title == ""
    assert heading_of("ARTICLE V INDEMNIFICATION Each party").label == "ARTICLE V INDEMNIFICATION"
    tracker = SectionTracker()
    assert tracker.feed("13. Limitation of Liability. In no event").label == "13 Limitation of Liability"
    assert tracker.feed("13.1 The cap does not apply to fraud.").label == "13.1 Limitation of Liability"
    assert tracker.feed("continued text without a number").label == "13.1 Limitation of Liability"
    assert from_label("13.1 Limitation of Liability").title == "Limitation of Liability"


def test_sentences_keep_a_bare_number_with_its_heading():
    out = sentences("POSSIBILITY OF SUCH DAMAGES. 11.4. Indemnification by LeadersOnline. Subject to Section 11.6.")
    assert out[0] == "POSSIBILITY OF SUCH DAMAGES."
    assert any(s.startswith("11.4. Indemnification") for s in out)


def test_evidence_drops_the_next_heading_and_completes_a_page_break():
    model = load_model()
    passages = [
        Passage(page=3, score=0.9, section="13 Limitation of Liability",
                text="13. Limitation of Liability. IN NO EVENT SHALL EITHER PARTY'S AGGREGATE LIABILITY ARISING OUT OF "
                     "OR RELATED TO THIS AGREEMENT EXCEED THE TOTAL AMOUNT PAID BY CUSTOMER HEREUNDER IN THE"),
        Passage(page=4, score=0.9, section="13 Limitation of Liability",
                text="TWELVE (12) MONTHS PRECEDING THE EVENT GIVING RISE TO THE LIABILITY. 14. Notices. All notices "
                     "shall be in writing."),
    ]
    ev = evidence_for(passages, 0, "Cap on Liability", model)
    assert ev.pages == [3, 4]
    assert ev.section == "13 Limitation of Liability"
    assert ev.text.startswith("13. Limitation of Liability. IN NO EVENT")
    assert ev.text.endswith("GIVING RISE TO THE LIABILITY.")
    assert "Notices" not in ev.text
    ev2 = evidence_for(passages, 1, "Cap on Liability", model)  # the same clause reached from page 4
    assert "Notices" not in ev2.text and "TWELVE (12) MONTHS" in ev2.text and 3 in ev2.pages


@needs_cuad
def test_cuad_passage_no_longer_ends_in_the_next_heading():
    page = _pages(LEADERS)[6]  # pypdf page 7 (printed page 12/13)
    ps = split_passages(page)
    cap = next(p for p in ps if p.startswith("11.3. Limitation of Liability."))
    assert cap.endswith("EVEN IF SUCH PARTY HAS BEEN ADVISED OF THE POSSIBILITY OF SUCH DAMAGES.")
    assert not any(p.startswith("POSSIBILITY OF SUCH DAMAGES") for p in ps)
    assert any(p.startswith("11.4. Indemnification by LeadersOnline. Subject to Section 11.6") for p in ps)


@needs_cuad
def test_cuad_cap_on_liability_evidence_is_readable():
    doc = make_doc(*_pages(LEADERS))
    clauses = extract_offline(prefilter(doc, ["Cap on Liability"]), ["Cap on Liability"])
    cap = [c for c in clauses if "POSSIBILITY OF SUCH DAMAGES" in c.text]
    assert cap, [c.text[:80] for c in clauses]
    clause = cap[0]
    assert clause.section == "11.3 Limitation of Liability" and clause.pages == [7]
    assert clause.text.startswith("11.3. Limitation of Liability.")
    assert clause.text.endswith("POSSIBILITY OF SUCH DAMAGES.")
    for c in clauses:  # no finding ends in (or is) the next section's heading
        last = sentences(c.text)[-1]
        h = heading_of(last)
        assert h is None or last[h.end:].strip(), c.text
        assert 0.0 <= c.confidence <= 1.0


NEON = "NEONSYSTEMSINC_03_01_1999-EX-10.5-DISTRIBUTOR AGREEMENT_New.pdf"  # a CUAD holdout contract


@needs_cuad
def test_cuad_possible_gated_clause_reaches_the_gate():
    """Minimum Commitment (gated in the default playbook) scores just under its threshold in this
    contract, which CUAD labels as having one: the review lists it as possible, not missing, and
    the gate asks about it."""
    book = load_playbook("default")
    doc = make_doc(*_pages(NEON))
    fd = prefilter(doc, book.categories)
    extraction = extract_step(fd, book.categories)
    assert extraction.extractor == f"offline ({load_model().version})"
    mc = [c for c in extraction.clauses if c.category == "Minimum Commitment"]
    assert mc and all(c.possible for c in mc)
    assert mc[0].confidence < 0.5 and mc[0].pages
    review = assemble_review(doc, fd, extraction, playbook=book.name, gated=book.gated_categories)
    assert "Minimum Commitment" in review.gated_categories
    assert "Minimum Commitment" not in review.missing_categories
    found = [f for f in findings_of(review, review.gated_categories) if f.category == "Minimum Commitment"]
    assert found and found[0].text.startswith("POSSIBLE")
    md = render_markdown(review)
    assert "## Possible clauses" in md and "| Minimum Commitment |" in md.split("## Possible clauses")[1]
    with pytest.raises(RuntimeError, match="inside a flow run"):  # it goes on to ask a person
        run_gate(review, book)
    quiet = assemble_review(doc, fd, extraction.model_copy(update={"clauses": [
        c for c in extraction.clauses if not c.possible]}), playbook=book.name, gated=book.gated_categories)
    assert "Minimum Commitment" in quiet.missing_categories  # without "possible" it would be silently missing
