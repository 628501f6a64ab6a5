"""Generation step as plain logic: the redline/questions prompt for gated or high-risk clauses,
and the check of the model's answer (only clause ids it was shown).

A clause that deviates from its playbook position (``clausegate.review.positions``) is sent with the
standard, the fallback wording and why it deviates: the model explains the deviation and proposes the
fallback wording, in the same validated answer (a redline per clause id)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from clausegate.review.llm.prompts import render
from clausegate.review.passages import count_tokens
from clausegate.review.playbook import Playbook
from clausegate.review.positions import check_clause
from clausegate.review.schemas import Clause, Notice, Suggestion

MAX_CLAUSES = 8
CLAUSE_CHARS = 1200


class ModelSuggestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    clause_id: str
    redline: str = Field(min_length=1)
    questions: list[str] = Field(default_factory=list, max_length=5)


class GenerationAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suggestions: list[ModelSuggestion]


class GenerationItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    page: int
    text: str
    reason: str = ""
    deviation: str = Field("", description="why the clause deviates from the playbook's position, if it does")
    standard: str = ""
    fallback: str = ""


class GenerationPrompt(BaseModel):
    """The rendered generation prompt and its items; like ``ExtractionPrompt``, no file hash or name."""

    model_config = ConfigDict(frozen=True)

    items: list[GenerationItem]
    system: str
    user: str

    @property
    def tokens(self) -> int:
        return count_tokens(self.system) + count_tokens(self.user)


def clauses_needing_suggestions(clauses: list[Clause], book: Playbook) -> list[Clause]:
    """The best clause per gated, high-risk or position-gated category, at most MAX_CLAUSES (a finding a model took
    off the gate gets none)."""
    wanted = set(book.gated_categories) | set(book.high_risk) | set(book.position_gated)
    best: dict[str, Clause] = {}
    for clause in clauses:
        if clause.cleared is not None:
            continue
        held = best.get(clause.category)
        if clause.category in wanted and (held is None or clause.confidence > held.confidence):
            best[clause.category] = clause
    return list(best.values())[:MAX_CLAUSES]


def build_generation_prompt(clauses: list[Clause], book: Playbook) -> GenerationPrompt:
    reasons = {g.category: g.reason for g in book.gates}
    items = [GenerationItem(id=f"c{i}", category=c.category, page=c.pages[0], text=c.text[:CLAUSE_CHARS],
                            reason=reasons.get(c.category, ""), **_deviation(c, book)) for i, c in enumerate(clauses)]
    system = render("generate_system.j2", schema=GenerationAnswer.model_json_schema())
    user = render("generate_redlines.j2", playbook=book.name, clauses=items)
    return GenerationPrompt(items=items, system=system, user=user)


def _deviation(clause: Clause, book: Playbook) -> dict[str, str]:
    """The standard, the fallback and why ``clause`` deviates from its position; empty when it does not."""
    position = next((p for p in book.positions if p.category == clause.category), None)
    if position is None:
        return {}
    check = check_clause(clause, position)
    if check.verdict != "deviates":
        return {}
    return {"deviation": check.reason, "standard": position.preferred, "fallback": next(iter(position.fallback), "")}


def ground_suggestions(answer: GenerationAnswer, prompt: GenerationPrompt, *,
                       model: str) -> tuple[list[Suggestion], list[Notice]]:
    by_id = {item.id: item for item in prompt.items}
    out: list[Suggestion] = []
    notices: list[Notice] = []
    for s in answer.suggestions:
        item = by_id.get(s.clause_id)
        if item is None:
            notices.append(Notice(code="CG-MODEL-UNGROUNDED",
                                  message=f"dropped a suggestion for unknown clause id {s.clause_id!r}"))
            continue
        if not s.redline.strip():  # whitespace only: nothing to suggest (never a crash)
            notices.append(Notice(code="CG-MODEL-QUOTE-EMPTY",
                                  message=f"dropped an empty redline for clause id {s.clause_id!r}"))
            continue
        out.append(Suggestion(category=item.category, pages=[item.page], redline=s.redline.strip(),
                              questions=[q.strip() for q in s.questions if q.strip()], model=model))
    return out, notices
