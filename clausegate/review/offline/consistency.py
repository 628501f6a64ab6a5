"""One clause, one consistent reading: a deterministic rule layer over the offline model's passage scores.

The passage model (``offline.model``) scores each CUAD category on its own words, so one clause can read as
several categories that exclude each other, and a word read without its negation or its direction counts
the same as the word itself. Each rule here is a test on a passage's lower-cased text and a log-odds change
for a few categories; ``adjust`` applies them to the passage probabilities the extractor decides on
(``offline.extract``: found, possible and which passages are shown). The pre-filter's keep rule, the model
and its thresholds are not touched: the rules only move a passage's score for a category its words rule out
(or, for a few, clearly state).

The evidence step (``clausegate.review.evidence``) applies the same rules to a passage's sentences, so the quote is
read as the passage was ("non-exclusive" is not quoted as Exclusivity).

Every rule was chosen on TRAIN cross-validation only (``bench/offline_gates.py``, docs/quality/offline-gates.md):
kept when contract micro-F1 does not fall and found-or-possible recall of the high-risk categories holds, and it
either cuts false gates or gains F1, or, changing nothing on TRAIN, mends a reading a reviewer reported (the placement
fee, the shortfall, the limitation period read as a covenant not to sue). The rules measured and not kept are in
the bench (``NOT_KEPT``). CUAD's definitions decide what a reading is: a time limit for bringing claims *is* a Cap
on Liability in CUAD ("This includes time limitation for the counterparty to bring claims"), and a cap or time
limit with a carve-out is labelled Uncapped Liability too, so no rule touches Cap on Liability.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

ENABLED = True  # bench/offline_gates.py measures the extractor with and without the layer
FLOOR = 0.001  # a passage scoring under this for a rule's categories is not read by it (``deltas``)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# ---- the words the rules read (lower-cased text) ------------------------------------------------------------

# a carve-out from a limitation: what makes a limitation clause also CUAD's Uncapped Liability
CARVE_OUT = _rx(
    r"\bexcept|\bexclud(?:e|es|ing) (?:from|any (?:claim|liabilit|damage)|liabilit|claims|damages (?:arising|for|"
    r"resulting))|(?:shall|will|does|do|to) not (?:apply|limit|restrict)|not be limited|not (?:be )?subject to"
    r"|no limit|unlimited|without (?:any )?(?:cap|limit\b)|other than|provided,? however|nothing in this"
    r"|nothing herein|nothing contained|in no way limit|carve|gross(?:ly)? neglig|wil(?:l)?ful|intentional"
    r"|fraud|indemnif|confidential|infring|misappropriat|death|bodily|personal injur|in excess of")
# a cap or a limitation of liability (amount or kinds of damages)
LIMITATION = _rx(
    r"(?:not|never) (?:to )?exceed|in no event|limited to|(?:aggregate|total|maximum|cumulative|entire) liabilit"
    r"|liabilit[a-z]* (?:shall|will|is|are) (?:be )?limited|limitations? of liabilit|(?:exclusions?|limitations?"
    r"|disclaimers?)[^.;]{0,40}(?:shall|will) apply|(?:shall|will) not be liable|not be liable for any "
    r"(?:indirect|incidental|special|consequential|punitive)")
# a time limit for bringing a claim
LIMITATION_PERIOD = _rx(
    r"(?:action|claim|suit|proceeding)s?\b[^.;]{0,160}?\b(?:brought|commenced|filed|instituted|initiated|asserted"
    r"|made)\b[^.;]{0,80}?\b(?:within|more than|after|later than|following)\b[^.;]{0,60}?\b(?:years?|months?"
    r"|days?)\b|(?:year|month)s? limitation\b|statute of limitations?")
# "shall not contest / challenge / sue": what Covenant Not to Sue is
NOT_TO_SUE = _rx(r"not to sue|(?:contest|challenge|attack|dispute)[^.;]{0,40}(?:validity|ownership|title)"
                 r"|(?:validity|ownership)[^.;]{0,60}(?:contest|challenge)|covenants? not")


# "exclusive" read with its negation: "non-exclusive", "nonexclusive", "not exclusive"
EXCLUSIVE = _rx(r"exclusiv")
NEGATED_EXCLUSIVE = _rx(r"(?:\bnon|\bnot(?: be)?(?: an?)?)[- ]?exclusiv")
EXCLUSIVITY_CUE = _rx(r"\bsole (?:and exclusive )?(?:supplier|distributor|source|provider|manufacturer|vendor|agent)"
                      r"|requirements|solely (?:from|through|with)|(?:shall|will) not[^.;]{0,80}(?:sell|licen[cs]e|"
                      r"distribute|market|appoint|purchase|buy|engage|promote|develop|work with|enter into)[^.;]{0,80}"
                      r"(?:other|third|competi|any (?:person|entity|party))|only (?:from|through|to) ")
# third-party beneficiaries: none (the boilerplate) or one named
NO_BENEFICIARY = _rx(r"\bno\b[^.;]{0,40}third[- ]?part(?:y|ies)[- ]beneficiar|\bnot?\b[^.;]{0,80}"
                     r"third[- ]?part(?:y|ies)[- ]beneficiar|beneficiar[^.;]{0,40}\bnone\b|nothing[^.;]{0,160}"
                     r"(?:confer|give|create|provide)[^.;]{0,80}(?:upon|on|to|in) (?:any )?"
                     r"(?:person|third|other|entity)"
                     r"|(?:sole|exclusive) benefit of the parties")
BENEFICIARY = _rx(r"(?:shall|will|is|are|be)(?: (?:deemed|intended|considered|made))?(?: to be)?(?: an?| the)?"
                  r"(?: express(?:ed)?| intended| expressly intended)? third[- ]?part(?:y|ies)[- ]beneficiar")
# change of control: the words that make an assignment clause one
CONTROL = _rx(r"control|merge|merger|consolidat|reorgani|acqui|substantially all|operation of law|\bstock\b"
              r"|shares|equity|voting|ownership|amalgamat|change (?:in|of)|spin|divest|sale of (?:all|the|its"
              r"|substantially)|bankrupt|insolven|purchase of (?:all|substantially)|successor")
ASSIGN = _rx(r"\bassign|transfer")
# an assignment a party may make *without* consent on a merger or a sale of the business: no consent, no notice,
# no termination right, so none of CUAD's Change of Control ("consent or notice required ... or a right to terminate")
ASSIGN_WITHOUT_CONSENT = _rx(r"without[^.;]{0,40}consent[^.;]{0,200}(?:merger|acqui|substantially all|sale of (?:all"
                             r"|the)|reorgani|consolidat|successor)")
CONTROL_CUE = _rx(r"change (?:in|of) (?:the )?control|terminat|notice|\bcontrol(?:s|led|ling)?\b[^.;]{0,20}(?:shall|"
                  r"will)? ?(?:be )?(?:deemed|constitute)")
# Non-Compete: the confidentiality clause's "not use ... for a competitive product" restricts the information, not
# the business; a covenant's own words (shall not engage / compete / own ..., not to compete) keep it one
CONFIDENTIAL_INFORMATION = _rx(r"(?:confidential|proprietary) information")
NON_COMPETE_CUE = _rx(r"(?:shall|will|agrees? (?:that it will|not to)) not[^.;]{0,60}(?:directly or indirectly"
                      r"[^.;]{0,20})?\b(?:engage|compete|(?<!its )(?<!their )own\b|manage|operate|participate"
                      r"|carry on|be (?:employed|engaged|concerned|interested))|non[- ]?compet|not to compete")

# Liquidated Damages: a payment for breach or termination; a price, a fee or a minimum is none
DAMAGES_CUE = _rx(r"liquidat|penalt|terminat|cancel|breach|default|forfeit|damages|buy[- ]?out|exit fee|break[- ]?up"
                  r"|compensat|in lieu|wind[- ]?down|early|expir|withdraw|fails? to|failure")
STRONG_DAMAGES_CUE = _rx(r"liquidat|penalt|terminat|cancel|breach|default|forfeit|damages|buy[- ]?out|exit fee"
                         r"|break[- ]?up")
FEE_TABLE = _rx(r"\$\s?[\d,.*\[\]]+[^.;]{0,40}(?:per|a|each|/)\s?(?:month|year|annum|quarter|hour|unit|user|seat)"
                r"|monthly (?:fee|charge|payment)|annual (?:fee|charge)|(?:set[- ]?up|one[- ]time|start[- ]?up|hosting"
                r"|maintenance|licen[cs]e|service|subscription|development|consulting) fees?")
PLACEMENT_FEE = _rx(r"(?:fee|commission|payment)s? for each|per (?:candidate|placement|hire|referral)"
                    r"|placement fee|finder'?s fee|referral fee")
SHORTFALL = _rx(r"shortfall|minimum (?:order|purchase|quantit|volume)|\bmoq\b|take[- ]or[- ]pay")

@dataclass(frozen=True)
class Rule:
    """When ``test`` holds for a passage's lower-cased text, ``delta`` log-odds are added to its score for each of
    ``categories``."""

    name: str
    categories: tuple[str, ...]
    delta: float
    test: Callable[[str], bool]


def _limitation_period_only(t: str) -> bool:
    return LIMITATION_PERIOD.search(t) is not None and NOT_TO_SUE.search(t) is None


def _limitation_without_carve_out(t: str) -> bool:
    return (LIMITATION.search(t) is not None or LIMITATION_PERIOD.search(t) is not None) and \
        CARVE_OUT.search(t) is None


def _negated_exclusive_only(t: str) -> bool:
    return (EXCLUSIVE.search(t) is not None and len(EXCLUSIVE.findall(t)) == len(NEGATED_EXCLUSIVE.findall(t))
            and EXCLUSIVITY_CUE.search(t) is None)


def _no_beneficiary(t: str) -> bool:
    return NO_BENEFICIARY.search(t) is not None and BENEFICIARY.search(t) is None


def _beneficiary(t: str) -> bool:
    return BENEFICIARY.search(t) is not None and NO_BENEFICIARY.search(t) is None


def _assignment_without_control(t: str) -> bool:
    return ASSIGN.search(t) is not None and CONTROL.search(t) is None


def _assignment_without_consent(t: str) -> bool:
    return ASSIGN_WITHOUT_CONSENT.search(t) is not None and CONTROL_CUE.search(t) is None


def _confidential_information_use(t: str) -> bool:
    return (CONFIDENTIAL_INFORMATION.search(t) is not None and NON_COMPETE_CUE.search(t) is None
            and EXCLUSIVE.search(t) is None)


def _fee_table(t: str) -> bool:
    return FEE_TABLE.search(t) is not None and STRONG_DAMAGES_CUE.search(t) is None


def _placement_fee(t: str) -> bool:
    return PLACEMENT_FEE.search(t) is not None and STRONG_DAMAGES_CUE.search(t) is None


def _shortfall(t: str) -> bool:
    return SHORTFALL.search(t) is not None and STRONG_DAMAGES_CUE.search(t) is None


def _no_damages_cue(t: str) -> bool:
    return DAMAGES_CUE.search(t) is None


RULES: tuple[Rule, ...] = (
    Rule("a limitation without a carve-out is no uncapped liability", ("Uncapped Liability",), -10.0,
         _limitation_without_carve_out),
    Rule("a time limit for claims is no covenant not to sue", ("Covenant Not to Sue",), -10.0,
         _limitation_period_only),
    Rule("non-exclusive is no exclusivity", ("Exclusivity",), -3.0, _negated_exclusive_only),
    Rule("no third-party beneficiary", ("Third Party Beneficiary",), -3.0, _no_beneficiary),
    Rule("a named third-party beneficiary", ("Third Party Beneficiary",), 3.0, _beneficiary),
    Rule("an assignment without a change of control", ("Change of Control",), -3.0, _assignment_without_control),
    Rule("an assignment free of consent on a merger is no change of control", ("Change of Control",), -3.0,
         _assignment_without_consent),
    Rule("the use of confidential information is no non-compete", ("Non-Compete",), -3.0,
         _confidential_information_use),
    Rule("no word of damages, breach or termination: no liquidated damages", ("Liquidated Damages",), -3.0,
         _no_damages_cue),
    Rule("a fee table row is no liquidated damages", ("Liquidated Damages",), -3.0, _fee_table),
    Rule("a placement fee is no liquidated damages", ("Liquidated Damages",), -3.0, _placement_fee),
    Rule("a minimum's shortfall is no liquidated damages", ("Liquidated Damages",), -3.0, _shortfall),
)


def deltas(texts: Sequence[str], categories: Sequence[str], rules: Sequence[Rule] = RULES,
           scores: Mapping[str, Sequence[float]] | None = None) -> dict[str, np.ndarray]:
    """Per category of ``categories`` that a rule touches: the log-odds change of each passage of ``texts``.

    ``scores`` (per category, each passage's probability): a rule reads only the passages scoring at least
    ``FLOOR`` for one of its categories; below it a passage is neither found, possible nor shown (every shipped
    threshold is higher), so the rules cost a few passages per contract, not all of them."""
    wanted = set(categories)
    active = [r for r in rules if wanted.intersection(r.categories)]
    if not active:
        return {}
    lowered: dict[int, str] = {}
    out: dict[str, np.ndarray] = {}
    for rule in active:
        mine = [c for c in rule.categories if c in wanted]
        if scores is None:
            candidates: Sequence[int] = range(len(texts))
        else:
            candidates = np.flatnonzero(np.max([np.asarray(scores[c]) for c in mine], axis=0) >= FLOOR).tolist()
        hits = [i for i in candidates if rule.test(lowered.get(i) or lowered.setdefault(i, texts[i].lower()))]
        for c in mine if hits else ():
            out.setdefault(c, np.zeros(len(texts)))[hits] += rule.delta
    return out


def _shift(p: float, delta: float) -> float:
    p = min(max(float(p), 1e-7), 1 - 1e-7)
    z = np.log(p / (1 - p)) + delta
    return float(1.0 / (1.0 + np.exp(-np.clip(z, -40, 40))))


def adjust(texts: Sequence[str], rows: list[dict[str, float]], categories: Sequence[str]) -> list[dict[str, float]]:
    """``rows`` (per passage of ``texts``: {category: probability}) with the rules applied to ``categories``."""
    if not ENABLED:
        return rows
    moved = deltas(texts, categories, scores={c: [row[c] for row in rows] for c in categories})
    if not moved:
        return rows
    out = [dict(row) for row in rows]
    for c, d in moved.items():
        for i in np.flatnonzero(d):
            out[i][c] = _shift(out[i][c], float(d[i]))
    return out


__all__ = ["ENABLED", "FLOOR", "RULES", "Rule", "adjust", "deltas"]
