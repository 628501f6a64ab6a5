"""A .docx's pending tracked change as a gate's decision item, and the answer on it (accept / reject / counter).

A ``GateDecision`` on a change carries a :class:`DecidedChange` (``clausegate.review.schemas``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ChangeDecision = Literal["accept", "reject", "counter"]  # a person's answer on one of the counterparty's changes


class TrackedChange(_Model):
    """A pending tracked change of a .docx inside a gated finding's clause: a decision item of its own at the gate."""

    id: str = Field(pattern=r"^C\d+$", description="stable id within the gate (C1, C2, …): the answers name it")
    finding: str = Field(description="the gate's finding (F1, …) whose clause holds the change")
    category: str
    kind: Literal["insertion", "deletion"]
    author: str = ""
    date: str | None = None
    text: str
    paragraph: int = Field(ge=1)
    start: int = Field(ge=0, description="its offset in the document's text (a deletion: where it was)")


class ChangeAnswer(_Model):
    """The answer on one tracked change: accept or reject it, or counter it with a text of our own."""

    decision: ChangeDecision
    counter: str = Field("", max_length=3000, description="counter: the counter-proposal's text (required)")

    @field_validator("counter")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @model_validator(mode="after")
    def _counter_needs_text(self) -> ChangeAnswer:
        if self.decision == "counter" and not self.counter:
            raise ValueError("CG-GATE-CHANGE-ANSWER: a counter needs the counter-proposal's text "
                             "(counter:\"your wording\")")
        if self.decision != "counter" and self.counter:
            raise ValueError(f"CG-GATE-CHANGE-ANSWER: only a counter carries a text ({self.decision} does not)")
        return self


class DecidedChange(_Model):
    """A gate's decision on one tracked change, as the report records it (with the decision's who / when / via)."""

    change: TrackedChange
    decision: ChangeDecision
    counter: str = Field("", description="counter: the counter-proposal's text")
