"""Scoring-time TF-IDF: scikit-learn's ``TfidfVectorizer.transform`` for a fixed vocabulary, in numpy.

Training fits scikit-learn's ``TfidfVectorizer`` (``tools/train_offline_model.py``); the artifact keeps only its
vocabulary and idf.  Importing scikit-learn to score costs ~1 s (it imports scipy.stats), more than scoring a
whole contract, in every flow-run process and every ``clausegate review``.  :class:`TfidfTransform` repeats
the transform for the settings the model uses (word n-grams, lower-casing, ``strip_accents="unicode"``,
sublinear tf, l2 norm), and :func:`TfidfTransform.logits` multiplies by the coefficients without building a
sparse matrix.  ``tests/unit/test_offline_vectorize.py`` checks it against scikit-learn on CUAD-like text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


def strip_accents_unicode(text: str) -> str:
    """scikit-learn's ``strip_accents_unicode``: NFKD, then drop the combining marks (ASCII is returned as is)."""
    try:
        text.encode("ASCII", errors="strict")
        return text
    except UnicodeEncodeError:
        normalized = unicodedata.normalize("NFKD", text)
        return "".join(c for c in normalized if not unicodedata.combining(c))


@dataclass(frozen=True)
class TfidfTransform:
    """The fitted transform: ``vocabulary`` (term per column) and ``idf``; settings as in ``TfidfVectorizer``."""

    vocabulary: Sequence[str]
    idf: np.ndarray
    token_pattern: str = r"(?u)\b\w\w+\b"
    ngram_range: tuple[int, int] = (1, 1)
    lowercase: bool = True
    strip_accents: str | None = None
    sublinear_tf: bool = False
    norm: str | None = "l2"
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _tokens: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.strip_accents not in (None, "unicode"):
            raise ValueError(f"strip_accents={self.strip_accents!r} is not supported at scoring time")
        if self.norm not in (None, "l2"):
            raise ValueError(f"norm={self.norm!r} is not supported at scoring time")
        object.__setattr__(self, "_index", {str(term): i for i, term in enumerate(self.vocabulary)})
        object.__setattr__(self, "_tokens", re.compile(self.token_pattern))
        object.__setattr__(self, "idf", np.asarray(self.idf, dtype=np.float64))

    def terms(self, text: str) -> list[str]:
        """The document's terms (unigrams first, then each longer n-gram), as scikit-learn's word analyzer."""
        if self.lowercase:
            text = text.lower()
        if self.strip_accents == "unicode":
            text = strip_accents_unicode(text)
        tokens = self._tokens.findall(text)
        low, high = self.ngram_range
        if high == 1:
            return tokens
        out = list(tokens) if low == 1 else []
        for n in range(max(low, 2), min(high, len(tokens)) + 1):
            out.extend(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
        return out

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """One document's non-zero columns and their tf-idf weights (normalised)."""
        counts = Counter(i for i in map(self._index.get, self.terms(text)) if i is not None)
        if not counts:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float64)
        cols = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        if self.sublinear_tf:
            tf = np.log(tf) + 1.0
        weights = tf * self.idf[cols]
        if self.norm == "l2":
            length = float(np.sqrt(np.dot(weights, weights)))
            if length > 0.0:
                weights = weights / length
        return cols, weights

    def logits(self, texts: Sequence[str], coef: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """``scale * transform(texts) @ coef`` (documents x coef columns); ``coef`` has one row per term."""
        out = np.zeros((len(texts), coef.shape[1]), dtype=np.float64)
        for r, text in enumerate(texts):
            cols, weights = self.row(text)
            if len(cols):
                out[r] = weights @ coef[cols]
        return out * scale if scale != 1.0 else out
