"""What changed between two versions: clauses aligned by content, layout and hyphenation never a change."""

from __future__ import annotations

from clausegate.review.versions.align import align_units
from clausegate.review.versions.units import display_text, split_units

CLAUSES = [
    "1. Term. This Agreement starts on the Effective Date and runs for three (3) years.",
    "2. Fees. Customer shall pay the fees within thirty (30) days of each invoice.",
    "3. Liability. Neither party's liability shall exceed the fees paid in the prior twelve months.",
    "4. Confidentiality. Each party shall keep the other party's Confidential Information secret.",
    "5. Governing Law. This Agreement is governed by the laws of the State of New York.",
]


def _statuses(old: list[str], new: list[str]) -> list[tuple[str, str | None, str | None]]:
    changes = align_units(split_units(" ".join(old)), split_units(" ".join(new)))
    return [(c.status, c.old_text, c.new_text) for c in changes if c.status != "unchanged"]


def test_the_same_words_in_another_layout_are_no_change() -> None:
    pdf_pages = ["1. Term. This Agreement starts on the Ef-\nfective Date and runs for three (3)\nyears. 2. Fees. "
                 "Customer shall pay the fees within thirty (30) days of each in-\nvoice.",
                 " ".join(CLAUSES[2:])]
    old = split_units(display_text(pdf_pages))
    new = split_units(display_text(["\n\n".join(CLAUSES)]))
    assert [c.status for c in align_units(old, new)] == ["unchanged"] * len(CLAUSES)


def test_a_moved_clause_is_a_move_not_a_deletion_and_an_insertion() -> None:
    moved = [CLAUSES[0], CLAUSES[2], CLAUSES[3], CLAUSES[4], CLAUSES[1]]
    assert _statuses(CLAUSES, moved) == [("moved", CLAUSES[1], CLAUSES[1])]


def test_one_digit_changed_is_a_changed_clause_with_its_redline() -> None:
    new = [*CLAUSES[:1], CLAUSES[1].replace("(30)", "(45)"), *CLAUSES[2:]]
    changes = [c for c in align_units(split_units(" ".join(CLAUSES)), split_units(" ".join(new)))
               if c.status != "unchanged"]
    assert [(c.status, c.old_text, c.new_text) for c in changes] == [("changed", CLAUSES[1], new[1])]
    assert "~~(30)~~ **(45)**" in changes[0].redline


def test_added_and_removed_clauses_are_placed_where_they_are() -> None:
    new = [CLAUSES[0], CLAUSES[1], "6. Audit. Customer may audit the supplier's records once a year.", *CLAUSES[3:]]
    assert _statuses(CLAUSES, new) == [("removed", CLAUSES[2], None),
                                       ("added", None, "6. Audit. Customer may audit the supplier's records once a "
                                                       "year.")]


def test_a_table_of_bare_figures_in_another_layout_is_no_change() -> None:
    """Lines of figures and dashes: one layout puts a rule before each figure, the other the figure alone; joined,
    ``0 -`` / ``0 -`` must not read as a printed page number ``- 0 -`` in one of them only."""
    head = "Links subtotal [*****] [*****] [*****] -"
    tail = "S&P Links Total [*****] [*****] [*****]. The parties agree to cooperate in good faith."
    wide = "\n".join([head, "-" * 60 + " 0 -", "-" * 60 + " 0 -", "-" * 60 + " 0 -", tail])
    narrow = "\n".join([head, "0 -", "0 -", "0 -", tail])
    assert display_text([wide]) == display_text([narrow])
    assert {c.status for c in align_units(split_units(display_text([wide])),
                                          split_units(display_text([narrow])))} == {"unchanged"}
    assert display_text(["in compliance -5- with the law"]) == "in compliance with the law"  # a page number
