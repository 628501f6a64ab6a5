"""Quotes as whole units: list items read to their sentence's end, tables of contents never quoted,
a table's column of figures kept, a line that stops on a preposition read on (review/passages.py, furniture.py,
toc.py, evidence.py, offline/extract.py, prefilter.py; measured by bench/quotes.py)."""

from __future__ import annotations

from clausegate.review.evidence import continues, evidence_for
from clausegate.review.furniture import strip_furniture
from clausegate.review.offline.extract import decide
from clausegate.review.offline.model import load_model
from clausegate.review.passages import split_passages
from clausegate.review.schemas import FilteredDocument, Passage
from clausegate.review.toc import is_toc, toc_flags

GREEK_SEMICOLON = "\u037e"  # what some filings' PDFs write for ";"
TOC = ("TABLE OF CONTENTS\nARTICLE 1 DEFINITIONS 2\nSection 1.1 Definitions 2\nSection 1.2 Other Provisions 11\n"
       "ARTICLE 2 SERVICES 12\nSection 2.1 In General 12\nSection 2.2 Liquidated Damages 13\nSection 2.3 Fees 13")


def test_a_list_item_written_with_a_greek_question_mark_reads_on_to_the_sentence_end():
    first = ("9.22 Insurance. Operator shall maintain the following insurance, which shall not be cancelled without "
             "thirty (30) days notice to the Owner of the cancellation, termination or material adverse change: "
             f"(a) Worker's Compensation Insurance as required by the laws of the state{GREEK_SEMICOLON}")
    rest = ("(b) Employer's liability insurance with limits not less than One Million Dollars ($1,000,000); and "
            "(c) Commercial General Liability Insurance, naming the Owner as an additional insured.")
    passages = [Passage(page=1, text=t, score=1.0) for page in (first, rest) for t in split_passages(page)]
    ev = evidence_for(passages, 0, "Insurance", load_model())
    assert ev.text.endswith("as an additional insured."), ev.text


def test_a_table_of_contents_is_recognised_and_never_quoted():
    assert is_toc(" ".join(TOC.split("\n")))
    assert is_toc(" ".join(TOC.split("\n")[1:]))  # without its title: ascending page numbers after headings
    prose = ("The provisions of Section 4 (Customer Information), Section 9(a) and 9(b), Section 10 "
             "(Confidentiality), Section 11 (Warranty and Indemnity) and Section 12 survive. The Phase 3 Trial "
             "data of Month 12 and Month 30 are reported.")
    assert not is_toc(prose)
    assert toc_flags(["18.0 WAIVER OF JURY TRIAL AND PUNITIVE DAMAGES 30 19.0 INTENTIONALLY DELETED 31 ADDENDUM",
                      "x"]) == [False, False]
    toc_text = " ".join(TOC.split("\n"))
    assert toc_flags([toc_text, "18.0 WAIVER OF JURY TRIAL 30 19.0 INTENTIONALLY DELETED 31 ADDENDUM"]) == [True, True]
    clause = ("2.2 Liquidated Damages. If Customer terminates early it shall pay, as liquidated damages and not as a "
              "penalty, an amount equal to the fees for the remaining term.")
    passages = [Passage(page=1, text=toc_text, score=1.0, categories={"Liquidated Damages": 0.99}),
                Passage(page=3, text=clause, score=0.9, categories={"Liquidated Damages": 0.9})]
    shown = decide(FilteredDocument(contract_id="0" * 64, passages=passages, pages_kept=[1, 3], tokens_total=1,
                                    tokens_kept=1), ["Liquidated Damages"])
    assert shown["Liquidated Damages"][0] == [1]  # the clause, not the table of contents that names it
    assert not continues("MASTER SERVICES AGREEMENT dated as of April 13, 2012", 1, toc_text, 2)


def test_a_rule_line_is_furniture_and_a_column_of_figures_is_not():
    page = ("1. Prices. The prices are as follows.\n" + "filler line of text\n" * 4
            + "- -----------------\nAirspan warrants the prices.\n"
            "Units\n150\n200\n250\nTotal\nThe total is due in 30 days.\n" + "filler line of text\n" * 8)
    (out,) = strip_furniture([page])
    assert "------" not in out
    assert "150\n200\n250" in out
    paired = "Clause text of the first printed page goes\n3\n18\n(d) Audit. NAI may inspect records.\n" + "text\n" * 8
    assert "\n3\n18\n" not in strip_furniture(["top\n" * 4 + paired])[0]  # two printed page numbers meet: removed


def test_a_line_that_stops_on_a_preposition_goes_on_into_the_next_one():
    page = ("This Agreement is made between Alpha Media Holdings LLC, a Delaware limited liability company whose "
            "principal place of business is in Wilmington, and VNUE, Inc., a Nevada corporation, with offices at\n"
            "104 West 29th Street, New York, NY 10001 (\"VNUE\"), which has developed a platform for recording and "
            "distributing live music performances to the public through its own applications and web sites.")
    assert any("with offices at 104 West 29th Street" in p for p in split_passages(page, min_chars=20))


def test_the_prefilter_keeps_the_rest_of_a_shown_sentence_cut_by_the_passage_limit():
    import numpy as np

    from clausegate.review.prefilter import _keep_sentence_whole

    texts = ["12.3 In no event shall the Licensor be liable to the Licensee, its affiliates or any third party for",
             "any indirect, incidental or consequential damages, even if advised of the possibility of such damages.",
             "12.4 This Agreement is governed by the laws of the State of New York."]
    keep = np.array([True, False, False])
    _keep_sentence_whole(keep.copy(), keep, texts, [4, 4, 4])
    assert keep.tolist() == [True, True, False]  # its sentence's end, not the next clause
    quiet = np.array([True, False, False])
    _keep_sentence_whole(np.zeros(3, dtype=bool), quiet, texts, [4, 4, 4])
    assert quiet.tolist() == [True, False, False]  # a passage no finding shows keeps nothing more
