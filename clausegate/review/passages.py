"""Page text -> passages (runs of a few sentences), and the token count used everywhere.

``split_passages`` is deterministic and needs no downloaded NLTK data: it uses an untrained
``nltk.tokenize.PunktSentenceTokenizer()`` (default parameters, no ``nltk.download``).

Algorithm (works on pypdf's text of one page):

1. Normalise: NBSP/odd spaces -> space, runs of spaces collapsed, each line stripped.
2. Paragraphs: a new paragraph starts after a blank line, at a line that looks like a clause
   start (``12.``, ``3.1``, ``(a)``, ``Section 4``, ``ARTICLE V`` ...) or a short ALL-CAPS
   heading, after such a heading, and after a short line that ends a sentence (``.``, ``:``, ``;``).
   A short ALL-CAPS line that finishes an unfinished sentence of the line before is no heading.
3. Sentences: each paragraph's lines are joined with spaces (a line-end hyphen joins words)
   and split with Punkt; a "sentence" longer than ``MAX_CHARS`` is cut at ``;`` or spaces.
4. Passages: consecutive sentences of a paragraph are packed into passages of at most
   ``MAX_CHARS`` characters (a short lead of at most ``LEAD_CHARS``, typically a numbered
   heading, is never left alone: it may push its passage to ``MAX_CHARS + LEAD_CHARS``); a
   paragraph shorter than ``MIN_CHARS`` (a heading, a clause number) is merged into the next one
   when the result still fits; the short end of a long paragraph stays with that paragraph.

So a clause normally sits in one passage, and a passage never crosses a page.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_CHARS = 900
MIN_CHARS = 200
LEAD_CHARS = 120  # a short lead (a heading such as "11.4. Indemnification.") stays with its next sentence

# ``count_tokens``: one token per run of word characters, or per single punctuation mark
# (not whitespace).  "Section 12.3(a)" -> Section, 12, ., 3, (, a, ) = 7 tokens.  It is a
# stable, tokenizer-free proxy for LLM tokens used for every "tokens kept" figure.
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
# ASCII character -> its class under _TOKEN_RE's \w and \s (as re decides): "a" word, " " space, "." other
_ASCII_CLASSES = str.maketrans({chr(i): "a" if re.match(r"\w", chr(i)) else " " if re.match(r"\s", chr(i)) else "."
                                for i in range(128)})

_SPACES_RE = re.compile(r"[ \t\f\v\u00a0\u1680\u2000-\u200b\u202f\u205f\u3000\ufeff]+")
_CLAUSE_START_RE = re.compile(
    r"""^(?:
        \d{1,3}(?:\.\d{1,3}){0,4}\.?\s          # 12.  3.1  4.2.1
      | \(\s?(?:[a-z]{1,2}|[ivxlc]{1,5}|\d{1,2})\s?\)\s   # (a) (iv) (12)
      | [a-z]\)\s | [A-Z]\.\s                  # a) A.
      | (?:section|article|clause|schedule|exhibit|annex|appendix)\s+[\dIVXLC]   # Section 4
      | [•·▪\-\*]\s                              # bullets
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_SENT_END = (".", ":", ";", "?", "!")
_ASCII_LOWER_RE = re.compile(r"[a-z]")
_DROP_ASCII_UPPER = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ODD_SPACE_RE = re.compile(r"[^\S ]|  ")  # whitespace other than single spaces
# Punkt's sentence-end characters directly before one of its non-word characters (PunktLanguageVars._re_non_word_chars)
_END_BEFORE_NON_WORD_RE = re.compile("[.?!][)\";}\\]*:@'({\\[\u2018\u2019\u201c\u201d\xab\xbb?!]")
_SENT_END_CHARS_RE = re.compile(r"[.?!]")  # Punkt's candidate sentence ends (PunktLanguageVars.sent_end_chars)


def count_tokens(text: str) -> int:
    """Number of word runs plus punctuation marks in ``text`` (see ``_TOKEN_RE``)."""
    if not text:
        return 0
    if text.isascii():  # each character as its class (word / space / other), then runs and marks counted in C
        classes = text.translate(_ASCII_CLASSES)
        return classes.count(".") + classes.count(" a") + classes.count(".a") + (classes[0] == "a")
    return len(_TOKEN_RE.findall(text))


@lru_cache(maxsize=1)
def _punkt():
    from clausegate.review.punkt import MemoPunkt  # local import: nltk (~0.3 s) only when a text is split

    return MemoPunkt()  # untrained Punkt: default parameters, no data files needed (same sentences, faster)


def warm_up() -> None:
    """Load the sentence splitter now (importing nltk takes ~1 s): for processes that can do it while they wait
    (the warm-start zygote, ``clausegate review`` while it starts Prefect), so the first split does not pay it."""
    _punkt()


def _is_heading(line: str) -> bool:
    """A short ALL-CAPS line (a title); long ALL-CAPS lines are clause text (disclaimers)."""
    if len(line) > 60 or line.endswith((",", ";", "-")):
        return False
    if line.isascii():  # the letters are A-Z and a-z: none lower-case, at least three
        return not _ASCII_LOWER_RE.search(line) and len(line) - len(line.translate(_DROP_ASCII_UPPER)) >= 3
    letters = [c for c in line if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters)


def _continues(prev: str) -> bool:
    """``prev`` is clause text whose sentence goes on in the next line: a long line (or one of
    lower-case words) without a sentence end.  A short ALL-CAPS line after it ("POSSIBILITY OF
    SUCH DAMAGES.") ends that sentence; it is no heading."""
    return bool(prev) and not prev.endswith(_SENT_END) and not _is_heading(prev) and (
        len(prev) > 60 or any(c.islower() for c in prev))


def _paragraphs(page_text: str) -> list[str]:
    text = page_text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.strip() for line in _SPACES_RE.sub(" ", text).split("\n")]  # no run of spaces holds a "\n"
    paragraphs: list[list[str]] = []
    current: list[str] = []
    prev = ""
    for line in lines:
        if not line:
            if current:
                paragraphs.append(current)
                current = []
            prev = ""
            continue
        new_par = bool(current) and (
            _CLAUSE_START_RE.match(line) is not None
            or (_is_heading(line) and not _continues(prev))
            or _is_heading(prev)
            or (len(prev) < 60 and prev.endswith(_SENT_END))
        )
        if new_par:
            paragraphs.append(current)
            current = []
        current.append(line)
        prev = line
    if current:
        paragraphs.append(current)
    out = []
    for par in paragraphs:
        joined = ""
        for line in par:
            if joined.endswith("-") and len(joined) > 1 and joined[-2].isalpha() and line[:1].islower():
                joined = joined[:-1] + line  # re-join a word hyphenated at the line end
            elif joined:
                joined += " " + line
            else:
                joined = line
        out.append(joined)
    return out


def _cut_long(sentence: str, limit: int) -> list[str]:
    """Cut a sentence longer than ``limit`` at '; ' or else at spaces (or hard, for no spaces)."""
    pieces: list[str] = []
    rest = sentence
    while len(rest) > limit:
        window = rest[:limit]
        cut = window.rfind("; ")
        if cut < limit // 3:
            cut = window.rfind(" ")
        if cut < limit // 3:
            cut = limit - 1  # one giant "word": hard cut
        pieces.append(rest[: cut + 1].strip())
        rest = rest[cut + 1 :].strip()
    if rest:
        pieces.append(rest)
    return [p for p in pieces if p]


def _sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences (Punkt), long ones cut (``_cut_long``)."""
    return list(_sentences_of(paragraph))


@lru_cache(maxsize=4096)
def _sentences_of(paragraph: str) -> tuple[str, ...]:
    """``_sentences``, remembered: the evidence step splits a passage again, and a passage is often a whole
    paragraph the pre-filter has just split."""
    try:
        # without ".", "?" or "!" Punkt has no candidate sentence end: its one sentence is the paragraph
        sents = _punkt().tokenize(paragraph) if _SENT_END_CHARS_RE.search(paragraph) else [paragraph]
    except Exception:  # Punkt on pathological input: fall back to one "sentence"
        sents = [paragraph]
    out: list[str] = []
    for sent in sents:
        sent = sent.strip()
        if sent:
            out.extend(_cut_long(sent, MAX_CHARS))
    return tuple(out)


def _one_passage(paragraph: str, max_chars: int) -> bool:
    """The paragraph packs into one passage that is the paragraph itself, without asking Punkt.

    True when it fits (``MAX_CHARS`` and ``max_chars``: no sentence is cut, no passage is closed), holds no
    whitespace but single spaces, no "--", and no ".", "?" or "!" directly before one of Punkt's non-word
    characters: then every sentence end Punkt can find is followed by one space (its
    ``period_context_re`` needs a non-word character or whitespace after the end, and its boundary
    realignment moves closing quotes/brackets only up to whitespace, "--" or the end), so its
    sentences joined by spaces, as the packing joins them, give back the paragraph."""
    return (len(paragraph) <= min(max_chars, MAX_CHARS) and _ODD_SPACE_RE.search(paragraph) is None
            and "--" not in paragraph and _END_BEFORE_NON_WORD_RE.search(paragraph) is None)


def split_passages(page_text: str, *, max_chars: int = MAX_CHARS, min_chars: int = MIN_CHARS) -> list[str]:
    """Split one page's text into passages of whole sentences (deterministic; see module doc)."""
    if not page_text or not page_text.strip():
        return []
    blocks: list[list[str]] = []  # each paragraph -> packed passages
    for paragraph in _paragraphs(page_text):
        if _one_passage(paragraph, max_chars):
            blocks.append([paragraph])
            continue
        packed: list[str] = []
        buf = ""
        for sent in _sentences(paragraph):
            lead = len(buf) <= LEAD_CHARS and len(buf) + 1 + len(sent) <= max_chars + LEAD_CHARS
            if buf and len(buf) + 1 + len(sent) > max_chars and not lead:
                packed.append(buf)
                buf = sent
            else:
                buf = f"{buf} {sent}" if buf else sent
        if buf:
            packed.append(buf)
        if packed:
            blocks.append(packed)
    passages: list[str] = []
    carry = ""
    for packed in blocks:
        if carry:
            room = max_chars + (LEAD_CHARS if len(carry) <= LEAD_CHARS else 0)
            if len(carry) + 1 + len(packed[0]) <= room:
                packed = [f"{carry} {packed[0]}"] + packed[1:]
            else:
                passages.append(carry)
            carry = ""
        *full, last = packed
        if full and len(last) < min_chars:
            # the short end of a long paragraph stays with its paragraph, never opens the next clause
            hard_cut = " " not in full[-1][-(max_chars // 3):]  # one giant "word" cut in two (_cut_long)
            if len(full[-1]) + 1 + len(last) <= max_chars + LEAD_CHARS and not hard_cut:
                full[-1] = f"{full[-1]} {last}"
            else:
                full.append(last)
            passages.extend(full)
        elif len(last) < min_chars:
            passages.extend(full)
            carry = last
        else:
            passages.extend(full)
            passages.append(last)
    if carry:
        if passages and len(passages[-1]) + 1 + len(carry) <= max_chars:
            passages[-1] = f"{passages[-1]} {carry}"
        else:
            passages.append(carry)
    return passages


__all__ = ["LEAD_CHARS", "MAX_CHARS", "MIN_CHARS", "count_tokens", "split_passages"]
