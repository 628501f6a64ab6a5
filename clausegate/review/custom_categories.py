"""Clause types a team defines: a question, 3-10 example clauses and optional keywords.

A playbook's ``custom_categories`` (``CustomCategory``) name clause types CUAD does not have (indemnification,
confidentiality, data protection, …).  They are found offline by similarity to the examples:

* every passage and every example is a TF-IDF vector over the shipped offline model's vocabulary and idf (word
  1-2-grams, l2-normalised: ``OfflineModel.vectorizer``); a passage's *similarity* is its largest cosine with
  an example, plus ``KEYWORD_BONUS`` when it contains one of the keywords (whole words, any case);
* a passage at or above the category's ``threshold`` (default ``DEFAULT_THRESHOLD``, chosen on CUAD TRAIN:
  ``bench/custom_categories.py``) is found; below it, one at or above ``POSSIBLE_SHARE`` of the threshold is a
  "possible" finding when the category is high-risk (a person checks it).

The similarity is a score, not a calibrated probability.  A clause's ``confidence`` (``confidence``) maps it
piecewise-linearly so that the category's threshold reads 0.5, as a probability at a decision boundary would: from
0 at similarity 0 to 0.5 at the threshold, then to 1 at similarity 1 (capped).  So a playbook's
``min_confidence`` and the report's figures read alike for CUAD and custom findings.  Measured on CUAD against the
supervised model (docs/quality.md, "Clause types a team defines").
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from clausegate.review.evidence import shorten
from clausegate.review.offline.model import OfflineModel, load_model
from clausegate.review.passages import page_passages
from clausegate.review.schemas import Clause, ParsedDocument
from clausegate.review.sections import SectionTracker

DEFAULT_THRESHOLD = 0.10  # bench/custom_categories.py: chosen on CUAD TRAIN (mean contract F1 of 23 categories)
KEYWORD_BONUS = 0.10
POSSIBLE_SHARE = 0.75
MIN_EXAMPLES, MAX_EXAMPLES = 3, 10
MAX_SHOWN = 3  # passages shown per category, the most similar first


class CustomCategory(BaseModel):
    """One clause type of a playbook, defined by a question and examples (see the module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=2, max_length=60, pattern=r"^[A-Za-z][A-Za-z0-9 /&'()-]*$")
    question: str = Field(min_length=5, max_length=400)
    examples: list[str] = Field(min_length=MIN_EXAMPLES, max_length=MAX_EXAMPLES)
    keywords: list[str] = Field(default_factory=list, max_length=20)
    threshold: float = Field(DEFAULT_THRESHOLD, gt=0, le=1)

    @field_validator("examples")
    @classmethod
    def _examples_are_clauses(cls, values: list[str]) -> list[str]:
        short = [v for v in values if len(v.split()) < 5]
        if short:
            raise ValueError(f"an example clause needs at least 5 words: {short[0][:60]!r}")
        return values


def _vector(text: str, model: OfflineModel) -> dict[int, float]:
    cols, weights = model.vectorizer.row(text)
    return dict(zip(cols.tolist(), weights.tolist(), strict=True))


@lru_cache(maxsize=64)
def _example_vectors(examples: tuple[str, ...], version: str) -> tuple[dict[int, float], ...]:
    model = load_model()
    return tuple(_vector(e, model) for e in examples)


def _keyword_re(keywords: tuple[str, ...]) -> re.Pattern[str] | None:
    words = [re.escape(k.strip()) for k in keywords if k.strip()]
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE) if words else None


def similarities(texts: list[str], category: CustomCategory, model: OfflineModel | None = None) -> np.ndarray:
    """Each text's similarity to ``category`` (largest cosine with an example, plus the keyword bonus)."""
    model = model or load_model()
    examples = _example_vectors(tuple(category.examples), model.version)
    keyword = _keyword_re(tuple(category.keywords))
    out = np.zeros(len(texts))
    for i, text in enumerate(texts):
        v = _vector(text, model)
        best = max((sum(w * e.get(c, 0.0) for c, w in v.items()) for e in examples), default=0.0)
        out[i] = best + (KEYWORD_BONUS if keyword is not None and keyword.search(text) else 0.0)
    return out


def confidence(score: float, threshold: float) -> float:
    """``score`` (a similarity) as a confidence in [0, 1]: 0.5 at ``threshold`` (see the module doc)."""
    if score < threshold:
        return round(0.5 * max(score, 0.0) / threshold, 4)
    return round(min(1.0, 0.5 + 0.5 * (score - threshold) / (1.0 - threshold)), 4) if threshold < 1 else 1.0


def decide(scores: np.ndarray, category: CustomCategory, high_risk: bool) -> tuple[list[int], bool] | None:
    """(indices of the passages shown, possible?) for one category, or None when nothing is shown."""
    if not len(scores):
        return None
    best = int(np.argmax(scores))
    if scores[best] >= category.threshold:
        return [i for i, s in enumerate(scores) if s >= category.threshold], False
    if high_risk and scores[best] >= POSSIBLE_SHARE * category.threshold:
        return [best], True
    return None


def find_custom(doc: ParsedDocument, categories: list[CustomCategory], high_risk: frozenset[str] = frozenset()
                ) -> list[Clause]:
    """The clauses of ``categories`` in ``doc`` (every passage of its text pages, furniture removed: the
    pre-filter keeps passages for CUAD categories only).  A shown passage is quoted whole (``shorten``:
    whole sentences, `` […]`` when cut), under the section it sits in."""
    read = [page for page in doc.pages if not page.needs_ocr and page.text and page.text.strip()]
    texts, pages, sections = [], [], []
    tracker = SectionTracker()
    for page, ps in zip(read, page_passages([page.text for page in read]), strict=True):
        for text, title in ps:
            heading = tracker.feed(text, title)
            texts.append(text)
            pages.append(page.number)
            sections.append(heading.label if heading else None)
    if not texts:
        return []
    model = load_model()
    out: list[Clause] = []
    for category in categories:
        scores = similarities(texts, category, model)
        decided = decide(scores, category, category.name in high_risk)
        if decided is None:
            continue
        indices, possible = decided
        for i in sorted(indices, key=lambda i: -scores[i])[:MAX_SHOWN]:
            text, cut = shorten(texts[i])
            out.append(Clause(custom=True, category=category.name, text=text, pages=[pages[i]], section=sections[i],
                              confidence=confidence(float(scores[i]), category.threshold), source="offline",
                              possible=possible, cut=cut))
    return out


__all__ = ["DEFAULT_THRESHOLD", "KEYWORD_BONUS", "MAX_SHOWN", "POSSIBLE_SHARE", "CustomCategory", "confidence",
           "decide", "find_custom", "similarities"]
