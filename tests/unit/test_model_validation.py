"""The model's answer, clause by clause; the cascade's rule; timeouts that fit together (no Prefect)."""

from __future__ import annotations

import json

import pytest

from clausegate.errors import PlaybookError
from clausegate.pipeline.cascade import final_status
from clausegate.providers.structured import parse_json_object
from clausegate.review.llm.extract import (
    ModelAnswer,
    PromptPassage,
    ground_answer,
    locate_quote,
    min_quote_words,
    render_extraction_prompt,
)
from clausegate.review.llm.merge import MergeRules, merge_findings
from clausegate.review.playbook import REQUESTS_PER_ATTEMPT, check_step_timeouts, parse_playbook
from clausegate.review.schemas import Clause

CAP = ("Supplier's aggregate liability under this Agreement shall not exceed the <Cap Amount> "
       "set out in Schedule 2, and damages > 5% of the fees are excluded.")
LD = ("If Supplier fails to deliver on time, Supplier shall pay Customer as liquidated damages an amount "
      "equal to two percent of the order value for each week of delay.")
GOV = "This Agreement shall be governed by the laws of the State of New York."


def prompt():
    passages = [PromptPassage(id="p0", page=2, text=GOV, score=0.5),
                PromptPassage(id="p1", page=3, text=CAP, score=0.9),
                PromptPassage(id="p2", page=4, text=LD, score=0.8)]
    return render_extraction_prompt(["Cap on Liability", "Liquidated Damages", "Governing Law"], passages)


def ground(*clauses):
    answer = ModelAnswer.model_validate(parse_json_object(_json({"clauses": list(clauses)})))
    return ground_answer(answer, prompt(), model="m")


def _json(value) -> str:
    return json.dumps(value)


def item(category, passage, text, confidence=0.9):
    return {"category": category, "passage_id": passage, "text": text, "confidence": confidence}


def test_prompt_shows_passages_neutralised_and_asks_for_enough_words():
    user = prompt().user
    assert "‹Cap Amount›" in user and "<Cap Amount>" not in user
    assert '"Cap on Liability": ' in user and f"quote at least {min_quote_words('Cap on Liability')} words" in user


def test_whitespace_only_quote_is_dropped_with_a_notice_and_the_rest_is_kept():
    clauses, notices = ground(item("Liquidated Damages", "p2", "   \n\t "), item("Governing Law", "p0", GOV))
    assert [c.category for c in clauses] == ["Governing Law"]
    assert [n.code for n in notices] == ["CG-MODEL-QUOTE-EMPTY"] and notices[0].page == 4
    clauses, notices = ground(item("Liquidated Damages", "p2", ""))
    assert clauses == [] and [n.code for n in notices] == ["CG-MODEL-QUOTE-EMPTY"]


def test_three_letter_quote_is_too_short_for_the_category():
    clauses, notices = ground(item("Cap on Liability", "p1", "the", confidence=0.98))
    assert clauses == [] and [n.code for n in notices] == ["CG-MODEL-QUOTE-TOO-SHORT"]
    assert "Cap on Liability needs at least 6" in notices[0].message and "1 word" in notices[0].message
    assert min_quote_words("Parties") == 1  # a party's name is legitimately short


def test_verbatim_quote_of_neutralised_text_maps_back_to_the_raw_text():
    seen_by_model = "aggregate liability under this Agreement shall not exceed the ‹Cap Amount› set out in Schedule 2"
    (clause,), notices = ground(item("Cap on Liability", "p1", seen_by_model))
    assert notices == []
    assert clause.text == ("aggregate liability under this Agreement shall not exceed the <Cap Amount> "
                           "set out in Schedule 2")
    (clause,), _ = ground(item("Cap on Liability", "p1", "and damages › 5% of the fees are excluded."))
    assert clause.text == "and damages > 5% of the fees are excluded."
    # a model that un-neutralises the characters itself is grounded too; whitespace and case are free
    (clause,), _ = ground(item("Cap on Liability", "p1", "SHALL NOT EXCEED   the <Cap Amount>\nset out"))
    assert clause.text == "shall not exceed the <Cap Amount> set out"


def test_malformed_clauses_are_dropped_one_by_one_never_raised():
    clauses, notices = ground(
        "not an object", {"category": "Governing Law"}, item("Governing Law", "p0", GOV, confidence=7),
        item("Governing Law", 3, GOV), item("Exclusivity", "p0", GOV), item("Governing Law", "p9", GOV),
        item("Governing Law", "p0", "governed by the laws of Delaware and nothing else"),
        {**item("Liquidated Damages", "p2", LD), "reason": "extra keys are ignored"},
        item("Liquidated Damages", "p2", LD),  # a duplicate
    )
    assert [c.category for c in clauses] == ["Liquidated Damages"]
    assert [n.code for n in notices] == ["CG-MODEL-CLAUSE-INVALID"] * 4 + ["CG-MODEL-UNGROUNDED"] * 3
    assert "field 'confidence'" in notices[2].message and "category not asked" in notices[4].message


def test_locate_quote():
    assert locate_quote("“quoted”  – text", 'Some "quoted" - text here') == '"quoted" - text'
    assert locate_quote("", "anything") is None and locate_quote("missing", "anything") is None


# ------------------------------------------------------------------ the cascade's rule

def offline(category, text, page=3, confidence=0.7):
    return Clause(category=category, text=text, pages=[page], confidence=confidence, source="offline")


def found(category, text, page=3, confidence=0.9):
    return Clause(category=category, text=text, pages=[page], confidence=confidence, source="model", model="m")


def merge(ours, theirs, sent, *, must_confirm):
    """The merge with every passage shown and no model reasons: nothing can be cleared."""
    shown = prompt().passages
    merged = merge_findings(ours, theirs, [], sent, shown, {}, MergeRules(
        weight=2.0, must_confirm=frozenset(must_confirm), may_clear=lambda _: True), model="m")
    return merged.clauses, merged.notices, merged.gate


def test_model_finding_nothing_never_removes_an_offline_finding():
    ours = [offline("Liquidated Damages", LD), offline("Insurance", "insurance text"),
            offline("Audit Rights", "audit text")]
    clauses, notices, gate = merge(ours, [], ["Liquidated Damages", "Audit Rights"],
                                   must_confirm={"Liquidated Damages"})
    assert {c.category for c in clauses} == {"Liquidated Damages", "Insurance", "Audit Rights"}
    disputed = {c.category: c.dispute for c in clauses if c.dispute}
    assert set(disputed) == {"Liquidated Damages", "Audit Rights"}
    assert disputed["Liquidated Damages"].model_found == "nothing" and disputed["Liquidated Damages"].model == "m"
    assert gate == ["Liquidated Damages"]  # only gated / high-risk categories go to a person
    assert [n.code for n in notices] == ["CG-MODEL-DISPUTED"] * 2 and "a person decides" in notices[0].message


def test_model_quoting_other_text_is_a_dispute_with_both_sides_and_adds_its_clause():
    ours = [offline("Cap on Liability", LD, page=4)]
    theirs = [found("Cap on Liability", "shall not exceed the <Cap Amount>", page=3)]
    clauses, notices, gate = merge(ours, theirs, ["Cap on Liability"],
                                   must_confirm={"Cap on Liability"})
    kept = next(c for c in clauses if c.source == "offline")
    assert kept.text == LD and kept.dispute.model_found == "other"
    assert kept.dispute.model_text == "shall not exceed the <Cap Amount>" and kept.dispute.model_pages == [3]
    assert theirs[0] in clauses and gate == ["Cap on Liability"]


def test_model_confirming_an_offline_finding_replaces_it_with_its_exact_quote():
    theirs = [found("Liquidated Damages", "Supplier shall pay Customer as liquidated damages an amount", page=4)]
    clauses, notices, gate = merge([offline("Liquidated Damages", LD, page=4)], theirs, ["Liquidated Damages"],
                                   must_confirm={"Liquidated Damages"})
    assert clauses == theirs and notices == [] and gate == []


def test_final_status():
    assert final_status("complete", True) == "degraded" and final_status("complete", False) == "complete"
    assert final_status("pending_decision", True) == "pending_decision"


# ------------------------------------------------------------------ timeouts that fit together

BOOK = """
name: t
categories: [Insurance, Cap on Liability]
steps:
  extract: {extractor: anthropic-model/x, timeout_seconds: %s}
  generate: {provider: openai-compatible-model/y, timeout_seconds: 400}
"""


def test_step_timeout_shorter_than_the_http_calls_of_one_attempt_is_rejected_naming_the_field():
    book = parse_playbook(BOOK % 60)
    timeouts = {"anthropic-model/x": (5.0, 120.0), "openai-compatible-model/y": (5.0, 120.0)}
    with pytest.raises(PlaybookError) as caught:
        check_step_timeouts(book, timeouts)
    message = str(caught.value)
    assert caught.value.code == "CG-PLAYBOOK-INVALID" and "steps.extract.timeout_seconds" in message
    assert f"{REQUESTS_PER_ATTEMPT} requests" in message and "= 250 s" in message
    assert "steps.generate" not in message  # 400 s holds 2 x 125 s
    assert "lower connect_timeout_seconds/read_timeout_seconds" in caught.value.hint
    check_step_timeouts(parse_playbook(BOOK % 250), timeouts)  # exactly enough is fine
    check_step_timeouts(book, {})  # blocks not known: nothing to check here
    check_step_timeouts(book, timeouts, extractor="offline")  # --extractor offline: only generate is checked


# ------------------------------------------------------------------ what a paid, unusable answer still holds

def test_a_cut_or_malformed_answer_keeps_its_complete_clauses_checked_like_any_answer():
    from clausegate.review.llm.salvage import salvaged_answer

    gov = {"category": "Governing Law", "passage_id": "p0", "text": GOV, "confidence": 0.9}
    ld = {"category": "Liquidated Damages", "passage_id": "p2", "text": LD, "confidence": 0.8}
    made_up = gov | {"text": "the laws of Mars shall govern this whole agreement"}
    whole = json.dumps({"clauses": [gov, made_up, ld]})
    cut = whole[: whole.index('"Liquidated Damages"') + 30]  # cut inside the last clause
    clauses, notices = ground_answer(salvaged_answer([cut]), prompt(), model="m")
    assert [c.category for c in clauses] == ["Governing Law"]  # the made-up one is checked, and dropped
    assert [n.code for n in notices] == ["CG-MODEL-UNGROUNDED"]

    keyed = "Here: " + json.dumps({"clauses": {"1": gov, "2": ld}}) + " trailing {broken"  # not a list: invalid
    assert [c.category for c in ground_answer(salvaged_answer([keyed]), prompt(), model="m")[0]] == [
        "Governing Law", "Liquidated Damages"]
    assert salvaged_answer(["I'm sorry, I cannot answer in JSON."]).clauses == []


def test_a_cut_generation_answer_keeps_its_complete_valid_suggestions():
    from clausegate.review.llm.salvage import salvaged_suggestions

    good = {"clause_id": "c0", "redline": "Cap liability at the fees paid.", "questions": ["Why unlimited?"]}
    empty = {"clause_id": "c1", "redline": ""}  # fails the schema
    text = json.dumps({"suggestions": [good, empty, good | {"clause_id": "c2"}]})[:-40]
    assert [s.clause_id for s in salvaged_suggestions([text]).suggestions] == ["c0"]
