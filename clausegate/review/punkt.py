"""The sentence splitter of ``clausegate.review.passages``: nltk's Punkt with contract abbreviations, no data files.

Punkt finds candidate sentence ends (".", "?", "!") and decides each one with ``text_contains_sentbreak(context)``,
where the context is the word before the candidate, the candidate and the next token.  It is built from
``punkt_parameters()``: no training text, no ``nltk.download``, only a fixed set of abbreviations that contracts
use mid-sentence (``ABBREVIATIONS``: "a.k.a.", "Inc.", "No.", "U.S.", "POB.", "Ltd.", "Corp.", "Co.", "St.", ...),
so "a Delaware corporation, a.k.a. Beyond.com" is one sentence.  No collocations, sentence starters or
orthographic statistics: a single capital letter before a capitalised word ("Exhibit A. The") is an initial,
as in untrained Punkt.  ``clausegate.review.passages`` adds what Punkt cannot see (a "sentence" that starts
in lower case goes on the one before).

The decision depends on nothing but the context and the (fixed) parameters, so :class:`MemoPunkt` remembers
it by context: contract text repeats its contexts ("Inc. and", "Section 2.1", "the Agreement. The"), and about
half of the decisions of a contract are found there (``tests/unit/test_offline_fast_paths.py`` checks the
sentences are nltk's with the same parameters).
"""

from __future__ import annotations

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

MEMO_CONTEXTS = 50_000  # decisions remembered per process (a context is "word. Next", ~100 bytes)

# lower case, without the final period (Punkt's abbreviation types); a word here never ends a sentence
ABBREVIATIONS = frozenset({
    "a.k.a", "aka", "f.k.a", "d.b.a", "inc", "incorp", "no", "nos", "u.s", "u.s.a", "u.k", "e.u", "pob", "p.o",
    "ltd", "corp", "co", "llc", "l.l.c", "l.p", "lp", "n.a", "plc", "s.a", "b.v", "n.v", "st", "ave", "blvd",
    "rd", "ste", "fl", "mr", "mrs", "ms", "dr", "jr", "sr", "esq", "sec", "secs", "art", "para", "paras", "cl",
    "subsec", "sched", "exh", "ex", "vol", "approx", "dept", "e.g", "i.e", "viz", "cf", "vs", "v", "ph", "tel",
    "fax", "int'l", "natl", "assoc", "bros", "mfg", "intl", "dist", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tues", "wed", "thurs", "fri",
})


def punkt_parameters() -> PunktParameters:
    """Punkt's parameters: ``ABBREVIATIONS`` only (see the module doc)."""
    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return params


class MemoPunkt(PunktSentenceTokenizer):
    """Punkt with ``punkt_parameters()`` whose decision at each candidate sentence end is remembered."""

    def __init__(self) -> None:
        super().__init__(punkt_parameters())
        self._decided: dict[str, bool] = {}

    def text_contains_sentbreak(self, text: str) -> bool:
        decided = self._decided.get(text)
        if decided is None:
            if len(self._decided) >= MEMO_CONTEXTS:
                self._decided.clear()
            decided = self._decided[text] = super().text_contains_sentbreak(text)
        return decided


__all__ = ["ABBREVIATIONS", "MEMO_CONTEXTS", "MemoPunkt", "punkt_parameters"]
