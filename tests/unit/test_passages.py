"""Passage segmentation: deterministic, no NLTK data needed, robust to odd page text."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from clausegate.review.passages import LEAD_CHARS, MAX_CHARS, count_tokens, split_passages

LIMIT = MAX_CHARS + LEAD_CHARS  # a short heading or paragraph end may ride along (passages.py)

PAGE = textwrap.dedent(
    """\
    ARTICLE 9
    GOVERNING LAW
    9.1 This Agreement shall be governed by and construed in accordance with the laws of the State
    of New York, without regard to its conflict of laws principles. The parties submit to the
    exclusive jurisdiction of the courts of New York County.
    9.2 Notices. All notices under this Agreement shall be in writing and delivered by hand or by
    certified mail to the addresses set out below. Notices are effective on receipt.
    ARTICLE 10
    LIMITATION OF LIABILITY
    10.1 IN NO EVENT SHALL EITHER PARTY'S AGGREGATE LIABILITY ARISING OUT OF OR RELATED TO THIS
    AGREEMENT EXCEED THE TOTAL AMOUNTS PAID BY CUSTOMER HEREUNDER IN THE TWELVE (12) MONTHS
    PRECEDING THE EVENT GIVING RISE TO THE CLAIM.
    """
)


def test_count_tokens_words_and_punctuation():
    assert count_tokens("") == 0
    assert count_tokens("Section 12.3(a)") == 7  # Section 12 . 3 ( a )
    assert count_tokens("  hello   world  ") == 2
    assert count_tokens("Vertrag über €5") == 4  # Vertrag über € 5


def test_split_groups_clauses_and_keeps_page_text():
    passages = split_passages(PAGE)
    assert 2 <= len(passages) <= 5
    gov = [p for p in passages if "laws of the State of New York" in p]
    assert len(gov) == 1 and "GOVERNING LAW" in gov[0]
    cap = [p for p in passages if "AGGREGATE LIABILITY" in p]
    assert len(cap) == 1 and "TWELVE (12) MONTHS PRECEDING" in cap[0]  # all-caps clause not cut per line
    assert "Notices are effective" not in cap[0]
    # nothing invented, nothing lost: same words in the same order
    assert " ".join(passages).split() == " ".join(PAGE.split()).split()
    assert all(len(p) <= LIMIT for p in passages)


TERMS = textwrap.dedent(
    """\
    SCHEDULE OF TERMS
    1. Payment. Customer shall pay each undisputed invoice within thirty (30) days of receipt. Late pay-
    ments bear interest at one percent (1%) per month. The Supplier's finance officer receives
    all notices of dispute on behalf of the Supplier, in writing and by registered mail to the address above.
    2. Term. This Agreement starts on the Effective Date and continues for three (3) years unless either
    party terminates it earlier in accordance with Section 9 (Termination) of this Agreement, provided
    that the terminating party has given at least ninety (90) days' written notice to the other party.
    (a) Renewal. Thereafter it renews for successive one-year terms.
    """
)


def test_fixed_page_gives_these_passages():
    """A heading leads the clause after it, a clause number starts a passage, a word hyphenated at a line end is
    joined again, lines are joined with single spaces, and a short sub-clause at the page end stays with its clause."""
    assert split_passages(TERMS) == [
        "SCHEDULE OF TERMS 1. Payment. Customer shall pay each undisputed invoice within thirty (30) days of receipt. "
        "Late payments bear interest at one percent (1%) per month. The Supplier's finance officer receives all "
        "notices of dispute on behalf of the Supplier, in writing and by registered mail to the address above.",
        "2. Term. This Agreement starts on the Effective Date and continues for three (3) years unless either party "
        "terminates it earlier in accordance with Section 9 (Termination) of this Agreement, provided that the "
        "terminating party has given at least ninety (90) days' written notice to the other party. (a) Renewal. "
        "Thereafter it renews for successive one-year terms.",
    ]


def test_small_passages_end_at_sentence_ends():
    """With a small size limit a clause is packed into several passages, each of whole sentences."""
    passages = split_passages(TERMS, max_chars=150, min_chars=50)
    assert len(passages) == 5, passages
    assert all(p.endswith(".") for p in passages), passages
    assert " ".join(passages).split() == " ".join(split_passages(TERMS)).split()  # same words, same order


def test_no_nltk_data_needed(tmp_path):
    """Run in a fresh interpreter whose NLTK data path is an empty folder."""
    code = (
        f"import nltk; nltk.data.path[:] = [{str(tmp_path)!r}];"
        "from clausegate.review.passages import split_passages;"
        "ps = split_passages('The Seller shall deliver. The Buyer shall pay. Dr. Smith signs.');"
        "assert ps and 'Buyer shall pay' in ps[0], ps; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"NLTK_DATA": str(tmp_path), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_odd_pages():
    assert split_passages("") == []
    assert split_passages("   \n\n \t ") == []
    giant_line = "word " * 5000  # one giant line, no sentence end
    ps = split_passages(giant_line)
    assert len(ps) >= 5 and all(0 < len(p) <= LIMIT for p in ps)
    assert sum(count_tokens(p) for p in ps) == 5000
    no_spaces = "x" * 10000
    ps = split_passages(no_spaces)
    assert all(len(p) <= LIMIT for p in ps) and "".join(ps) == no_spaces
    garbage = "\x00\x0c\u00a0\u00a0§§§ ☃☃ ﬁnal — 合同条款。\n\n\n$$$ 1.\n(a)\n"
    ps = split_passages(garbage)
    assert ps and all(p.strip() for p in ps)


# ------------------------------------------------------------------- sentences that end where they end
# Real text of the shipped samples (samples/README.md), as the parser gives it.
BEYONDCOM_P1 = (
    " This Co-Hosting Agreement (the \"Agreement\") is made by and between\n"
    "NETWORKS ASSOCIATES, INC., a Delaware corporation, doing business as Network\n"
    "Associates, Inc., with its principal place of business at 3965 Freedom Circle,\n"
    "Santa Clara, California 95054 (\"NAI\"), and SOFTWARE.NET CORPORATION, a Delaware\n"
    "corporation, a.k.a. Beyond.com, with its principal place of business at 1195\n"
    "West Fremont Avenue, Sunnyvale, California 94087 (\"Co-Host\"). The Effective\n"
    "Date of this Agreement (herein called the \"Effective Date\") is September 21,\n"
    "1998.\n")
HEALTHCARE_P1 = (
    "This Walabot-HOME Reseller Agreement (“Agreement”) is made and entered into as of this 31 day of July 2019\n"
    "(“Effective Date”) by and between Vayyar Imaging Ltd., having its principal place of business at 3 Avraham "
    "Giron St., POB.\n325, Yehud 5621717, Israel (“Supplier”), and Inde Living Holdings, Inc., having its principal "
    "place of business at 1462\nRudder Lane, Knoxville, TN 37919 (“Reseller”).\n")
BEYONDCOM_P10 = (  # PDFium's text of page 10
    " (d) Price Decrease. If NAI decreases its suggested retail price for any\n"
    " Product (a product upgrade with a different part number will not be\n"
    " the same Product), the decrease will apply to all units of such\n"
    " Product in Co-Host's inventory and orders in transit to Co-Host from\n"
    " NAI that are in an unopened, salable condition as of the effective\n"
    " date of the decrease, provided that such Products had been shipped to\n"
    " Co-Host no more than ninety (90) days prior to such effective date. To\n"
    " be eligible for such price protection, Co-Host must deliver to NAI\n"
    " written evidence, signed by Co-Host, of an inventory of such Products\n"
    " showing the number and location of each unit of Product for which\n"
    " Co-Host claims price protection eligibility hereunder within thirty\n"
    " (30) days of receiving notice of such price decreases. Such reduction\n"
    " will constitute a credit on Co-Host's account for future orders from\n"
    " NAI under this Agreement (unless the Agreement has terminated or\n"
    " expired in which case such reduction will be refunded to the extent\n"
    " that Co-Host does not owe NAI money) in an amount equal to the\n"
    " difference between the net invoice price at which each such unit in\n"
    " inventory was provided to Co-Host and the current price.\n")
BEYONDCOM_P9 = (  # page 9
    " (d) Audit. NAI may inspect the records described in Sections 4(c) upon\n"
    " demand from time to time. In addition, Co-Host agrees to allow NAI's\n"
    " independent auditors to audit and analyze appropriate accounting\n"
    " records of Co-Host from time to time (but not more than one every six\n"
    " (6) months) to ensure compliance with all terms of this Agreement. Any\n"
    " such audit shall be permitted by Co-Host within fifteen (15) days of\n"
    " Co-Host's receipt of NAI's written request to audit, during normal\n"
    " business hours. The cost of such an audit will be borne by NAI unless\n"
    " a material discrepancy indicating inadequate record keeping or that\n"
    " additional fees due to NAI are discovered, in which case the cost of\n"
    " the audit shall be borne by Co-Host.\n")


def _sentences_of(page: str) -> list[str]:
    from clausegate.review.evidence import sentences

    return [s for p in split_passages(page) for s in sentences(p)]


def test_abbreviations_never_end_a_sentence():
    """Neither "…a Delaware corporation, a.k.a." nor "…3 Avraham Giron St., POB." is a whole "sentence"."""
    beyond = _sentences_of(BEYONDCOM_P1)
    assert beyond[0].endswith('California 94087 ("Co-Host").'), beyond
    assert "a.k.a. Beyond.com, with its principal place" in beyond[0]
    assert beyond[1] == ('The Effective Date of this Agreement (herein called the "Effective Date") is '
                         'September 21, 1998.')
    health = _sentences_of(HEALTHCARE_P1)
    assert len(health) == 1 and "St., POB. 325, Yehud" in health[0] and health[0].endswith("(“Reseller”).")
    more = _sentences_of("Under Order No. 5 the U.S. Government pays Acme Corp. and Widget Co. and Foo Ltd. "
                         "on behalf of Bar Inc. in full. The Seller delivers.")
    assert more == ["Under Order No. 5 the U.S. Government pays Acme Corp. and Widget Co. and Foo Ltd. on behalf of "
                    "Bar Inc. in full.", "The Seller delivers."]


def test_a_lower_case_start_goes_on_the_sentence_before():
    out = _sentences_of("The fees are due under this Agreement. provided that the Buyer has accepted. Then it pays.")
    assert out == ["The fees are due under this Agreement. provided that the Buyer has accepted.", "Then it pays."]


def test_never_split_before_a_parenthesised_number():
    """A passage does not end at "…eligibility hereunder within thirty" with "(30) days…" opening the next."""
    assert any("within thirty (30) days of receiving notice of such price decreases." in p
               for p in split_passages(BEYONDCOM_P10))
    assert not any(s.endswith("thirty") for s in _sentences_of(BEYONDCOM_P10))
    assert any("not more than one every six (6) months) to ensure compliance" in p
               for p in split_passages(BEYONDCOM_P9))
    assert not any(s.endswith("six") for s in _sentences_of(BEYONDCOM_P9))
    refs = split_passages("The cap does not apply to claims under Section\n3.2 hereof or Article\n4 below.")
    assert refs == ["The cap does not apply to claims under Section 3.2 hereof or Article 4 below."]


# ------------------------------------------------------------------- page furniture
LEADERS_P7 = (  # PDFium's page 7 of the LeadersOnline sample (two printed pages, 12 and 13)
    "11.3. Limitation of Liability. EXCEPT IN CONNECTION WITH A BREACH, NEITHER PARTY WILL BE LIABLE FOR ANY\n"
    "SPECIAL, INDIRECT, CONSEQUENTIAL, EXEMPLARY OR INCIDENTAL DAMAGES\n"
    "ARISING OUT OF OR RELATED TO THIS AGREEMENT, HOWEVER CAUSED AND UNDER ANY THEORY\n"
    " 12\n"
    "OF LIABILITY (INCLUDING NEGLIGENCE), EVEN IF SUCH PARTY HAS BEEN ADVISED OF THE\n"
    "POSSIBILITY OF SUCH DAMAGES.\n"
    "or license rights in VerticalNet's Intellectual Property, including all\n"
    "Source: LEADERSONLINE INC, S-1/A, 4/27/2000\n")
LEADERS_P3 = (
    "6.3.1. LeadersOnline shall pay VerticalNet *** percent (***%) of LeadersOnline-\n"
    "VerticalNet Revenue, payable to VerticalNet on or before the\n"
    "fifteenth day of the calendar month immediately following the month in which\n"
    "Source: LEADERSONLINE INC, S-1/A, 4/27/2000\n")
LEADERS_P4 = "such revenue was received by LeadersOnline.\n 18 Source: LEADERSONLINE INC, S-1/A, 4/27/2000\n"
BEYONDCOM_P9_AUDIT = (
    " Products.\n"
    " 3\n"
    " 18\n"
    " (d) Audit. NAI may inspect the records described in Sections 4(c) upon\n"
    " demand from time to time.\n")


def test_page_numbers_and_filing_stamps_are_not_passage_text():
    """No "…UNDER ANY THEORY 12 OF LIABILITY…", "3 18 (d) Audit." or "…in which Source: LEADERSONLINE INC,
    S-1/A, 4/27/2000 such revenue…" in the quotes.  Page numbers stay right: one list of passages per page."""
    from clausegate.review.passages import page_passages

    pages = page_passages([LEADERS_P3, LEADERS_P4, LEADERS_P7, BEYONDCOM_P9_AUDIT])
    texts = [[t for t, _ in ps] for ps in pages]
    flat = " ".join(t for ps in texts for t in ps)
    assert "Source:" not in flat and " 18 " not in flat and "3 18" not in flat
    assert texts[0][-1].endswith("the month in which")  # its sentence goes on on the next page
    assert texts[1] == ["such revenue was received by LeadersOnline."]
    assert any("UNDER ANY THEORY OF LIABILITY (INCLUDING NEGLIGENCE)" in t for t in texts[2])
    assert texts[3][0].startswith("Products. (d) Audit.") or any(t.startswith("(d) Audit.") for t in texts[3])


def test_running_headers_and_page_of_lines_are_removed():
    from clausegate.review.furniture import strip_furniture

    bodies = [f"{n}. Clause {n}.\nThe Supplier shall deliver lot {n} on time.\nThe Buyer pays for lot {n}.\n"
              f"Late payments bear interest.\nEither party may terminate for breach." for n in range(1, 5)]
    pages = [f"ACME SUPPLY AGREEMENT - CONFIDENTIAL\n{body}\nPage {n} of 4\n" for n, body in enumerate(bodies, 1)]
    assert strip_furniture(pages) == bodies
    body = ["1. Term.\nThe term is 12\nmonths from the Effective Date.\n"]  # one page: nothing repeats
    assert strip_furniture(body)[0].splitlines()[0] == "1. Term."
    column = ["nor to bind the Supplier in any respect.\n9.\n10.\n10.1.\n10.2.\n11.\nThe next clause.\n",
              "1.\nDefinitions. The following terms apply.\n"]  # PDFium's numbering column of the healthcare sample
    assert strip_furniture(column) == ["nor to bind the Supplier in any respect.\nThe next clause.", column[1]]
    refers = ["Fees under Section\n12\napply.\nMore text follows here.\n"]  # a number the line before refers to
    assert strip_furniture(refers) == refers
