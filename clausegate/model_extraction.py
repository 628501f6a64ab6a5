"""Model-backed extraction, as plain logic: which categories go to the model (the cascade), the
compressed prompt, and the validation of the model's answer against the contract.

The model never sees the whole document: only the categories the offline extractor is unsure of
(or the playbook marks high-risk), each with its question once, and only the best-scoring kept
passages for those categories.  Its answer must name a category it was asked about, a passage id
it was shown and text that really is in that passage; anything else is dropped with a notice.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict, Field

from clausegate.categories import CATEGORY_QUESTIONS
from clausegate.passages import count_tokens
from clausegate.prompting import render
from clausegate.schemas import Clause, FilteredDocument, Notice, ParsedDocument

PASSAGES_PER_CATEGORY = 3
TRUNCATED_MARK = "[TRUNCATED]"


class ModelClause(BaseModel):
    model_config = ConfigDict(extra="forbid")

    category: str = Field(description="exact category name from the list")
    passage_id: str = Field(description="id of the passage the clause is in")
    text: str = Field(min_length=1, description="the clause text, copied verbatim from the passage")
    confidence: float = Field(ge=0, le=1)


class ModelAnswer(BaseModel):
    """What the extraction prompt asks the model to return."""

    model_config = ConfigDict(extra="forbid")

    clauses: list[ModelClause]


class PromptPassage(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    page: int
    text: str
    score: float


class ExtractionPrompt(BaseModel):
    """A rendered prompt plus what is needed to check the answer; hashable input of the model task."""

    model_config = ConfigDict(frozen=True)

    contract_id: str
    categories: list[str]
    passages: list[PromptPassage]
    system: str
    user: str
    truncated: bool = False

    @property
    def tokens(self) -> int:
        return count_tokens(self.system) + count_tokens(self.user)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def cascade_categories(confidence: dict[str, float], thresholds: dict[str, float], high_risk: list[str],
                       *, margin: float) -> list[str]:
    """Categories the model must see: high-risk ones, and those whose best offline score is within
    ``margin`` log-odds of the category's threshold (the offline model is unsure either way)."""
    unsure = {c for c, p in confidence.items() if abs(_logit(p) - _logit(thresholds[c])) < margin}
    return [c for c in confidence if c in high_risk or c in unsure]


def select_passages(filtered: FilteredDocument, categories: list[str], per_category: int) -> list[PromptPassage]:
    chosen: dict[int, float] = {}
    for category in categories:
        ranked = sorted(range(len(filtered.passages)),
                        key=lambda i: filtered.passages[i].categories.get(category, 0.0), reverse=True)
        for i in ranked[:per_category]:
            score = filtered.passages[i].categories.get(category, 0.0)
            chosen[i] = max(chosen.get(i, 0.0), score)
    ordered = sorted(chosen)  # document order
    return [PromptPassage(id=f"p{i}", page=filtered.passages[i].page, text=filtered.passages[i].text,
                          score=chosen[i]) for i in ordered]


def render_extraction_prompt(contract_id: str, categories: list[str], passages: list[PromptPassage], *,
                             truncated: bool = False, repair_error: str = "") -> ExtractionPrompt:
    system = render("extract_system.j2", schema=ModelAnswer.model_json_schema())
    user = render(
        "extract_clauses.j2",
        categories=[{"name": c, "question": CATEGORY_QUESTIONS[c]} for c in categories],
        passages=passages,
        repair_error=repair_error,
    )
    return ExtractionPrompt(contract_id=contract_id, categories=categories, passages=passages,
                            system=system, user=user, truncated=truncated)


def build_prompt(filtered: FilteredDocument, categories: list[str], *,
                 per_category: int = PASSAGES_PER_CATEGORY) -> ExtractionPrompt:
    return render_extraction_prompt(filtered.contract_id, categories,
                                    select_passages(filtered, categories, per_category))


def truncate_prompt(prompt: ExtractionPrompt) -> ExtractionPrompt | None:
    """Half the passages (lowest scores dropped), marked truncated; None when nothing is left to cut."""
    if len(prompt.passages) <= 1:
        return None
    keep = sorted(prompt.passages, key=lambda p: p.score, reverse=True)[: len(prompt.passages) // 2]
    keep_ids = {p.id for p in keep}
    return render_extraction_prompt(prompt.contract_id, prompt.categories,
                                    [p for p in prompt.passages if p.id in keep_ids], truncated=True)


def naive_prompt_tokens(document: ParsedDocument) -> int:
    """Tokens of the naive prompt: the whole document plus instructions for all 41 categories."""
    from clausegate.categories import CATEGORIES

    passages = [PromptPassage(id=f"page{p.number}", page=p.number, text=p.text or " ", score=0.0)
                for p in document.pages]
    return render_extraction_prompt(document.contract_id, list(CATEGORIES), passages).tokens


_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def ground_answer(answer: ModelAnswer, prompt: ExtractionPrompt, *, model: str) -> tuple[list[Clause], list[Notice]]:
    """Keep only clauses that name an asked category, a shown passage and text found in it."""
    by_id = {p.id: p for p in prompt.passages}
    asked = {c.lower(): c for c in prompt.categories}
    clauses: list[Clause] = []
    notices: list[Notice] = []
    for item in answer.clauses:
        category = asked.get(item.category.strip().lower())
        passage = by_id.get(item.passage_id)
        if category is None or passage is None or _norm(item.text) not in _norm(passage.text):
            why = ("category not asked" if category is None else
                   "unknown passage id" if passage is None else "text not in the passage")
            notices.append(Notice(code="CG-MODEL-UNGROUNDED",
                                  message=f"dropped a model clause ({why}): {item.category!r} in {item.passage_id!r}",
                                  page=passage.page if passage else None))
            continue
        clauses.append(Clause(category=category, text=item.text.strip(), pages=[passage.page],
                              confidence=item.confidence, source="model", model=model))
    return clauses, notices
