"""Pre-filter: keep only the passages of a contract that matter for the requested categories.

Every page with text is split into passages (``clausegate.review.passages.page_passages``: page furniture
such as printed page numbers and EDGAR footers removed first, ``clausegate.review.furniture``) and each
passage is scored by the trained offline scorer (``clausegate.review.offline.model``).  Keep rule:

* a passage is kept when, for at least one requested category ``c``, its probability is at
  or above the keep threshold of ``c`` (``OfflineModel.keep_thresholds``).  Per-category
  thresholds come from a span-vs-token trade-off lambda tuned on out-of-fold scores of CUAD's
  TRAIN split: ``recall_target`` "balanced" (default) / "high" / "max" are the lambdas at
  which ~96.7% / 98% / 99% of all labelled spans (41 categories) fall in a kept passage; a
  playbook of n categories uses lambda * sqrt(41 / max(n, 6)), because with fewer categories
  each span may cost more tokens (clamped at 6, the smallest playbook it was validated on);
* each requested category's best-scoring passage is kept when the extractor would report it (its score with
  the contract prior at the extraction threshold, or its score at the "possible" threshold), so the pre-filter
  never hides a clause the offline extractor would report (contract-level "is it present" decisions are
  unchanged by filtering); so is the passage before or after it when a sentence runs across the two
  (``evidence.continues``: a clause cut by a page break is shown whole);
* a kept passage whose first sentence began in the passage before keeps that one (and, up to
  ``CONTINUATION_PASSAGES`` in a row, 0 by default, one whose lead-in or list item goes on keeps the next): the
  evidence step reads only kept passages;
* metadata rule: when a metadata category (Document Name, Parties, Agreement/Effective/
  Expiration Date) is requested, the first ``metadata_first_passages`` passages (3) of the
  first page with text are always kept, because CUAD's names and dates sit in the preamble.

Pages flagged ``needs_ocr`` or with blank text are skipped.  ``tokens_total`` counts the tokens
(``count_tokens``) of all passages of all text pages, ``tokens_kept`` those of kept passages,
so ``0 <= tokens_kept <= tokens_total``.  ``Passage.categories`` holds the passage's score for
every requested category, ``Passage.score`` the maximum of them, and ``Passage.section`` the
numbered section the passage starts in (``clausegate.review.sections``, read in document order).
``FilteredDocument.category_offsets`` holds the contract prior's offsets (``offline.model.contract_offsets``,
computed from all passages, kept or not), which the extractor adds when it decides whether a category is found.
"""

from __future__ import annotations

import numpy as np

from clausegate.review.categories import METADATA_CATEGORIES, canonical
from clausegate.review.evidence import continues
from clausegate.review.offline.model import load_model, score_contract, with_offset
from clausegate.review.passages import count_tokens, page_passages
from clausegate.review.schemas import FilteredDocument, ParsedDocument, Passage
from clausegate.review.sections import SectionTracker, from_label, heading_words

RECALL_TARGETS = ("balanced", "high", "max")
# passages kept after a kept one whose list goes on; 1 measured quotes on a boundary 0.979 -> 0.981 and default
# playbook tokens kept 49.5% -> 53.2% (over the 50% target), so it is off
CONTINUATION_PASSAGES = 1


def _requested(categories: list[str]) -> list[str]:
    seen: list[str] = []
    for name in categories:
        c = canonical(name)  # KeyError for an unknown category name
        if c not in seen:
            seen.append(c)
    return seen


def prefilter(doc: ParsedDocument, categories: list[str], *, recall_target: str | None = None) -> FilteredDocument:
    """Keep the passages of ``doc`` relevant to ``categories`` (see the module doc for the rule)."""
    model = load_model()
    cats = _requested(categories)
    thresholds = model.keep_thresholds(recall_target, len(cats))
    index = model.category_index

    texts: list[str] = []
    pages: list[int] = []
    sections: list[str | None] = []
    tracker = SectionTracker()
    first_text_page: int | None = None
    read = [page for page in doc.pages if not page.needs_ocr and page.text and page.text.strip()]
    for page, ps in zip(read, page_passages([page.text for page in read]), strict=True):
        if ps and first_text_page is None:
            first_text_page = page.number
        pages.extend([page.number] * len(ps))
        for p, title in ps:
            texts.append(p)
            heading = tracker.feed(p, title)
            sections.append(heading.label if heading else None)

    tokens = [count_tokens(t) for t in texts]
    if not texts or not cats:
        return FilteredDocument(
            contract_id=doc.contract_id, passages=[], pages_kept=[], tokens_total=sum(tokens), tokens_kept=0
        )

    heads = [" ".join(heading_words(h.title)) if (h := from_label(x)) else "" for x in sections]
    scores, offsets = score_contract(texts, model, headings=heads)
    cols = [index[c] for c in cats]
    sub = scores[:, cols]
    keep_at = [thresholds[c] for c in cats]
    keep = (sub >= keep_at).any(axis=1)
    # a category's best passage survives whenever the extractor would report it (found or
    # possible), and so do the passages next to it (a clause cut by a page break is completed)
    for j, c in enumerate(cats):
        best = int(np.argmax(sub[:, j]))
        found = with_offset(float(sub[best, j]), offsets.get(c, 0.0)) >= model.extract_threshold(c)
        if found or sub[best, j] >= model.possible_threshold(c):
            keep[best] = True
            if best > 0 and continues(texts[best - 1], pages[best - 1], texts[best], pages[best]):
                keep[best - 1] = True
            if best + 1 < len(texts) and continues(texts[best], pages[best], texts[best + 1], pages[best + 1]):
                keep[best + 1] = True

    found_like = (sub >= [model.extract_threshold(c) for c in cats]).any(axis=1)  # passages a finding may show
    _keep_sentence_whole(keep & found_like, keep, texts, pages)

    if any(c in METADATA_CATEGORIES for c in cats):
        n_first = int(model.metadata.get("metadata_first_passages", 3))
        first_idx = [i for i, p in enumerate(pages) if p == first_text_page][:n_first]
        keep[first_idx] = True

    kept: list[Passage] = []
    tokens_kept = 0
    six = [6] * len(cats)
    for i in np.flatnonzero(keep).tolist():
        per_cat = dict(zip(cats, map(round, sub[i].tolist(), six), strict=True))  # = round(float(sub[i, j]), 6)
        kept.append(Passage(page=pages[i], text=texts[i], score=max(per_cat.values()), categories=per_cat,
                            section=sections[i]))
        tokens_kept += tokens[i]
    return FilteredDocument(
        contract_id=doc.contract_id,
        passages=kept,
        pages_kept=sorted({p.page for p in kept}),
        tokens_total=sum(tokens),
        tokens_kept=tokens_kept,
        category_offsets={c: offsets[c] for c in cats if c in offsets},
    )


def _goes_into(texts: list[str], pages: list[int], i: int) -> bool:
    """``texts[i]`` ends on a lead-in or a list item (``evidence.goes_on``) that goes on in ``texts[i + 1]`` (same
    page or the next); an unfinished sentence is not enough (tables and cover pages end without one: measured
    +4 % tokens kept)."""
    if i + 1 >= len(texts) or not 0 <= pages[i + 1] - pages[i] <= 1:
        return False
    return texts[i + 1][:1].islower() and continues(texts[i], pages[i], texts[i + 1], pages[i + 1])


def _keep_sentence_whole(shown: np.ndarray, keep: np.ndarray, texts: list[str], pages: list[int]) -> None:
    """A kept passage that a finding may show (``shown``: at an extraction threshold) whose sentence goes on in
    lower case in the next passage keeps that one too (up to ``CONTINUATION_PASSAGES`` in a row), and one whose
    first sentence started in the passage before keeps it: the evidence step only sees kept passages, and a quote
    is shown whole (``evidence.evidence_for``)."""
    for i in np.flatnonzero(shown).tolist():
        if i > 0 and not keep[i - 1] and continues(texts[i - 1], pages[i - 1], texts[i], pages[i]):
            keep[i - 1] = True
        j = i
        while j - i < CONTINUATION_PASSAGES and _goes_into(texts, pages, j):
            j += 1
            keep[j] = True


__all__ = ["RECALL_TARGETS", "prefilter"]
