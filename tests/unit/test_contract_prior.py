"""The contract prior (model 2.5): what the whole contract's words add to the decision "is the category found"."""

from __future__ import annotations

import numpy as np
import pytest

from clausegate.review.offline.extract import category_confidence, decide, extract_offline
from clausegate.review.offline.model import MODEL_DIR, contract_offsets, load_model, make_vectorizer, with_offset
from clausegate.review.prefilter import prefilter
from clausegate.review.schemas import FilteredDocument, Passage
from tests.support.contracts import BOILERPLATE, CAP, GOVERNING_LAW, PREAMBLE, SUPPLY_PAGES, make_doc

MODEL = load_model()
SPEC = MODEL.metadata["contract_prior"]
# a contract long enough for the prior (passages: the paragraphs of each page)
LONG = make_doc(*([PREAMBLE, BOILERPLATE, GOVERNING_LAW + CAP] * 4))


def _texts(doc) -> list[str]:
    from clausegate.review.passages import page_passages

    return [t for ps in page_passages([p.text for p in doc.pages]) for t, _ in ps]


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def test_the_offsets_are_the_trained_contract_models_logit_with_its_weight():
    """Serving's numpy transform gives what scikit-learn's vectorizer and the stored coefficients give (the
    training script's formula: weight x max(logit, floor))."""
    texts = _texts(LONG)
    assert len(texts) >= SPEC["min_passages"]
    offsets = contract_offsets(texts, MODEL)
    with np.load(MODEL_DIR / "offline_model.npz", allow_pickle=False) as npz:
        vec = make_vectorizer(MODEL.metadata["features"], npz["vocabulary"], npz["idf"])
        z = vec.transform(["\n".join(texts)]) @ npz["prior_coef"].astype(np.float32).T + npz["prior_intercept"]
    z = np.maximum(np.asarray(z).ravel(), SPEC["logit_floor"])
    expected = {c: w * z[MODEL.categories.index(c)] for c, w in SPEC["weights"].items()}
    assert set(offsets) == set(expected) and len(offsets) >= 10
    for c, value in offsets.items():
        assert value == pytest.approx(expected[c], abs=1e-4), c
    assert all(value >= SPEC["logit_floor"] for value in offsets.values())


def test_a_short_contract_gets_no_offset():
    texts = _texts(make_doc(*SUPPLY_PAGES))
    assert 0 < len(texts) < SPEC["min_passages"]
    assert contract_offsets(texts, MODEL) == {}
    assert prefilter(make_doc(*SUPPLY_PAGES), ["Cap on Liability"]).category_offsets == {}


def test_the_prefilter_records_the_offsets_of_the_whole_contract():
    cats = ["Governing Law", "Renewal Term", "Document Name"]
    filtered = prefilter(LONG, cats)
    whole = contract_offsets(_texts(LONG), MODEL)
    assert filtered.category_offsets == {c: whole[c] for c in cats if c in whole}
    assert "Document Name" not in filtered.category_offsets  # metadata categories have no prior
    assert len(filtered.passages) < len(_texts(LONG))  # from every passage, not only the kept ones


def _filtered(category: str, scores: list[float], offset: float) -> FilteredDocument:
    passages = [Passage(page=i + 1, text=f"{i + 1}. Clause number {i + 1} of this agreement applies.", score=s,
                        categories={category: s}) for i, s in enumerate(scores)]
    return FilteredDocument(contract_id="0" * 64, passages=passages, pages_kept=[p.page for p in passages],
                            tokens_total=30, tokens_kept=30, category_offsets={category: offset} if offset else {})


def test_the_offset_decides_found_but_each_passage_is_shown_on_its_own_score():
    c = "Renewal Term"
    thr, shown_at = MODEL.extract_threshold(c), MODEL.passage_threshold(c)
    below = 1 / (1 + np.exp(-(_logit(thr) - 0.3)))  # the best passage, just under the threshold
    second = 1 / (1 + np.exp(-(_logit(thr) - 0.6)))  # with the offset it would be over the passage threshold
    assert with_offset(second, 1.0) >= shown_at > second
    scores = [below, second, 0.01]
    assert decide(_filtered(c, scores, 0.0), [c]) == {}
    indices, possible = decide(_filtered(c, scores, 1.0), [c])[c]
    assert indices == [0] and not possible  # found; the second passage is judged on its own score
    clause = extract_offline(_filtered(c, scores, 1.0), [c])[0]
    assert clause.confidence == pytest.approx(MODEL.calibrate(c, with_offset(below, 1.0)), abs=1e-4)
    assert category_confidence(_filtered(c, scores, 1.0), [c])[c] == pytest.approx(with_offset(below, 1.0))
    over = 1 / (1 + np.exp(-(_logit(thr) + 0.3)))
    assert c in decide(_filtered(c, [over, 0.01], 0.0), [c])
    assert decide(_filtered(c, [over, 0.01], -1.0), [c]) == {}  # the contract's words say it is not there


def test_a_negative_offset_never_hides_a_possible_high_risk_clause():
    """Found-or-possible recall is the gate's safety net: "possible" reads the passage's own score."""
    c = "Cap on Liability"
    thr, possible_at = MODEL.extract_threshold(c), MODEL.possible_threshold(c)
    assert possible_at < thr
    clear = min(0.99, 1 / (1 + np.exp(-(_logit(thr) + 1.0))))  # found on its own
    assert decide(_filtered(c, [clear, 0.001], 0.0), [c])[c] == ([0], False)
    indices, possible = decide(_filtered(c, [clear, 0.001], SPEC["logit_floor"] * SPEC["weights"][c]), [c])[c]
    assert indices == [0]  # demoted to "possible" at worst, never dropped
    assert possible == (with_offset(clear, SPEC["logit_floor"] * SPEC["weights"][c]) < thr)


def test_one_tokenisation_gives_the_scores_and_offsets_of_two():
    """``score_contract`` (the pre-filter's call) tokenises once; the joined document's tokens are the passages'."""
    from clausegate.review.offline.model import score_contract, score_passages

    texts = _texts(LONG) + ["Ünïcode accents, $ and 10% stay; a last line without an end"]
    scores, offsets = score_contract(texts, MODEL)
    assert np.array_equal(scores, score_passages(texts, MODEL))
    assert offsets == contract_offsets(texts, MODEL)
    joined = MODEL.vectorizer.logits(["\n".join(texts)], MODEL.prior_coef)[0]
    assert np.allclose(MODEL.vectorizer.joined_logits(texts, MODEL.prior_coef), joined, atol=1e-6)
