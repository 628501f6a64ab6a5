"""Playbook positions: the team's standard per category, and the offline check of a finding against it.

A playbook's ``positions`` give, per category, the preferred wording, acceptable fallback wording,
walk-away conditions (structured numeric checks such as ``{kind: months_of_fees, min: 12}``) and
whether the clause is required.  :func:`check_positions` compares every finding of such a category
with its standard, deterministically and without network, **on substance first**:

* **figures**: the clause's figures of each walk-away rule, read directly or converted with what the
  contract states (a "$15M" cap against "at least 12 months of fees" with the contract's stated monthly
  fees: :mod:`clausegate.review.position_compare`, :mod:`clausegate.review.position_figures`).  A rule
  crossed → ``deviates`` (the reason names the condition); every rule with a figure met → ``matches
  standard``;
* **wording**, only when no figure decides: TF-IDF cosine similarity to the preferred and to the fallback
  wording (fitted on those texts and the clause): the closer one at or above ``min_similarity`` →
  ``matches standard`` / ``acceptable fallback``; neither → ``deviates``;
* a required category without any finding → ``missing`` ("required clause not found").

Every reason says which was used ("judged on figures: …" / "judged on wording (…why no figure…): …"),
and a figure that could not be compared (another currency, no fees stated, a rate, a redaction) is named.
``gate_on`` says which verdicts send the review to the human gate (the category joins
``gated_categories``; a missing clause is listed with no quote).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clausegate.review.categories import canonical
from clausegate.review.figures import FIGURE_KINDS, UNIT_WORDS
from clausegate.review.position_compare import Judgement, compare, in_unit
from clausegate.review.position_figures import ContractFigures, contract_figures
from clausegate.review.schemas import Clause, PositionCheck

MISSING_REASON = "required clause not found"
Verdict = Literal["matches standard", "acceptable fallback", "deviates", "missing"]
GateOn = Literal["deviates", "missing"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WalkAway(_Strict):
    """A line the team does not cross: the clause's figure of ``kind`` must be at least ``min`` / at most ``max``.

    ``months_of_fees``: a period of fees, in months (a cap of "fees paid in the prior 3 months" is 3; a sum
    of money is divided by the fees the contract states a month); ``period_days``: a period in days (weeks x
    7, months x 30, years x 365); ``term_days``: the same, durations only (not "within 30 days");
    ``amount``: a sum of money in ``currency`` (an ISO code: USD, EUR …; a sum in another currency is not
    compared); ``multiple_of_fees``: "two times the fees" is 2, "10% of the fees" 0.1 (a sum is divided by
    the contract's stated value)."""

    kind: Literal["months_of_fees", "period_days", "term_days", "amount", "multiple_of_fees"]
    min: float | None = Field(None, ge=0)
    max: float | None = Field(None, ge=0)
    currency: str | None = Field(None, pattern=r"^[A-Z]{3}$",
                                 description="amount: the rule's currency (ISO code); required for kind amount")
    reason: str = Field("", max_length=300, description="how the team says it, e.g. \"cap below 12 months' fees\"")

    @model_validator(mode="after")
    def _a_bound(self) -> WalkAway:
        if self.min is None and self.max is None:
            raise ValueError(f"walk_away {self.kind}: give min or max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"walk_away {self.kind}: min {self.min:g} is above max {self.max:g}")
        if self.kind == "amount" and self.currency is None:
            raise ValueError("walk_away amount: give its currency (e.g. currency: USD)")
        if self.kind != "amount" and self.currency is not None:
            raise ValueError(f"walk_away {self.kind}: currency is for kind amount only")
        return self

    def line(self) -> str:
        """The rule in words: "at least 12 months of fees", "at most 1,095 days", "$1,000,000 to $5,000,000"."""
        def show(value: float) -> str:
            return in_unit(self.kind, value, self.currency)

        if self.min is not None and self.max is not None:
            return f"between {show(self.min)} and {show(self.max)}"
        return f"at least {show(self.min)}" if self.min is not None else f"at most {show(self.max)}"

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
    # scikit-learn would add ~1 s to every process that loads a playbook (each flow run, resume, CLI command)
    from sklearn.feature_extraction.text import TfidfVectorizer  # local import: scikit-learn only when comparing
    from sklearn.metrics.pairwise import cosine_similarity  # local import: scikit-learn only when comparing

    docs = [text, *others]
    try:
        matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, stop_words="english").fit_transform(docs)
    except ValueError:  # nothing but stop words
        return [0.0 for _ in others]
    return [round(float(x), 3) for x in cosine_similarity(matrix[0], matrix[1:])[0]]


NOUNS = {"Cap on Liability": "cap", "Liquidated Damages": "damages", "Minimum Commitment": "commitment"}


def check_clause(clause: Clause, position: Position, *, index: int | None = None,
                 contract: ContractFigures | None = None) -> PositionCheck:
    """One finding against its category's standard: on its figures where a walk-away rule's figure is in
    the clause (with ``contract``: the fees and value the contract states), else on its wording."""
    noun = NOUNS.get(clause.category, "figure")
    judged = [(w, compare(w, clause.text, contract, noun=noun)) for w in position.walk_away]
    preferred = similarity(clause.text, [position.preferred])[0] if position.preferred else None
    fallback = max(similarity(clause.text, position.fallback), default=None)
    found: dict[str, list[float]] = {}
    for w, j in judged:
        if j.values:
            found.setdefault(w.kind, sorted(set(found.get(w.kind, [])) | set(j.values)))
    base = {"category": clause.category, "clause": index, "pages": list(clause.pages),
            "preferred_similarity": preferred, "fallback_similarity": fallback, "figures": found}
    notes = [n for _, j in judged for n in j.notes]
    broken = [(w, j) for w, j in judged if j.outcome == "breaks"]
    met = [(w, j) for w, j in judged if j.outcome == "meets"]
    if broken:
        return PositionCheck(verdict="deviates", reason=_join(*(_crossed(w, j) for w, j in broken), *notes), **base)
    if met:
        return PositionCheck(verdict="matches standard", reason=_join(
            "judged on figures: " + "; ".join(j.text for _, j in met), *notes), **base)
    return _on_wording(position, preferred, fallback, _why_wording(position, judged, notes), base)


def _crossed(rule: WalkAway, judgement: Judgement) -> str:
    return f"walk-away: {rule.reason} (judged on figures: {judgement.text})" if rule.reason else \
        f"walk-away: judged on figures: {judgement.text}"


def _why_wording(position: Position, judged: list[tuple[WalkAway, Judgement]], notes: list[str]) -> str:
    """Why the verdict falls back to wording: no rule in figures, no figure in the clause, or not comparable."""
    if not position.walk_away:
        return "the position sets no figure"
    absent = [w.line() for w, j in judged if j.outcome is None and not j.notes]
    return "; ".join([*(f"no figure in the clause for '{line}'" for line in absent), *notes])


def _on_wording(position: Position, preferred: float | None, fallback: float | None, why: str,
                base: dict) -> PositionCheck:
    head = f"judged on wording ({why})" if why else "judged on wording"
    floor = position.min_similarity
    if preferred is None and fallback is None:
        return PositionCheck(verdict="matches standard", reason=f"{head}: no wording to compare", **base)
    if preferred is not None and preferred >= floor and preferred >= (fallback or 0.0):
        return PositionCheck(verdict="matches standard",
                             reason=f"{head}: close to the preferred wording (similarity {preferred:.2f})", **base)
    if fallback is not None and fallback >= floor:
        return PositionCheck(verdict="acceptable fallback",
                             reason=f"{head}: close to a fallback wording (similarity {fallback:.2f})", **base)
    best = max(x for x in (preferred, fallback) if x is not None)
    return PositionCheck(verdict="deviates", reason=f"{head}: wording unlike the preferred and fallback wording "
                                                    f"(similarity {best:.2f} < {floor:g})", **base)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def check_positions(clauses: list[Clause], positions: Iterable[Position], *,
                    contract_text: str = "") -> list[PositionCheck]:
    """Every finding of a category with a position, checked; a required category without one: ``missing``.
    ``clause`` in each check is the finding's index in ``clauses``; ``contract_text`` (the whole contract)
    gives the fees and value it states, against which a sum of money in a clause is compared."""
    checks: list[PositionCheck] = []
    contract = contract_figures(contract_text) if contract_text else None
    for position in positions:
        mine = [(i, c) for i, c in enumerate(clauses) if c.category == position.category]
        if not mine and position.required:
            checks.append(PositionCheck(category=position.category, verdict="missing", reason=MISSING_REASON))
        checks += [check_clause(c, position, index=i, contract=contract) for i, c in mine]
    return checks


def gating_categories(checks: Iterable[PositionCheck], positions: Iterable[Position]) -> list[str]:
    """The categories whose checks have a verdict their position gates on, in the positions' order."""
    gate_on = {p.category: set(p.gate_on) for p in positions}
    hits = {c.category for c in checks if c.verdict in gate_on.get(c.category, ())}
    return [category for category in gate_on if category in hits]


def describe(check: PositionCheck) -> str:
    """One line for a person: "deviates: walk-away: cap below 12 months' fees (3 months of fees …)"."""
    return f"{check.verdict}: {check.reason}" if check.reason else check.verdict


__all__ = ["FIGURE_KINDS", "MISSING_REASON", "ContractFigures", "Position", "PositionCheck", "WalkAway",
           "check_clause", "check_positions", "contract_figures", "describe", "gating_categories", "similarity"]
