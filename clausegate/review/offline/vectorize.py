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
from itertools import chain, repeat

import numpy as np

# token patterns whose tokens, in ASCII text without "$" or "%", are exactly the runs of 2+ word characters
WORD_RUN_PATTERNS = (r"(?u)\b\w\w+\b", r"(?u)\b\w\w+\b|\$|%")
# ASCII: a word character (as ``re`` decides \w) stays, any other character becomes a space
_ASCII_WORD_CHARS = str.maketrans({chr(i): chr(i) if re.match(r"\w", chr(i)) else " " for i in range(128)})
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def strip_accents_unicode(text: str) -> str:
    """scikit-learn's ``strip_accents_unicode``: NFKD, then drop the combining marks (ASCII is returned as is).

    Same result as ``"".join(c for c in normalized if not unicodedata.combining(c))``, but the combining marks
    (never ASCII) are looked up once per distinct non-ASCII character and deleted with ``str.translate``."""
    if text.isascii():
        return text
    normalized = unicodedata.normalize("NFKD", text)
    marks = {ord(c): None for c in set(_NON_ASCII_RE.findall(normalized)) if unicodedata.combining(c)}
    return normalized.translate(marks) if marks else normalized


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
    _ids: _TermIds | None = field(init=False, repr=False, compare=False)
    _word_runs: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.strip_accents not in (None, "unicode"):
            raise ValueError(f"strip_accents={self.strip_accents!r} is not supported at scoring time")
        if self.norm not in (None, "l2"):
            raise ValueError(f"norm={self.norm!r} is not supported at scoring time")
        object.__setattr__(self, "_index", {str(term): i for i, term in enumerate(self.vocabulary)})
        object.__setattr__(self, "_tokens", re.compile(self.token_pattern))
        object.__setattr__(self, "_word_runs", self.token_pattern in WORD_RUN_PATTERNS)
        object.__setattr__(self, "idf", np.asarray(self.idf, dtype=np.float64))
        fast = self.ngram_range[0] in (1, 2) and self.ngram_range[1] in (1, 2) and self.ngram_range[0] <= \
            self.ngram_range[1]
        object.__setattr__(self, "_ids", _TermIds.build(self._index) if fast else None)

    def tokens(self, text: str) -> list[str]:
        """The document's tokens (lower-cased, accents stripped, ``token_pattern``), as scikit-learn's."""
        if self.lowercase:
            text = text.lower()
        if self.strip_accents == "unicode":
            text = strip_accents_unicode(text)
        if self._word_runs and text.isascii() and "$" not in text and "%" not in text:
            # the pattern's tokens are then the runs of two or more word characters: split in C
            return [w for w in text.translate(_ASCII_WORD_CHARS).split() if len(w) > 1]
        return self._tokens.findall(text)

    def terms(self, text: str) -> list[str]:
        """The document's terms (unigrams first, then each longer n-gram), as scikit-learn's word analyzer."""
        tokens = self.tokens(text)
        low, high = self.ngram_range
        if high == 1:
            return tokens
        out = list(tokens) if low == 1 else []
        for n in range(max(low, 2), min(high, len(tokens)) + 1):
            out.extend(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
        return out

    def term_counts(self, text: str) -> Counter:
        """Column -> count of the document's terms in the vocabulary (in the order of first occurrence)."""
        return Counter(i for i in map(self._index.get, self.terms(text)) if i is not None)

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """One document's non-zero columns and their tf-idf weights (normalised)."""
        counts = self.term_counts(text)
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

    def logits_reference(self, texts: Sequence[str], coef: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """:meth:`logits` one document at a time from :meth:`row` (the straightforward transform)."""
        out = np.zeros((len(texts), coef.shape[1]), dtype=np.float64)
        for r, text in enumerate(texts):
            cols, weights = self.row(text)
            if len(cols):
                out[r] = weights @ coef[cols]
        return out * scale if scale != 1.0 else out

    def joined_logits(self, texts: Sequence[str], coef: np.ndarray,
                      tokens: list[list[str]] | None = None) -> np.ndarray:
        """``logits(["\\n".join(texts)], coef)[0]``: the texts as one document (a contract of its passages).  A
        newline separates tokens, so that document's tokens are the texts' tokens in a row: ``tokens`` (from
        :meth:`tokens`, e.g. kept from :meth:`logits`) saves tokenising the text a second time."""
        tokens = tokens if tokens is not None else [self.tokens(t) for t in texts]
        return self.logits(["\n".join(texts)], coef, tokens=[list(chain.from_iterable(tokens))])[0]

    def logits(self, texts: Sequence[str], coef: np.ndarray, scale: float = 1.0,
               tokens: list[list[str]] | None = None) -> np.ndarray:
        """``scale * transform(texts) @ coef`` (documents x coef columns); ``coef`` has one row per term.

        Same result as :meth:`logits_reference`, faster: every document's terms are counted at once in numpy
        (``_TermIds.rows``: the same columns, counts and order as :meth:`row`), the tf-idf weights are
        computed elementwise for all documents, and only the norm and the product with ``coef`` are taken
        per document, with the same numpy calls as :meth:`row` (so the sums are added in the same order).
        ``tokens``: the texts' :meth:`tokens`, when the caller has them already."""
        if self._ids is None:
            return self.logits_reference(texts, coef, scale)
        tokens = tokens if tokens is not None else [self.tokens(t) for t in texts]
        if " " in "".join(chain.from_iterable(tokens)):
            return self.logits_reference(texts, coef, scale)  # a token with a space: terms are ambiguous
        cols, counts, starts = self._ids.rows(tokens, self.ngram_range)
        out = np.zeros((len(texts), coef.shape[1]), dtype=np.float64)
        tf = counts.astype(np.float64)
        if self.sublinear_tf:
            tf = np.log(tf) + 1.0
        weights = tf * self.idf[cols]
        for r, (a, b) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True)):
            if a == b:
                continue
            w = weights[a:b]
            c = cols[a:b]
            if self.norm == "l2":
                length = float(np.sqrt(np.dot(w, w)))
                if length > 0.0:
                    w = w / length
            out[r] = w @ coef[c]
        return out * scale if scale != 1.0 else out


@dataclass(frozen=True)
class _TermIds:
    """The vocabulary as word ids: unigram column per word, bigram column per word pair (sorted keys)."""

    words: dict[str, int]  # every unigram term and every word of a bigram term -> word id
    unigram: np.ndarray  # word id -> column of the unigram term (-1: not a unigram term)
    pair_keys: np.ndarray  # sorted: first word id * len(words) + second word id
    pair_cols: np.ndarray  # the bigram term's column, per pair key
    n_cols: int  # columns (terms) in the vocabulary

    @classmethod
    def build(cls, index: dict[str, int]) -> _TermIds:
        words: dict[str, int] = {}
        unigram: dict[int, int] = {}
        pairs: list[tuple[int, int, int]] = []
        for term, col in index.items():
            parts = term.split(" ")
            ids = [words.setdefault(w, len(words)) for w in parts]
            if len(parts) == 1:
                unigram[ids[0]] = col
            elif len(parts) == 2:
                pairs.append((ids[0], ids[1], col))
        uni = np.full(len(words) + 1, -1, dtype=np.intp)  # the extra last id: a word not in the vocabulary
        for w, col in unigram.items():
            uni[w] = col
        n = len(words) + 1
        keys = np.array([a * n + b for a, b, _ in pairs], dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        return cls(words=words, unigram=uni, pair_keys=keys[order], n_cols=max(index.values(), default=-1) + 1,
                   pair_cols=np.array([c for _, _, c in pairs], dtype=np.intp)[order])

    def rows(self, tokens: list[list[str]], ngram_range: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per document (``tokens``: each document's tokens, none holding a space), its columns and counts in the
        order of first occurrence (unigrams, then bigrams), as :meth:`TfidfTransform.term_counts`; documents are
        ``cols[starts[r]:starts[r + 1]]``."""
        low, high = ngram_range
        n_words = len(self.words) + 1
        lengths = np.fromiter(map(len, tokens), dtype=np.intp, count=len(tokens))
        total = int(lengths.sum())
        ids = np.fromiter(map(self.words.get, chain.from_iterable(tokens), repeat(n_words - 1)),
                          dtype=np.int64, count=total)
        doc = np.repeat(np.arange(len(tokens), dtype=np.int64), lengths)
        parts_doc, parts_col = [], []
        if low == 1:
            col = self.unigram[ids]
            hit = col >= 0
            parts_doc.append(doc[hit])
            parts_col.append(col[hit])
        if high == 2 and total > 1 and len(self.pair_keys):
            keys = ids[:-1] * n_words + ids[1:]
            at = np.minimum(np.searchsorted(self.pair_keys, keys), len(self.pair_keys) - 1)
            hit = (self.pair_keys[at] == keys) & (doc[:-1] == doc[1:])  # both words in one document
            parts_doc.append(doc[:-1][hit])
            parts_col.append(self.pair_cols[at[hit]])
        if not parts_doc:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty, np.zeros(len(tokens) + 1, dtype=np.intp)
        entry_doc = np.concatenate(parts_doc)
        entry_col = np.concatenate(parts_col).astype(np.int64)
        order = np.argsort(entry_doc, kind="stable")  # per document: its unigrams, then its bigrams, in text order
        width = self.n_cols
        key = entry_doc[order] * width + entry_col[order]
        uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
        seen = np.argsort(first, kind="stable")  # order of first occurrence
        uniq, counts = uniq[seen], counts[seen]
        docs_of = uniq // width
        starts = np.searchsorted(docs_of, np.arange(len(tokens) + 1), side="left")
        return (uniq % width).astype(np.intp), counts, starts
