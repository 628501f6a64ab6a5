"""Positions judged on substance: the figures a clause states, set against the playbook's
walk-away rules with the fees and value the contract states; wording only when no figure applies, and every
verdict says which was used.  Clause texts are quotes from CUAD (CC BY 4.0) and the shipped samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from clausegate.review.figures import read
from clausegate.review.playbook import load_playbook
from clausegate.review.position_compare import compare
from clausegate.review.position_figures import contract_figures
from clausegate.review.positions import Position, WalkAway, check_clause, check_positions
from clausegate.review.schemas import Clause

BEYONDCOM_CAP = ("10. LIMITATION OF LIABILITY. EXCEPT FOR CLAIMS UNDER SECTION 9 HEREOF, THE LIABILITY OF A PARTY TO "
                 "THE OTHER FOR DIRECT DAMAGES SHALL NOT EXCEED FIFTEEN MILLION DOLLARS.")
BEYONDCOM_FEES = ("Co-Host shall pay to NAI a \"Co-Hosting Fee\" in the following amounts: (a) A non-refundable "
                  "initial payment of Two Million Five Hundred Thousand Dollars ($2,500,000) payable as follows: "
                  "$2,000,000 on or before September 30, 1998, and the balance within sixty (60) days of the "
                  "execution of this Agreement. (b) Quarterly payments of $312,500 each, with the first payment "
                  "being due September 15, 1999")
AIRSPAN_CAP = ("Distributor, taken as a whole, shall be liable for physical damage to Airspan's property resulting "
               "from Distributor's negligence under or in connection with this Agreement up to a maximum aggregate "
               "amount of one million US Dollars (US$1,000,000).")
PIVX_CAP = ("EXCEPT FOR PIVX'S OBLIGATIONS UNDER SECTION 4.2, IN NO EVENT SHALL PIVX'S OR ITS LICENSORS' LIABILITY TO "
            "DETTO OR ANY THIRD PARTY ARISING OUT OF THIS AGREEMENT EXCEED THE TOTAL AMOUNT ACTUALLY RECEIVED BY PIVX "
            "HEREUNDER DURING THE PREVIOUS SIX (6) MONTHS.")
VOTOCAST_CAP = ("TO THE MAXIMUM EXTENT PERMITTED BY LAW, VOTOCAST'S AGGREGATE LIABILITY ARISING FROM OR RELATING TO "
                "THIS AGREEMENT SHALL BE LIMITED TO THE AMOUNT OF ALL FEES ACTUALLY RECEIVED BY VOTOCAST FROM "
                "LICENSEE UNDER THIS AGREEMENT.")
BLOOM_WARRANTY = ("In the case of a claim relating to the Power Performance Warranty for a One-Year Power Performance "
                  "Warranty Period, upon receipt of such notice and verification that such One-Year Power Performance "
                  "Warranty is applicable, Operator shall make a payment to Owner in an amount to be calculated")
SENMIAO_LD = ("Party A is entitled to immediately terminate the Agreement and request Party B to pay the liquidated "
              "damages of RMB50,000 (RMB FIFTY THOUSAND) and indemnify for all losses incurred to Party A thereby.")
HOTEL_LD = ("You will pay us Liquidated Damages in the amount of Five Thousand Dollars ($5,000) per day if you open "
            "the Hotel before the Opening Date to compensate us for the damage caused by such breach.")
ECOPETROL_LD = ("In case of failing to fulfill the obligations of the SENDER as a result of any actions or illegal "
                "omissions or deviations from the Contract, the SENDER agrees to pay ECOPETROL as a penalty, an amount "
                "equivalent to ten percent (10%) of the final value of the Contract.")
MONTHLY = "Customer shall pay Supplier a monthly service fee of $600,000, invoiced in advance."

CAP_RULE = WalkAway(kind="months_of_fees", min=12, reason="cap below 12 months' fees")
CAP = Position(category="Cap on Liability", walk_away=[CAP_RULE],
               preferred="Each party's aggregate liability shall not exceed the total fees paid or payable by "
                         "Customer in the twelve (12) months preceding the event giving rise to the claim.")


def cap(text: str, category: str = "Cap on Liability") -> Clause:
    return Clause(category=category, text=text, pages=[1], confidence=0.9, source="offline")


@pytest.mark.parametrize(("text", "expected"), [
    (BEYONDCOM_CAP, [(15_000_000, "USD", False)]),
    (AIRSPAN_CAP, [(1_000_000, "USD", False)]),  # "one million US Dollars (US$1,000,000)": read once
    (SENMIAO_LD, [(50_000, "CNY", False)]),
    (HOTEL_LD, [(5_000, "USD", True)]),  # per day: a rate, not a sum
    ("liability shall not exceed CHF 2 million or 500,000 Canadian dollars or C$75,000", [
        (2_000_000, "CHF", False), (500_000, "CAD", False), (75_000, "CAD", False)]),
    ("liquidated damages, and not a penalty, amounting to $[***] ([***]) USD.", []),  # redacted
])
def test_amounts_are_read_with_their_currency(text, expected):
    assert [(f.value, f.currency, f.rate) for f in read(text, "amount")] == expected


@pytest.mark.parametrize(("kind", "text", "expected"), [
    ("months_of_fees", PIVX_CAP, [6]),
    ("months_of_fees", "shall not exceed two times the annual fees payable hereunder", [24]),
    ("months_of_fees", "capped at an amount equal to 12 months' fees", [12]),
    ("months_of_fees", BLOOM_WARRANTY, []),  # a warranty period, with a payment further on: not a period of fees
    ("multiple_of_fees", ECOPETROL_LD, [0.1]),
    ("multiple_of_fees", "up to a maximum of ten percent (10%) of the total fees", [0.1]),
    ("multiple_of_fees", "shall not exceed seventy five per cent (75%) of the value of the Crude lost", []),
    ("term_days", "for a term of three (3) years; pay within thirty (30) days after invoice; on ninety (90) days' "
                  "notice; for each twelve-month period", [1095, 360]),
    ("term_days", "Flight: 2 Year Deal; Total Impressions 7,083 YEAR", [730]),  # a table number is no period
])
def test_figures_of_each_kind(kind, text, expected):
    assert [f.value for f in read(text, kind)] == expected


def test_the_contract_states_its_fees_per_month_and_its_value():
    beyond = contract_figures(BEYONDCOM_FEES)
    assert [(f.monthly, f.currency, f.quote) for f in beyond.fees] == [
        (104_166.67, "USD", "Quarterly payments of $312,500")]  # a one-time payment is not a recurring fee
    stated = contract_figures(MONTHLY + " The total contract value is EUR 1,800,000.")
    assert [(f.monthly, f.currency) for f in stated.fees] == [(600_000, "USD")]
    assert [(v.amount, v.currency) for v in stated.value] == [(1_800_000, "EUR")]
    assert contract_figures(AIRSPAN_CAP).fees == ()


def test_a_cap_in_dollars_against_months_of_fees_with_stated_monthly_fees():
    contract = contract_figures(MONTHLY)
    met = check_clause(cap(BEYONDCOM_CAP), CAP, contract=contract)
    assert met.verdict == "matches standard"
    assert met.reason == ("judged on figures: cap $15,000,000 = 25 months of the stated fees ($600,000 a month: "
                          "\"monthly service fee of $600,000\"): meets 'at least 12 months of fees'")
    assert met.figures == {"months_of_fees": [25.0]}
    short = check_clause(cap(AIRSPAN_CAP), CAP, contract=contract)
    assert short.verdict == "deviates"
    assert short.reason == ("walk-away: cap below 12 months' fees (judged on figures: cap $1,000,000 = 1.7 months of "
                            "the stated fees ($600,000 a month: \"monthly service fee of $600,000\"): below 'at least "
                            "12 months of fees')")


def test_the_beyondcom_sample_cap_is_judged_on_its_figures_not_its_wording():
    from clausegate.review.assemble import extract_step
    from clausegate.review.document.sandbox import fingerprint, parse_pdf
    from clausegate.review.prefilter import prefilter

    doc = parse_pdf(fingerprint(Path(__file__).resolve().parents[2] / "samples" / "beyondcom-co-hosting-2000.pdf"))
    book = load_playbook("payment-liability")
    clauses = extract_step(prefilter(doc, book.categories), book.categories).clauses
    checks = check_positions(clauses, book.positions, contract_text="\n".join(p.text for p in doc.pages))
    (capped,) = [c for c in checks if c.category == "Cap on Liability"]
    assert capped.verdict == "matches standard"
    assert capped.reason.startswith("judged on figures: cap $15,000,000 = 144 months of the stated fees "
                                    "($104,166.67 a month: \"Quarterly payments of $312,500\")")
    without = check_positions(clauses, book.positions)  # no contract text: the fees are unknown, so wording
    (worded,) = [c for c in without if c.category == "Cap on Liability"]
    assert worded.verdict == "deviates" and worded.reason.startswith(
        "judged on wording (cap $15,000,000: the contract states no recurring fees to count months of fees by)")


def test_no_fees_stated_for_a_months_of_fees_rule_falls_back_to_wording_and_says_so():
    check = check_clause(cap(AIRSPAN_CAP), CAP, contract=contract_figures(AIRSPAN_CAP))
    assert check.verdict == "deviates" and check.figures == {}
    assert check.reason.startswith("judged on wording (cap $1,000,000: the contract states no recurring fees to count "
                                   "months of fees by): wording unlike the preferred and fallback wording")


def test_no_figure_applies_falls_back_to_wording_and_says_so():
    check = check_clause(cap(VOTOCAST_CAP), CAP, contract=contract_figures(MONTHLY))
    assert check.reason.startswith("judged on wording (no figure in the clause for 'at least 12 months of fees'): ")
    carve_out = Position(category="Uncapped Liability", preferred="The limitations of liability do not apply to a "
                         "party's gross negligence, fraud or willful misconduct.")
    uncapped = check_clause(cap("The limitations of liability shall not apply to gross negligence, fraud or willful "
                                "misconduct of either party.", "Uncapped Liability"), carve_out)
    assert uncapped.verdict == "matches standard"
    assert uncapped.reason.startswith("judged on wording (the position sets no figure): close to the preferred")


def test_a_currency_mismatch_is_not_compared_and_says_so():
    euro_cap = "Supplier's aggregate liability shall not exceed EUR 2,000,000 in total."
    check = check_clause(cap(euro_cap), CAP, contract=contract_figures(MONTHLY))  # fees in USD
    assert check.reason.startswith("judged on wording (cap €2,000,000 is in EUR, the stated fees are in USD: "
                                   "not compared)")
    floor = WalkAway(kind="amount", min=100_000, currency="USD", reason="damages below $100,000")
    judged = compare(floor, SENMIAO_LD, noun="damages")
    assert judged.outcome is None and judged.notes == (
        "damages CNY 50,000 (\"RMB50,000\") is not in USD, the currency of the rule: not compared",)
    assert compare(floor, "liability of at least $250,000").outcome == "meets"


def test_a_rate_is_not_a_total_and_a_redaction_is_named():
    rule = WalkAway(kind="multiple_of_fees", max=0.2)
    rate = compare(rule, HOTEL_LD, contract_figures("The total contract value is $1,000,000."), noun="damages")
    assert rate.outcome is None and "is a rate, not a total: not compared" in rate.notes[0]
    redacted = compare(rule, "liquidated damages amounting to $[***] ([***]) USD.")
    assert redacted.outcome is None and redacted.notes == ("a figure in the clause is redacted (***)",)


def test_liquidated_damages_against_a_share_of_the_contract_value():
    ld = load_playbook("payment-liability").positions[2]
    assert ld.category == "Liquidated Damages" and ld.walk_away[0].line() == "at most 20% of the fees"
    assert check_clause(cap(ECOPETROL_LD, "Liquidated Damages"), ld).reason.startswith(
        "judged on figures: 10% of the fees (\"10% of the final value of the Contract\"): meets 'at most 20% of")
    value = contract_figures("The total contract price is $200,000, payable on delivery.")
    sum_ld = check_clause(cap("Supplier shall pay liquidated damages of $50,000 for late delivery.",
                              "Liquidated Damages"), ld, contract=value)
    assert sum_ld.verdict == "deviates" and "damages $50,000 = 25% of the stated contract value ($200,000" \
        in sum_ld.reason and "above 'at most 20% of the fees'" in sum_ld.reason


def test_whichever_is_greater_binds_the_greater_figure():
    text = ("Liability shall not exceed the greater of the fees paid in the three (3) months preceding the claim "
            "or $1,500,000.")
    fees = contract_figures("a monthly fee of $50,000")
    check = check_clause(cap(text), CAP, contract=fees)
    assert check.verdict == "matches standard" and "(the greater binds" in check.reason
    lesser = check_clause(cap(text.replace("greater", "lesser")), CAP, contract=fees)
    assert lesser.verdict == "deviates" and "3 months of fees" in lesser.reason


def test_several_stated_fees_decide_only_when_every_combination_agrees():
    fees = contract_figures("a monthly hosting fee of $100,000 and a monthly support fee of $50,000")
    safe = check_clause(cap("Liability shall not exceed $3,000,000."), CAP, contract=fees)  # 20 to 60 months
    assert safe.verdict == "matches standard" and "20 to 60 months of the stated fees" in safe.reason
    unsure = check_clause(cap("Liability shall not exceed $1,000,000."), CAP, contract=fees)  # 6.7 to 20 months
    assert unsure.reason.startswith("judged on wording (") and "could be either side of 'at least 12 months" \
        in unsure.reason


def test_an_amount_rule_needs_its_currency():
    with pytest.raises(ValueError, match="give its currency"):
        WalkAway(kind="amount", min=1)
    with pytest.raises(ValueError, match="currency is for kind amount only"):
        WalkAway(kind="months_of_fees", min=12, currency="USD")
