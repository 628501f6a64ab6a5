"""Two versions' clauses aligned by content: unchanged, changed (word-level redline), moved, added, removed.

1. The longest in-order runs of equal keys (difflib over the clause keys) are **unchanged**.
2. A clause left over whose key appears left over in the other version is **moved** (its words unchanged).
3. What is still left is paired by word similarity (at least ``SIMILAR``), first inside the same gap of the
   in-order alignment, then anywhere (a clause moved and edited): **changed**, with its redline.
4. The rest: **removed** (only in the earlier version) or **added** (only in the later one).

Keys (:mod:`.units`) ignore layout, hyphenation, line breaks and format, so only the words count; a clause whose
only differences are words that one version's page-furniture check took out as lines of their own (a year or a
placeholder wrapped alone in a PDF) is unchanged.  When the later
version is a .docx, a change that its pending tracked changes do not cover (an inserted word that no ``w:ins``
holds, a deleted one that no ``w:del`` does) is flagged **untracked**: the counterparty changed it silently.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from typing import Literal

from pydantic import BaseModel, Field

from clausegate.review.schemas import ParsedDocument
from clausegate.review.text_identity import normalise
from clausegate.review.versions.redline import Segment, markdown, redline, similarity
from clausegate.review.versions.units import Unit, furniture_of, units_of

SIMILAR = 0.5  # word-similarity ratio from which two left-over clauses are one clause, changed
Status = Literal["unchanged", "changed", "moved", "added", "removed"]


class ClauseChange(BaseModel):
    """One clause across two versions."""

    status: Status
    old_index: int | None = Field(None, description="its clause number (0-based) in the earlier version")
    new_index: int | None = Field(None, description="its clause number in the later version")
    old_text: str | None = None
    new_text: str | None = None
    moved: bool = Field(False, description="changed: also moved out of its place")
    redline: str = Field("", description="changed: the word-level redline, ~~deleted~~ **inserted**")
    untracked: bool = Field(False, description="the later version is a .docx and no tracked change covers this")


class Comparison(BaseModel):
    """Every clause of two versions, in the later version's order (removed clauses where they were)."""

    old_units: int
    new_units: int
    clauses: list[ClauseChange]

    def changes(self) -> list[ClauseChange]:
        return [c for c in self.clauses if c.status != "unchanged"]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("unchanged", "changed", "moved", "added", "removed"), 0)
        for clause in self.clauses:
            out[clause.status] += 1
        return out


def _pair_similar(old: list[Unit], new: list[Unit], free_old: list[int], free_new: list[int]) -> list[tuple[int, int]]:
    scored = []
    for i in free_old:
        for j in free_new:
            score = similarity(old[i].key, new[j].key)
            if score >= SIMILAR:
                scored.append((-score, abs(i - j), i, j))
    pairs, used_old, used_new = [], set(), set()
    for _, _, i, j in sorted(scored):
        if i not in used_old and j not in used_new:
            used_old.add(i)
            used_new.add(j)
            pairs.append((i, j))
    return pairs


def align_units(old: list[Unit], new: list[Unit]) -> list[ClauseChange]:
    """The clause changes between two unit lists (module doc), in the later version's order."""
    matcher = difflib.SequenceMatcher(None, [u.key for u in old], [u.key for u in new], autojunk=False)
    partner: dict[int, int] = {}
    for a, b, size in matcher.get_matching_blocks():
        partner.update({a + k: b + k for k in range(size)})
    status: dict[int, Status] = dict.fromkeys(partner, "unchanged")
    waiting: dict[str, list[int]] = defaultdict(list)
    taken = set(partner.values())
    for j, unit in enumerate(new):
        if j not in taken:
            waiting[unit.key].append(j)
    for i, unit in enumerate(old):
        if i not in partner and waiting.get(unit.key):
            partner[i] = waiting[unit.key].pop(0)
            status[i] = "moved"
    gaps = [(range(i1, i2), range(j1, j2)) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]
    moved_far: set[int] = set()
    for olds, news in [*gaps, (range(len(old)), range(len(new)))]:
        taken = set(partner.values())
        free_old = [i for i in olds if i not in partner]
        free_new = [j for j in news if j not in taken]
        far = len(olds) == len(old) and len(news) == len(new)
        for i, j in _pair_similar(old, new, free_old, free_new):
            partner[i], status[i] = j, "changed"
            if far:
                moved_far.add(i)
    by_new: dict[int, ClauseChange] = {}
    removed: list[ClauseChange] = []
    for i, unit in enumerate(old):
        if i not in partner:
            removed.append(ClauseChange(status="removed", old_index=i, old_text=unit.text))
            continue
        j = partner[i]
        change = ClauseChange(status=status[i], old_index=i, new_index=j, old_text=unit.text, new_text=new[j].text)
        if status[i] == "changed":
            change = change.model_copy(update={"redline": markdown(redline(unit.text, new[j].text)),
                                               "moved": i in moved_far})
        by_new[j] = change
    out = [by_new.get(j) or ClauseChange(status="added", new_index=j, new_text=unit.text)
           for j, unit in enumerate(new)]
    for change in removed:  # where it was: after the clause that came before it in the earlier version
        before = [k for k, c in enumerate(out) if c.old_index is not None and c.old_index < change.old_index]
        out.insert(before[-1] + 1 if before else 0, change)
    return out


def _tracked(change: ClauseChange, inserted: str, deleted: str) -> bool:
    """Whether the later .docx's pending tracked changes hold every word this change added or removed."""
    if change.status == "added":
        return normalise(change.new_text or "") in inserted
    if change.status == "removed":
        return normalise(change.old_text or "") in deleted
    if change.status == "moved":
        return normalise(change.new_text or "") in inserted and normalise(change.old_text or "") in deleted
    segments: list[Segment] = redline(change.old_text or "", change.new_text or "")
    return all(normalise(s.text) in (inserted if s.op == "insert" else deleted) for s in segments if s.op != "equal")


def _layout_only(change: ClauseChange, dropped_old: frozenset[str], dropped_new: frozenset[str]) -> bool:
    """A changed clause whose only differences are words one version's page-furniture check took out as lines."""
    def furniture(text: str, dropped: frozenset[str]) -> bool:
        key = normalise(text)
        return key in dropped or (not any(c.isalpha() for c in key) and all(t in dropped for t in key.split()))

    segments = redline(change.old_text or "", change.new_text or "")
    return all(furniture(s.text, dropped_old if s.op == "insert" else dropped_new) for s in segments
               if s.op != "equal")


def compare(old: ParsedDocument, new: ParsedDocument) -> Comparison:
    """Two parsed versions of one contract, clause by clause (module doc)."""
    old_units, new_units = units_of(old), units_of(new)
    clauses = align_units(old_units, new_units)
    dropped_old, dropped_new = furniture_of(old), furniture_of(new)
    clauses = [c.model_copy(update={"status": "unchanged", "redline": ""})
               if c.status == "changed" and _layout_only(c, dropped_old, dropped_new) else c for c in clauses]
    if new.format == "docx":
        inserted = " ".join(normalise(r.text) for r in new.revisions if r.kind == "insertion")
        deleted = " ".join(normalise(r.text) for r in new.revisions if r.kind == "deletion")
        clauses = [c.model_copy(update={"untracked": True})
                   if c.status != "unchanged" and not _tracked(c, inserted, deleted) else c for c in clauses]
    return Comparison(old_units=len(old_units), new_units=len(new_units), clauses=clauses)
