"""Runtime for ClauseGate's offline clause scorer (no pickle, no scikit-learn estimator state).

The artifact in ``clausegate/review/offline/models/`` is written by ``tools/train_offline_model.py``:

* ``offline_model.npz`` (loaded with ``allow_pickle=False``): ``vocabulary`` (str) and ``idf``
  (float32) of the passage words, ``head_vocabulary`` / ``head_idf`` of the section-heading
  words, ``coef`` (float16, categories x features: passage words, then heading words),
  ``intercept`` (float32), ``categories`` (str);
* ``offline_model.json``: version, training metadata (date, split, contract count, features,
  cross-validated metrics) and everything tuned on TRAIN: per-category thresholds
  (``extract_threshold``, ``passage_threshold``, ``possible_threshold``, the pre-filter's keep grid), keyword priors
  and the confidence calibration.

Scoring repeats scikit-learn's ``TfidfVectorizer`` transform from the stored vocabularies and
idf in numpy (``clausegate.review.offline.vectorize``: same tokenisation settings, no scikit-learn
import): the passage's word 1-2-grams, plus the words of the section
heading it sits under (``clausegate.review.sections``: the passages are read in document order, so a
passage that continues "11.3 Limitation of Liability" gets the heading's words too).  Then one
logistic regression per category; for a few rare categories (``keyword_priors``) a passage
matching the category's pattern gets a fixed boost added to its logit (chosen on TRAIN).

``OfflineModel.calibrate`` turns a passage probability into the confidence shown for a finding:
a Platt scaling of the logit's distance to the category's threshold, plus a per-category offset
(``calibration.category_b``, since 2.3), fitted on out-of-fold findings of TRAIN (so that of the
findings shown at 0.9, about nine in ten are the clause).
Trained on CUAD v1 (Hendrycks et al., NeurIPS 2021), licensed CC BY 4.0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from clausegate.review.offline.keywords import JoinedTexts, literal_hits
from clausegate.review.offline.vectorize import TfidfTransform
from clausegate.review.sections import SectionTracker, heading_words

MODEL_DIR = Path(__file__).resolve().parent / "models"
NPZ_NAME = "offline_model.npz"
META_NAME = "offline_model.json"
MIN_SCALED_CATEGORIES = 6
EXTRACT_THRESHOLD_FLOOR = 0.05  # lowest extraction threshold honoured at runtime


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-7), 1 - 1e-7)
    return float(np.log(p / (1 - p)))


POSSIBLE_MARGIN_LOGIT = 1.0


@dataclass(frozen=True)
class OfflineModel:
    version: str
    categories: tuple[str, ...]
    metadata: dict
    coef: np.ndarray  # float32, features x categories
    intercept: np.ndarray  # float32, categories
    vectorizer: TfidfTransform = field(repr=False)
    head_vectorizer: TfidfTransform | None = field(default=None, repr=False)
    head_weight: float = 0.0
    # keyword priors: (category column, compiled pattern, logit boost) - see ``score_passages``
    priors: tuple = field(default=(), repr=False)
    # the contract prior (2.5): features x categories, per category intercept and weight (0: unused)
    prior_coef: np.ndarray | None = field(default=None, repr=False)
    prior_intercept: np.ndarray | None = field(default=None, repr=False)
    prior_weight: np.ndarray | None = field(default=None, repr=False)

    @property
    def category_index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.categories)}

    def extract_threshold(self, category: str) -> float:
        """Passage probability at or above which ``category`` is extracted; never below the
        artifact's ``extract_threshold_floor`` (default ``EXTRACT_THRESHOLD_FLOOR``), so a clause
        is never reported with a near-zero score."""
        floor = float(self.metadata.get("extract_threshold_floor", EXTRACT_THRESHOLD_FLOOR))
        return max(floor, float(self.metadata["extract_threshold"][category]))

    def passage_threshold(self, category: str) -> float:
        """Once ``category`` is found, passage probability from which a passage other than the category's
        best one is shown too: ``passage_threshold`` (tuned on TRAIN for passage-level F1), never below the
        extraction threshold; the extraction threshold itself when not tuned (models before 2.2)."""
        value = float(self.metadata.get("passage_threshold", {}).get(category, 0.0))
        return max(self.extract_threshold(category), value)

    def possible_threshold(self, category: str) -> float:
        """Lowest passage probability at which a category that did not reach its extraction
        threshold is listed as "possible" (a person checks it); 1.0 when not tuned.

        The artifact's tuned value is served as it is (2.4): it is the operating point chosen on TRAIN
        cross-validation for found-or-possible recall (``recall_first`` in the metadata).  Before 2.4 it was
        held within ``POSSIBLE_MARGIN_LOGIT`` log-odds of the extraction threshold, which kept Liquidated
        Damages and Most Favored Nation below the recall they were tuned for."""
        value = self.metadata.get("possible_threshold", {}).get(category)
        if value is None:
            return 1.0
        extract = self.extract_threshold(category)
        if self.metadata.get("recall_first", {}).get("possible_min_precision", 0.35) >= 0.35:  # 2.3 and before
            near = 1.0 / (1.0 + np.exp(-(_logit(extract) - POSSIBLE_MARGIN_LOGIT)))
            return min(extract, max(float(value), float(near)))
        return min(extract, float(value))

    def calibrate(self, category: str, p: float) -> float:
        """The confidence shown for a finding whose passage probability is ``p`` (see module doc)."""
        cal = self.metadata.get("calibration")
        if not cal:
            return float(min(1.0, max(0.0, p)))
        x = _logit(p) - _logit(self.extract_threshold(category))
        z = float(cal["a"]) * x + float(cal["b"]) + float(cal.get("category_b", {}).get(category, 0.0))
        return float(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))))

    def keep_thresholds(self, level: str | None = None, n_categories: int | None = None) -> dict[str, float]:
        """Pre-filter keep thresholds for a recall level and a playbook of ``n_categories``.

        The level names a trade-off lambda (``keep_levels``); a playbook with fewer categories
        uses lambda * sqrt(41 / n) (each span may cost more tokens), with n clamped to at least
        ``MIN_SCALED_CATEGORIES`` (6, the smallest playbook the rule was validated on), and the
        per-category thresholds are interpolated geometrically on the stored lambda grid."""
        level = level or self.metadata.get("keep_default_level", "balanced")
        levels = self.metadata["keep_levels"]
        if level not in levels:
            raise ValueError(f"unknown recall_target {level!r}; expected one of {sorted(levels)}")
        n = max(MIN_SCALED_CATEGORIES, n_categories or len(self.categories))
        lam = float(levels[level]) * float(np.sqrt(len(self.categories) / max(1, n)))
        grid = np.log(np.asarray(self.metadata["keep_lambda_grid"], dtype=float))
        x = float(np.clip(np.log(lam), grid[0], grid[-1]))
        j = min(max(int(np.searchsorted(grid, x, side="right")) - 1, 0), len(grid) - 2)
        w = (x - grid[j]) / (grid[j + 1] - grid[j])
        out = {}
        for c, row in self.metadata["keep_threshold_grid"].items():
            a, b = np.log(max(row[j], 1e-9)), np.log(max(row[j + 1], 1e-9))
            out[c] = float(np.exp((1 - w) * a + w * b))
        return out


def make_vectorizer(features: dict, vocabulary=None, idf=None):
    """The passage-word TF-IDF vectorizer that training fits (scoring uses :func:`word_transform`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # local import: scikit-learn (~1 s) only to train

    kwargs = dict(
        ngram_range=tuple(features["ngram_range"]),
        sublinear_tf=bool(features.get("sublinear_tf", True)),
        lowercase=bool(features.get("lowercase", True)),
        token_pattern=features["token_pattern"],
        strip_accents=features.get("strip_accents"),
        norm=features.get("norm", "l2"),
        dtype=np.float32,
    )
    if vocabulary is None:
        return TfidfVectorizer(min_df=features["min_df"], max_df=features["max_df"],
                               max_features=features["max_features"], **kwargs)
    vec = TfidfVectorizer(vocabulary={str(term): i for i, term in enumerate(vocabulary)}, **kwargs)
    vec.idf_ = idf.astype(np.float64)  # sets the fitted idf diagonal
    return vec


def make_head_vectorizer(vocabulary=None, idf=None, min_df: int = 3):
    """TF-IDF over the heading words (``heading_texts``), unigrams, as training fits it (scoring:
    :func:`head_transform`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # local import: scikit-learn only to train

    if vocabulary is None:
        return TfidfVectorizer(min_df=min_df, sublinear_tf=True, token_pattern=r"\S+", dtype=np.float32)
    vec = TfidfVectorizer(sublinear_tf=True, token_pattern=r"\S+", dtype=np.float32,
                          vocabulary={str(term): i for i, term in enumerate(vocabulary)})
    vec.idf_ = idf.astype(np.float64)
    return vec


def word_transform(features: dict, vocabulary, idf) -> TfidfTransform:
    """Scoring's passage-word TF-IDF: :func:`make_vectorizer`'s transform, without scikit-learn."""
    return TfidfTransform(vocabulary=[str(term) for term in vocabulary], idf=idf,
                          ngram_range=tuple(features["ngram_range"]), token_pattern=features["token_pattern"],
                          sublinear_tf=bool(features.get("sublinear_tf", True)),
                          lowercase=bool(features.get("lowercase", True)), strip_accents=features.get("strip_accents"),
                          norm=features.get("norm", "l2"))


def head_transform(vocabulary, idf) -> TfidfTransform:
    """Scoring's heading-word TF-IDF: :func:`make_head_vectorizer`'s transform, without scikit-learn."""
    return TfidfTransform(vocabulary=[str(term) for term in vocabulary], idf=idf, token_pattern=r"\S+",
                          sublinear_tf=True)


def heading_texts(texts: list[str]) -> list[str]:
    """Per passage (in document order): the words of the section heading it sits under."""
    tracker = SectionTracker()
    out = []
    for t in texts:
        h = tracker.feed(t)
        out.append(" ".join(heading_words(h.title)) if h else "")
    return out


def load_model(model_dir: str | Path | None = None) -> OfflineModel:
    """Load (and cache) the artifact from ``model_dir`` (default: the packaged one)."""
    return _load(str(Path(model_dir) if model_dir else MODEL_DIR))


@lru_cache(maxsize=4)
def _load(model_dir: str) -> OfflineModel:
    base = Path(model_dir)
    meta = json.loads((base / META_NAME).read_text(encoding="utf-8"))
    with np.load(base / NPZ_NAME, allow_pickle=False) as npz:
        vocabulary = npz["vocabulary"]
        idf = npz["idf"]
        head_vocabulary = npz["head_vocabulary"] if "head_vocabulary" in npz.files else None
        head_idf = npz["head_idf"] if "head_idf" in npz.files else None
        coef = npz["coef"].astype(np.float32)
        intercept = npz["intercept"].astype(np.float32)
        prior_coef = npz["prior_coef"].astype(np.float32) if "prior_coef" in npz.files else None
        prior_intercept = npz["prior_intercept"].astype(np.float32) if "prior_intercept" in npz.files else None
        categories = tuple(str(c) for c in npz["categories"])
    n_features = len(vocabulary) + (len(head_vocabulary) if head_vocabulary is not None else 0)
    if coef.shape != (len(categories), n_features):
        raise ValueError(f"corrupt offline model artifact in {base}: coef shape {coef.shape}")
    index = {c: i for i, c in enumerate(categories)}
    priors = tuple(
        (index[c], keyword_pattern(p["pattern"]), float(p["logit_boost"]))
        for c, p in meta.get("keyword_priors", {}).items()
        if c in index and float(p.get("logit_boost", 0.0))
    )
    weights = meta.get("contract_prior", {}).get("weights", {})
    prior_weight = np.array([float(weights.get(c, 0.0)) for c in categories], dtype=np.float32)
    if prior_coef is not None and prior_coef.shape != (len(categories), len(vocabulary)):
        raise ValueError(f"corrupt offline model artifact in {base}: prior_coef shape {prior_coef.shape}")
    return OfflineModel(
        version=str(meta["version"]),
        categories=categories,
        metadata=meta,
        coef=np.ascontiguousarray(coef.T),
        intercept=intercept,
        vectorizer=word_transform(meta["features"], vocabulary, idf),
        head_vectorizer=head_transform(head_vocabulary, head_idf) if head_vocabulary is not None else None,
        head_weight=float(meta["features"].get("head_weight", 0.0)),
        priors=priors,
        prior_coef=np.ascontiguousarray(prior_coef.T) if prior_coef is not None and prior_weight.any() else None,
        prior_intercept=prior_intercept,
        prior_weight=prior_weight,
    )


def passage_logits(texts: list[str], model: OfflineModel | None = None,
                   headings: list[str] | None = None, tokens: list[list[str]] | None = None) -> np.ndarray:
    """Logits (n_passages x n_categories).  ``texts`` are one document's passages in reading
    order (the heading each passage sits under is read from the passages before it), unless
    ``headings`` gives the heading words of each passage (``tokens``: the texts' tokens, when known)."""
    model = model or load_model()
    if not texts:
        return np.zeros((0, len(model.categories)), dtype=np.float32)
    texts = [t if isinstance(t, str) else "" for t in texts]
    n_words = len(model.vectorizer.vocabulary)
    logits = model.vectorizer.logits(texts, model.coef[:n_words], tokens=tokens)
    if model.head_vectorizer is not None and model.head_weight:
        heads = headings if headings is not None else heading_texts(texts)
        logits += model.head_vectorizer.logits(heads, model.coef[n_words:], scale=model.head_weight)
    logits += model.intercept
    lowered = [t.lower() for t in texts] if model.priors else []
    joined = JoinedTexts(lowered) if model.priors else None
    for col, pattern, boost in model.priors:  # keyword priors of rare categories
        add_keyword_boost(logits[:, col], keyword_hits(lowered, pattern, lowered=True, joined=joined), boost)
    return logits.astype(np.float32)


def contract_offsets(texts: list[str], model: OfflineModel | None = None,
                     tokens: list[list[str]] | None = None) -> dict[str, float]:
    """The contract prior (2.5): per category, the logit offset that the whole contract's words add to every
    passage's score when deciding whether the category is found (``texts``: all the contract's passages, in
    reading order; categories without a prior are left out). None for a contract of fewer than ``min_passages``
    passages, and the contract logit is floored at ``logit_floor`` (both in the artifact's ``contract_prior``).
    Training: ``tools/contract_prior.py``."""
    model = model or load_model()
    spec = model.metadata.get("contract_prior", {})
    if model.prior_coef is None or len(texts) < int(spec.get("min_passages", 1)):
        return {}
    z = model.vectorizer.joined_logits(texts, model.prior_coef, tokens) + model.prior_intercept
    z = np.maximum(z, float(spec.get("logit_floor", -np.inf)))
    return {c: round(float(w * z[i]), 6) for i, (c, w) in enumerate(zip(model.categories, model.prior_weight,
                                                                         strict=True)) if w}


def score_contract(texts: list[str], model: OfflineModel | None = None,
                   headings: list[str] | None = None) -> tuple[np.ndarray, dict[str, float]]:
    """A contract's passages at once: ``score_passages`` and ``contract_offsets``, the text tokenised once."""
    model = model or load_model()
    tokens = [model.vectorizer.tokens(t if isinstance(t, str) else "") for t in texts]
    logits = passage_logits(texts, model, headings, tokens=tokens)
    probs = (1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))).astype(np.float32)
    return probs, contract_offsets(texts, model, tokens=tokens)


def with_offset(p: float, offset: float) -> float:
    """A passage probability with the contract prior's ``offset`` (log-odds) added."""
    if not offset:
        return float(p)
    return float(1.0 / (1.0 + np.exp(-np.clip(_logit(p) + offset, -40, 40))))


def keyword_pattern(pattern: str) -> re.Pattern[str]:
    """A keyword prior's pattern as it is matched: anywhere in the lower-cased passage (so patterns are
    written in lower case; matching lower-cased text is ~3x faster than ``re.IGNORECASE``, same hits)."""
    return re.compile(pattern)


def keyword_hits(texts: Sequence[str], pattern: re.Pattern[str], *, lowered: bool = False,
                 joined: JoinedTexts | None = None) -> np.ndarray:
    """Which of ``texts`` a keyword prior (:func:`keyword_pattern`) matches: one bool per text
    (``lowered``: the texts are already lower-cased; ``joined``: those texts joined, shared by the priors).
    Only the texts holding one of the pattern's required literals are searched
    (``clausegate.review.offline.keywords``): the same hits as searching every text."""
    src = texts if lowered else [t.lower() for t in texts]
    return np.asarray(literal_hits(src, pattern, joined), dtype=bool).reshape(len(src))


def add_keyword_boost(logits: np.ndarray, hits: np.ndarray, boost: float) -> np.ndarray:
    """The keyword prior of one category: ``boost`` added, in place, to the logits (that category's
    column) of the passages it matches (``hits``); returns ``logits``.  Training tunes ``boost``
    with this same function (``tools/offline_tuning.py``), so serving scores what was tuned."""
    logits[hits] += boost
    return logits


def score_passages(texts: list[str], model: OfflineModel | None = None,
                   headings: list[str] | None = None) -> np.ndarray:
    """Probabilities (n_passages x n_categories, order = ``load_model().categories``)."""
    logits = passage_logits(texts, model, headings)
    return (1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))).astype(np.float32)


__all__ = ["MODEL_DIR", "OfflineModel", "add_keyword_boost", "contract_offsets", "heading_texts", "keyword_hits",
           "keyword_pattern", "load_model", "passage_logits", "score_contract", "score_passages", "with_offset"]
