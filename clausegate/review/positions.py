"""Playbook positions: the team's standard per category, and the offline check of a finding against it.

A playbook's ``positions`` give, per category, the preferred wording, acceptable fallback wording,
walk-away conditions (structured numeric checks such as ``{kind: months_of_fees, min: 12}``) and
whether the clause is required.  :func:`check_positions` compares every finding of such a category
with its standard, deterministically and without network:

* a walk-away condition broken by a figure in the clause → ``deviates`` (the reason names the condition);
* else TF-IDF cosine similarity to the preferred and to the fallback wording (fitted on those texts and
  the clause): the closer one at or above ``min_similarity`` → ``matches standard`` / ``acceptable
  fallback``; neither → ``deviates`` (wording);
* a required category without any finding → ``missing`` ("required clause not found").

``gate_on`` says which verdicts send the review to the human gate (the category joins
``gated_categories``; a missing clause is listed with no quote).  The figures come from
:mod:`clausegate.review.figures`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from clausegate.review.categories import canonical
from clausegate.review.figures import FIGURE_KINDS, UNIT_WORDS, figures
from clausegate.review.schemas import Clause, PositionCheck

MISSING_REASON = "required clause not found"
Verdict = Literal["matches standard", "acceptable fallback", "deviates", "missing"]
GateOn = Literal["deviates", "missing"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WalkAway(_Strict):
    """A line the team does not cross: the clause's figure of ``kind`` must be at least ``min`` / at most ``max``.

    ``months_of_fees``: a period of fees, in months (a cap of "fees paid in the prior 3 months" is 3);
    ``period_days``: a period in days (weeks x 7, months x 30, years x 365); ``amount``: a sum of money
    (currency ignored); ``multiple_of_fees``: "two times the fees" is 2."""

    kind: Literal["months_of_fees", "period_days", "amount", "multiple_of_fees"]
    min: float | None = Field(None, ge=0)
    max: float | None = Field(None, ge=0)
    reason: str = Field("", max_length=300, description="how the team says it, e.g. \"cap below 12 months' fees\"")

    @model_validator(mode="after")
    def _a_bound(self) -> WalkAway:
        if self.min is None and self.max is None:
            raise ValueError(f"walk_away {self.kind}: give min or max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"walk_away {self.kind}: min {self.min:g} is above max {self.max:g}")
        return self

    def broken_by(self, values: list[float]) -> str | None:
        """Why ``values`` (the clause's figures of this kind) cross the line, or None.  The binding figure
        of a min check is the smallest (a "lesser of" cap is the smaller one), of a max check the largest."""
        if not values:
            return None
        unit = UNIT_WORDS[self.kind]
        low, high = min(values), max(values)
        if self.min is not None and low < self.min:
            return self._say(f"{low:g} {unit} is below the minimum of {self.min:g} {unit}")
        if self.max is not None and high > self.max:
            return self._say(f"{high:g} {unit} is above the maximum of {self.max:g} {unit}")
        return None

    def _say(self, figure: str) -> str:
        return f"walk-away: {self.reason} ({figure})" if self.reason else f"walk-away: {figure}"


class Position(_Strict):
    """The team's standard for one category."""

    category: str
    preferred: str = Field("", max_length=3000, description="the wording the team wants")
    fallback: list[str] = Field(default_factory=list, max_length=10, description="wordings the team accepts")
    walk_away: list[WalkAway] = Field(default_factory=list, max_length=10)
    required: bool = Field(False, description="a contract without this clause is reported missing")
    gate_on: list[GateOn] = Field(default_factory=list,
                                  description="verdicts that send the review to a person: deviates, missing")
    min_similarity: float = Field(0.3, ge=0, le=1,
                                  description="TF-IDF cosine a finding needs to the preferred or a fallback wording")

    @field_validator("category")
    @classmethod
    def _known(cls, value: str) -> str:
        try:
            return canonical(value)
        except KeyError:
            raise ValueError(f"unknown clause category {value[:80]!r}") from None

    @field_validator("fallback", mode="before")
    @classmethod
    def _one_or_many(cls, value):
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _missing_needs_required(self) -> Position:
        if "missing" in self.gate_on and not self.required:
            raise ValueError(f"{self.category}: gate_on 'missing' needs required: true")
        return self


def similarity(text: str, others: list[str]) -> list[float]:
    """TF-IDF cosine of ``text`` to each of ``others`` (unigrams + bigrams, fitted on these texts only)."""
    if not others:
        return []
    docs = [text, *others]
    try:
        matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english").fit_transform(docs)
    except ValueError:  # nothing but stop words
        return [0.0 for _ in others]
    return [round(float(x), 3) for x in cosine_similarity(matrix[0], matrix[1:])[0]]


def check_clause(clause: Clause, position: Position, *, index: int | None = None) -> PositionCheck:
    """One finding against its category's standard (see the module docstring)."""
    found = {kind: figures(clause.text, kind) for kind in {w.kind for w in position.walk_away}}
    broken = [why for w in position.walk_away if (why := w.broken_by(found[w.kind]))]
    preferred = similarity(clause.text, [position.preferred])[0] if position.preferred else None
    fallback = max(similarity(clause.text, position.fallback), default=None)
    base = {"category": clause.category, "clause": index, "pages": list(clause.pages),
            "preferred_similarity": preferred, "fallback_similarity": fallback,
            "figures": {k: v for k, v in found.items() if v}}
    if broken:
        return PositionCheck(verdict="deviates", reason="; ".join(broken), **base)
    floor = position.min_similarity
    checked = "; ".join(f"{kind}: {', '.join(f'{v:g}' for v in vals)} {UNIT_WORDS[kind]}"
                        for kind, vals in base["figures"].items())
    within = f"within the walk-away conditions ({checked})" if checked else ""
    if preferred is None and fallback is None:
        return PositionCheck(verdict="matches standard", reason=within or "no wording or figure to compare", **base)
    if preferred is not None and preferred >= floor and preferred >= (fallback or 0.0):
        return PositionCheck(verdict="matches standard", reason=_join(
            f"close to the preferred wording (similarity {preferred:.2f})", within), **base)
    if fallback is not None and fallback >= floor:
        return PositionCheck(verdict="acceptable fallback", reason=_join(
            f"close to a fallback wording (similarity {fallback:.2f})", within), **base)
    best = max(x for x in (preferred, fallback) if x is not None)
    return PositionCheck(verdict="deviates", reason=_join(
        f"wording unlike the preferred and fallback wording (similarity {best:.2f} < {floor:g})", within), **base)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def check_positions(clauses: list[Clause], positions: Iterable[Position]) -> list[PositionCheck]:
    """Every finding of a category with a position, checked; a required category without one: ``missing``.
    ``clause`` in each check is the finding's index in ``clauses``."""
    checks: list[PositionCheck] = []
    for position in positions:
        mine = [(i, c) for i, c in enumerate(clauses) if c.category == position.category]
        if not mine and position.required:
            checks.append(PositionCheck(category=position.category, verdict="missing", reason=MISSING_REASON))
        checks += [check_clause(c, position, index=i) for i, c in mine]
    return checks


def gating_categories(checks: Iterable[PositionCheck], positions: Iterable[Position]) -> list[str]:
    """The categories whose checks have a verdict their position gates on, in the positions' order."""
    gate_on = {p.category: set(p.gate_on) for p in positions}
    hits = {c.category for c in checks if c.verdict in gate_on.get(c.category, ())}
    return [category for category in gate_on if category in hits]


def describe(check: PositionCheck) -> str:
    """One line for a person: "deviates: walk-away: cap below 12 months' fees (3 months of fees …)"."""
    return f"{check.verdict}: {check.reason}" if check.reason else check.verdict


__all__ = ["FIGURE_KINDS", "MISSING_REASON", "Position", "PositionCheck", "WalkAway", "check_clause",
           "check_positions", "describe", "gating_categories", "similarity"]
