"""Two consistency rules over the offline passage scores (``clausegate.review.offline.consistency``), on CUAD TRAIN
clause texts scored by the shipped model: an assignment a party may make without consent on a merger is no Change
of Control, and the confidentiality clause's "not use ... for a competitive product" is no Non-Compete; the clauses
that are one keep their score."""

from __future__ import annotations

from clausegate.review.offline.consistency import adjust, deltas
from clausegate.review.offline.model import load_model, score_passages

COC, NC = "Change of Control", "Non-Compete"

# CUAD TRAIN, not labelled Change of Control: assignment on a sale of the business needs no consent
FREE_ASSIGNMENT = ("18.9 Assignment. This Agreement may not be assigned by either Party to any Third Party without the "
                   "written consent of the other Party hereto; except either Party may assign this Agreement without "
                   "the other Party\u2019s consent to an entity that acquires substantially all of the business or "
                   "assets of the assigning Party, whether by merger, acquisition or otherwise; provided that the "
                   "acquiring party agrees in a writing delivered to the non-assigning Party to assume all of the "
                   "rights and obligations of the assigning Party under this Agreement.")
# consent or a right to terminate on a change of control: what CUAD's category is
CONSENT_ON_CONTROL = ("Neither Party may assign this Agreement without the prior written consent of the other Party. "
                      "A merger, acquisition or change of control of a Party shall be deemed an assignment requiring "
                      "such consent, and the other Party may terminate this Agreement upon such change of control.")
# CUAD TRAIN, not labelled Non-Compete: the confidentiality clause
CONFIDENTIAL_USE = ("5.1.2 it will not, directly or indirectly, disclose any Confidential Information to any third "
                    "party, except as contemplated by this Agreement or with the Disclosing Party's prior written "
                    "consent; "
                    "5.1.3 it will not make use of any Confidential Information for its own purposes, such as "
                    "creation of a competitive product; or for the benefit of anyone or any entity other than as "
                    "contemplated by this Agreement;")
COVENANT = ("During the Term and for two years after, Consultant shall not, directly or indirectly, engage in any "
            "business that competes with the Company, nor use any Confidential Information to do so.")


def _scores(texts: list[str], categories: list[str]) -> list[dict[str, float]]:
    model = load_model()
    raw = score_passages(texts, model)
    return [{c: float(raw[i, model.category_index[c]]) for c in categories} for i in range(len(texts))]


def test_assignment_without_consent_on_a_merger_is_no_change_of_control():
    texts = [FREE_ASSIGNMENT, CONSENT_ON_CONTROL]
    moved = deltas(texts, [COC])
    assert moved[COC][0] < 0
    assert moved[COC][1] == 0
    rows = _scores(texts, [COC])
    after = adjust(texts, rows, [COC])
    assert after[0][COC] < rows[0][COC]
    assert after[1][COC] == rows[1][COC]


def test_confidential_information_use_is_no_non_compete_but_a_covenant_stays():
    texts = [CONFIDENTIAL_USE, COVENANT]
    moved = deltas(texts, [NC])
    assert moved[NC][0] < 0
    assert moved[NC][1] == 0
    rows = _scores(texts, [NC])
    after = adjust(texts, rows, [NC])
    assert after[0][NC] < rows[0][NC]
    assert after[1][NC] == rows[1][NC]
