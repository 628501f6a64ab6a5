"""Offline clause extractor: the trained scorer's passages above per-category thresholds.

``extract_offline`` turns the pre-filtered passages into ``Clause`` objects: for each requested
category ``c``, every passage whose probability for ``c`` is at or above
``extract_threshold[c]`` (artifact metadata; tuned on out-of-fold scores of CUAD's TRAIN split
to maximise contract-level F1, never below 0.05 - ``OfflineModel.extract_threshold``) becomes a
clause with ``source="offline"``, the passage's page, the passage text and ``confidence`` = the
passage's probability for ``c`` (so a reported clause never has a near-zero confidence).

``category_confidence`` gives, per requested category, the maximum passage probability (0.0
when nothing was kept): the cascade sends categories whose figure is neither clearly above
nor clearly below their threshold to a model provider.
"""

from __future__ import annotations

from clausegate.categories import canonical
from clausegate.offline_model import load_model, score_passages
from clausegate.schemas import Clause, FilteredDocument


def _category_scores(filtered: FilteredDocument, cats: list[str]) -> list[dict[str, float]]:
    """Per passage: {category: probability}; reuses the pre-filter's scores, scores the rest."""
    rows = [dict(p.categories) for p in filtered.passages]
    missing = [i for i, row in enumerate(rows) if any(c not in row for c in cats)]
    if missing:
        model = load_model()
        scores = score_passages([filtered.passages[i].text for i in missing], model)
        index = model.category_index
        for k, i in enumerate(missing):
            for c in cats:
                rows[i].setdefault(c, float(scores[k, index[c]]))
    return rows


def _requested(categories: list[str]) -> list[str]:
    out: list[str] = []
    for name in categories:
        c = canonical(name)
        if c not in out:
            out.append(c)
    return out


def extract_offline(filtered: FilteredDocument, categories: list[str]) -> list[Clause]:
    """Clauses of the requested ``categories`` found in ``filtered``'s passages (see module doc)."""
    model = load_model()
    cats = _requested(categories)
    if not filtered.passages or not cats:
        return []
    rows = _category_scores(filtered, cats)
    clauses: list[Clause] = []
    for c in cats:
        threshold = model.extract_threshold(c)
        for passage, row in zip(filtered.passages, rows):
            p = float(row[c])
            if p >= threshold:
                clauses.append(
                    Clause(
                        category=c,
                        text=passage.text,
                        pages=[passage.page],
                        confidence=min(1.0, max(0.0, p)),
                        source="offline",
                    )
                )
    return clauses


def category_confidence(filtered: FilteredDocument, categories: list[str]) -> dict[str, float]:
    """Max passage probability per requested category (0.0 if no passage was kept)."""
    cats = _requested(categories)
    if not filtered.passages:
        return {c: 0.0 for c in cats}
    rows = _category_scores(filtered, cats)
    return {c: float(max(row[c] for row in rows)) for c in cats}


def extract_thresholds(categories: list[str]) -> dict[str, float]:
    """The tuned per-category thresholds used by ``extract_offline``."""
    model = load_model()
    return {c: model.extract_threshold(c) for c in _requested(categories)}


__all__ = ["category_confidence", "extract_offline", "extract_thresholds"]
