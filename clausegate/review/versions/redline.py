"""A word-level redline between two texts of one clause."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from clausegate.review.text_identity import normalise


@dataclass(frozen=True)
class Segment:
    op: Literal["equal", "insert", "delete"]
    text: str


def redline(old: str, new: str) -> list[Segment]:
    """``old`` → ``new`` word by word: equal, deleted and inserted runs of words, in reading order."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(None, [normalise(w) for w in a], [normalise(w) for w in b], autojunk=False)
    out: list[Segment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(Segment("equal", " ".join(b[j1:j2])))
            continue
        if i2 > i1:
            out.append(Segment("delete", " ".join(a[i1:i2])))
        if j2 > j1:
            out.append(Segment("insert", " ".join(b[j1:j2])))
    return out


def similarity(old: str, new: str) -> float:
    """How much of the words two texts share (difflib's ratio over the words, 0..1)."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5:
        return 0.0
    return matcher.ratio()


def markdown(segments: list[Segment]) -> str:
    """The redline as Markdown: ~~deleted~~ **inserted**."""
    shown = {"equal": "{}", "delete": "~~{}~~", "insert": "**{}**"}
    return " ".join(shown[s.op].format(s.text) for s in segments)
