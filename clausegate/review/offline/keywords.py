"""Fast keyword-prior matching: a literal pre-check that is exact, derived from the pattern itself.

A keyword prior (``clausegate.review.offline.model.keyword_pattern``) is searched in every passage and every
evidence sentence; most of its patterns open with an alternation or a character class, so ``re`` tries them
at every position of every text.  :func:`required_literals` reads the parsed pattern (``re._parser``, the
standard library's own parser) and returns literals of which any match must contain at least one: a run of
plain characters that every match goes through (``"escrow"``, ``" not "``), or, for an alternation, one such
literal per branch.  :func:`literal_hits` then finds the texts that contain one of them with ``str.find`` on
the texts joined by NUL (no literal holds NUL, so an occurrence never spans two texts), and the pattern is
searched only in those: the same hits, far fewer searches.

Only what a match must consume counts: a literal run inside an optional or starred part, a lookaround or
a case-insensitive group is never used, and a pattern whose parse holds anything else unknown simply gets
fewer (or no) literals.  With none of at least ``MIN_LITERAL`` characters the pattern is searched everywhere.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache

try:
    from re import _parser as sre_parse
    from re._constants import BRANCH, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, SUBPATTERN
except ImportError:  # pragma: no cover - a Python without the private parser: no pre-check
    sre_parse = None

MIN_LITERAL = 3  # shorter literals filter too little to pay for the pre-check
SEPARATOR = "\x00"


def _necessary(items) -> tuple[str, ...] | None:
    """Best set of literals one of which every match of the sequence ``items`` contains (None: none known)."""
    candidates: list[tuple[str, ...]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            candidates.append(("".join(run),))
            run.clear()

    for op, arg in items:
        if op is LITERAL:
            run.append(chr(arg))
            continue
        close()
        found = None
        if op is SUBPATTERN:
            _group, add_flags, _del_flags, body = arg
            if not add_flags & re.IGNORECASE:
                found = _necessary(body)
        elif op in (MAX_REPEAT, MIN_REPEAT):
            low, _high, body = arg
            if low >= 1:
                found = _necessary(body)
        elif op is BRANCH:
            branches = [_necessary(b) for b in arg[1]]
            if all(b is not None for b in branches):
                found = tuple(dict.fromkeys(lit for b in branches for lit in b))
        elif op is IN and len(arg) == 1 and arg[0][0] is LITERAL:
            run.append(chr(arg[0][1]))  # a one-character class, e.g. "[-]"
            continue
        if found is not None:
            candidates.append(found)
    close()
    candidates = [c for c in candidates if min(map(len, c)) >= MIN_LITERAL]
    if not candidates:
        return None
    return max(candidates, key=lambda c: (min(map(len, c)), -len(c)))


@lru_cache(maxsize=256)
def required_literals(pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """Literals one of which every match of ``pattern`` contains (see the module doc); None when unknown
    (case-insensitive or bytes pattern, no parser, no literal of ``MIN_LITERAL`` characters)."""
    if sre_parse is None or not isinstance(pattern.pattern, str) or pattern.flags & re.IGNORECASE:
        return None
    try:
        parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover - compiled already, so it parses; be safe with private APIs
        return None
    literals = _necessary(list(parsed))
    if literals is None or any(SEPARATOR in lit for lit in literals):
        return None
    # a literal that contains another one adds nothing: every text holding it holds the shorter one too
    return tuple(lit for lit in literals if not any(o != lit and o in lit for o in literals))


class JoinedTexts:
    """Texts joined by ``SEPARATOR``, to find which of them contain a literal with one ``str.find`` scan."""

    def __init__(self, texts: Sequence[str]):
        self.texts = texts
        self.joined = SEPARATOR.join(texts)
        self.starts: list[int] = []
        at = 0
        for t in texts:
            self.starts.append(at)
            at += len(t) + 1

    def containing(self, literals: Sequence[str]) -> list[int]:
        """Indices (ascending) of the texts containing at least one of ``literals`` (none holds ``SEPARATOR``)."""
        found: set[int] = set()
        joined, starts = self.joined, self.starts
        for lit in literals:
            pos = joined.find(lit)
            while pos >= 0:
                i = bisect_right(starts, pos) - 1
                found.add(i)
                nxt = starts[i + 1] if i + 1 < len(starts) else len(joined)
                pos = joined.find(lit, nxt)  # the next text: one hit per text is enough
        return sorted(found)


def literal_hits(texts: Sequence[str], pattern: re.Pattern[str], joined: JoinedTexts | None = None) -> list[bool]:
    """``[pattern.search(t) is not None for t in texts]``, searching only the texts that hold a required literal."""
    literals = required_literals(pattern)
    if literals is None:
        return [pattern.search(t) is not None for t in texts]
    if joined is None or joined.texts is not texts:
        joined = JoinedTexts(texts)
    out = [False] * len(texts)
    for i in joined.containing(literals):
        out[i] = pattern.search(texts[i]) is not None
    return out


__all__ = ["JoinedTexts", "literal_hits", "required_literals"]
