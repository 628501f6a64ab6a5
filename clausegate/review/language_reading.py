"""A contract the offline reader cannot read (not English) read by the configured model in its own language:
the whole text (capped), page by page as passages, asked for the playbook's categories, the model told to quote
the contract's own words untranslated.  Its answer is grounded as every model answer is (``ground_answer``: a
quote not found in the page it names is dropped with a notice), and what it finds is *listed for a person*
(``possible``: the Language gate stays, a person checks); a category it does not find is "not read offline",
never "missing".  Plain logic: the flow body calls it (``clausegate.pipeline.language_model``)."""

from __future__ import annotations

from clausegate.review.llm.extract import ExtractionPrompt, PromptPassage, render_extraction_prompt
from clausegate.review.schemas import Clause, LanguageReading, Notice, ParsedDocument, Review

TEXT_CHARS = 24000  # the contract's text sent, over all its pages


def language_prompt(document: ParsedDocument, categories: list[str], language: LanguageReading) -> ExtractionPrompt:
    """The extraction prompt over the contract's pages (``p<index>``, TEXT_CHARS in all), in its language."""
    passages, left = [], TEXT_CHARS
    for index, page in enumerate(document.pages):
        if left <= 0:
            break
        text = page.text[:left]
        if text.strip():
            passages.append(PromptPassage(id=f"p{index}", page=page.number, text=text, score=1.0))
        left -= len(text)
    prompt = render_extraction_prompt(categories, passages, truncated=left <= 0)
    note = (f"\nThe contract is written in {language.name}. Read it in {language.name} and quote its own words "
            f"exactly as written (do not translate the quote); give your reason in English.\n")
    return prompt.model_copy(update={"user": prompt.user + note})


def with_language_reading(review: Review, clauses: list[Clause], notices: list[Notice], *, model: str,
                          asked: list[str]) -> Review:
    """``review`` with the model's grounded findings listed for a person and the language warning saying so."""
    language = review.language
    listed = [c.model_copy(update={"possible": True}) for c in clauses]
    found = sorted({c.category for c in clauses})
    not_read = [c for c in asked if c not in found]
    said = (f"The model {model} read the whole text in {language.name if language else 'its language'}: "
            f"{len(listed)} finding(s) in {len(found)} categor{'y' if len(found) == 1 else 'ies'} listed for a "
            f"person; {len(not_read)} categor{'y' if len(not_read) == 1 else 'ies'} it did not find are not read "
            "offline (not reported missing).")
    warnings = [w.model_copy(update={"message": f"{w.message} {said}"}) if w.code == "CG-TEXT-LANGUAGE" else w
                for w in review.warnings]
    return review.model_copy(update={"clauses": [*review.clauses, *listed], "warnings": [*warnings, *notices],
                                     "missing_categories": []})
