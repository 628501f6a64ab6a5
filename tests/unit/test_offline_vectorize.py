"""The scoring-time TF-IDF (clausegate/review/offline/vectorize.py) equals scikit-learn's ``TfidfVectorizer``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from clausegate.review.offline.vectorize import TfidfTransform, strip_accents_unicode
from tests.support.contracts import GATED_PAGES, LIABILITY_PAGES

CORPUS = [
    *LIABILITY_PAGES,
    *GATED_PAGES,
    "Café Société GmbH shall pay 5% of the Net Revenue ($10,000 minimum) — the Licensee's "
    "liability is UNLIMITED.  Naïve résumé façade; ﬁnal ﬂows (ligatures).",
    "",
    "a b c",  # no token of two characters: an empty row
    "11.4. Indemnification by LeadersOnline. 11.4. Indemnification by LeadersOnline. repeated repeated",
]


def _fitted(**settings) -> tuple[TfidfVectorizer, TfidfTransform]:
    vec = TfidfVectorizer(**settings).fit(CORPUS)
    vocabulary = [term for term, _ in sorted(vec.vocabulary_.items(), key=lambda item: item[1])]
    mine = TfidfTransform(vocabulary=vocabulary, idf=vec.idf_, **{k: v for k, v in settings.items()
                                                                  if k != "dtype"})
    return vec, mine


@pytest.mark.parametrize("settings", [
    dict(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w\w+\b|\$|%", strip_accents="unicode"),
    dict(ngram_range=(1, 3), sublinear_tf=False, strip_accents=None),
    dict(ngram_range=(2, 3), sublinear_tf=True),
    dict(ngram_range=(1, 1), sublinear_tf=True, token_pattern=r"\S+", lowercase=False),
    dict(ngram_range=(1, 2), norm=None),
    dict(ngram_range=(1, 1), token_pattern=r"\w+ \w+"),  # tokens holding a space (the fast path steps aside)
    dict(ngram_range=(1, 2), token_pattern=r"\w+ \w+"),
    dict(ngram_range=(2, 2), sublinear_tf=True),
])
def test_logits_equal_scikit_learn(settings):
    vec, mine = _fitted(**settings)
    coef = np.random.default_rng(7).normal(size=(len(mine.vocabulary), 5))
    expected = np.asarray(vec.transform(CORPUS) @ coef)
    assert np.allclose(mine.logits(CORPUS, coef), expected, atol=1e-9)
    assert np.allclose(mine.logits(CORPUS, coef, scale=0.5), 0.5 * expected, atol=1e-9)


def test_terms_equal_scikit_learn_analyzer():
    vec, mine = _fitted(ngram_range=(1, 3), strip_accents="unicode")
    analyze = vec.build_analyzer()
    for text in CORPUS:
        assert mine.terms(text) == analyze(text)


def test_accents_are_stripped_like_scikit_learn():
    from sklearn.feature_extraction.text import strip_accents_unicode as reference

    for text in ["résumé", "ﬁnal", "Ångström", "plain ascii", "Straße", ""]:
        assert strip_accents_unicode(text) == reference(text)


def test_the_packaged_model_scores_as_scikit_learn_would():
    """The shipped artifact's own vocabulary, idf and settings: same logits as scikit-learn's transform."""
    from clausegate.review.offline.model import MODEL_DIR, NPZ_NAME, load_model

    model = load_model()
    features = model.metadata["features"]
    with np.load(MODEL_DIR / NPZ_NAME, allow_pickle=False) as npz:
        vocabulary, idf = npz["vocabulary"], npz["idf"]
    reference = TfidfVectorizer(vocabulary={str(t): i for i, t in enumerate(vocabulary)},
                                ngram_range=tuple(features["ngram_range"]),
                                sublinear_tf=bool(features.get("sublinear_tf", True)),
                                lowercase=bool(features.get("lowercase", True)),
                                token_pattern=features["token_pattern"], strip_accents=features.get("strip_accents"),
                                norm=features.get("norm", "l2"))
    reference.idf_ = idf.astype(np.float64)
    mine = TfidfTransform(vocabulary=[str(t) for t in vocabulary], idf=idf,
                          ngram_range=tuple(features["ngram_range"]),
                          sublinear_tf=bool(features.get("sublinear_tf", True)),
                          lowercase=bool(features.get("lowercase", True)), token_pattern=features["token_pattern"],
                          strip_accents=features.get("strip_accents"), norm=features.get("norm", "l2"))
    coef = np.asarray(model.coef[: len(vocabulary)], dtype=np.float64)
    assert np.allclose(mine.logits(CORPUS, coef), np.asarray(reference.transform(CORPUS) @ coef), atol=1e-5)


def test_unsupported_settings_are_refused():
    with pytest.raises(ValueError, match="strip_accents"):
        TfidfTransform(vocabulary=["a"], idf=np.ones(1), strip_accents="ascii")
    with pytest.raises(ValueError, match="norm"):
        TfidfTransform(vocabulary=["a"], idf=np.ones(1), norm="l1")
