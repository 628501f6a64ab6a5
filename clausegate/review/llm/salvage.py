"""What can still be used of a paid answer that is not the JSON asked for: its complete items.

An answer cut at the output limit, or one whose envelope does not validate (broken JSON, ``clauses``
not a list, a repair call the budget did not allow), was paid for.  Its complete item objects (a
clause with its category, passage id and quote; a suggestion with its clause id and redline) are
found one by one, and then checked exactly like the items of a valid answer
(``extract.ground_answer``, ``redlines.ground_suggestions``): nothing unchecked is used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from clausegate.review.llm.extract import ModelAnswer
from clausegate.review.llm.redlines import GenerationAnswer, ModelSuggestion

CLAUSE_KEYS = frozenset({"category", "passage_id", "text"})
SUGGESTION_KEYS = frozenset({"clause_id", "redline"})


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each JSON object that starts at a ``{`` of ``text`` and decodes, in order; a ``{`` that does not start one
    (an object cut off or broken) is skipped, and the scan goes on inside it."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        yield value
        start = text.find("{", end)


def complete_items(texts: Iterable[str], keys: frozenset[str]) -> list[dict[str, Any]]:
    """Every complete JSON object in ``texts`` that has all of ``keys``, at any depth, in order: an
    enclosing object cut off or broken is skipped and the objects inside it are read on their own."""
    found: list[dict[str, Any]] = []
    for text in texts:
        for value in json_objects(text):
            _collect(value, keys, found)
    return found


def _collect(value: Any, keys: frozenset[str], found: list[dict[str, Any]]) -> None:
    if isinstance(value, dict):
        if keys <= value.keys():
            found.append(value)
            return
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            _collect(item, keys, found)


def salvaged_answer(texts: Iterable[str]) -> ModelAnswer:
    """The clause objects of unusable extraction answers, as an answer ``ground_answer`` checks."""
    return ModelAnswer(clauses=complete_items(texts, CLAUSE_KEYS))


def salvaged_suggestions(texts: Iterable[str]) -> GenerationAnswer:
    """The valid suggestion objects of unusable generation answers (one per clause id, the first)."""
    kept: dict[str, ModelSuggestion] = {}
    for item in complete_items(texts, SUGGESTION_KEYS):
        try:
            suggestion = ModelSuggestion.model_validate(item)
        except ValidationError:
            continue
        kept.setdefault(suggestion.clause_id, suggestion)
    return GenerationAnswer(suggestions=list(kept.values()))
