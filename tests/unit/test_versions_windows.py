"""The model's prompts per window of passages: a changed passage changes its own window's prompt only, and the
windows' "not there" answers join into one only when every window asked says so."""

from __future__ import annotations

from clausegate.review.llm.extract import Absence, build_prompt, combine_absences, group_prompts
from clausegate.review.schemas import FilteredDocument, Passage

CATS = ["Cap on Liability", "Governing Law", "Insurance"]


def _filtered(texts: list[str]) -> FilteredDocument:
    passages = [Passage(page=1 + i // 4, text=t, score=1.0,
                        categories={c: (0.9 if (i + k) % 3 == 0 else 0.1 * (i % 5)) for k, c in enumerate(CATS)})
                for i, t in enumerate(texts)]
    return FilteredDocument(contract_id="a" * 64, passages=passages, pages_kept=[1, 2, 3, 4], tokens_total=1000,
                            tokens_kept=800)


TEXTS = [f"Clause {i}. The supplier shall keep insurance number {i} and the cap is {i} times the fees." for i in
         range(16)]


def test_the_windows_send_the_passages_one_prompt_would_and_only_the_edited_window_changes() -> None:
    windows = group_prompts(_filtered(TEXTS), CATS)
    assert len(windows) > 1
    whole = build_prompt(_filtered(TEXTS), CATS)
    assert sorted(p.id for w in windows for p in w.passages) == sorted(p.id for p in whole.passages)
    for window in windows:  # each asks only the categories its passages were chosen for
        assert set(window.categories) <= set(CATS) and window.categories
    edited = list(TEXTS)
    first_sent = int(windows[0].passages[0].id[1:])
    edited[first_sent] = edited[first_sent].replace("supplier", "vendor")
    again = group_prompts(_filtered(edited), CATS)
    changed = [a.user != b.user for a, b in zip(windows, again, strict=True)]
    assert changed == [True] + [False] * (len(windows) - 1)


def test_not_there_only_when_every_window_asking_says_so() -> None:
    said = [Absence(category="Insurance", passage_ids=["p0"], reason="no policy named"),
            Absence(category="Insurance", passage_ids=["p5"], reason="not here either"),
            Absence(category="Governing Law", passage_ids=["p1"], reason="no law named")]
    joined = combine_absences(said, found=set(), asked={"Insurance": 2, "Governing Law": 2})
    assert [(a.category, a.passage_ids, a.reason) for a in joined] == [("Insurance", ["p0", "p5"], "no policy named")]
    assert combine_absences(said, found={"Insurance"}, asked={"Insurance": 2, "Governing Law": 2}) == []
