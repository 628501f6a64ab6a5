"""Clause types a team defines: defined in a playbook by a question and examples, found offline
by similarity (clausegate.review.custom_categories), on contracts written for this test."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from clausegate.review.custom_categories import CustomCategory, find_custom
from clausegate.review.playbook import PlaybookError, load_playbook, parse_playbook
from tests.support.contracts import make_doc

BOOK = Path(__file__).resolve().parents[2] / "samples" / "playbooks" / "team-clauses.yaml"

WITH_BOTH = make_doc(
    "SUPPLY AGREEMENT\nThis Supply Agreement is made between Northwind Components Ltd. (\"Supplier\") and Harbor "
    "Robotics Inc. (\"Buyer\").\n1. Supply. Supplier shall manufacture and deliver the Products described in "
    "Schedule A at the prices set out there. Buyer shall issue purchase orders at least thirty (30) days before the "
    "requested delivery date.\n2. Payment. Buyer shall pay each invoice within forty-five (45) days of receipt.\n",
    "7. Indemnity. Supplier shall defend, indemnify and hold harmless Buyer and its directors and employees from "
    "and against all third-party claims, losses, damages and expenses, including reasonable legal fees, arising "
    "from defects in the Products or Supplier's negligence.\n8. Confidentiality. Each party shall keep the other "
    "party's Confidential Information secret, use it only to perform this Agreement and not disclose it to any "
    "third party, except to its employees who need to know it and are bound by equal obligations of "
    "confidentiality.\n9. Governing Law. This Agreement is governed by the laws of the State of New York.\n")
WITH_NEITHER = make_doc(
    "LEASE OF EQUIPMENT\nLessor leases to Lessee the forklift described below for a term of twelve (12) months.\n"
    "1. Rent. Lessee shall pay a monthly rent of USD 900 on the first day of each month.\n2. Maintenance. Lessee "
    "shall keep the equipment in good repair and return it at the end of the term in the same condition, fair wear "
    "and tear excepted.\n3. Governing Law. This lease is governed by the laws of the State of Ohio.\n")


def test_the_example_playbook_defines_indemnification_and_confidentiality():
    book = load_playbook(str(BOOK))
    assert [c.name for c in book.custom_categories] == ["Indemnification", "Confidentiality"]
    assert all(3 <= len(c.examples) <= 10 for c in book.custom_categories)


def test_custom_clauses_are_found_where_the_contract_has_them_and_only_there():
    book = load_playbook(str(BOOK))
    found = find_custom(WITH_BOTH, book.custom_categories)
    by_name = {c.category: c for c in found}
    assert set(by_name) == {"Indemnification", "Confidentiality"}
    assert by_name["Indemnification"].text.startswith("7. Indemnity.") and by_name["Indemnification"].pages == [2]
    assert "Confidential Information secret" in by_name["Confidentiality"].text
    assert not any(c.possible for c in found)
    assert find_custom(WITH_NEITHER, book.custom_categories) == []


def test_a_high_risk_custom_category_below_its_threshold_is_possible():
    strict = CustomCategory(name="Indemnification", question="Does a party indemnify the other?",
                            examples=load_playbook(str(BOOK)).custom_categories[0].examples, threshold=0.99)
    assert find_custom(WITH_BOTH, [strict]) == []
    possible = find_custom(WITH_BOTH, [strict.model_copy(update={"threshold": 0.7})],
                           high_risk=frozenset({"Indemnification"}))
    assert possible and possible[0].possible


def test_a_definition_is_checked():
    base = BOOK.read_text(encoding="utf-8")
    with pytest.raises(PlaybookError, match="custom_categories"):
        parse_playbook(base.replace("name: Confidentiality", "name: Governing Law"))  # a CUAD name
    with pytest.raises(ValidationError, match="examples"):
        CustomCategory(name="Force Majeure", question="Is a party excused by events beyond its control?",
                       examples=["A party is excused by events beyond its control."])


def test_gates_and_high_risk_may_name_a_custom_category_the_playbook_defines():
    base = BOOK.read_text(encoding="utf-8")
    text = base.replace("high_risk:\n", "high_risk:\n  - Indemnification\n").replace(
        "gates:\n", "gates:\n  - category: Indemnification\n    reason: the team's indemnities need legal.\n")
    book = parse_playbook(text)
    assert book.gated_categories == ["Indemnification", "Uncapped Liability"]
    assert book.high_risk[0] == "Indemnification" and book.custom_names == ["Indemnification", "Confidentiality"]


@pytest.mark.parametrize("field, entry", [("gates", "  - category: Force Majeure\n"),
                                          ("high_risk", "  - Force Majeure\n")])
def test_a_name_neither_cuad_nor_custom_is_still_refused(field, entry):
    text = BOOK.read_text(encoding="utf-8").replace(f"{field}:\n", f"{field}:\n{entry}")
    with pytest.raises(PlaybookError) as caught:
        parse_playbook(text)
    message = str(caught.value)
    assert f"{field}: unknown clause category 'Force Majeure'" in message
    assert "Indemnification" in message and "CUAD" in message  # what the names may be
    with pytest.raises(PlaybookError, match="unknown clause category 'Indemnification'"):  # no custom definition
        parse_playbook("name: x\ncategories: [Insurance]\ngates: [{category: Indemnification}]\n")


def test_a_possible_custom_finding_of_a_gated_category_goes_to_the_gate_marked_possible_and_team_defined():
    from clausegate.gates.model import findings_of
    from clausegate.review import assemble

    defined = load_playbook(str(BOOK)).custom_categories[0]
    near = defined.model_copy(update={"threshold": 0.7, "keywords": []})  # the indemnity: between 75 % of it and it
    filtered = assemble.prefilter_step(WITH_BOTH, ["Cap on Liability"])
    extraction = assemble.extract_step(filtered, ["Cap on Liability"])
    review = assemble.assemble_review(WITH_BOTH, filtered, extraction, playbook="team-clauses",
                                      gated=["Indemnification"], protected=["Indemnification"],
                                      custom=assemble.custom_step(WITH_BOTH, [near], ["Indemnification"]))
    custom = [c for c in review.clauses if c.custom]
    assert [(c.category, c.possible) for c in custom] == [("Indemnification", True)]
    assert custom[0].confidence < 0.5  # below its threshold: under 0.5 (custom_categories.confidence)
    assert review.gated_categories == ["Indemnification"] and "Indemnification" not in review.missing_categories
    [finding] = findings_of(review, review.gated_categories)
    assert finding.text.startswith("team-defined clause type: POSSIBLE (not certain; please check): § 7")
