"""The sentence splitter of ``clausegate.review.passages``: nltk's untrained Punkt, with the same sentences, faster.

``split_passages`` uses ``PunktSentenceTokenizer()`` with default (empty) parameters: no abbreviations,
collocations, sentence starters or orthographic statistics, so no data files.  Punkt finds candidate
sentence ends (".", "?", "!") and decides each one with ``text_contains_sentbreak(context)``, where the
context is the word before the candidate, the candidate and the next token.  That decision depends on
nothing but the context and the (fixed) parameters, so :class:`MemoPunkt` remembers it by context:
contract text repeats its contexts ("Inc. and", "Section 2.1", "the Agreement. The"), and about half of
the decisions of a contract are found there (``tests/unit/test_passages.py`` checks the sentences are
nltk's on CUAD text).
"""

from __future__ import annotations

from nltk.tokenize.punkt import PunktSentenceTokenizer

MEMO_CONTEXTS = 50_000  # decisions remembered per process (a context is "word. Next", ~100 bytes)


class MemoPunkt(PunktSentenceTokenizer):
    """Untrained Punkt whose decision at each candidate sentence end is remembered (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self._decided: dict[str, bool] = {}

    def text_contains_sentbreak(self, text: str) -> bool:
        decided = self._decided.get(text)
        if decided is None:
            if len(self._decided) >= MEMO_CONTEXTS:
                self._decided.clear()
            decided = self._decided[text] = super().text_contains_sentbreak(text)
        return decided


__all__ = ["MEMO_CONTEXTS", "MemoPunkt"]
