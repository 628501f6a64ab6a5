"""The text shown for an offline finding: the sentence(s) that carry the clause, with section and page.

A passage (``clausegate.review.passages``) is a retrieval unit: a run of sentences that may start with
the tail of the previous clause or end with the next section's heading ("POSSIBILITY OF SUCH
DAMAGES. 11.4. Indemnification by LeadersOnline.").  ``evidence_for`` cuts it down:

1. the passage is split into sentences (Punkt, as the passages are), and a sentence that is
   only a numbered heading ("11.4. Indemnification by LeadersOnline.") is never shown: it opens
   the next section;
2. each sentence is scored by the offline model for the category, with the consistency rules
   (``offline.consistency``) applied as to the passages; the best one is kept, and so
   are its neighbours that score nearly as well (within ``KEEP_MARGIN`` logits, or above the
   category's threshold), never across a numbered heading; a kept lead-in ("... as follows:") or list
   item ("...; and") brings the rest of its sentence (``goes_on``), a list item the lead-in before it;
   the clause's own heading right before it is kept;
3. a sentence cut by a page break is completed: when the kept text starts the passage and the
   previous passage (the page before, or earlier on the page) ends mid-sentence, its unfinished
   sentence is put in front (and the page added); likewise at the end, where a lead-in or list item
   goes on into the next passage until its sentence ends;
4. a text longer than ``MAX_EVIDENCE_CHARS`` keeps its first whole sentences and ends with ``CUT_MARKER``
   (``Evidence.cut``; ``shorten``), and so does a sentence that goes on past what fits;
5. the section is the heading the first kept sentence sits under
   (``clausegate.review.sections``): the passage's own ``section`` (set by the pre-filter from the
   passages before it) or a heading inside the passage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from clausegate.review.offline import consistency
from clausegate.review.offline.model import OfflineModel, passage_logits
from clausegate.review.passages import _sentences, continues_number
from clausegate.review.schemas import Passage
from clausegate.review.sections import Heading, from_label, heading_of, heading_words
from clausegate.review.toc import is_toc

KEEP_MARGIN = 1.5  # a neighbouring sentence is kept when its logit is within this of the best one
MAX_EVIDENCE_CHARS = 1500
CUT_MARKER = " […]"  # ends a quote cut at MAX_EVIDENCE_CHARS (``Evidence.cut``): never a silent cut
_SENT_END_RE = re.compile(r"[.;:!?)\]\"”’]\s*$")
_GOES_ON_RE = re.compile(r"(?:[;:,]|[;,]?\s(?:and|or|and/or))\s*$")
_LETTERED_HEADING_RE = re.compile(r"^\([a-z]{1,2}\)\s+[A-Z][\w'’&/,\- ]{0,60}\.$")
_BARE_NUMBER_RE = re.compile(r"^\(?[0-9ivxlcIVXLC]{1,4}(?:\.\d{1,3})*[.)]?$")


@dataclass(frozen=True)
class Evidence:
    text: str
    pages: list[int]
    section: str | None
    cut: bool = False  # the sentences went on past MAX_EVIDENCE_CHARS: the text ends with CUT_MARKER


def sentences(text: str) -> list[str]:
    """The passage's sentences; a bare clause number ("11.4.") is joined to what follows it."""
    out: list[str] = []
    pending = ""
    for s in _sentences(text):
        if _BARE_NUMBER_RE.match(s):
            pending = f"{pending} {s}".strip()
            continue
        out.append(f"{pending} {s}".strip() if pending else s)
        pending = ""
    if pending:
        out.append(pending)
    return out


def goes_on(text: str) -> bool:
    """``text`` stops inside its sentence: a lead-in ("as follows:") or a list item ("...;", "...; and", "..., or")."""
    return _GOES_ON_RE.search(text) is not None


def _reads_on(sentence: str, following: str) -> bool:
    """``following`` is the rest of ``sentence``: a lead-in or list item (``goes_on``), or a sentence longer than a
    passage that the splitter cut without an end ("... carrier liability in the" + "traffic accident ...")."""
    return goes_on(sentence) or (not sentence.rstrip().endswith((".", "!", "?", ":", ";"))
                                 and following[:1].islower())


def _only_heading(sentence: str) -> bool:
    """A numbered heading and nothing else ("11.4. Indemnification by LeadersOnline."), or a lettered one
    ("(c) Effect of Termination."): it opens a clause, it is never the clause."""
    h = heading_of(sentence)
    if h is not None and not sentence[h.end:].strip():
        return True
    if len(sentence) > 70 or _LETTERED_HEADING_RE.match(sentence) is None:
        return False
    words = sentence.split()[1:]  # the title after "(c)": at most 6 words, the longer ones capitalised
    return len(words) <= 6 and all(w[0].isupper() for w in words if len(w) >= 4)


def _ends_sentence(text: str) -> bool:
    return bool(_SENT_END_RE.search(text))


def continues(prev_text: str, prev_page: int, text: str, page: int) -> bool:
    """``text`` goes on with ``prev_text``'s unfinished sentence (same page or the next one): ``prev_text`` ends
    mid-sentence, or ends a list item or clause piece (";", ",", ":") and ``text`` goes on in lower case
    ("provided, however, …"); never into a table of contents."""
    if not 0 <= page - prev_page <= 1 or is_toc(text):
        return False
    if text[:1].islower() and prev_text.rstrip()[-1:] in ";,:":
        return True
    return (not _ends_sentence(prev_text)
            and heading_of(text) is None and (text[:1] not in "•·▪(" or continues_number(prev_text, text)))


def _continues(prev: Passage, cur: Passage) -> bool:
    return continues(prev.text, prev.page, cur.text, cur.page)


def _split(passage: Passage) -> tuple[list[str], list[Heading | None]]:
    """The passage's sentences and the section each one sits in."""
    sents = sentences(passage.text) or [passage.text]
    section: Heading | None = from_label(passage.section)
    sections: list[Heading | None] = []
    for s in sents:
        h = heading_of(s)
        if h is not None:
            section = h if h.title or section is None or not h.number.startswith(section.number + ".") else \
                Heading(number=h.number, title=section.title, end=h.end)
        sections.append(section)
    return sents, sections


Prepared = dict[int, tuple[list[str], list["Heading | None"], np.ndarray]]


def prepare(passages: list[Passage], indices, model: OfflineModel) -> Prepared:
    """Sentences, sections and sentence logits (all categories) of ``passages[i]`` for each i in
    ``indices``, scored in one call (a review shows dozens of findings)."""
    keys = sorted(set(indices))
    split = [_split(passages[i]) for i in keys]
    flat = [s for sents, _ in split for s in sents]
    heads = [" ".join(heading_words(h.title)) if h else "" for _, secs in split for h in secs]
    z = passage_logits(flat, model, headings=heads)
    out: Prepared = {}
    at = 0
    for i, (sents, secs) in zip(keys, split, strict=True):
        out[i] = (sents, secs, z[at:at + len(sents)])
        at += len(sents)
    return out


def evidence_for(passages: list[Passage], i: int, category: str, model: OfflineModel,
                 prepared: Prepared | None = None) -> Evidence:
    """The sentences of ``passages[i]`` that carry ``category`` (see the module doc); ``prepared``:
    from ``prepare`` (else the passage is scored here)."""
    passage = passages[i]
    if prepared is None or i not in prepared:
        prepared = prepare(passages, [i], model)
    sents, sections, logits = prepared[i]
    sections = list(sections)
    z = logits[:, model.category_index[category]]
    if consistency.ENABLED:  # the sentences read as the passages are: "non-exclusive" is not quoted as Exclusivity
        z = z + consistency.deltas(sents, [category]).get(category, 0.0)
    candidates = [j for j, s in enumerate(sents) if not _only_heading(s)] or list(range(len(sents)))
    best = max(candidates, key=lambda j: z[j])
    threshold = model.extract_threshold(category)
    floor = min(z[best] - KEEP_MARGIN, float(np.log(threshold / (1 - threshold))))
    lo = hi = best
    while lo - 1 >= 0 and heading_of(sents[lo]) is None and z[lo - 1] >= floor and not _only_heading(sents[lo - 1]):
        lo -= 1
    while hi + 1 < len(sents) and heading_of(sents[hi + 1]) is None and z[hi + 1] >= floor:
        hi += 1
    # a lead-in ("... as follows:") or a list item ("...; and") is read with the rest of its sentence
    while (hi + 1 < len(sents) and _reads_on(sents[hi], sents[hi + 1]) and not _only_heading(sents[hi + 1])
           and len(" ".join(sents[lo:hi + 2])) <= MAX_EVIDENCE_CHARS):
        hi += 1
    while (lo > 0 and _reads_on(sents[lo - 1], sents[lo]) and not _only_heading(sents[lo - 1])
           and len(" ".join(sents[lo - 1:hi + 1])) <= MAX_EVIDENCE_CHARS):
        lo -= 1
    if lo > 0 and _only_heading(sents[lo - 1]) and heading_of(sents[lo]) is None:
        lo -= 1  # the clause's own heading ("13. Limitation of Liability.") reads with it
    text = " ".join(sents[lo:hi + 1])
    pages = [passage.page]
    if lo == 0 and i > 0 and _continues(passages[i - 1], passage):
        tail = sentences(passages[i - 1].text)[-1:]
        if tail and not _only_heading(tail[0]):
            text = f"{tail[0]} {text}"
            pages.insert(0, passages[i - 1].page)
            sections[lo] = from_label(passages[i - 1].section) or sections[lo]
    more = hi + 1 < len(sents)  # the passage goes on after the kept text
    if hi == len(sents) - 1 and i + 1 < len(passages):
        nxt = passages[i + 1]
        if _continues(passage, nxt) or (goes_on(text) and 0 <= nxt.page - passage.page <= 1):
            more = True
            for head in sentences(nxt.text):
                if _only_heading(head) or len(text) + 1 + len(head) > MAX_EVIDENCE_CHARS:
                    break
                text = f"{text} {head}"
                if nxt.page not in pages:
                    pages.append(nxt.page)
                if not goes_on(head):
                    break
    text, cut = shorten(text)
    if not cut and more and goes_on(text):  # its sentence goes on past what fits: say so
        text, cut = text + CUT_MARKER, True
    first = sections[lo]
    return Evidence(text=text, pages=sorted(set(pages)), section=first.label if first else None, cut=cut)


def shorten(text: str, limit: int = MAX_EVIDENCE_CHARS) -> tuple[str, bool]:
    """``text`` if it fits in ``limit``; else its whole sentences that fit, or (one sentence longer than the
    limit) its words that fit followed by ``CUT_MARKER``.  Returns the text and whether it was cut."""
    if len(text) <= limit:
        return text, False
    kept = ""
    for s in sentences(text):
        if len(kept) + 1 + len(s) + len(CUT_MARKER) > limit:
            break
        kept = f"{kept} {s}" if kept else s
    if not kept:
        kept = text[: limit - len(CUT_MARKER)].rsplit(" ", 1)[0].rstrip(" ,;:")
    return kept + CUT_MARKER, True


__all__ = ["CUT_MARKER", "MAX_EVIDENCE_CHARS", "Evidence", "continues", "evidence_for", "goes_on", "prepare",
           "sentences", "shorten"]
