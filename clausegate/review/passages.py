"""Page text -> passages (runs of a few sentences), and the token count used everywhere.

``split_passages`` is deterministic and needs no downloaded NLTK data: it uses nltk's
``PunktSentenceTokenizer`` with fixed parameters (``clausegate.review.punkt``, no ``nltk.download``).

Algorithm (works on PDFium's or pypdf's text of one page; ``page_passages`` first removes the page
furniture of the whole document, ``clausegate.review.furniture``):

1. Normalise: NBSP/odd spaces -> space, runs of spaces collapsed, each line stripped.
2. Paragraphs: a new paragraph starts after a blank line, at a line that looks like a clause
   start (``12.``, ``3.1``, ``(a)``, ``Section 4``, ``ARTICLE V`` ...) or a short ALL-CAPS
   heading, after such a heading, and after a short line that ends a sentence (``.``, ``:``, ``;``).
   A short ALL-CAPS line that finishes an unfinished sentence of the line before is no heading.
   A short Title Case line between a finished sentence and the next one ("Limitation of Liability")
   is an unnumbered heading: it starts a paragraph and is reported with it (``titled_passages``).
3. Sentences: each paragraph's lines are joined with spaces (a line-end hyphen joins words)
   and split with Punkt (``clausegate.review.punkt``: contract abbreviations such as "a.k.a.", "Inc.",
   "No.", "U.S.", "St." never end a sentence); a "sentence" that starts in lower case goes on the one
   before; a "sentence" longer than ``MAX_CHARS`` is cut at ``;`` or spaces.  A line that starts with a
   number continuing the line before ("within thirty" + "(30) days", "Section" + "3.2") opens no clause.
4. Passages: consecutive sentences of a paragraph are packed into passages of at most
   ``MAX_CHARS`` characters (a short lead of at most ``LEAD_CHARS``, typically a numbered
   heading, is never left alone: it may push its passage to ``MAX_CHARS + LEAD_CHARS``); a
   paragraph shorter than ``MIN_CHARS`` (a heading, a clause number) is merged into the next one
   when the result still fits (never into a paragraph that opens with a Title Case heading: it
   goes on the passage before, unless it is that heading's number, "12." + "Limitation of
   Liability"); the short end of a long paragraph stays with that paragraph.

So a clause normally sits in one passage, and a passage never crosses a page.
"""

from __future__ import annotations

import re
from functools import lru_cache

from clausegate.review.furniture import strip_furniture

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

# punctuation some filings' PDFs write with a look-alike code point: U+037E GREEK QUESTION MARK for ";"
# (NFKC maps it so), U+2024 ONE DOT LEADER for "."; read as what they show, so sentences and list items end
_LOOKALIKES = str.maketrans({"\u037e": ";", "\u2024": "."})
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
# a number in words that a parenthesised figure repeats: "thirty (30) days", "six (6) months"
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion "
    "first second third fourth fifth sixth seventh eighth ninth tenth percent".split())
# a word after which a number is a reference, not a clause start: "Section\n3.2", "Article\nV"
REFERENCE_WORDS = frozenset(
    "section sections article articles clause clauses paragraph paragraphs subsection subsections schedule "
    "schedules exhibit exhibits annex appendix part parts item items no. nos. § §§ and or of to under in".split())
_REFERENCE_START_RE = re.compile(r"^(?:sections?|articles?|clauses?|schedules?|exhibits?)\s+[\dIVXLC]", re.IGNORECASE)
_PAREN_NUMBER_RE = re.compile(r"^\(\s?\d{1,3}(?:\.\d+)?\s?%?\)")
_LAST_WORD_RE = re.compile(r"([\w.§-]+)\W*$")
# a heading line of words in Title Case ("Term and Termination", "Orders, Payment and Delivery"): no number
_TITLE_LINE_RE = re.compile(r"^[A-Z][A-Za-z'’&/,\- ]{2,58}[A-Za-z]$")
_NUMBER_ONLY_RE = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3})*\.?|\(\w{1,4}\)|(?:section|article)\s+[\dIVXLC][\d.]*\.?)$",
                             re.IGNORECASE)  # a clause number on a line of its own: "12.", "(a)", "ARTICLE V"
# a line ending on one of these stops inside a phrase: the next line goes on with it, whatever it starts with
_OPEN_WORDS = frozenset("a an the of to at by for from in into on upon with under between than".split())
_TITLE_SMALL = frozenset("a an and as at by for from in into of on or the to with without".split())
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


def _last_word(text: str) -> str:
    m = _LAST_WORD_RE.search(text)
    return m.group(1).lower() if m else ""


def continues_number(prev: str, line: str) -> bool:
    """``line`` starts with a number that belongs to ``prev``'s sentence: "within thirty" + "(30) days",
    "pursuant to Section" + "3.2 hereof", "Sections 2.9 (Samples)," + "ARTICLE 10 (Confidentiality)", or
    anything after a line that stops on a preposition or an article ("with offices at" + "104 West …").  Such
    a line opens no clause and no paragraph."""
    if not prev or prev.endswith(_SENT_END):
        return False
    last = _last_word(prev)
    if last in _OPEN_WORDS:  # "… with offices at" + "104 West 29th Street", "… in connection with" + "(i) the …"
        return True
    if _PAREN_NUMBER_RE.match(line):
        return last.rstrip(".") in NUMBER_WORDS or last in REFERENCE_WORDS
    if _REFERENCE_START_RE.match(line):  # "... survive: ARTICLE 9 (Remedies),\nARTICLE 10 (Confidentiality), ..."
        return prev.endswith((",", ")")) or prev[-1:].islower()
    return last in REFERENCE_WORDS and line[:1].isdigit()


def is_title_line(line: str) -> bool:
    """A short line of Title Case words without a number or a sentence end ("Limitation of Liability"): an
    unnumbered heading when it stands between a finished sentence and the next one (``_paragraphs``)."""
    if not _TITLE_LINE_RE.match(line) or _is_heading(line):
        return False
    words = line.replace(",", " ").replace("/", " ").split()
    if not 1 <= len(words) <= 7:
        return False
    return all(w[0].isupper() or w.lower() in _TITLE_SMALL or w in "&-" for w in words)


def _continues(prev: str) -> bool:
    """``prev`` is clause text whose sentence goes on in the next line: a long line (or one of
    lower-case words) without a sentence end.  A short ALL-CAPS line after it ("POSSIBILITY OF
    SUCH DAMAGES.") ends that sentence; it is no heading."""
    return bool(prev) and not prev.endswith(_SENT_END) and not _is_heading(prev) and (
        len(prev) > 60 or any(c.islower() for c in prev))


def _paragraphs(page_text: str) -> list[str]:
    return [par for par, _ in _titled_paragraphs(page_text)]


def _titled_paragraphs(page_text: str) -> list[tuple[str, str | None]]:
    """The page's paragraphs, each with the unnumbered Title Case heading line it starts with (or None)."""
    text = page_text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.translate(_LOOKALIKES)
    lines = [line.strip() for line in _SPACES_RE.sub(" ", text).split("\n")]  # no run of spaces holds a "\n"
    paragraphs: list[list[str]] = []
    titles: list[str | None] = []
    current: list[str] = []
    title: str | None = None
    prev = ""
    for n, line in enumerate(lines):
        if not line:
            if current:
                paragraphs.append(current)
                titles.append(title)
                current, title = [], None
            prev = ""
            continue
        nxt = next((x for x in lines[n + 1:] if x), "")
        titled = (is_title_line(line) and (not prev or prev.endswith(_SENT_END) or _is_heading(prev))
                  and bool(nxt) and not nxt[:1].islower() and not is_title_line(nxt))
        new_par = bool(current) and (titled or (
            (_CLAUSE_START_RE.match(line) is not None and not continues_number(prev, line))
            or (_is_heading(line) and not _continues(prev))
            or _is_heading(prev)
            or (len(prev) < 60 and prev.endswith(_SENT_END))
        ))
        if new_par:
            paragraphs.append(current)
            titles.append(title)
            current, title = [], None
        if not current and (titled or (_is_heading(line) and not _continues(prev))):
            title = line  # the paragraph opens with an unnumbered heading (Title Case or ALL CAPS)
        current.append(line)
        prev = line
    if current:
        paragraphs.append(current)
        titles.append(title)
    out = []
    for par, par_title in zip(paragraphs, titles, strict=True):
        joined = ""
        for line in par:
            if joined.endswith("-") and len(joined) > 1 and joined[-2].isalpha() and line[:1].islower():
                joined = joined[:-1] + line  # re-join a word hyphenated at the line end
            elif joined:
                joined += " " + line
            else:
                joined = line
        out.append((joined, par_title))
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


def _merged(paragraph: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Punkt's sentence spans, a "sentence" that starts in lower case ("... under Section 2. provided that")
    joined to the one before: no sentence of a contract starts in lower case."""
    out = [spans[0]]
    for a, b in spans[1:]:
        if paragraph[a:a + 1].islower():
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences (Punkt), long ones cut (``_cut_long``)."""
    return list(_sentences_of(paragraph))


@lru_cache(maxsize=4096)
def _sentences_of(paragraph: str) -> tuple[str, ...]:
    """``_sentences``, remembered: the evidence step splits a passage again, and a passage is often a whole
    paragraph the pre-filter has just split."""
    try:
        # without ".", "?" or "!" Punkt has no candidate sentence end: its one sentence is the paragraph
        spans = list(_punkt().span_tokenize(paragraph)) if _SENT_END_CHARS_RE.search(paragraph) else []
    except Exception:  # Punkt on pathological input: fall back to one "sentence"
        spans = []
    sents = [paragraph[a:b] for a, b in _merged(paragraph, spans)] if spans else [paragraph]
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
    return [text for text, _ in titled_passages(page_text, max_chars=max_chars, min_chars=min_chars)]


def titled_passages(page_text: str, *, max_chars: int = MAX_CHARS,
                    min_chars: int = MIN_CHARS) -> list[tuple[str, str | None]]:
    """``split_passages`` with, for each passage, the unnumbered heading line it starts with (or None): a
    Title Case line ("Limitation of Liability") or a short ALL-CAPS line ("RECITALS").  A Title Case heading
    always starts a passage (a short paragraph before it stays with the passage before), so the section it
    opens is the section of every passage until the next heading (``clausegate.review.sections``)."""
    if not page_text or not page_text.strip():
        return []
    blocks: list[tuple[list[str], str | None]] = []  # each paragraph -> packed passages, its title
    for paragraph, title in _titled_paragraphs(page_text):
        if _one_passage(paragraph, max_chars):
            blocks.append(([paragraph], title))
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
            blocks.append((packed, title))
    passages: list[tuple[str, str | None]] = []
    carry: tuple[str, str | None] | None = None
    for packed, title in blocks:
        packed = list(packed)
        first_title = title
        if carry:
            room = max_chars + (LEAD_CHARS if len(carry[0]) <= LEAD_CHARS else 0)
            if title is not None and carry[1] is None and _NUMBER_ONLY_RE.match(carry[0]):
                packed[0] = f"{carry[0]} {packed[0]}"  # "12." + "Limitation of Liability ...": one heading
                first_title = f"{carry[0]} {title}"
            elif title is not None and carry[1] is None:
                # a short paragraph never opens a titled section: it ends the passage before it, or stands alone
                if passages and len(passages[-1][0]) + 1 + len(carry[0]) <= max_chars:
                    passages[-1] = (f"{passages[-1][0]} {carry[0]}", passages[-1][1])
                else:
                    passages.append(carry)
            elif len(carry[0]) + 1 + len(packed[0]) <= room:
                packed[0] = f"{carry[0]} {packed[0]}"
                first_title = carry[1]
            else:
                passages.append(carry)
            carry = None
        *full, last = packed
        titles = [first_title] + [None] * len(packed)
        if full and len(last) < min_chars:
            # the short end of a long paragraph stays with its paragraph, never opens the next clause
            hard_cut = " " not in full[-1][-(max_chars // 3):]  # one giant "word" cut in two (_cut_long)
            if len(full[-1]) + 1 + len(last) <= max_chars + LEAD_CHARS and not hard_cut:
                full[-1] = f"{full[-1]} {last}"
            else:
                full.append(last)
            passages.extend(zip(full, titles, strict=False))
        elif len(last) < min_chars:
            passages.extend(zip(full, titles, strict=False))
            carry = (last, titles[len(full)])
        else:
            passages.extend(zip([*full, last], titles, strict=False))
    if carry:
        if passages and len(passages[-1][0]) + 1 + len(carry[0]) <= max_chars and carry[1] is None:
            passages[-1] = (f"{passages[-1][0]} {carry[0]}", passages[-1][1])
        else:
            passages.append(carry)
    return passages


def page_passages(page_texts: list[str]) -> list[list[tuple[str, str | None]]]:
    """Every page's ``titled_passages``, its page furniture removed first (``clausegate.review.furniture``):
    the one way the pre-filter, the benchmarks and training turn a document's pages into passages."""
    return [titled_passages(text) for text in strip_furniture(page_texts)]


__all__ = ["LEAD_CHARS", "MAX_CHARS", "MIN_CHARS", "continues_number", "count_tokens", "is_title_line", "page_passages",
           "split_passages", "titled_passages"]
