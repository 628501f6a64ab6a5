"""Model answers remembered per passage and category: what one answer says of each pair, which categories memory
decides, and what a changed passage sends again (clausegate/review/llm/answer_memory.py)."""

from __future__ import annotations

from clausegate.review.llm import answer_memory as memory
from clausegate.review.llm.extract import Absence
from clausegate.review.schemas import Clause, FilteredDocument, Passage

MODEL = "block/model-x"
TEXTS = [
    "This Agreement is governed by the laws of the State of New York without regard to conflicts of law.",
    "Supplier shall maintain commercial general liability insurance of at least $1,000,000 per occurrence.",
    "In no event shall either party's aggregate liability exceed the fees paid in the prior twelve months.",
    "Customer may audit Supplier's records once per year on thirty days' written notice.",
]
SCORES = [{"Governing Law": 0.9}, {"Insurance": 0.8}, {"Cap on Liability": 0.7, "Insurance": 0.1},
          {"Audit Rights": 0.6}]
CATS = ["Governing Law", "Insurance", "Cap on Liability"]


def _filtered(texts: list[str]) -> FilteredDocument:
    passages = [Passage(page=i + 1, text=t, score=1.0, categories=s)
                for i, (t, s) in enumerate(zip(texts, SCORES, strict=True))]
    return FilteredDocument(contract_id="0" * 64, passages=passages, pages_kept=[1, 2, 3, 4], tokens_total=100,
                            tokens_kept=100)


def _answer(prompt, call="call-1"):
    """The model found Governing Law in p0 and Cap in p2, and says Insurance is not there."""
    found = [Clause(category="Governing Law", text=TEXTS[0][:60], pages=[1], confidence=0.9, source="model",
                    model="m", reason="names the law"),
             Clause(category="Cap on Liability", text=TEXTS[2][:70], pages=[3], confidence=0.8, source="model",
                    model="m", reason="caps liability")]
    absent = [Absence(category="Insurance", passage_ids=["p1", "p2"], reason="a duty to insure, not a clause")]
    return memory.split(prompt, [c for c in found if c.category in prompt.categories],
                        [a for a in absent if a.category in prompt.categories], None, call)


def _store(filtered, said, model=MODEL) -> dict:
    """As the cascade writes them: one record per passage, under its words' and the model's key."""
    texts = {f"p{i}": p.text for i, p in enumerate(filtered.passages)}
    return {memory.passage_key(texts[pid], model): record
            for pid, record in memory.remembered_records({}, said).items()}


def _recall(filtered, store, model=MODEL):
    """As the cascade reads them: today's passages' records, by today's passage ids."""
    records = {f"p{i}": store[key] for i, p in enumerate(filtered.passages)
               if (key := memory.passage_key(p.text, model)) in store}
    return memory.answers_of(records, CATS)


def _remember(filtered, said):
    return _recall(filtered, _store(filtered, said))


def test_one_answer_covers_every_pair_it_was_asked_and_memory_then_decides_every_category():
    filtered = _filtered(TEXTS)
    wanted = memory.pairs(filtered, CATS, per_category=3)
    prompt = memory.prompt_for(wanted)
    assert prompt.categories == CATS and [p.id for p in prompt.passages] == ["p0", "p1", "p2"]  # each's best 3
    said = _answer(prompt)
    assert said[("p0", "Governing Law")].clauses and not said[("p1", "Governing Law")].clauses
    assert not said[("p1", "Governing Law")].absent  # implied: quoted from another passage
    assert said[("p1", "Insurance")].absent and said[("p1", "Insurance")].reason
    remembered = _remember(filtered, said)
    assert memory.to_ask(wanted, remembered) == []
    clauses, absent, unanswered = memory.join(wanted, remembered, {"call-1": "m"}, set())
    assert {c.category for c in clauses} == {"Governing Law", "Cap on Liability"} and not unanswered
    assert {c.model for c in clauses} == {"m"}
    assert [a.category for a in absent] == ["Insurance"] and absent[0].reason


def test_a_one_word_change_sends_only_the_changed_passage_with_its_categories():
    filtered = _filtered(TEXTS)
    store = _store(filtered, _answer(memory.prompt_for(memory.pairs(filtered, CATS, 2))))
    edited = [*TEXTS[:2], TEXTS[2].replace("twelve", "six"), TEXTS[3]]
    remembered = _recall(_filtered(edited), store)
    wanted = memory.pairs(_filtered(edited), CATS, per_category=2)  # GL: p0 p1; Insurance: p1 p2; Cap: p2 p0
    again = memory.prompt_for(memory.to_ask(wanted, remembered))
    assert again.categories == ["Insurance", "Cap on Liability"]  # the changed passage was read for both
    assert [p.id for p in again.passages] == ["p2"]  # and only it is sent


def test_another_model_or_wording_remembers_nothing():
    filtered = _filtered(TEXTS)
    store = _store(filtered, _answer(memory.prompt_for(memory.pairs(filtered, CATS, 3))))
    wanted = memory.pairs(filtered, CATS, 3)
    assert memory.to_ask(wanted, _recall(filtered, store, model="block/model-y")) == wanted
    assert memory.to_ask(wanted, _recall(filtered, store)) == []


def test_a_clause_changed_away_leaves_its_category_to_the_new_answer():
    filtered = _filtered(TEXTS)
    store = _store(filtered, _answer(memory.prompt_for(memory.pairs(filtered, CATS, 3))))
    gone = [TEXTS[0], TEXTS[1], "Each party shall bear its own costs of performance under this Agreement.", TEXTS[3]]
    changed = _filtered(gone)
    remembered = _recall(changed, store)
    wanted = memory.pairs(changed, CATS, per_category=3)
    asking = memory.to_ask(wanted, remembered)
    assert {p.passage.id for p in asking} == {"p2"}
    prompt = memory.prompt_for(asking)
    said = memory.split(prompt, [], [Absence(category="Cap on Liability", passage_ids=["p2"], reason="costs only")],
                        None, "call-2")
    new = dict(said)
    models = {"call-1": "m", "call-2": "m"}
    clauses, absent, _ = memory.join(wanted, {**remembered, **new}, models, {"Cap on Liability"})
    assert "Cap on Liability" not in {c.category for c in clauses}
    assert "Cap on Liability" in {a.category for a in absent}


def test_a_category_the_model_never_answered_is_asked_again_whole():
    filtered = _filtered(TEXTS)
    wanted = memory.pairs(filtered, CATS, 3)
    silent = memory.split(memory.prompt_for(wanted), [], [], None, "call-1")  # no clause, no "not there"
    remembered = _remember(filtered, silent)
    assert memory.to_ask(wanted, remembered) == wanted


def test_a_truncated_answer_remembers_only_the_categories_it_covers():
    filtered = _filtered(TEXTS)
    prompt = memory.prompt_for(memory.pairs(filtered, CATS, 3))
    said = memory.split(prompt, [], [], ["Governing Law"], "call-1")
    assert {cat for _, cat in said} == {"Governing Law"}


def test_the_extraction_prompt_shows_the_answer_shape_not_the_whole_schema():
    from clausegate.review.llm.extract import ModelAnswer, PromptPassage, render_extraction_prompt
    from clausegate.review.llm.prompts import shape

    drawn = shape(ModelAnswer.model_json_schema())
    assert drawn.startswith('{"clauses": [{"category": string, "passage_id": string, "text": string, '
                            '"confidence": number 0-1, "reason": string}, ...], "absent": [{"category": string')
    system = render_extraction_prompt(["Cap on Liability"], [PromptPassage(id="p0", page=1, text="x", score=0)]).system
    assert drawn in system and "$defs" not in system


def test_a_clause_quoted_from_a_passage_shown_for_another_category_counts():
    filtered = _filtered(TEXTS)
    wanted = memory.pairs(filtered, CATS, per_category=1)  # GL: p0, Insurance: p1, Cap: p2
    prompt = memory.prompt_for(wanted)
    elsewhere = Clause(category="Governing Law", text=TEXTS[1][:70], pages=[2], confidence=0.7, source="model",
                       model="m", reason="read as the law clause")
    said = memory.split(prompt, [elsewhere], [], None, "call-1")
    clauses, _, _ = memory.join(wanted, said, {"call-1": "m"}, set(CATS))
    assert [(c.category, c.pages) for c in clauses] == [("Governing Law", [2])]
