"""The summary path, as plain logic: when the passages are over the model's context window even shrunk to
one, the model is asked about a short, cited summary of the contract's key terms (parties, term, renewal,
payment, liability, termination), built offline from the extractor's findings, plus the gated passages
(``prompts/extract_summary.j2``).

The summary is context only: each line cites the page and section of the finding it comes from, and the
model can ground a clause only in a passage it was shown (``ground_answer``), as in the full prompt.  The
passages are the gated (or high-risk) categories' own: the offline finding's text when there is one (short
by nature), else the best passage.  The summary prompt is always sent (only the model knows what its window
takes); when the model refuses it too, it is cut (:func:`fit_summary_prompt`) below the refused size, until
nothing smaller can be made.
"""

from __future__ import annotations

from collections.abc import Iterable

from clausegate.review.categories import CATEGORY_QUESTIONS
from clausegate.review.llm.extract import (
    ExtractionPrompt,
    ModelAnswer,
    PromptPassage,
    min_quote_words,
    select_passages,
)
from clausegate.review.llm.prompts import render
from clausegate.review.schemas import Clause, FilteredDocument, KeyTerm, KeyTerms

# topic -> the CUAD categories that state it, best first
TOPICS: dict[str, tuple[str, ...]] = {
    "parties": ("Parties",),
    "term": ("Expiration Date", "Effective Date", "Agreement Date"),
    "renewal": ("Renewal Term", "Notice Period to Terminate Renewal"),
    "payment": ("Revenue/Profit Sharing", "Minimum Commitment", "Price Restrictions"),
    "liability": ("Uncapped Liability", "Cap on Liability", "Liquidated Damages"),
    "termination": ("Termination for Convenience", "Post-Termination Services"),
}
LINE_CHARS = 160
PASSAGE_CHARS = 600


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 2].rstrip() + " …"


def key_terms(clauses: Iterable[Clause]) -> KeyTerms:
    """One line per topic from the extractor's findings (``possible`` ones are not findings): the first of
    the topic's categories with a finding, its most confident one; a topic with none says so."""
    found = [c for c in clauses if not c.possible]
    terms = []
    for topic, categories in TOPICS.items():
        best = None
        for category in categories:
            mine = [c for c in found if c.category == category]
            if mine:
                best = max(mine, key=lambda c: c.confidence)
                break
        terms.append(KeyTerm(topic=topic) if best is None else KeyTerm(
            topic=topic, category=best.category, text=_cut(best.text, LINE_CHARS), pages=best.pages,
            section=best.section))
    return KeyTerms(terms=terms)


def summary_categories(sent: list[str], must_confirm: set[str]) -> list[str]:
    """The categories the summary prompt asks about: the gated or high-risk ones sent, else all sent."""
    return [c for c in sent if c in must_confirm] or list(sent)


def gated_passages(filtered: FilteredDocument, offline: list[Clause], categories: list[str]) -> list[PromptPassage]:
    """Per category: the passage holding its most confident offline finding, shown as that finding's text (else
    its best passage), cut to PASSAGE_CHARS; ids as in the full prompt (``p<index>``)."""
    chosen: dict[str, PromptPassage] = {}
    for category in categories:
        mine = [c for c in offline if c.category == category and not c.possible]
        best = max(mine, key=lambda c: c.confidence) if mine else None
        index = next((i for i, p in enumerate(filtered.passages)
                      if best is not None and p.page in best.pages and best.text[:80] in p.text), None)
        if index is None:
            picked = select_passages(filtered, [category], 1)
            if not picked:
                continue
            passage = picked[0]
        else:
            source = filtered.passages[index]
            passage = PromptPassage(id=f"p{index}", page=source.page, text=best.text,
                                    score=source.categories.get(category, source.score))
        passage = passage.model_copy(update={"text": passage.text[:PASSAGE_CHARS]})
        chosen.setdefault(passage.id, passage)
    return sorted(chosen.values(), key=lambda p: int(p.id[1:]))


def render_summary_prompt(terms: KeyTerms, categories: list[str], passages: list[PromptPassage], *,
                          line_chars: int = LINE_CHARS) -> ExtractionPrompt:
    system = render("extract_system.j2", schema=ModelAnswer.model_json_schema())
    user = render(
        "extract_summary.j2",
        found=[{"topic": t.topic, "category": t.category, "text": _cut(t.text, line_chars),
                "where": ", ".join([f"p. {', '.join(map(str, t.pages))}"] + ([f"§ {t.section}"] if t.section else []))}
               for t in terms.terms if t.category],
        missing=[t.topic for t in terms.terms if not t.category],
        categories=[{"name": c, "question": CATEGORY_QUESTIONS[c], "min_words": min_quote_words(c)}
                    for c in categories],
        passages=passages,
    )
    return ExtractionPrompt(categories=categories, passages=passages, system=system, user=user, truncated=True)


def fit_summary_prompt(filtered: FilteredDocument, offline: list[Clause], terms: KeyTerms, categories: list[str], *,
                       below: int | None) -> ExtractionPrompt | None:
    """The summary prompt; with ``below``, smaller than ``below`` tokens (a summary prompt the model refused):
    the gated passages cut to PASSAGE_CHARS, then to half and a quarter of it, fewer passages at each length
    (the best scores kept), then the same with the summary's lines cut to half; None when nothing of that
    fits.  Without ``below``: the whole summary prompt, as it is sent first."""
    passages = gated_passages(filtered, offline, categories)
    if below is None:
        return render_summary_prompt(terms, categories, passages)
    for line_chars in (LINE_CHARS, LINE_CHARS // 2):
        for chars in (PASSAGE_CHARS, PASSAGE_CHARS // 2, PASSAGE_CHARS // 4):
            cut = [p.model_copy(update={"text": p.text[:chars]}) for p in passages]
            while cut:
                prompt = render_summary_prompt(terms, categories, cut, line_chars=line_chars)
                if prompt.tokens < below:
                    return prompt
                if len(cut) == 1:
                    break
                keep = {p.id for p in sorted(cut, key=lambda p: p.score, reverse=True)[: len(cut) // 2]}
                cut = [p for p in cut if p.id in keep]
    return None
