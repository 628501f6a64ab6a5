"""The key terms' and the language's models (``Review.contract_terms``, ``Review.language``), kept apart from
``schemas`` (which re-exports them) so that neither module grows past a screenful of models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


TermName = Literal["parties", "agreement_date", "effective_date", "expiration_date", "renewal_term", "notice_period",
                   "governing_law", "liability_cap"]


class ContractTerm(_Model):
    """One key term at the top of a review (``clausegate.review.key_terms``): its normalised value (an ISO date,
    an ISO 8601 duration, a jurisdiction, an amount with its currency) and where the contract says it; ``value``
    None: not found."""

    name: TermName
    value: str | None = Field(None, description="normalised: 2014-05-08, P1Y, P90D, perpetual, New York, "
                                                "USD 1000000.00")
    display: str | None = Field(None, description="the value for a person: 8 May 2014, 1 year, 90 days")
    quote: str = Field("", description="the contract's words the value was read from")
    page: int | None = Field(None, ge=1, description="the page (a .docx or text: the part) of the quote")
    paragraph: int | None = Field(None, ge=1, description="docx: the paragraph (¶) the quote starts in")
    section: str | None = Field(None, description="the numbered section the quote sits in")
    source: Literal["offline", "model"] = "offline"
    note: str = Field("", description="how it was read, e.g. 'the effective date plus the 3 year term'")


class RenewalDates(_Model):
    """The dates that act: the current term's end and the last day to give notice so it does not renew."""

    term_end: str | None = Field(None, description="ISO date the current term ends (rolled forward past today "
                                                   "while the contract renews automatically)")
    auto_renews: bool = False
    notice_deadline: str | None = Field(None, description="ISO date: term_end minus the notice period")
    computed_on: str = Field(description="ISO date the dates were computed from (today, at review time)")
    explanation: str = ""


class ContractTerms(_Model):
    """The key terms of a contract, read offline (and, with a model, confirmed or filled), plus its renewal dates."""

    terms: list[ContractTerm]
    renewal: RenewalDates | None = None

    def get(self, name: str) -> ContractTerm | None:
        return next((t for t in self.terms if t.name == name), None)


class LanguageReading(_Model):
    """The contract's natural language, detected from its text (py3langid); ``english`` False: the offline
    reader cannot read it (CG-TEXT-LANGUAGE)."""

    code: str = Field(description="ISO 639-1 code, e.g. 'en', 'de'; 'und' when the text is too short to tell")
    name: str
    probability: float = Field(ge=0.0, le=1.0)
    english: bool
