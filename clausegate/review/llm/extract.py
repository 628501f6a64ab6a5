"""Model-backed extraction, as plain logic: which categories go to the model (the cascade), the
compressed prompt, and the validation of the model's answer against the contract.

The model never sees the whole document: only the categories the offline extractor is unsure of
(or the playbook marks high-risk), each with its question once, and only the best-scoring kept
passages for those categories.

Its answer is validated clause by clause, never all or nothing (:func:`ground_answer`): only the
envelope (a JSON object with a ``clauses`` list) must be valid for the answer to be used; each clause
must then be a well-formed object, name a category it was asked about and a passage id it was shown,
quote at least the category's minimum number of words (:data:`MIN_QUOTE_WORDS`), and quote text that
really is in that passage.  Grounding compares like with like: the model saw the passage with
``<``/``>`` neutralised (``clausegate.review.llm.prompts.delimit``), so both sides are compared neutralised and the kept
quote is the contract's raw text.  Anything else is dropped with a ``CG-MODEL-*`` notice saying why.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clausegate.review.categories import CATEGORIES, CATEGORY_QUESTIONS
from clausegate.review.llm.prompts import delimit, render
from clausegate.review.passages import count_tokens
from clausegate.review.schemas import Clause, FilteredDocument, Notice, ParsedDocument

PASSAGES_PER_CATEGORY = 3
TRUNCATED_MARK = "[TRUNCATED]"

# A quote shorter than this many words cannot carry the category (a clause of "the" is no Cap on
# Liability).  Set well below the 1st percentile of CUAD's labelled spans per category; the metadata
# categories (a name, a date, a party) are legitimately one word.
DEFAULT_MIN_QUOTE_WORDS = 5
MIN_QUOTE_WORDS: dict[str, int] = {
    "Document Name": 1, "Parties": 1, "Agreement Date": 1, "Effective Date": 1,
    "Expiration Date": 4, "Renewal Term": 4, "Notice Period to Terminate Renewal": 4,
    "Cap on Liability": 6, "Uncapped Liability": 6, "Liquidated Damages": 6, "Most Favored Nation": 6,
    "Minimum Commitment": 6, "Revenue/Profit Sharing": 6, "Price Restrictions": 6,
}


def min_quote_words(category: str) -> int:
    return MIN_QUOTE_WORDS.get(category, DEFAULT_MIN_QUOTE_WORDS)


class ModelClause(BaseModel):
    # One clause as the prompt asks for it (no docstring: it would become the schema's description).
    model_config = ConfigDict(extra="forbid")

    category: str = Field(description="exact category name from the list")
    passage_id: str = Field(description="id of the passage the clause is in")
    text: str = Field(min_length=1, description="the clause text, copied verbatim from the passage")
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(description="why this text is a clause of this category, in at most 15 words")


class ModelAbsence(BaseModel):
    # A category asked about that no shown passage holds (no docstring: it would become the schema's description).
    model_config = ConfigDict(extra="forbid")

    category: str = Field(description="exact category name from the list")
    passage_ids: list[str] = Field(description="ids of the passages you read for this category")
    reason: str = Field(description="why none of them is a clause of this category, in at most 15 words")


class _AnswerSchema(BaseModel):
    """What the extraction prompt asks the model to return."""

    model_config = ConfigDict(extra="forbid", title="ModelAnswer")

    clauses: list[ModelClause]
    absent: list[ModelAbsence]


class _ReceivedClause(ModelClause):
    """One clause as received: extra keys are ignored, everything else is checked."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(description="may be empty here: checked by ground_answer, with its own notice")
    reason: str = ""  # an answer without one still counts as a finding; it cannot clear one (merge)


class _ReceivedAbsence(ModelAbsence):
    model_config = ConfigDict(extra="ignore")

    passage_ids: list[str] = []
    reason: str = ""


class Absence(BaseModel):
    """A grounded "not there": an asked category, the shown passages the model says it read for it, its reason
    (empty when it gave none: then it cannot take a finding off the gate)."""

    model_config = ConfigDict(frozen=True)

    category: str
    passage_ids: list[str] = []
    reason: str = ""


class ModelAnswer(BaseModel):
    """The envelope of the model's answer, as parsed (``complete_json``): a ``clauses`` list whose
    items are checked one by one by :func:`ground_answer`, so one bad clause never costs the others
    (or a repair call, or the review)."""

    model_config = ConfigDict(extra="ignore")

    clauses: list[Any]
    absent: list[Any] = []

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The strict schema the model is asked for (the prompt, the repair call): parsing is lenient."""
        return _AnswerSchema.model_json_schema(*args, **kwargs)


class PromptPassage(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    page: int
    text: str
    score: float


class ExtractionPrompt(BaseModel):
    """A rendered prompt plus what is needed to check the answer; hashable input of the model task.  It holds
    no file hash or file name: the same passages of the same text make the same prompt, so the model
    answer is reused from the cache whichever file they came from."""

    model_config = ConfigDict(frozen=True)

    categories: list[str]
    passages: list[PromptPassage]
    system: str
    user: str
    truncated: bool = False

    @property
    def tokens(self) -> int:
        return count_tokens(self.system) + count_tokens(self.user)


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def cascade_categories(confidence: dict[str, float], thresholds: dict[str, float], must_confirm: list[str],
                       *, margin: float, possible: set[str] = frozenset()) -> list[str]:
    """Categories the model reads (``clausegate.review.llm.merge``: one answer moves the offline evidence by
    ``margin`` log-odds): every one whose best offline score is within ``margin`` of its threshold, either side
    (a candidate passage the answer can decide), every one with a "possible" finding, and every gated or high-risk
    one with any passage (``must_confirm``).  Not asked: a category the offline reading is more than ``margin``
    over its threshold (no one answer could change it) or under it (nothing to read)."""
    return [c for c, p in confidence.items()
            if abs(logit(p) - logit(thresholds[c])) < margin or c in possible or (c in must_confirm and p > 0)]


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


def render_extraction_prompt(categories: list[str], passages: list[PromptPassage], *,
                             truncated: bool = False) -> ExtractionPrompt:
    system = render("extract_system.j2", schema=ModelAnswer.model_json_schema())
    user = render(
        "extract_clauses.j2",
        categories=[{"name": c, "question": CATEGORY_QUESTIONS[c], "min_words": min_quote_words(c)}
                    for c in categories],
        passages=passages,
    )
    return ExtractionPrompt(categories=categories, passages=passages,
                            system=system, user=user, truncated=truncated)


def build_prompt(filtered: FilteredDocument, categories: list[str], *,
                 per_category: int = PASSAGES_PER_CATEGORY) -> ExtractionPrompt:
    return render_extraction_prompt(categories, select_passages(filtered, categories, per_category))


def truncate_prompt(prompt: ExtractionPrompt) -> ExtractionPrompt | None:
    """Half the passages (lowest scores dropped), marked truncated; None when nothing is left to cut."""
    if len(prompt.passages) <= 1:
        return None
    keep = sorted(prompt.passages, key=lambda p: p.score, reverse=True)[: len(prompt.passages) // 2]
    keep_ids = {p.id for p in keep}
    return render_extraction_prompt(prompt.categories, [p for p in prompt.passages if p.id in keep_ids], truncated=True)


def naive_prompt_tokens(document: ParsedDocument) -> int:
    """Tokens of the naive prompt: the whole document plus instructions for all 41 categories."""
    passages = [PromptPassage(id=f"page{p.number}", page=p.number, text=p.text or " ", score=0.0)
                for p in document.pages]
    return render_extraction_prompt(list(CATEGORIES), passages).tokens


# Characters a model commonly normalises when it copies text; folded on both sides, one for one.
_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
                       "\u00a0": " "})
_WORD = re.compile(r"\w+")


def _comparable(text: str) -> tuple[str, list[int]]:
    """``text`` as compared: neutralised like the prompt (``delimit``), quotes/dashes folded,
    lower-cased, whitespace runs collapsed to one space, trimmed; plus, for each character kept,
    its index in ``text`` (every step maps one character to one, so a match maps back exactly)."""
    neutral = delimit(text).translate(_FOLD)
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(neutral):
        if ch.isspace():
            if out and out[-1] != " ":
                out.append(" ")
                where.append(i)
            continue
        low = ch.lower()
        out.append(low if len(low) == 1 else ch)
        where.append(i)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def locate_quote(quote: str, passage_text: str) -> str | None:
    """The passage's raw text that ``quote`` quotes (neutralised or raw, any case/spacing), or None."""
    needle, _ = _comparable(quote)
    hay, where = _comparable(passage_text)
    if not needle:
        return None
    start = hay.find(needle)
    if start < 0:
        return None
    return passage_text[where[start]: where[start + len(needle) - 1] + 1]


def _why_invalid(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    field = ".".join(str(p) for p in first["loc"]) or "(clause)"
    return f"field '{field}': {first['msg']}"


def ground_answer(answer: ModelAnswer, prompt: ExtractionPrompt, *, model: str) -> tuple[list[Clause], list[Notice]]:
    """Check the model's clauses one by one; keep those that are well-formed, name an asked
    category and a shown passage, quote enough words and quote text found in that passage.
    Every dropped clause gets a notice naming why; nothing here raises on a malformed clause."""
    by_id = {p.id: p for p in prompt.passages}
    asked = {c.lower(): c for c in prompt.categories}
    clauses: list[Clause] = []
    notices: list[Notice] = []
    seen: set[tuple[str, str]] = set()

    def drop(code: str, why: str, item: Any = None, page: int | None = None) -> None:
        label = ""
        if isinstance(item, _ReceivedClause):
            label = f": {item.category!r} in {item.passage_id!r}"
        notices.append(Notice(code=code, message=f"dropped a model clause ({why}){label}", page=page))

    for number, raw in enumerate(answer.clauses, start=1):
        try:
            item = _ReceivedClause.model_validate(raw)
        except ValidationError as error:
            drop("CG-MODEL-CLAUSE-INVALID", f"clause {number} is not a valid clause object: {_why_invalid(error)}")
            continue
        category = asked.get(item.category.strip().lower())
        passage = by_id.get(item.passage_id.strip())
        page = passage.page if passage else None
        if not item.text.strip():
            drop("CG-MODEL-QUOTE-EMPTY", "the quote is empty or whitespace only", item, page)
            continue
        if category is None or passage is None:
            drop("CG-MODEL-UNGROUNDED", "category not asked" if category is None else "unknown passage id", item, page)
            continue
        words, needed = len(_WORD.findall(item.text)), min_quote_words(category)
        if words < needed:
            drop("CG-MODEL-QUOTE-TOO-SHORT", f"quote has {words} word(s); {category} needs at least {needed}",
                 item, page)
            continue
        text = locate_quote(item.text, passage.text)
        if text is None:
            drop("CG-MODEL-UNGROUNDED", "text not in the passage", item, page)
            continue
        if (category, text) in seen:
            continue
        try:
            clause = Clause(category=category, text=text.strip(), pages=[passage.page], confidence=item.confidence,
                            source="model", model=model, reason=_reason(item.reason))
        except ValidationError as error:  # belt and braces: a clause never stops the review
            drop("CG-MODEL-CLAUSE-INVALID", _why_invalid(error), item, page)
            continue
        seen.add((category, text))
        clauses.append(clause)
    return clauses, notices


MAX_REASON_CHARS = 300


def _reason(text: str) -> str | None:
    """A model's reason, one line, at most MAX_REASON_CHARS; None when it gave none."""
    flat = " ".join(str(text or "").split())[:MAX_REASON_CHARS]
    return flat or None


def ground_absences(answer: ModelAnswer, prompt: ExtractionPrompt) -> tuple[list[Absence], list[Notice]]:
    """The answer's "not there" entries that name an asked category; each passage id kept only when it was shown
    (an id it was not shown is dropped with ``CG-MODEL-UNGROUNDED``). A malformed entry is dropped with a notice."""
    asked = {c.lower(): c for c in prompt.categories}
    shown = {p.id for p in prompt.passages}
    out: dict[str, Absence] = {}
    notices: list[Notice] = []
    for number, raw in enumerate(answer.absent, start=1):
        try:
            item = _ReceivedAbsence.model_validate(raw)
        except ValidationError as error:
            notices.append(Notice(code="CG-MODEL-CLAUSE-INVALID", message=(
                f"dropped a model 'absent' entry ({number} is not valid: {_why_invalid(error)})")))
            continue
        category = asked.get(item.category.strip().lower())
        if category is None:
            notices.append(Notice(code="CG-MODEL-UNGROUNDED", message=(
                f"dropped a model 'absent' entry (category not asked): {item.category[:80]!r}")))
            continue
        ids = [i.strip() for i in item.passage_ids if i.strip() in shown]
        if item.passage_ids and not ids:  # it says it read passages it was never shown: nothing of it is used
            notices.append(Notice(code="CG-MODEL-UNGROUNDED", message=(
                f"dropped the model's 'absent' entry for {category}: it names only passages it was not shown")))
            continue
        if len(ids) < len(item.passage_ids):
            notices.append(Notice(code="CG-MODEL-UNGROUNDED", message=(
                f"{category}: the model's 'absent' entry names passage ids it was not shown; they are ignored")))
        out.setdefault(category, Absence(category=category, passage_ids=ids, reason=_reason(item.reason) or ""))
    return list(out.values()), notices
