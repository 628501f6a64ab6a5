"""Pydantic models passed between the review steps.

They are importable from the package (``clausegate.review.schemas``) on purpose: Prefect hashes a
pydantic input by class path + data, so a CLI run and a deployment run share the cache only
if both see the same class path.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator

from clausegate.review.categories import CATEGORIES, canonical
from clausegate.review.document.registry import FormatName
from clausegate.review.term_models import ContractTerm, ContractTerms, LanguageReading, RenewalDates
from clausegate.review.text_identity import content_id as _content_id
from clausegate.review.text_identity import text_id as _text_id
from clausegate.review.tracked_changes import DecidedChange
from clausegate.review.versions.model import CarriedFrom, VersionChange, VersionFinding, Versions

SHA256_PATTERN = r"^[0-9a-f]{64}$"

# a playbook-defined clause type's name (clausegate.review.custom_categories.CustomCategory.name)
_CUSTOM_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9 /&'()-]{1,59}$")

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Notice(_Model):
    """A warning attached to a document or review (e.g. a page that needs OCR)."""

    code: str
    message: str
    page: int | None = None


class ContractSource(_Model):
    """Where a contract is and what it is: the cache keys on ``contract_id``, never on ``path``."""

    path: str
    contract_id: str = Field(pattern=SHA256_PATTERN, description="sha256 of the file's bytes")
    size_bytes: int = Field(ge=0)
    filename: str


DocumentFormat = FormatName  # the format table's names (clausegate/review/document/registry.py)


class Page(_Model):
    """A page of a PDF; in a .docx or text contract (no pages) a part of about ``PART_CHARS`` characters cut at
    paragraph ends, whose ``start`` and ``paragraphs`` locate a finding by paragraph (¶) and character span."""

    number: int = Field(ge=1, description="1-based page number in the PDF (a .docx or text: the part's number)")
    text: str
    needs_ocr: bool = Field(False, description="the page has no text layer")
    ocr_used: bool = False
    start: int | None = Field(None, ge=0, description="docx/text: where the part's text starts in the document's "
                                                      "text (the parts' texts joined in order)")
    paragraphs: list[int] = Field(default_factory=list, description="docx: the document-text offsets where the "
                                                                    "part's paragraphs start")
    first_paragraph: int | None = Field(None, ge=1, description="docx: the number (¶, 1-based) of the part's first "
                                                               "paragraph")


class Revision(_Model):
    """A pending tracked change of a .docx (``w:ins`` / ``w:del``): the text is reviewed with it accepted."""

    kind: Literal["insertion", "deletion"]
    author: str = ""
    date: str | None = None
    text: str
    start: int = Field(ge=0, description="its offset in the document's text (a deletion: where it was)")
    end: int = Field(ge=0)
    paragraph: int = Field(ge=1)
    flagged: list[str] = Field(default_factory=list, description="the gated or high-risk findings' categories "
                                                                 "whose text it sits in")


class Comment(_Model):
    """A comment of a .docx, with the text it is anchored to."""

    author: str = ""
    date: str | None = None
    text: str
    anchor: str = ""
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    paragraph: int = Field(ge=1)
    flagged: list[str] = Field(default_factory=list, description="the gated or high-risk findings' categories "
                                                                 "whose text it is anchored in")


class ParsedDocument(_Model):
    contract_id: str = Field(pattern=SHA256_PATTERN)
    filename: str
    pages: list[Page] = Field(min_length=1)
    notices: list[Notice] = []
    format: DocumentFormat = Field("pdf", description="what the bytes were sniffed to be (not the file name)")
    revisions: list[Revision] = []
    comments: list[Comment] = []

    @property
    def char_count(self) -> int:
        return sum(len(p.text) for p in self.pages)

    @property
    def text_id(self) -> str:
        """sha256 of the normalised page texts (``clausegate.review.text_identity``): the key of everything
        downstream of parsing, where ``contract_id`` (the file's bytes) keys only the parse."""
        return _text_id(self.pages)

    @property
    def content_id(self) -> str:
        """sha256 of the normalised text without its layout (no page breaks, no page furniture): the key a PDF
        and the .docx of the same words share (``clausegate.review.text_identity``)."""
        return _content_id(self.pages)


class ReviewOrigin(_Model):
    """The review that first computed a text-keyed result (the pre-filter's), carried inside that cached
    result: a later review of the same text that takes it from the cache names it as ``reused_from``."""

    contract_id: str = Field(pattern=SHA256_PATTERN, description="that review's file (sha256 of its bytes)")
    filename: str
    reviewed_at: datetime
    flow_run_id: str = Field("", description="the flow run that computed it ('' outside a run)")
    text_id: str | None = Field(None, description="the text_id (layout) its locations are in: another one's are "
                                                  "re-located in the reusing document (clausegate.review.relocate)")


class Passage(_Model):
    """A run of sentences from one page, kept by the pre-filter."""

    page: int = Field(ge=1)
    text: str = Field(min_length=1)
    score: float = Field(description="relevance to the playbook's categories (higher keeps)")
    categories: dict[str, float] = Field(
        default_factory=dict, description="per-category relevance scores for the playbook's categories"
    )
    section: str | None = Field(
        None, description="the numbered section the passage starts in, e.g. '11.3 Limitation of Liability'")


class FilteredDocument(_Model):
    contract_id: str = Field(pattern=SHA256_PATTERN)
    passages: list[Passage]
    pages_kept: list[int]
    tokens_total: int = Field(ge=0)
    tokens_kept: int = Field(ge=0)
    origin: ReviewOrigin | None = Field(None, description="the review that computed this pre-filter result")
    category_offsets: dict[str, float] = Field(
        default_factory=dict, description="the offline model's contract prior: per category, the log-odds the whole "
                                          "contract's words add when deciding whether the category is found")


class Dispute(_Model):
    """The model's side when it disagrees with an offline finding it may not clear (``clausegate.review.llm.merge``):
    the finding is kept and, in a gated or high-risk category, a person decides."""

    model: str = Field(description="the model that disagreed")
    model_found: Literal["nothing", "other", "lower"] = Field(
        description="'nothing': not there; 'other': other text; 'lower': this text at a lower confidence")
    model_text: str | None = Field(None, description="the model's quote when model_found is 'other' or 'lower'")
    model_pages: list[int] = []
    model_confidence: float | None = None
    model_reason: str | None = Field(None, description="the reason the model gave for its side")
    not_cleared: str | None = Field(None, description="why its answer could not take the finding off the gate")


class Clearance(_Model):
    """A model's answer that took a low-confidence finding off the gate (``clausegate.review.llm.merge``)."""

    model: str
    model_found: Literal["nothing", "other"] = Field(description="'nothing': not there; 'other': other text")
    reason: str = Field(min_length=1, description="the model's reason, as it gave it")
    model_text: str | None = None
    model_pages: list[int] = []


class Clause(_Model):
    custom: bool = Field(False, description="the category is one the playbook defines (custom_categories), not CUAD's")
    category: str
    text: str = Field(min_length=1)
    pages: list[int] = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    source: Literal["offline", "model"]
    model: str | None = Field(None, description="the model name when source='model'")
    dispute: Dispute | None = Field(None, description="set when a model disagreed with this offline finding")
    cleared: Clearance | None = Field(None, description="a model took it off the gate (Review.cleared_by_model)")
    reason: str | None = Field(None, description="source='model': the model's reason for this clause")
    section: str | None = Field(
        None, description="the numbered section the clause sits in, e.g. '11.3 Limitation of Liability'")
    possible: bool = Field(False, description="scored near the category's threshold without reaching it: "
                                              "not a finding, listed for a person to check "
                                              "(a gated category's gate asks about it)")
    cut: bool = Field(False, description="the quoted sentences went on past the length shown: the text ends "
                                         "with ' […]'")
    paragraph: int | None = Field(None, ge=1, description="docx: the paragraph (¶) the clause starts in")
    span: list[int] | None = Field(None, description="docx/text: [start, end) of the clause in the document's text")

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("custom"):  # a playbook's own clause type: its name was checked with its definition
            if not _CUSTOM_NAME_RE.match(value):
                raise ValueError(f"invalid custom clause category name {value!r}")
            return value
        try:
            return canonical(value)
        except KeyError:
            raise ValueError(f"unknown clause category {value!r}; expected one of CUAD's 41 names") from None


class Extraction(_Model):
    contract_id: str = Field(pattern=SHA256_PATTERN)
    extractor: str = Field(description="'offline' or the provider name")
    clauses: list[Clause]
    categories_checked: list[str]
    notices: list[Notice] = []


class Cost(_Model):
    """Model spend.  ``calls``/``input_tokens``/``output_tokens``/``eur``: what THIS run paid for
    (every answer a provider billed, used or not; the same amounts went into the spend ledger).
    ``reused_*``: answers this run took from the cache, at what they cost the earlier run that paid
    for them (not spent again, not in the ledger again)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    eur: float = 0.0
    reused_calls: int = 0
    reused_eur: float = 0.0


class Suggestion(_Model):
    """A suggested redline / fallback wording and questions for the counterparty (generation step)."""

    category: str
    pages: list[int] = []
    redline: str = Field(min_length=1)
    questions: list[str] = []
    model: str | None = None


class CascadeSummary(_Model):
    """What the offline-first cascade sent to the model, and what that saved."""

    categories_total: int
    categories_sent: list[str]
    model_calls: int
    model_calls_saved: int = Field(description="calls a model-only review would have made that the cascade avoided")
    prompt_tokens_naive: int = Field(description="whole document + instructions for every category")
    prompt_tokens_sent: int
    truncated: bool = False
    summary_path: bool = Field(False, description="the model answered the summary prompt (CG-MODEL-SUMMARY-PATH)")


class KeyTerm(_Model):
    """One line of the offline key-terms summary (summary path): the extractor's best finding for a topic."""

    topic: Literal["parties", "term", "renewal", "payment", "liability", "termination"]
    category: str | None = Field(None, description="the CUAD category the line comes from; None: none found")
    text: str = Field("", description="the finding's text, shortened")
    pages: list[int] = []
    section: str | None = None


class KeyTerms(_Model):
    """A short, cited summary of the contract's key terms, built offline from the extractor's findings; sent
    to the model with the gated passages when the passages alone are over its context window."""

    terms: list[KeyTerm]
    model_asked: bool = Field(False, description="the model answered the summary prompt")

Via = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,31}$")]  # how an answer reached a gate: ui, cli,
NON_CHANNEL_VIAS: tuple[str, ...] = ("ui", "cli", "sla")  # sla or a channel name (gates.channels; resolve_gate checks)


class GateDecision(_Model):
    """A person's (or the SLA sweeper's) answer at a human gate. A timeout is an escalation, never a rejection."""

    gate: str = Field(description="the gate key")
    categories: list[str] = Field(description="the gated categories this decision covers")
    decision: Literal["approve", "changes", "escalate"]
    reviewer: str
    comment: str = ""
    via: Via = "ui"
    decided_at: datetime
    finding: str | None = Field(None, description="per-finding gate: the finding id (F1, …) this decision is on")
    role: str | None = Field(None, description="per-finding gate: the role this answer counted for")
    carried: CarriedFrom | None = Field(None, description="a decision on an earlier version, carried because the "
                                        "decided clause's text and the playbook are unchanged (its receipt)")
    change: DecidedChange | None = None  # on a tracked change (decision: accept → approve, else changes)


class PositionCheck(_Model):
    """A finding compared with its playbook position (``clausegate.review.positions``), or a required clause
    that is missing (``clause`` None)."""

    category: str
    verdict: Literal["matches standard", "acceptable fallback", "deviates", "missing"]
    reason: str = ""
    clause: int | None = Field(None, description="the finding's index in Review.clauses; None: missing")
    pages: list[int] = []
    preferred_similarity: float | None = None
    fallback_similarity: float | None = None
    figures: dict[str, list[float]] = Field(default_factory=dict,
                                            description="the figures read from the clause, by walk-away kind")


GateWhy = Literal["found", "possible", "disputed", "model_found", "position", "missing", "integrity", "language",
                  "changed", "tracked_change"]  # changed: versions; tracked_change: gate_reasons


class GateReason(_Model):
    """Why one gated category asks a person (``clausegate.review.gate_reasons``)."""

    category: str
    why: GateWhy
    detail: str = ""


class StepFailure(_Model):
    """An explicit partial failure: which step stopped, on which field, and what to do."""

    step: str
    code: str
    message: str
    field: str | None = None


# ``degraded``: complete on the offline result because a model step failed or was skipped by the
# circuit breaker (``Review.model_unconfirmed`` names what the model could not confirm).
ReviewStatus = Literal["complete", "degraded", "partial_failure", "failed", "needs_legal", "changes_requested",
                       "pending_decision"]


class Review(_Model):
    contract_id: str = Field(pattern=SHA256_PATTERN)
    filename: str
    text_id: str | None = Field(None, pattern=SHA256_PATTERN,
                                description="sha256 of the normalised text (clausegate.review.text_identity)")
    reused_from: ReviewOrigin | None = Field(
        None, description="the earlier review whose text-keyed results (pre-filter, extraction, model answers) "
                          "this one reused; its decisions are never reused")
    playbook: str
    status: ReviewStatus
    extractor: str
    clauses: list[Clause] = []
    missing_categories: list[str] = []
    scope: Literal["contract", "clause"] = Field(
        "contract", description="clause: a short pasted text (clausegate.review.assemble.CLAUSE_WORDS): what it has "
                                "is listed, no category is listed as missing (a missing required position still gates)")
    gated_categories: list[str] = []
    pages_total: int = 0
    pages_kept: list[int] = []
    tokens_total: int = 0
    tokens_kept: int = 0
    warnings: list[Notice] = []
    cost: Cost = Cost()
    decisions: list[GateDecision] = []
    suggestions: list[Suggestion] = []
    cascade: CascadeSummary | None = None
    cost_by_step: dict[str, Cost] = {}
    failure: StepFailure | None = None
    model_unconfirmed: list[str] = Field(
        default_factory=list, description="categories sent to a model whose answer never came (model step failed)")
    format: DocumentFormat = Field("pdf", description="the contract's format (the format table's name)")
    revisions: list[Revision] = Field(default_factory=list, description="docx: the pending tracked changes")
    comments: list[Comment] = Field(default_factory=list, description="docx: the comments")
    positions: list[PositionCheck] = Field(
        default_factory=list, description="findings compared with the playbook's positions; missing required clauses")
    gate_reasons: list[GateReason] = Field(
        default_factory=list, description="why each gated category needs a person (one entry per category and why)")
    cleared_by_model: list[Clause] = Field(
        default_factory=list, description="low-confidence offline findings a model took off the gate, with its reason")
    notes: list[str] = Field(default_factory=list, description="gated categories with only a possible finding, "
                                                               "listed without suspending (possible_findings: note)")
    key_terms: KeyTerms | None = Field(None, description="set when the summary path was used (CG-MODEL-SUMMARY-PATH)")
    versions: Versions | None = Field(None, description="the earlier version this one revises: what changed, and "
                                                         "which decisions were carried or asked again")
    flow_run_id: str = Field("", description="the contract-review run that wrote it: its review id (--revises)")
    annotated: str | None = Field(None, description="the annotated copy's file name, in the report's folder "
                                                    "(clausegate/review/annotate/: .docx comments, PDF highlights, "
                                                    "an HTML page for text)")
    contract_terms: ContractTerms | None = Field(None, description="the key terms and renewal dates, at the top")
    language: LanguageReading | None = Field(None, description="the contract's detected natural language")


__all__ = [
    "CATEGORIES", "Clause", "Clearance", "Comment", "ContractSource", "ContractTerm", "ContractTerms", "Cost",
    "Dispute", "Extraction", "FilteredDocument", "GateDecision", "GateReason", "KeyTerm", "KeyTerms", "LanguageReading",
    "Notice", "Page", "ParsedDocument", "NON_CHANNEL_VIAS", "Passage", "PositionCheck", "RenewalDates", "Review",
    "ReviewOrigin", "Revision", "StepFailure", "Via", "CarriedFrom", "VersionChange", "VersionFinding", "Versions"
]
