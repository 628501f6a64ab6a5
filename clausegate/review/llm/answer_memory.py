"""Model answers remembered per passage and category, so the next version of a contract pays only for what changed.

The cascade shows the model the best few kept passages of each category it asks about (``select_passages``).  One
answer about such a prompt says, for every (passage, category) pair it covers, either the clauses of that category
quoted from the passage, or that the passage holds none: an explicit "not there" (the model's ``absent`` entry), or
implied, because the model quoted the category from another passage.  Each pair is remembered under a key of the
passage's normalised words and the model (:func:`passage_key`), in a slot of the category and the prompt's wording
of it (:func:`slot`).

A review first looks every pair up; only the pairs no earlier answer covers are sent (:func:`to_ask`), in one
prompt, and what is remembered joins the new answer (:func:`join`).  So the first review of a contract sends one
prompt, as before, and a one-clause change sends only that clause's passage with the categories it was chosen for.
Pure logic: the store is the caller's (``clausegate.pipeline.cascade``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from clausegate.review.llm.extract import (
    Absence,
    ExtractionPrompt,
    PromptPassage,
    locate_quote,
    render_extraction_prompt,
)
from clausegate.review.schemas import Clause, Cost, FilteredDocument
from clausegate.review.text_identity import normalise

KEY_PREFIX = "cg-model-pair-"
CALL_PREFIX = "cg-model-call-"


class RememberedClause(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    confidence: float
    reason: str | None = None


class PairAnswer(BaseModel):
    """What one answer said of one passage for one category; ``call``: the key of the answer that paid for it."""

    model_config = ConfigDict(frozen=True)

    clauses: list[RememberedClause] = []
    absent: bool = False  # an explicit "not there" covering this passage
    reason: str = ""  # the model's reason for "not there"
    call: str


class CallReceipt(BaseModel):
    """Who paid for an answer and what it cost: a review that reuses it reports it as spend reused."""

    model_config = ConfigDict(frozen=True)

    cost: Cost
    paid_by: str
    model: str


class PassageAnswers(BaseModel):
    """Everything remembered of one passage: per category asked about it (and the prompt's wording of it)."""

    answers: dict[str, PairAnswer] = {}


@dataclass(frozen=True)
class Pair:
    passage: PromptPassage
    category: str


@lru_cache(maxsize=256)
def _wording(category: str) -> str:
    """The prompt's words for ``category`` (system, question, rules): another wording is another question."""
    probe = render_extraction_prompt([category], [PromptPassage(id="p0", page=1, text="", score=0.0)])
    return hashlib.sha256(f"{probe.system}\n{probe.user}".encode()).hexdigest()


def passage_key(text: str, model: str) -> str:
    """Where a passage's answers are remembered: its normalised words and the model (block, model, endpoint)."""
    return KEY_PREFIX + hashlib.sha256(f"{model}\n{normalise(text)}".encode()).hexdigest()[:48]


def slot(category: str) -> str:
    """A category's place in a passage's record: with the prompt's wording of it (another wording, another slot)."""
    return f"{category}|{_wording(category)[:16]}"


def answers_of(records: dict[str, PassageAnswers], categories: list[str]) -> dict[tuple[str, str], PairAnswer]:
    """(passage id, category) -> remembered answer, from the records of today's passages (by passage id)."""
    return {(pid, c): found for pid, record in records.items() for c in categories
            if (found := record.answers.get(slot(c))) is not None}


def remembered_records(records: dict[str, PassageAnswers], said: dict[tuple[str, str], PairAnswer],
                       ) -> dict[str, PassageAnswers]:
    """The records to write: each passage's earlier record with this answer's pairs added (by passage id)."""
    out: dict[str, dict[str, PairAnswer]] = {}
    for (pid, category), answer in said.items():
        out.setdefault(pid, dict(records[pid].answers) if pid in records else {})[slot(category)] = answer
    return {pid: PassageAnswers(answers=answers) for pid, answers in out.items()}


def call_key(prompt: ExtractionPrompt, model: str) -> str:
    return CALL_PREFIX + hashlib.sha256(f"{model}\n{prompt.system}\n{prompt.user}".encode()).hexdigest()[:48]


def pairs(filtered: FilteredDocument, categories: list[str], per_category: int) -> list[Pair]:
    """The (passage, category) pairs ``select_passages`` would show: each category's best ``per_category``."""
    out = []
    for category in categories:
        ranked = sorted(range(len(filtered.passages)),
                        key=lambda i: filtered.passages[i].categories.get(category, 0.0), reverse=True)
        for i in ranked[:per_category]:
            p = filtered.passages[i]
            passage = PromptPassage(id=f"p{i}", page=p.page, text=p.text, score=p.categories.get(category, 0.0))
            out.append(Pair(passage=passage, category=category))
    return out


def to_ask(wanted: list[Pair], remembered: dict[tuple[str, str], PairAnswer]) -> list[Pair]:
    """The pairs no earlier answer covers, and every pair of a category the remembered answers never decided
    (all its pairs remembered, yet no clause and no explicit "not there": the model did not answer about it)."""
    by_category: dict[str, list[Pair]] = {}
    for pair in wanted:
        by_category.setdefault(pair.category, []).append(pair)
    out = []
    for items in by_category.values():
        answers = [remembered.get((p.passage.id, p.category)) for p in items]
        silent = all(a is not None and not a.clauses and not a.absent for a in answers)
        out += [p for p, a in zip(items, answers, strict=True) if a is None or silent]
    return out


def prompt_for(wanted: list[Pair]) -> ExtractionPrompt:
    """One prompt for ``wanted``: its passages in document order (each at its best score), its categories."""
    best: dict[str, PromptPassage] = {}
    for pair in wanted:
        if pair.passage.id not in best or pair.passage.score > best[pair.passage.id].score:
            best[pair.passage.id] = pair.passage
    ordered = sorted(best.values(), key=lambda p: int(p.id[1:]))
    return render_extraction_prompt(list(dict.fromkeys(p.category for p in wanted)), ordered)


def split(prompt: ExtractionPrompt, clauses: list[Clause], absent: list[Absence], answered: list[str] | None,
          call: str) -> dict[tuple[str, str], PairAnswer]:
    """The answer to ``prompt`` per (passage id, category) it covers (``answered`` None: every category asked)."""
    out: dict[tuple[str, str], PairAnswer] = {}
    said_absent = {a.category: a for a in absent}
    for category in prompt.categories:
        if answered is not None and category not in answered:
            continue
        quoted: dict[str, list[RememberedClause]] = {}
        for clause in (c for c in clauses if c.category == category):
            holder = next((p for p in prompt.passages if locate_quote(clause.text, p.text) is not None), None)
            if holder is not None:
                quoted.setdefault(holder.id, []).append(
                    RememberedClause(text=clause.text, confidence=clause.confidence, reason=clause.reason))
        absence = said_absent.get(category) if not quoted else None
        for passage in prompt.passages:
            out[(passage.id, category)] = PairAnswer(
                clauses=quoted.get(passage.id, []), absent=absence is not None,
                reason=absence.reason if absence is not None else "", call=call)
    return out


def join(wanted: list[Pair], answers: dict[tuple[str, str], PairAnswer], models: dict[str, str], covered: set[str],
         ) -> tuple[list[Clause], list[Absence], set[str]]:
    """The clauses and "not there" answers for every category of ``wanted`` whose pairs all have an answer
    (``answers``: remembered and new, by (passage id, category); ``models``: call key -> model name), each clause
    re-read from today's passage (its page is today's), and the categories left without an answer.  A category the
    new answer covers (``covered``) is answered on the pairs it has (a prompt cut to fit the context window drops
    some).  A clause quoted from any of today's passages counts, not only from its category's best ones (the model
    reads every passage for every category it is asked).  A category is "not there" when no passage quotes it and
    at least one of its pairs says so explicitly (the others were read and quoted nothing)."""
    passages = {p.passage.id: p.passage for p in wanted}
    by_category: dict[str, list[tuple[Pair, PairAnswer | None]]] = {}
    for pair in wanted:
        by_category.setdefault(pair.category, []).append((pair, answers.get((pair.passage.id, pair.category))))
    clauses: list[Clause] = []
    absences: list[Absence] = []
    unanswered: set[str] = set()
    for category, items in by_category.items():
        if any(a is None for _, a in items):
            if category not in covered:
                unanswered.add(category)
                continue
            items = [(p, a) for p, a in items if a is not None]
        quoted = []
        for pid, passage in passages.items():
            answer = answers.get((pid, category))
            for kept in answer.clauses if answer else []:
                text = locate_quote(kept.text, passage.text)
                if text is not None:
                    quoted.append(Clause(category=category, text=text.strip(), pages=[passage.page],
                                         confidence=kept.confidence, source="model",
                                         model=models.get(answer.call, ""), reason=kept.reason))
        clauses += _unique(quoted)
        if not quoted and any(a.absent for _, a in items):
            absences.append(Absence(category=category, passage_ids=list(dict.fromkeys(p.passage.id for p, _ in items)),
                                    reason=next((a.reason for _, a in items if a.reason), "")))
    return clauses, absences, unanswered


def _unique(clauses: list[Clause]) -> list[Clause]:
    seen, out = set(), []
    for clause in clauses:
        if (clause.category, clause.text) not in seen:
            seen.add((clause.category, clause.text))
            out.append(clause)
    return out


def shown(wanted: list[Pair], sent: ExtractionPrompt | None) -> list[PromptPassage]:
    """Every passage the model has read for this review: the remembered pairs' and the prompt's."""
    best = {p.passage.id: p.passage for p in wanted}
    if sent is not None:
        best.update({p.id: p for p in sent.passages})
    return sorted(best.values(), key=lambda p: int(p.id[1:]))


__all__ = ["CallReceipt", "Pair", "PairAnswer", "PassageAnswers", "RememberedClause", "answers_of", "call_key", "join",
           "pairs", "passage_key", "prompt_for", "remembered_records", "shown", "slot", "split", "to_ask"]
