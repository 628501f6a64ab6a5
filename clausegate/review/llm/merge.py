"""The model as a second reader: how its answer and the offline findings become one reading.

Each category the model was asked about has offline evidence, its *margin*: the log-odds by which the offline
model's best score in the contract is over (or under) the category's threshold.  A model answer moves that
evidence by ``weight`` log-odds (the playbook's ``steps.extract.cascade_margin``), no more:

* **confirmed**: the model quotes the offline finding (or part of it) at an equal or higher confidence: it stands.
  Quoted at a *lower* confidence: a dispute (``model_found='lower'``); the finding keeps its own confidence.
* **taken off the gate** (``Clause.cleared``, listed under "Cleared by the model"): the model says the category is
  not there (an ``absent`` entry) or quotes other text for it, and *all* of these hold:
  the finding is low-confidence (``possible``, or its margin under ``weight``); the model was shown the finding's
  passage (an ``absent`` entry naming only passages it was never shown is dropped when grounded); it gave a reason; the
  document shows no integrity or injection signal (``signal``); the playbook allows it (``model_review``).
* otherwise a **dispute**: the finding is kept with both sides and the reason it could not be cleared
  (``Dispute.not_cleared``); in a gated or high-risk category a person decides (``Merged.gate``).
* **added**: a model clause of a category the offline model has no finding of counts when the offline evidence
  is within ``weight`` of the threshold (margin > -weight); further below, one model answer is not enough to
  overrule the offline reading (``CG-MODEL-NOT-COUNTED``): in a gated or high-risk category it becomes a
  "possible" finding a person sees, elsewhere it is only listed.

So a high-confidence offline finding in a gated category leaves the review only through a person's decision,
whatever any model says, and no contract text can clear one (it raises ``signal``).  Pure logic: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from clausegate.review.llm.extract import Absence, PromptPassage, locate_quote
from clausegate.review.schemas import Clause, Clearance, Dispute, Notice

DISPUTED = "CG-MODEL-DISPUTED"
CLEARED = "CG-MODEL-CLEARED"
NOT_COUNTED = "CG-MODEL-NOT-COUNTED"


@dataclass(frozen=True)
class MergeRules:
    weight: float  # log-odds one model answer moves the offline evidence
    must_confirm: frozenset[str]  # gated and high-risk categories: a dispute goes to a person
    may_clear: Callable[[str], bool]  # the playbook's model_review for a category
    signal: str | None = None  # why this document's text cannot be trusted to the model (blocks every clearing)


@dataclass
class Merged:
    clauses: list[Clause] = field(default_factory=list)  # findings, disputes and cleared ones (Clause.cleared)
    notices: list[Notice] = field(default_factory=list)
    gate: list[str] = field(default_factory=list)  # disputed gated / high-risk categories: a person decides


def same_finding(offline: Clause, found: Clause) -> bool:
    """The model's clause quotes (part of) the offline finding's text, or the other way round."""
    return locate_quote(found.text, offline.text) is not None or locate_quote(offline.text, found.text) is not None


def shown_passages(clause: Clause, shown: list[PromptPassage]) -> list[str]:
    """Ids of the shown passages that hold the finding's text (or that its text holds: a quote read across two)."""
    return [p.id for p in shown
            if locate_quote(clause.text, p.text) is not None or locate_quote(p.text, clause.text) is not None]


def merge_findings(offline: list[Clause], found: list[Clause], absent: list[Absence], sent: list[str],
                   shown: list[PromptPassage], margins: dict[str, float], rules: MergeRules, *,
                   model: str) -> Merged:
    """The second reader's rule (module doc) for the ``sent`` categories; other offline findings pass as they are."""
    sent_set = set(sent)
    out = Merged(clauses=[c for c in offline if c.category not in sent_set])
    says_absent = {a.category: a for a in absent}
    for category in sent:
        theirs = [c for c in found if c.category == category]
        mine = [c for c in offline if c.category == category]
        margin = margins.get(category, 0.0)
        standing: set[int] = set()
        shown_as_dispute: set[int] = set()
        for clause in mine:
            confirming = [m for m in theirs if same_finding(clause, m)]
            if any(m.confidence >= clause.confidence for m in confirming):
                standing.update(id(m) for m in confirming if m.confidence >= clause.confidence)
                continue
            if confirming:
                best = max(confirming, key=lambda m: m.confidence)
                shown_as_dispute.update(id(m) for m in confirming)
                _dispute(out, clause, best, "lower", best.reason, None, rules)
                continue
            best = max(theirs, key=lambda m: m.confidence) if theirs else None
            answer = says_absent.get(category)
            reason = best.reason if best else (answer.reason if answer else None)
            why_not = _why_not_cleared(clause, margin, reason, shown, rules)
            if why_not is None:
                _clear(out, clause, best, reason or "", model)
            else:
                _dispute(out, clause, best, "other" if best else "nothing", reason, why_not, rules, model=model)
        for m in theirs:
            if id(m) in shown_as_dispute:
                continue
            if id(m) in standing or mine or margin > -rules.weight:
                out.clauses.append(m)
            elif category in rules.must_confirm:  # a gated or high-risk clause a model quotes is never only a notice
                out.clauses.append(m.model_copy(update={"possible": True}))
                out.notices.append(Notice(code=NOT_COUNTED, page=m.pages[0], message=(
                    f"{category}: the model {model} quoted p. {m.pages[0]} (\"{_flat(m.text, 120)}\"), but the offline "
                    f"reader scores this contract {-margin:.1f} log-odds under the category's threshold: listed as a "
                    "possible finding for a person, not counted as found.")))
            else:
                out.notices.append(Notice(code=NOT_COUNTED, page=m.pages[0], message=(
                    f"{category}: the model {model} quoted p. {m.pages[0]} (\"{_flat(m.text, 120)}\"), but the offline "
                    f"reader scores this contract {-margin:.1f} log-odds under the category's threshold; one model "
                    "answer does not overrule that, so it is listed here and not counted as a finding.")))
    return out


def _why_not_cleared(clause: Clause, margin: float, reason: str | None, shown: list[PromptPassage],
                     rules: MergeRules) -> str | None:
    """Why a model answer saying "not this" may not take ``clause`` off the gate; None when it may."""
    if rules.signal:
        return f"the document shows {rules.signal}"
    if not rules.may_clear(clause.category):
        return "the playbook's model_review is 'never' for this category"
    if not clause.possible and margin >= rules.weight:
        return f"it was found at high confidence ({clause.confidence:.2f}): only a person clears it"
    if not reason:
        return "the model gave no reason"
    if not shown_passages(clause, shown):
        return "the model was not shown the finding's passage"
    return None


def _clear(out: Merged, clause: Clause, best: Clause | None, reason: str, model: str) -> None:
    clearance = Clearance(model=model, model_found="other" if best else "nothing", reason=reason,
                          model_text=best.text if best else None, model_pages=list(best.pages) if best else [])
    out.clauses.append(clause.model_copy(update={"cleared": clearance}))
    out.notices.append(Notice(code=CLEARED, page=clause.pages[0], message=(
        f"{clause.category}: the low-confidence offline finding on p. {clause.pages[0]} ({clause.confidence:.2f}) was "
        f"taken off the gate by the model {model}: \"{_flat(reason, 200)}\". It is listed under \"Cleared by the "
        "model\"; a person can overturn it.")))


def _dispute(out: Merged, clause: Clause, best: Clause | None, found_as: str, reason: str | None,
             why_not: str | None, rules: MergeRules, *, model: str | None = None) -> None:
    model = model or (best.model if best else "") or "the model"
    dispute = Dispute(model=model, model_found=found_as, model_text=best.text if best else None,
                      model_pages=list(best.pages) if best else [], model_confidence=best.confidence if best else None,
                      model_reason=reason or None, not_cleared=why_not)
    out.clauses.append(clause.model_copy(update={"dispute": dispute}))
    asks = clause.category in rules.must_confirm
    if asks and clause.category not in out.gate:
        out.gate.append(clause.category)
    kept = f" It stays on the gate: {why_not}." if why_not else ""
    out.notices.append(Notice(code=DISPUTED, page=clause.pages[0], message=(
        f"{clause.category}: the offline extractor found it on p. {clause.pages[0]} (confidence "
        f"{clause.confidence:.2f}); the model {model} {_their_side(found_as, best, reason)}.{kept} The finding is kept "
        "as disputed" + ("; a person decides." if asks else "."))))


def _their_side(found_as: str, best: Clause | None, reason: str | None) -> str:
    why = f" (its reason: \"{_flat(reason, 160)}\")" if reason else ""
    if best is None:
        return f"gave no valid clause of this category{why}"
    if found_as == "lower":
        return f"quoted it at a lower confidence ({best.confidence:.2f}): \"{_flat(best.text, 160)}\"{why}"
    return f"quoted other text (p. {best.pages[0]}): \"{_flat(best.text, 160)}\"{why}"


def _flat(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


__all__ = ["CLEARED", "DISPUTED", "NOT_COUNTED", "MergeRules", "Merged", "merge_findings", "same_finding",
           "shown_passages"]
