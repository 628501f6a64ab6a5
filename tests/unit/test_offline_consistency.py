"""The consistency rules over the offline model's passage scores (``clausegate.review.offline.consistency``), on real
clause texts: the samples' passages as the pre-filter makes them and CUAD TRAIN clauses.  The
shipped model scores them; no mock of our own code."""

from __future__ import annotations

import pytest

from clausegate.review.offline import consistency
from clausegate.review.offline.consistency import adjust, deltas
from clausegate.review.offline.model import load_model, score_passages

UL, CAP, CNS, LD = "Uncapped Liability", "Cap on Liability", "Covenant Not to Sue", "Liquidated Damages"

# the healthcare sample (samples/healthcare-integrated-reseller-2019.pdf): CUAD labels it neither Cap nor Uncapped
FOREGOING = ("THE FOREGOING EXCLUSIONS AND LIMITATIONS SHALL APPLY: (A) EVEN IF SUPPLIER HAS BEEN ADVISED, OR SHOULD "
             "HAVE BEEN AWARE, OF THE POSSIBILITY OF LOSSES OR DAMAGES; (B) EVEN IF ANY REMEDY IN THIS AGREEMENT FAILS "
             "OF ITS ESSENTIAL PURPOSE; AND (C) REGARDLESS OF THE THEORY OR BASIS OF LIABILITY (INCLUDING, WITHOUT "
             "LIMITATION, BREACH OF CONTRACT, TORT, NEGLIGENCE OR STRICT LIABILITY).")
MOQ_SHORTFALL = ("Orders, Payment and Delivery If Reseller fails to submit Orders with an aggregate value equal to or "
                 "greater than the MOQ, then Reseller shall pay Supplier a sum equal to the shortfall, within 30 days "
                 "after the end of the Initial Term.")
# the LeadersOnline sample: CUAD labels 8.5 Cap on Liability *and* Uncapped Liability (its carve-out), not Covenant
TWO_YEAR = ("8.5. Two Year Limitation. Except for claims under Sections 11.4 [Indemnification by LeadersOnline] and "
            "11.5 [Indemnification by VerticalNet] hereof, neither Party may bring a claim or action regardless of "
            "form, arising out of or related to this Agreement, including any claim of fraud or misrepresentation, "
            "more than two years after the cause of action accrues or becomes known, whichever is later.")
CARVED_CAP = ("11.3. Limitation of Liability. EXCEPT IN CONNECTION WITH A BREACH BY EITHER PARTY OF ARTICLE 9 OR "
              "SECTION 10.1.4 [Representations and Warranties] (v) AND THE INDEMNIFICATION OBLIGATIONS OF "
              "LEADERSONLINE UNDER SECTION 11.4(i)(c), NEITHER PARTY WILL BE LIABLE FOR ANY SPECIAL, INDIRECT, "
              "CONSEQUENTIAL, EXEMPLARY OR INCIDENTAL DAMAGES ARISING OUT OF OR RELATED TO THIS AGREEMENT.")
PLACEMENT = ('6.3.2. LeadersOnline shall pay VerticalNet a one time fee for each Candidate who is offered and accepts '
             'employment as a result of a contact made by LeadersOnline (each a "Placement"). The fee shall be payable '
             'upon receipt by LeadersOnline of its payment for the Placement, and shall be nonrefundable.')
# CUAD TRAIN clauses
TWELVE_MONTH_CAP = ("(b) Limitation of Direct Damages Subject to Section 17(c), in no event shall either Party's "
                    "liability under this Agreement exceed the aggregate of all amounts paid under this Agreement and "
                    "amounts that have accrued but not yet been paid in the twelve (12) months preceding the event "
                    "giving rise to the claim.")
PLAIN_PERIOD = ("No legal action shall be brought by Licensee under this Agreement unless commenced within 12 months "
                "from the date the cause of action arose.")
LIQUIDATED = ("PaperExchange pursuant to Section 8.2 [Termination for Cause], VerticalNet shall pay to PaperExchange, "
              "as liquidated damages, an amount equal to the product determined by multiplying (1) a fraction, the "
              "numerator of which shall be the number of days between the effective date of termination and the end "
              "of the Term.")
EARLY_FEE = ("(i) \u201cEarly Termination Fee\u201d means that amount equal to the most recent month\u2019s Promotion "
             "Fee prior to termination, multiplied by the number of unexpired months remaining in the current year of "
             "the Agreement.")


def moved(text: str, category: str) -> float:
    return float(deltas([text], [category]).get(category, [0.0])[0])


def test_a_limitation_without_a_carve_out_is_no_uncapped_liability():
    assert moved(FOREGOING, UL) < 0 and moved(TWELVE_MONTH_CAP, UL) < 0 and moved(PLAIN_PERIOD, UL) < 0
    # a cap or limitation period with a carve-out is both readings, as CUAD labels it
    assert moved(CARVED_CAP, UL) == 0 and moved(TWO_YEAR, UL) == 0
    # the cap itself is never touched: CUAD's Cap on Liability includes "time limitation ... to bring claims"
    assert all(moved(t, CAP) == 0 for t in (FOREGOING, TWELVE_MONTH_CAP, PLAIN_PERIOD, TWO_YEAR, CARVED_CAP))


def test_a_time_limit_for_claims_is_no_covenant_not_to_sue():
    assert moved(TWO_YEAR, CNS) < 0 and moved(PLAIN_PERIOD, CNS) < 0
    model = load_model()
    p = float(score_passages([TWO_YEAR], model)[0, model.category_index[CNS]])
    assert p >= model.extract_threshold(CNS)  # the model alone finds the sample's 8.5 as a covenant not to sue
    assert adjust([TWO_YEAR], [{CNS: p}], [CNS])[0][CNS] < model.extract_threshold(CNS)
    covenant = ("In addition, LeadersOnline shall not now or in the future contest the validity of VerticalNet's "
                "ownership of its Intellectual Property.")
    assert moved(covenant, CNS) == 0


def test_the_healthcare_sample_clause_drops_below_uncapped_liabilitys_possible_threshold():
    model = load_model()
    p = float(score_passages([FOREGOING], model)[0, model.category_index[UL]])
    assert p >= model.extract_threshold(UL)  # the model alone finds it
    row = adjust([FOREGOING], [{UL: p, CAP: 0.77}], [UL, CAP])[0]
    assert row[UL] < model.possible_threshold(UL) and row[CAP] == 0.77


def test_negation_and_direction():
    non_exclusive = ("Subject to the terms of this Agreement, Licensor hereby grants to Licensee a non-exclusive, "
                     "non-transferable license to use the Software in the Territory.")
    exclusive = ("Subject to the terms and conditions of this Agreement, Xencor hereby grants to Aimmune during the "
                 "Term an exclusive, worldwide, payment-bearing license under the Xencor Patents.")
    mixed = ("Aimmune hereby grants to Xencor an exclusive license under the Aimmune Patents, and a non-exclusive "
             "license under the Aimmune Know-How.")
    assert moved(non_exclusive, "Exclusivity") < 0
    assert moved(exclusive, "Exclusivity") == 0 and moved(mixed, "Exclusivity") == 0
    none = ("NO THIRD PARTY BENEFICIARY. Nothing in this Agreement is intended to confer upon any person other than "
            "the parties any rights or remedies.")
    named = "Ehave shall be a third party beneficiary hereunder, but shall not have any obligations to the End User."
    assert moved(none, "Third Party Beneficiary") < 0 < moved(named, "Third Party Beneficiary")
    assert moved("Playboy is an intended third-party beneficiary of this Contract.", "Third Party Beneficiary") > 0
    assignment = "Neither party may assign this Agreement without the prior written consent of the other party."
    merger = ("Neither party may assign this Agreement, including by a merger or a sale of all or substantially all "
              "of its assets, without the prior written consent of the other party.")
    assert moved(assignment, "Change of Control") < 0 and moved(merger, "Change of Control") == 0


def test_fee_rows_placement_fees_and_shortfalls_are_no_liquidated_damages():
    for text in ("Hosting $10,000 monthly fee", PLACEMENT, MOQ_SHORTFALL):
        assert moved(text, LD) < 0, text
    for text in (LIQUIDATED, EARLY_FEE):
        assert moved(text, LD) == 0, text


def test_adjust_moves_only_what_a_rule_reads(monkeypatch):
    rows = [{UL: 0.45, LD: 0.02}, {UL: 0.0005, LD: 0.0005}]
    texts = [FOREGOING, FOREGOING]  # the second scores under FLOOR: not read
    out = adjust(texts, rows, [UL, LD])
    assert out[0][UL] < 0.01 and out[0][LD] == 0.02 and out[1] == rows[1]  # it names damages: LD untouched
    assert rows[0] == {UL: 0.45, LD: 0.02}  # the input is not changed
    monkeypatch.setattr(consistency, "ENABLED", False)
    assert adjust(texts, rows, [UL, LD]) == rows


@pytest.mark.parametrize("rule", consistency.RULES, ids=lambda r: r.name)
def test_every_rule_touches_only_categories_the_model_knows(rule):
    assert set(rule.categories) <= set(load_model().categories) and rule.delta != 0
