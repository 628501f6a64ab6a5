"""The offline model's fast paths (for <= 100 ms per contract) give exactly what the straightforward code gives.

On real contract text: CUAD TRAIN contracts' text (``tools.cuad``; the holdout is never read) when the data
is present, else the test fixtures.  Each test fails when its fast path drifts from the reference:

* TF-IDF: ``TfidfTransform.logits`` (all documents counted at once in numpy) vs ``logits_reference`` (one
  ``Counter`` of ``terms()`` per document): bit-identical logits, same columns, counts and order; ASCII
  tokens split in C vs the token pattern;
* ``count_tokens`` of ASCII text (character classes counted in C) vs its regex;
* keyword priors: the literal pre-check (``clausegate.review.offline.keywords``) vs searching every text;
* passages: a paragraph that skips Punkt (``passages._one_passage``) is what Punkt's sentences joined give,
  and the remembering Punkt (``clausegate.review.punkt``) splits as nltk's with the same parameters.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from nltk.tokenize.punkt import PunktSentenceTokenizer

from clausegate.review.evidence import sentences
from clausegate.review.offline.keywords import JoinedTexts, literal_hits, required_literals
from clausegate.review.offline.model import load_model, passage_logits
from clausegate.review.offline.vectorize import TfidfTransform, strip_accents_unicode
from clausegate.review.passages import _one_passage, _paragraphs, _sentences, count_tokens, split_passages
from clausegate.review.punkt import MemoPunkt, punkt_parameters
from tests.support.contracts import GATED_PAGES, LIABILITY_PAGES
from tools import cuad

N_CONTRACTS = 6  # TRAIN contracts (by file name), ~1,500 passages


def _pages(text: str, size: int = 4000) -> list[str]:
    """A contract's text cut at line ends into page-sized pieces (CUAD's .txt has no page breaks)."""
    pages, page = [], ""
    for line in text.splitlines(keepends=True):
        if len(page) + len(line) > size and page:
            pages.append(page)
            page = ""
        page += line
    return [*pages, page] if page else pages


@pytest.fixture(scope="module")
def pages() -> list[str]:
    if not cuad.cuad_available():
        return [*LIABILITY_PAGES, *GATED_PAGES]
    train = sorted((e for e in cuad.load_manifest() if not cuad.is_holdout(e["filename"])),
                   key=lambda e: e["filename"])[:N_CONTRACTS]
    return [p for e in train for p in _pages((cuad.cuad_dir() / e["txt"]).read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def texts(pages) -> list[str]:
    """What the model scores: the passages (pre-filter) and their sentences (evidence)."""
    passages = [t for page in pages for t in split_passages(page)]
    return passages + [s for t in passages[::3] for s in sentences(t)] + ["", "a b", "$ 5 %"]


def test_fast_tfidf_logits_are_bit_identical_to_the_reference(texts):
    model = load_model()
    vec = model.vectorizer
    coef = model.coef[: len(vec.vocabulary)]
    assert vec._ids is not None  # the packaged model's settings take the fast path
    fast, reference = vec.logits(texts, coef), vec.logits_reference(texts, coef)
    assert np.array_equal(fast, reference)
    cols, counts, starts = vec._ids.rows([vec.tokens(t) for t in texts], vec.ngram_range)
    for r, text in enumerate(texts):
        a, b = starts[r], starts[r + 1]
        assert list(zip(cols[a:b].tolist(), counts[a:b].tolist(), strict=True)) == list(vec.term_counts(text).items())


def _ascii_noise(n: int = 300) -> list[str]:
    """Random strings over every ASCII character (words, spaces, control characters, "$", "%")."""
    rng = np.random.default_rng(13)
    return ["".join(map(chr, rng.integers(0, 128, size=int(rng.integers(1, 60))))) for _ in range(n)]


def test_ascii_tokens_split_in_c_equal_the_token_pattern(texts):
    vec = load_model().vectorizer
    assert vec._word_runs
    for text in [*texts, *_ascii_noise()]:
        prepared = strip_accents_unicode(text.lower())
        assert vec.tokens(text) == vec._tokens.findall(prepared), text
    default = TfidfTransform(vocabulary=["ab"], idf=np.ones(1))  # scikit-learn's default pattern
    for text in [*texts[:200], *_ascii_noise()]:
        assert default.tokens(text) == re.findall(r"(?u)\b\w\w+\b", text.lower()), text


def test_ascii_token_count_equals_the_regex(texts):
    for text in [*texts, *_ascii_noise(), "Section 12.3(a)", " a", "a", "_x_ ,;"]:
        assert count_tokens(text) == len(re.findall(r"\w+|[^\w\s]", text)), text


def test_keyword_prior_hits_equal_searching_every_text(texts):
    model = load_model()
    lowered = [t.lower() for t in texts]
    joined = JoinedTexts(lowered)
    assert model.priors
    for _, pattern, _ in model.priors:
        assert required_literals(pattern), pattern.pattern  # every packaged prior gets a pre-check
        assert literal_hits(lowered, pattern, joined) == [pattern.search(t) is not None for t in lowered]
    # and what the model adds: the same logits as boosting by a plain search
    logits = passage_logits(texts, model)
    plain = model.vectorizer.logits_reference(texts, model.coef[: len(model.vectorizer.vocabulary)])
    plain += model.intercept
    for col, pattern, boost in model.priors:
        plain[[pattern.search(t) is not None for t in lowered], col] += boost
    assert np.array_equal(logits, plain.astype(np.float32))


@pytest.mark.parametrize(("pattern", "literals"), [
    ("escrow", ("escrow",)),
    ("most favou?red|\\bmfn\\b", ("most favo", "mfn")),
    ("ab(?:cde)?fgh", ("fgh",)),  # the optional part is not required
    ("(?:shall|will) not (?:apply|limit)", (" not ",)),
    ("x(?:yz)*w", None),  # nothing of three characters is required
    ("(?i)escrow", None),  # case-insensitive: no pre-check
    ("(?:abc|d)", None),  # a branch without a literal: no pre-check
    ("compet[a-z]*|competitor", ("compet",)),  # a literal containing another adds nothing
])
def test_required_literals_are_only_what_every_match_contains(pattern, literals):
    assert required_literals(re.compile(pattern)) == literals


def test_a_paragraph_that_skips_punkt_is_punkts_sentences_joined(pages):
    paragraphs = [p for page in pages for p in _paragraphs(page)]
    shortcut = [p for p in paragraphs if _one_passage(p, 900)]
    assert len(shortcut) > len(paragraphs) // 2
    assert all(" ".join(_sentences(p)) == p for p in shortcut)
    assert not _one_passage('He said "stop."Then he left.', 900)  # a sentence end right before a quote
    assert not _one_passage("Ends here.  Two spaces.", 900)
    assert not _one_passage("x" * 901, 900)


def test_remembering_punkt_splits_as_nltk(pages):
    paragraphs = [p for page in pages for p in _paragraphs(page)]
    memo, plain = MemoPunkt(), PunktSentenceTokenizer(punkt_parameters())
    assert [memo.tokenize(p) for p in paragraphs] == [plain.tokenize(p) for p in paragraphs]
    assert [memo.tokenize(p) for p in paragraphs[:50]] == [plain.tokenize(p) for p in paragraphs[:50]]  # remembered
