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
