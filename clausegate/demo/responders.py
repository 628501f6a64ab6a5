"""A contract-aware responder for the fake model servers, so the whole pipeline runs "with a model"
offline: it reads the passages and categories out of ClauseGate's own prompts and answers in the
requested JSON, using the offline scorer as its "understanding".  Deterministic."""

from __future__ import annotations

import json
import re

from clausegate.demo.model_server import prompts_of
from clausegate.review.key_terms.model import REQUEST_TAG
from clausegate.review.key_terms.reading import read_terms
from clausegate.review.offline.model import load_model, score_passages

_PASSAGE = re.compile(
    r'<contract_passage id="(?P<id>[^"]+)" page="(?P<page>\d+)">\n(?P<text>.*?)\n</contract_passage>', re.S)
_CLAUSE = re.compile(r'<contract_clause id="(?P<id>[^"]+)" category="(?P<category>[^"]+)" page="\d+">', re.S)
_CATEGORY = re.compile(r'^- "(?P<name>[^"]+)": ', re.M)
FIND_AT = 0.35


def _first_sentence(text: str) -> str:
    """The passage's first sentence when it is a real one (8+ words), else the whole passage."""
    cut = re.split(r"(?<=[.;:])\s", text.strip(), maxsplit=1)[0]
    return cut if len(cut) >= 20 and len(cut.split()) >= 8 else text.strip()


def extraction_answer(user: str) -> dict:
    passages = [m.groupdict() for m in _PASSAGE.finditer(user)]
    categories = _CATEGORY.findall(user)
    if not passages or not categories:
        return {"clauses": []}
    model = load_model()
    scores = score_passages([p["text"] for p in passages], model)
    clauses, absent = [], []
    for category in categories:
        column = scores[:, model.category_index[category]]
        best = int(column.argmax())
        if float(column[best]) >= FIND_AT:
            clauses.append({"category": category, "passage_id": passages[best]["id"],
                            "text": _first_sentence(passages[best]["text"]),
                            "confidence": round(float(column[best]), 3),
                            "reason": "reads as this category"})
        else:
            absent.append({"category": category, "passage_ids": [passages[best]["id"]], "reason": "none reads as it"})
    return {"clauses": clauses, "absent": absent}


def generation_answer(user: str) -> dict:
    return {"suggestions": [
        {"clause_id": m["id"],
         "redline": f"Replace with: each party's aggregate liability under this Agreement for {m['category']} "
                    "matters shall not exceed the fees paid in the twelve months before the claim.",
         "questions": [f"What is the business reason for the {m['category']} term?",
                       "Would you accept a cap tied to fees paid?"]}
        for m in _CLAUSE.finditer(user)]}


_CONTRACT_TEXT = re.compile(r"<contract_text>\n(?P<text>.*)\n</contract_text>", re.S)


def terms_answer(user: str) -> dict:
    """The key terms the offline reader finds in the prompt's contract text, each with its sentence as quote."""
    m = _CONTRACT_TEXT.search(user)
    if not m:
        return {"terms": []}
    reading = read_terms([m.group("text")])
    return {"terms": [{"name": t.name, "value": t.display if t.name in ("renewal_term", "notice_period") else t.value,
                       "quote": t.quote} for t in reading.terms.values() if t.value and t.quote]}


def contract_responder(request_json: dict) -> str:
    """Answer ClauseGate's extraction, generation and key-terms prompts; anything else gets an empty answer."""
    _, user = prompts_of(request_json)
    if f"<{REQUEST_TAG}>" in user:
        return json.dumps(terms_answer(user))
    if "<contract_passage" in user:
        return json.dumps(extraction_answer(user))
    if "<contract_clause" in user:
        return json.dumps(generation_answer(user))
    return json.dumps({"clauses": []})
