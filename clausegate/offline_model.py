"""Runtime for ClauseGate's offline clause scorer (no pickle, no scikit-learn estimator state).

The artifact in ``clausegate/models/`` is written by ``scripts/train_offline_model.py``:

* ``offline_model.npz`` (loaded with ``allow_pickle=False``): ``vocabulary`` (str), ``idf``
  (float32), ``coef`` (float16, categories x features), ``intercept`` (float32),
  ``categories`` (str);
* ``offline_model.json``: version, training metadata (date, split, contract count, sklearn
  version, feature settings) and the tuned per-category thresholds (extraction thresholds are
  floored at ``extract_threshold_floor``, 0.05, in training and again at runtime).

Scoring rebuilds scikit-learn's ``TfidfVectorizer`` transform from the stored vocabulary and
idf (same tokenisation settings), then applies one logistic regression per category; for a
few rare categories (``keyword_priors`` in the metadata) a passage matching the category's
keyword pattern gets a fixed boost added to its logit (pattern and boost chosen on TRAIN).
Trained on CUAD v1 (Hendrycks et al., NeurIPS 2021), licensed CC BY 4.0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

MODEL_DIR = Path(__file__).resolve().parent / "models"
NPZ_NAME = "offline_model.npz"
META_NAME = "offline_model.json"
MIN_SCALED_CATEGORIES = 6
EXTRACT_THRESHOLD_FLOOR = 0.05  # lowest extraction threshold honoured at runtime


@dataclass(frozen=True)
class OfflineModel:
    version: str
    categories: tuple[str, ...]
    metadata: dict
    coef: np.ndarray  # float32, features x categories
    intercept: np.ndarray  # float32, categories
    vectorizer: object = field(repr=False)
    # keyword priors: (category column, compiled pattern, logit boost) - see ``score_passages``
    priors: tuple = field(default=(), repr=False)

    @property
    def category_index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.categories)}

    def extract_threshold(self, category: str) -> float:
        """Passage probability at or above which ``category`` is extracted; never below the
        artifact's ``extract_threshold_floor`` (default ``EXTRACT_THRESHOLD_FLOOR``), so a clause
        is never reported with a near-zero confidence."""
        floor = float(self.metadata.get("extract_threshold_floor", EXTRACT_THRESHOLD_FLOOR))
        return max(floor, float(self.metadata["extract_threshold"][category]))

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


def _build_vectorizer(vocabulary: np.ndarray, idf: np.ndarray, features: dict):
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(
        ngram_range=tuple(features["ngram_range"]),
        sublinear_tf=bool(features.get("sublinear_tf", True)),
        lowercase=bool(features.get("lowercase", True)),
        token_pattern=features["token_pattern"],
        strip_accents=features.get("strip_accents"),
        norm=features.get("norm", "l2"),
        vocabulary={str(term): i for i, term in enumerate(vocabulary)},
        dtype=np.float32,
    )
    vec.idf_ = idf.astype(np.float64)  # sets the fitted idf diagonal
    return vec


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
        coef = npz["coef"].astype(np.float32)
        intercept = npz["intercept"].astype(np.float32)
        categories = tuple(str(c) for c in npz["categories"])
    if coef.shape != (len(categories), len(vocabulary)):
        raise ValueError(f"corrupt offline model artifact in {base}: coef shape {coef.shape}")
    index = {c: i for i, c in enumerate(categories)}
    priors = tuple(
        (index[c], re.compile(p["pattern"], re.IGNORECASE), float(p["logit_boost"]))
        for c, p in meta.get("keyword_priors", {}).items()
        if c in index and float(p.get("logit_boost", 0.0))
    )
    return OfflineModel(
        version=str(meta["version"]),
        categories=categories,
        metadata=meta,
        coef=np.ascontiguousarray(coef.T),
        intercept=intercept,
        vectorizer=_build_vectorizer(vocabulary, idf, meta["features"]),
        priors=priors,
    )


def score_passages(texts: list[str], model: OfflineModel | None = None) -> np.ndarray:
    """Probabilities (n_passages x n_categories, order = ``load_model().categories``)."""
    model = model or load_model()
    if not texts:
        return np.zeros((0, len(model.categories)), dtype=np.float32)
    texts = [t if isinstance(t, str) else "" for t in texts]
    X = model.vectorizer.transform(texts)
    logits = np.asarray(X @ model.coef) + model.intercept
    for col, pattern, boost in model.priors:  # keyword priors of rare categories
        hits = np.fromiter((pattern.search(t) is not None for t in texts), dtype=bool, count=len(texts))
        logits[hits, col] += boost
    return (1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))).astype(np.float32)


__all__ = ["MODEL_DIR", "OfflineModel", "load_model", "score_passages"]
