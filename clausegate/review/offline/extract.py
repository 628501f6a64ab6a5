"""Offline clause extractor: the trained scorer's passages above per-category thresholds.

``extract_offline`` turns the pre-filtered passages into ``Clause`` objects.  For each
requested category ``c``:

A table of contents (``clausegate.review.toc``) lists every clause's heading but is none: its passages are
never found, possible or shown.  The passage probabilities read below are the model's after the consistency rules
(``clausegate.review.offline.consistency``: a limitation without a carve-out is no Uncapped Liability, "non-exclusive"
no Exclusivity, a fee row no Liquidated Damages, ...), so found, possible and the passages shown (a "possible"
finding shows its category's best passage after them) read each clause one way.

* **found**: when the best passage's probability for ``c``, with the contract prior's offset
  (``FilteredDocument.category_offsets``: what the whole contract's words say, model 2.5) added, is at or above
  ``extract_threshold[c]`` (artifact metadata, tuned on out-of-fold scores of CUAD's TRAIN split: contract-level
  F1, or for the recall-first high-risk categories the recall target; never below 0.05), the best
  passage, and every other passage whose own probability is at or above ``passage_threshold[c]`` (tuned on TRAIN
  for passage-level F1, never below the extraction threshold), becomes a clause with ``source="offline"``;
* **possible**: when the category is not found but the best passage's own probability reaches
  ``possible_threshold[c]`` (tuned for the recall-first categories only), that passage becomes a clause with
  ``possible=True``: not a finding, but listed for a person (the review does not count the
  category as missing, and a gated category's gate asks about it).

The clause's text is the evidence (``clausegate.review.evidence``): the sentence(s) of the passage
that carry the clause, completed across a page break, with ``section`` (the numbered heading
it sits under) and ``pages``.  ``confidence`` is the calibrated probability that the shown
text is the clause (``OfflineModel.calibrate`` of the probability with the offset).

``category_confidence`` gives, per requested category, the maximum passage probability with the contract
prior's offset (0.0 when nothing was kept): the cascade compares it with ``extract_thresholds`` to send the
categories it is unsure of to a model provider.
"""

from __future__ import annotations

from clausegate.review.categories import canonical
from clausegate.review.evidence import evidence_for, prepare
from clausegate.review.offline.consistency import adjust
from clausegate.review.offline.model import OfflineModel, load_model, score_passages, with_offset
from clausegate.review.schemas import Clause, FilteredDocument
from clausegate.review.toc import toc_flags


def _category_scores(filtered: FilteredDocument, cats: list[str]) -> list[dict[str, float]]:
    """Per passage: {category: probability}; reuses the pre-filter's scores, scores the rest; then the consistency
    rules (``offline.consistency``: negation, direction, readings that exclude each other)."""
    rows = [dict(p.categories) for p in filtered.passages]
    missing = [i for i, row in enumerate(rows) if any(c not in row for c in cats)]
    if missing:
        model = load_model()
        scores = score_passages([filtered.passages[i].text for i in missing], model)
        index = model.category_index
        for k, i in enumerate(missing):
            for c in cats:
                rows[i].setdefault(c, float(scores[k, index[c]]))
    return adjust([p.text for p in filtered.passages], rows, cats)


def _requested(categories: list[str]) -> list[str]:
    out: list[str] = []
    for name in categories:
        c = canonical(name)
        if c not in out:
            out.append(c)
    return out


def decide(filtered: FilteredDocument, categories: list[str], model: OfflineModel | None = None
           ) -> dict[str, tuple[list[int], bool]]:
    """Per requested category with something to show: (passage indices, possible?)."""
    cats = _requested(categories)
    if not filtered.passages or not cats:
        return {}
    return _decide(filtered, cats, model or load_model(), _category_scores(filtered, cats))


def _decide(filtered: FilteredDocument, cats: list[str], model: OfflineModel, rows: list[dict[str, float]]
            ) -> dict[str, tuple[list[int], bool]]:
    toc = toc_flags([p.text for p in filtered.passages])
    out: dict[str, tuple[list[int], bool]] = {}
    for c in cats:
        scores = [0.0 if toc[i] else float(row[c]) for i, row in enumerate(rows)]  # a table of contents is no clause
        best = max(range(len(scores)), key=scores.__getitem__)
        if with_offset(scores[best], filtered.category_offsets.get(c, 0.0)) >= model.extract_threshold(c):
            shown = model.passage_threshold(c)
            out[c] = ([i for i, p in enumerate(scores) if p >= shown or i == best], False)
            continue
        if scores[best] >= model.possible_threshold(c):
            out[c] = ([best], True)
    return out


def extract_offline(filtered: FilteredDocument, categories: list[str]) -> list[Clause]:
    """Clauses (found and possible) of the requested ``categories`` in ``filtered`` (see module doc)."""
    model = load_model()
    cats = _requested(categories)
    if not filtered.passages or not cats:
        return []
    rows = _category_scores(filtered, cats)  # scored and ruled once, for deciding and ordering
    decided = _decide(filtered, cats, model, rows)
    if not decided:
        return []
    prepared = prepare(filtered.passages, [i for indices, _ in decided.values() for i in indices], model)
    clauses: list[Clause] = []
    for c in cats:
        if c not in decided:
            continue
        indices, possible = decided[c]
        shown: list[str] = []
        for i in sorted(indices, key=lambda i: -rows[i][c]):
            ev = evidence_for(filtered.passages, i, c, model, prepared)
            if any(ev.text in s or s in ev.text for s in shown):
                continue  # the same sentences, reached from the passage next to it
            shown.append(ev.text)
            p = with_offset(rows[i][c], filtered.category_offsets.get(c, 0.0))
            clauses.append(Clause(category=c, text=ev.text, pages=ev.pages, section=ev.section,
                                  confidence=round(model.calibrate(c, p), 4), source="offline",
                                  possible=possible, cut=ev.cut))
    clauses.sort(key=lambda cl: (cats.index(cl.category), cl.pages[0]))
    return clauses


def category_confidence(filtered: FilteredDocument, categories: list[str]) -> dict[str, float]:
    """Max passage probability per requested category (0.0 if no passage was kept)."""
    cats = _requested(categories)
    if not filtered.passages:
        return {c: 0.0 for c in cats}
    rows = _category_scores(filtered, cats)
    return {c: with_offset(max(row[c] for row in rows), filtered.category_offsets.get(c, 0.0)) for c in cats}


def extract_thresholds(categories: list[str]) -> dict[str, float]:
    """The tuned per-category thresholds used by ``extract_offline``."""
    model = load_model()
    return {c: model.extract_threshold(c) for c in _requested(categories)}


__all__ = ["category_confidence", "decide", "extract_offline", "extract_thresholds"]
