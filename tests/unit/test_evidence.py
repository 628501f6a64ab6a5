"""Clause evidence: the sentences that carry a clause, with section and page (clausegate.review.evidence).

Synthetic passages, plus real CUAD text (skipped when ../shared/data/cuad is absent): the
LeadersOnline co-branding agreement, whose Cap on Liability passage must not be shown as
"POSSIBILITY OF SUCH DAMAGES. 11.4. Indemnification by LeadersOnline." with confidence 1.00.
"""

from __future__ import annotations

from pathlib import Path

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
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LEADERS_SAMPLE, BEYONDCOM_SAMPLE = "leadersonline-co-branding-2000.pdf", "beyondcom-co-hosting-2000.pdf"
HEALTHCARE_SAMPLE = "healthcare-integrated-reseller-2019.pdf"


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


def test_a_sentence_longer_than_the_splitter_cuts_is_quoted_whole():
    """The splitter cuts a sentence of over ~900 characters into pieces without an end; the quote reads the pieces
    of its sentence to the end, even one that alone scores low (CUAD: SENMIAO's insurance clause ended "... carrier
    liability in the")."""
    pays = "the insurance company shall pay the compensation amount to the Driver User under the insurance policy "
    text = ("10.3 Insurance. If the vehicle is used for a purpose other than agreed, " + pays * 8
            + "for tort in the traffic accident or safety accident.")
    pieces = sentences(text)
    assert len(pieces) == 3 and pieces[-1] == "accident or safety accident."  # cut at the splitter's limit
    ev = evidence_for([Passage(page=2, score=0.9, text=text)], 0, "Insurance", load_model())
    assert ev.text.endswith("in the traffic accident or safety accident."), ev.text[-60:]
    assert ev.text.startswith("10.3 Insurance. If the vehicle") and not ev.cut


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
    assert "## Possible clauses" in md and "**Minimum Commitment** · " in md.split("## Possible clauses")[1]
    with pytest.raises(RuntimeError, match="inside a flow run"):  # it goes on to ask a person
        run_gate(review, book)
    quiet = assemble_review(doc, fd, extraction.model_copy(update={"clauses": [
        c for c in extraction.clauses if not c.possible]}), playbook=book.name, gated=book.gated_categories)
    assert "Minimum Commitment" in quiet.missing_categories  # without "possible" it would be silently missing


# ------------------------------------------------------------------- sections and whole quotes
HEALTHCARE_P3 = (  # PDFium's page 3 of the healthcare sample: its headings have lost their numbers
    "Disclaimer of Warranties. THE PRODUCTS ARE PROVIDED ON AN “AS IS” AND “AS AVAILABLE” BASIS, AND SUPPLIER\n"
    "DOES NOT MAKE ANY WARRANTIES, MERCHANTABILITY AND FITNESS FOR A PARTICULAR\n"
    "PURPOSE.\n"
    "Limitation of Liability\n"
    "TO THE MAXIMUM EXTENT PERMITTED BY APPLICABLE LAW, IN NO EVENT SHALL SUPPLIER BE\n"
    "LIABLE UNDER, OR OTHERWISE IN CONNECTION WITH, THIS AGREEMENT FOR: (A) ANY\n"
    "CONSEQUENTIAL, INDIRECT, SPECIAL, INCIDENTAL, OR PUNITIVE DAMAGES. THE AGGREGATE LIABILITY OF SUPPLIER\n"
    "UNDER, OR IN CONNECTION WITH, THIS AGREEMENT SHALL BE EQUAL TO THE LESSER OF: (i) ***; AND (ii) ***.\n"
    "Term and Termination\n"
    "This Agreement shall become effective on the Effective Date and shall remain in effect for an initial period "
    "of 1 year\n(“Initial Term”). Following the Initial Term, either Party may\n"
    "terminate this Agreement without cause upon written notice to the other Party of at least 3 months.\n")
HEALTHCARE_P1 = ("1.\nDefinitions. The following capitalized terms shall have the following meanings:\n"
                 "“Territory” means the countries and/or territories listed in Schedule 1.\n")
BEYONDCOM_P3 = (
    " Co-Host Site, including, without limitation, its URL designations and all\n"
    " rights from InterNIC in connection therewith.\n"
    " 5\n"
    " 6\n"
    "6. TERM AND TERMINATION.\n"
    " (a) Term. This Agreement will commence on the Effective Date, and will\n"
    " terminate on the third anniversary of the Effective Date (the \"Term\"),\n"
    " unless earlier terminated as provided in this Agreement.\n")
BEYONDCOM_P3_HEAD = "5. PROPRIETARY RIGHTS. NAI retains ownership of the NAI Sites.\n"


def test_sections_come_from_the_real_headings():
    """Healthcare's clauses after the definitions are not all under "1 Definitions"; beyondcom's "6. TERM AND
    TERMINATION" is not reported as "5 PROPRIETARY RIGHTS" (the printed page numbers "5 6" must not hide its
    heading)."""
    health = prefilter(make_doc(HEALTHCARE_P1, HEALTHCARE_P3), ["Cap on Liability", "Renewal Term"])
    section = {p.text[:25]: p.section for p in health.passages}
    assert section["Limitation of Liability T"] == "Limitation of Liability", section
    assert section["Term and Termination This"] == "Term and Termination", section
    beyond = prefilter(make_doc(BEYONDCOM_P3_HEAD + BEYONDCOM_P3), ["Expiration Date"])
    term = next(p for p in beyond.passages if "third anniversary" in p.text)
    assert term.section == "6 TERM AND TERMINATION" and term.text.startswith("6. TERM AND TERMINATION.")
    clause = next(c for c in extract_offline(beyond, ["Expiration Date"]) if "third anniversary" in c.text)
    assert clause.section == "6 TERM AND TERMINATION"


def test_a_quote_past_the_length_shown_says_it_was_cut():
    """A long clause is not cut at 1,499 characters mid-word with a bare "…" and nothing else told."""
    from clausegate.review.evidence import CUT_MARKER, MAX_EVIDENCE_CHARS, shorten

    long = " ".join(f"Sentence {k} of the clause says the supplier shall deliver the goods on time." for k in range(40))
    text, cut = shorten(long)
    assert cut and text.endswith("on time." + CUT_MARKER) and len(text) <= MAX_EVIDENCE_CHARS
    one = "The supplier shall " + "deliver and install " * 120 + "the goods."
    text, cut = shorten(one)
    assert cut and text.endswith(" install" + CUT_MARKER) and len(text) <= MAX_EVIDENCE_CHARS
    assert shorten("A short clause.") == ("A short clause.", False)
    model = load_model()
    passages = [Passage(page=2, score=0.9, text=one[:890] + ";"),
                Passage(page=2, score=0.9, text="and " + one[:880] + ".")]
    ev = evidence_for(passages, 0, "Minimum Commitment", model)
    assert ev.cut and ev.text.endswith(CUT_MARKER)


def test_a_lead_in_is_quoted_with_its_list():
    """beyondcom's Price Restrictions finding does not stop at "... of any such increase and:" (its list, on the
    next lines, is another passage).  A quote never stops at "... and:" or "...; and" when its sentence goes on."""
    model = load_model()
    lead = ("(c) Price Increase. If NAI increases its suggested retail price for any Product (a product upgrade with a "
            "different part number will not be the same Product) and there is a resulting increase in the price of "
            "Products to Co-Host, NAI will give Co-Host thirty (30) days advance notice of the effective date of any "
            "such increase and:")
    items = ("(i) NAI will honor the old price for any shipments of such Product already in transit to Co-Host; (ii) "
             "All additional orders following such thirty (30) day period will be shipped at the new price; and (iii) "
             "the price increase will not apply to orders already booked.")
    passages = [Passage(page=10, score=0.9, text=lead), Passage(page=10, score=0.9, text=items)]
    ev = evidence_for(passages, 0, "Price Restrictions", model)
    assert ev.text.startswith("(c) Price Increase.") and ev.text.endswith("will not apply to orders already booked.")
    assert ev.pages == [10]


def _sample_clauses(name: str):
    from clausegate.review.categories import CATEGORIES
    from clausegate.review.document.sandbox import fingerprint, parse_pdf

    doc = parse_pdf(fingerprint(SAMPLES / name))  # the product's parser (PDFium text)
    return extract_offline(prefilter(doc, list(CATEGORIES)), list(CATEGORIES))


def test_shipped_samples_quote_whole_sentences_under_their_sections():
    """The three samples' findings as `clausegate review` prints them, none like "…a Delaware corporation, a.k.a.",
    "…3 Avraham Giron St., POB.", "…eligibility hereunder within thirty", "…UNDER ANY THEORY 12 OF LIABILITY…",
    "…in which Source: LEADERSONLINE INC, S-1/A, 4/27/2000 such revenue…", and the sections above."""
    found = {name: _sample_clauses(name) for name in (LEADERS_SAMPLE, BEYONDCOM_SAMPLE, HEALTHCARE_SAMPLE)}
    for name, clauses in found.items():
        assert clauses, name
        for c in clauses:
            assert not c.text.endswith(("a.k.a.", "POB.", "Inc.", " thirty", " six")), (name, c.text[-80:])
            assert "Source:" not in c.text and "THEORY 12 OF" not in c.text, (name, c.text)
            assert not c.text[:5].replace(" ", "").isdigit(), (name, c.text[:40])  # "3 18 (d) Audit."
            assert getattr(c, "cut", None) == c.text.endswith(" […]")
    beyond = {c.category: c for c in found[BEYONDCOM_SAMPLE]}
    assert beyond["Expiration Date"].section == "6 TERM AND TERMINATION"
    assert beyond["Parties"].text.count("a.k.a. Beyond.com") == 1
    assert not [c for c in found[BEYONDCOM_SAMPLE] if c.text == "(c) Effect of Termination."]  # a heading alone
    assert any(c.text.startswith("(c) Effect of Termination. Upon the effective date") for c in found[BEYONDCOM_SAMPLE])
    health = found[HEALTHCARE_SAMPLE]
    assert {c.section for c in health if c.category == "Cap on Liability"} == {"Limitation of Liability"}
    assert not [c for c in health if c.section == "1 Definitions" and c.pages[0] > 1]
    assert {c.section for c in health if c.category == "Governing Law"} == {"General"}  # not "9": a numbering column
    assert any("St., POB. 325, Yehud" in c.text for c in health if c.category == "Parties")
    leaders = [c for c in found[LEADERS_SAMPLE] if c.category == "Revenue/Profit Sharing"]
    assert any("in which such revenue was received by LeadersOnline." in c.text for c in leaders)
