"""Decisions carried by the clause's text, over the scripted revision corpus (CUAD TRAIN contracts)."""

from __future__ import annotations

import os
import random

import pytest

from clausegate.gates.model import text_sha256
from clausegate.review.versions.align import align_units
from clausegate.review.versions.carry import (
    EarlierDecision,
    carry,
    carry_one,
    carry_slots,
    category_carries,
    clause_sha256,
)
from clausegate.review.versions.units import split_units
from tools import cuad, make_revisions

PLAYBOOK = "a" * 64


def _decisions(units) -> list[EarlierDecision]:
    return [EarlierDecision(category="Clause", finding=f"F{u.index + 1}", clause_sha256=clause_sha256(u.text),
                            playbook_sha256=PLAYBOOK, clause_text=u.text, decision="approve", reviewer="dana",
                            comment=f"fine as drafted ({u.index})") for u in units]


def test_the_hash_is_the_one_the_decision_receipt_signs() -> None:
    text = "Neither party's liability  shall exceed\nthe fees paid."
    assert clause_sha256(text) == text_sha256(text)


@pytest.mark.skipif(not cuad.cuad_available(), reason="needs ../shared/data/cuad")
def test_every_untouched_clause_carries_and_no_changed_one_does() -> None:
    """Over the corpus's edits of 4 TRAIN contracts (CLAUSEGATE_CARRY_CONTRACTS=12: the whole corpus; -s prints
    the counts)."""
    count = int(os.environ.get("CLAUSEGATE_CARRY_CONTRACTS", "4"))
    items = make_revisions.train_contracts(count)
    donors = [p for item in make_revisions.train_contracts(count + 2)[count:] for p in item["paragraphs"]]
    checked = {"carried": 0, "asked_again": 0}
    for item in items:
        edits = make_revisions.edits(item, donors, random.Random(item["entry"]["filename"]))
        old = split_units(" ".join(item["paragraphs"]))
        decided = _decisions(old)
        old_keys = {u.text for u in old}
        for kind, (v2, _truth, _tracked) in edits.items():
            new = split_units(" ".join(v2))
            outcomes = carry([("Clause", u.text) for u in new], decided, PLAYBOOK)
            for unit, outcome in zip(new, outcomes, strict=True):
                expected = "carried" if unit.text in old_keys else "asked_again"
                assert outcome.outcome == expected, (kind, unit.text)
                checked[outcome.outcome] += 1
            for change in align_units(old, new):  # a changed clause shows the decision on its earlier text
                if change.status == "changed":
                    outcome = outcomes[change.new_index]
                    assert outcome.earlier.clause_text == change.old_text
                    assert outcome.redline and outcome.earlier.comment
            if kind in ("one_word", "number", "reword"):
                assert any(o.outcome == "asked_again" for o in outcomes), kind
    print(f"\n{count} contracts: {checked['carried']} decisions on untouched clauses carried, "
          f"{checked['asked_again']} changed clauses asked again, none otherwise")
    assert checked["carried"] > 1000 and checked["asked_again"] >= 12


def test_one_word_or_one_digit_never_inherits_and_a_new_playbook_asks_again() -> None:
    clause = "Customer shall pay the fees within thirty (30) days of each invoice."
    earlier = _decisions(split_units(clause))
    assert carry_one("Clause", clause, earlier, PLAYBOOK).outcome == "carried"
    for edited in (clause.replace("(30)", "(31)"), clause.replace("shall", "may")):
        outcome = carry_one("Clause", edited, earlier, PLAYBOOK)
        assert outcome.outcome == "asked_again" and outcome.earlier.reviewer == "dana"
        assert "~~" in outcome.redline and "**" in outcome.redline
    assert carry_one("Clause", clause, earlier, "b" * 64).outcome == "asked_again"
    assert carry_one("Cap on Liability", clause, earlier, PLAYBOOK).outcome == "new"


@pytest.mark.skipif(not cuad.cuad_available(), reason="needs ../shared/data/cuad")
def test_on_a_per_role_gate_each_role_carries_its_own_slot_and_a_changed_clause_asks_every_role() -> None:
    """Legal approved every clause of version 1, finance asked for changes on each: on version 2 an untouched
    clause carries legal's slot by legal's decision and finance's by finance's; an edited one asks both again;
    with finance's decisions missing, finance's slot is new and never takes legal's."""
    items = make_revisions.train_contracts(2)
    donors = [p for item in make_revisions.train_contracts(4)[2:] for p in item["paragraphs"]]
    roles = ["legal", "finance"]
    checked = {"carried": 0, "asked_again": 0}
    for item in items:
        old = split_units(" ".join(item["paragraphs"]))
        legal = [d.model_copy(update={"role": "legal", "reviewer": "lee (U0LEGAL)"}) for d in _decisions(old)]
        finance = [d.model_copy(update={"role": "finance", "reviewer": "fin (U0FIN)", "decision": "changes"})
                   for d in _decisions(old)]
        old_texts = {u.text for u in old}
        for kind, (v2, _truth, _tracked) in make_revisions.edits(item, donors,
                                                                 random.Random(item["entry"]["filename"])).items():
            for unit in split_units(" ".join(v2)):
                both = carry_slots("Clause", unit.text, roles, legal + finance, PLAYBOOK)
                if unit.text in old_texts:
                    assert [(o.role, o.outcome, o.earlier.role, o.earlier.decision) for o in both] == [
                        ("legal", "carried", "legal", "approve"), ("finance", "carried", "finance", "changes")]
                    assert category_carries(both)
                    alone = carry_slots("Clause", unit.text, roles, legal, PLAYBOOK)
                    assert [o.outcome for o in alone] == ["carried", "new"] and not category_carries(alone)
                else:
                    assert [o.outcome for o in both] == ["asked_again", "asked_again"], (kind, unit.text)
                checked[both[0].outcome] += 1
    assert checked["carried"] > 500 and checked["asked_again"] >= 6
