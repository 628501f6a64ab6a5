"""Fake-model answers for ``bench/cascade.py``: an oracle that answers from CUAD's labels, and a noisy oracle.

Both read ClauseGate's extraction prompt the way a model would (the ``<contract_passage id=".." page="..">``
blocks and the ``- "Category": question`` lines of ``prompts/extract_clauses.j2``) and answer in the JSON the
product asks for::

    {"clauses": [{"category", "passage_id", "text" (verbatim from the passage), "confidence", "reason"}],
     "absent":  [{"category", "passage_ids" (shown passages read for it), "reason"}]}

* :class:`Oracle`: for each asked category, each *shown* passage that overlaps a CUAD span of that category in
  the contract under review (``contract``, set by the bench before each review) gets a clause quoting that
  passage's own text: the overlapping words of the span, clipped to the passage, widened to the sentence holding
  them (then the whole passage) while shorter than the category's minimum quote (``min_quote_words``); confidence
  0.95.  A category with no such passage is listed under ``absent``.  It never sees the contract beyond the
  prompt: a span in a passage the prompt does not show is not found.
* :class:`Noisy`: the oracle with each contract x category answer flipped with probability ``noise``, decided by
  a RNG seeded on (seed, contract, category), so the same answer comes back whatever the order of the calls: a
  present category is answered absent, an absent one present, quoting the shown passage the offline scorer
  ranks best for it.

The bench may read CUAD's labels; the product never does (this module lives in bench/).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from clausegate.demo.model_server import prompts_of
from clausegate.review.llm.extract import min_quote_words
from clausegate.review.offline.model import load_model, score_passages
from tools import cuad

PASSAGE = re.compile(
    r'<contract_passage id="(?P<id>[^"]+)" page="(?P<page>\d+)">\n(?P<text>.*?)\n</contract_passage>', re.S)
CATEGORY = re.compile(r'^- "(?P<name>[^"]+)": ', re.M)
WORD = re.compile(r"\w+")
SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+")
CONFIDENCE = 0.95
MIN_RUN = 8  # a shared run of this many words is an overlap on any page; shorter runs must be on the span's page
MIN_BLOCK = 3  # matching word blocks shorter than this are noise, not part of the overlap
MAX_GAP = 12  # passage words between two blocks of one overlap (PDF text and CUAD's differ here and there)
READ_PER_CATEGORY = 3  # the shown passages an "absent" answer names: the best-scoring ones for the category


@dataclass(frozen=True)
class Shown:
    """One passage as the prompt shows it (its text neutralised, as the model sees it)."""

    id: str
    page: int
    text: str


def read_prompt(user: str) -> tuple[list[str], list[Shown]]:
    """(asked categories, shown passages) of an extraction prompt's user message."""
    passages = [Shown(m["id"], int(m["page"]), m["text"]) for m in PASSAGE.finditer(user)]
    return CATEGORY.findall(user), passages


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    found = list(WORD.finditer(text))
    return [m.group().lower() for m in found], [m.span() for m in found]


def overlap(span_text: str, span_pages: list[int], passage: Shown) -> tuple[int, int] | None:
    """Character range of ``passage.text`` that a CUAD span covers (its shared words, first to last), or None.

    Word-level: the span's and the passage's words are matched in order (``SequenceMatcher``); blocks of at least
    ``MIN_BLOCK`` words count.  An overlap needs ``MIN_RUN`` words in one block, or the whole span (a short span)
    matched on one of the span's pages; it runs from the longest block over its neighbours up to ``MAX_GAP`` words
    away."""
    span_words, _ = _words(span_text)
    words, offsets = _words(passage.text)
    if not span_words or not words:
        return None
    blocks = [b for b in SequenceMatcher(None, span_words, words, autojunk=False).get_matching_blocks()
              if b.size >= min(MIN_BLOCK, len(span_words))]
    if not blocks:
        return None
    core = max(range(len(blocks)), key=lambda i: blocks[i].size)
    on_page = not span_pages or passage.page in span_pages
    if not (blocks[core].size >= MIN_RUN or (on_page and blocks[core].size >= len(span_words))):
        return None
    first = last = core  # the longest block, with its neighbours up to MAX_GAP passage words away
    while first > 0 and blocks[first].b - (blocks[first - 1].b + blocks[first - 1].size) <= MAX_GAP:
        first -= 1
    while last + 1 < len(blocks) and blocks[last + 1].b - (blocks[last].b + blocks[last].size) <= MAX_GAP:
        last += 1
    return offsets[blocks[first].b][0], offsets[blocks[last].b + blocks[last].size - 1][1]


def widen(text: str, start: int, end: int, needed: int) -> tuple[int, int] | None:
    """``[start, end)`` widened to the sentence(s) holding it, then to the whole text, until it has ``needed``
    words; None when even the whole text is shorter."""
    if len(WORD.findall(text[start:end])) >= needed:
        return start, end
    cuts = [0, *(m.end() for m in SENTENCE_END.finditer(text)), len(text)]
    left = max(c for c in cuts if c <= start)
    right = min(c for c in cuts if c >= end)
    for a, b in ((left, right), (0, len(text))):
        a, b = _trim(text, a, b)
        if len(WORD.findall(text[a:b])) >= needed:
            return a, b
    return None


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def first_sentences(text: str, needed: int) -> str | None:
    """The passage's opening sentence(s) holding at least ``needed`` words (None: the passage is shorter)."""
    for cut in [*(m.end() for m in SENTENCE_END.finditer(text)), len(text)]:
        if len(WORD.findall(text[:cut])) >= needed:
            return text[:cut].strip()
    return None


@dataclass
class Oracle:
    """Answers from CUAD's labels (``labels``: file name -> annotation rows), about the shown passages only."""

    labels: dict[str, list[dict]]
    contract: str | None = None  # the file name under review; the bench sets it before each review
    answers: int = 0
    stats: dict[str, int] = field(default_factory=lambda: {"clauses": 0, "absent": 0, "unquotable": 0})

    def __call__(self, request_json: dict) -> str:
        _, user = prompts_of(request_json)
        if "<contract_passage" not in user:  # a generation or repair prompt: not what this bench measures
            return json.dumps({"clauses": [], "absent": []})
        self.answers += 1
        return json.dumps(self.answer(*read_prompt(user)))

    def answer(self, categories: list[str], passages: list[Shown]) -> dict:
        clauses, absent = [], []
        scores = _scores(passages)
        for category in categories:
            found = self.truth(category, passages)
            if self.flipped(category):
                found = [] if found else self.guess(category, passages, scores)
            if found:
                clauses.extend(found)
                self.stats["clauses"] += len(found)
            else:
                absent.append({"category": category, "passage_ids": _best_ids(category, passages, scores),
                               "reason": f"None of the passages read states a {category} term."})
                self.stats["absent"] += 1
        return {"clauses": clauses, "absent": absent}

    def truth(self, category: str, passages: list[Shown]) -> list[dict]:
        """One clause per shown passage that overlaps a CUAD span of ``category`` in this contract."""
        rows = [r for r in self.labels.get(self.contract or "", []) if r["category"] == category]
        clauses = []
        for passage in passages:
            best: tuple[int, int] | None = None
            for row in rows:
                found = overlap(row["text"], cuad.span_pages(row), passage)
                if found and (best is None or found[1] - found[0] > best[1] - best[0]):
                    best = found
            if best is None:
                continue
            quoted = widen(passage.text, *best, min_quote_words(category))
            if quoted is None:
                self.stats["unquotable"] += 1
                continue
            clauses.append(_clause(category, passage, passage.text[quoted[0]:quoted[1]].strip(),
                                   f"The passage states the contract's {category} term."))
        return clauses

    def flipped(self, category: str) -> bool:
        return False

    def guess(self, category: str, passages: list[Shown], scores) -> list[dict]:
        return []


@dataclass
class Noisy(Oracle):
    """The oracle with each contract x category answer flipped with probability ``noise`` (seeded)."""

    noise: float = 0.15
    seed: int = 0

    def flipped(self, category: str) -> bool:
        return flips(self.seed, self.contract or "", category, self.noise)

    def guess(self, category: str, passages: list[Shown], scores) -> list[dict]:
        """A wrong 'present': the opening sentence(s) of the shown passage scored best for ``category``."""
        for pid in _best_ids(category, passages, scores, keep=len(passages)):
            passage = next(p for p in passages if p.id == pid)
            text = first_sentences(passage.text, min_quote_words(category))
            if text:
                return [_clause(category, passage, text, f"The passage reads like a {category} clause.")]
        return []


def flips(seed: int, contract: str, category: str, noise: float) -> bool:
    """Whether the noisy oracle flips this contract x category answer (the same on every call and run)."""
    return random.Random(f"{seed}|{contract}|{category}").random() < noise


def _clause(category: str, passage: Shown, text: str, reason: str) -> dict:
    return {"category": category, "passage_id": passage.id, "text": text, "confidence": CONFIDENCE, "reason": reason}


def _scores(passages: list[Shown]):
    model = load_model()
    return model, score_passages([p.text for p in passages], model) if passages else None


def _best_ids(category: str, passages: list[Shown], scores, keep: int = READ_PER_CATEGORY) -> list[str]:
    """The ids of the ``keep`` shown passages the offline scorer ranks best for ``category``."""
    model, matrix = scores
    if matrix is None or category not in model.category_index:
        return [p.id for p in passages[:keep]]
    column = matrix[:, model.category_index[category]]
    order = sorted(range(len(passages)), key=lambda i: -float(column[i]))
    return [passages[i].id for i in order[:keep]]
