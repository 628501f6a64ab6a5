"""The model path of a review, as the flow body (``clausegate.pipeline.review``) calls it: the
offline-first cascade, the generation step, the final status, the timeout check at load, and the
merge of the model's findings with the offline ones.

Each model call is one cached task (``ask_extraction_model`` / ``ask_generation_model`` in
``clausegate.pipeline.tasks``), handed in already configured for the review; this module decides what to
send, shrinks the prompt on a context-overflow answer (a new, smaller request, never a retry of
the same one), and degrades to the offline result when a budget would be exceeded.

The cascade's rule: **a model adds evidence, it never removes it silently.**  For every category
sent to the model, each offline finding the model does not confirm (its answer has no valid clause
of that category, or quotes other text) is kept, marked ``dispute`` with the model's side, and
listed in a ``CG-MODEL-DISPUTED`` notice; in a gated or high-risk category it also goes to the
human gate (``CascadeResult.gate``): only a person's decision clears it.  The model's own valid
clauses are added.

A model step that fails (any provider error after retries, an unusable answer, a step timeout,
an open circuit breaker, a missing block) never costs the finished offline result: the review
keeps it, is marked ``degraded`` and names the categories the model could not confirm.  When the
passages are over the model's context window even shrunk to one, the model is asked once more on the
summary path (``CG-MODEL-SUMMARY-PATH``, ``clausegate.review.llm.summary``): an offline, cited summary of
the key terms plus the gated passages; the report shows that summary (``Review.key_terms``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prefect import Task, get_run_logger
from pydantic import BaseModel, ConfigDict

from clausegate.config import load_model_block
from clausegate.errors import BudgetExceeded, ClauseGateError
from clausegate.pipeline.model_calls import BudgetContext, model_result, provider_ref
from clausegate.providers.errors import ContextTooLong, OutputLimitRejected, OutputTruncated
from clausegate.review.llm.extract import (
    TRUNCATED_MARK,
    build_prompt,
    cascade_categories,
    locate_quote,
    naive_prompt_tokens,
    truncate_prompt,
)
from clausegate.review.llm.redlines import build_generation_prompt, clauses_needing_suggestions
from clausegate.review.llm.summary import fit_summary_prompt, key_terms, summary_categories
from clausegate.review.offline.extract import category_confidence, extract_thresholds
from clausegate.review.playbook import Playbook, check_step_timeouts
from clausegate.review.schemas import (
    CascadeSummary,
    Clause,
    Cost,
    Dispute,
    Extraction,
    FilteredDocument,
    KeyTerms,
    Notice,
    ParsedDocument,
    Suggestion,
)

logger = logging.getLogger("clausegate.pipeline.cascade")


class CascadeResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    extraction: Extraction
    summary: CascadeSummary
    cost: Cost
    gate: list[str] = []  # disputed gated / high-risk categories: a person must decide
    degraded: bool = False  # the model step failed: offline result kept
    unconfirmed: list[str] = []  # categories sent to the model that it could not confirm (step failed)
    key_terms: KeyTerms | None = None  # the summary path was taken: the offline summary it sent


class GenerationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    suggestions: list[Suggestion] = []
    notices: list[Notice] = []
    cost: Cost = Cost()
    degraded: bool = False


def _notice(error: Exception, prefix: str = "") -> Notice:
    return Notice(code=getattr(error, "code", "CG-ERROR"), message=prefix + str(error))


MIN_OUTPUT_TOKENS = 64  # below this an answer cannot hold the JSON: an output-limit refusal is final
STEP_TIMEOUT = "CG-MODEL-STEP-TIMEOUT"
STEP_FAILED = "CG-MODEL-STEP-FAILED"
DEGRADED = "CG-MODEL-DEGRADED"
DISPUTED = "CG-MODEL-DISPUTED"
SUMMARY_PATH = "CG-MODEL-SUMMARY-PATH"


def _failure_notice(error: BaseException, step: str, timeout_seconds: float) -> Notice:
    """The coded notice of a failed model step (every failure gets a CG code, never a bare trace)."""
    if isinstance(error, ClauseGateError):
        return Notice(code=error.code, message=str(error))
    if isinstance(error, TimeoutError):  # Prefect's TaskRunTimeoutError: the step timeout cut an attempt
        return Notice(code=STEP_TIMEOUT, message=(
            f"the {step} model call ran longer than steps.{step}.timeout_seconds={timeout_seconds:g} s and was cut "
            "off. Next step: raise steps.{0}.timeout_seconds (the playbook check at load names the minimum for the "
            "block's HTTP timeouts); raising the block's read timeout alone makes this worse.".format(step)))
    return Notice(code=STEP_FAILED, message=f"the {step} model step failed unexpectedly ({type(error).__name__}: "
                                            f"{str(error)[:300]}); see the run log")


def _log_failure(error: BaseException, step: str) -> None:
    try:
        run_logger = get_run_logger()
    except Exception:  # outside a run
        run_logger = logger
    if isinstance(error, (ClauseGateError, TimeoutError)):
        run_logger.warning("the %s model step failed; the offline result is kept (degraded): %s", step, error)
    else:
        run_logger.error("the %s model step failed unexpectedly; the offline result is kept (degraded)", step,
                         exc_info=(type(error), error, error.__traceback__))


def check_timeouts(book: Playbook, extractor: str | None = None) -> None:
    """Validate the playbook's model-step timeouts against the blocks' HTTP timeouts (at load:
    raises PlaybookError naming the field). A block that cannot be loaded is not checked here: the
    step itself then reports it (``CG-CONFIG``, degraded)."""
    names = {extractor or book.steps.extract.extractor, book.steps.generate.provider} - {None, "", "offline"}
    timeouts: dict[str, tuple[float, float]] = {}
    for name in names:
        try:
            block = load_model_block(name)
        except ClauseGateError:
            continue
        timeouts[name] = (float(block.connect_timeout_seconds), float(block.read_timeout_seconds))
    check_step_timeouts(book, timeouts, extractor=extractor)


def _same_finding(offline: Clause, found: Clause) -> bool:
    """The model's clause quotes (part of) the offline finding's text, or the other way round."""
    return locate_quote(found.text, offline.text) is not None or locate_quote(offline.text, found.text) is not None


def merge_findings(offline: list[Clause], found: list[Clause], sent: list[str], *, model: str,
                   must_confirm: set[str]) -> tuple[list[Clause], list[Notice], list[str]]:
    """The cascade's rule (module doc). Returns (clauses, notices, categories a person must decide).

    A model may raise a finding's confidence (its confirming quote at an equal or higher confidence stands for
    the finding) and add findings; a confirmation at a *lower* confidence is a dispute (``model_found='lower'``):
    the offline finding stays at its own confidence, so no model answer can push it under a playbook threshold.
    """
    sent_set = set(sent)
    clauses = [c for c in offline if c.category not in sent_set]
    notices: list[Notice] = []
    gate: list[str] = []
    for category in sent:
        theirs = [c for c in found if c.category == category]
        shown_as_dispute: set[int] = set()  # the model's lower confirmations: shown inside the dispute only
        standing: set[int] = set()  # the model's clauses that stand for a confirmed offline finding
        for clause in (c for c in offline if c.category == category):
            confirming = [m for m in theirs if _same_finding(clause, m)]
            if any(m.confidence >= clause.confidence for m in confirming):
                standing.update(id(m) for m in confirming if m.confidence >= clause.confidence)
                continue  # confirmed: the model's exact quote of it stands for it
            if confirming:
                best = max(confirming, key=lambda m: m.confidence)
                shown_as_dispute.update(id(m) for m in confirming)
                found_as = "lower"
            else:
                best = max(theirs, key=lambda m: m.confidence) if theirs else None
                found_as = "other" if best else "nothing"
            dispute = Dispute(model=model, model_found=found_as,
                              model_text=best.text if best else None, model_pages=best.pages if best else [],
                              model_confidence=best.confidence if best else None)
            clauses.append(clause.model_copy(update={"dispute": dispute}))
            asks = category in must_confirm
            if asks and category not in gate:
                gate.append(category)
            notices.append(Notice(code=DISPUTED, page=clause.pages[0], message=(
                f"{category}: the offline extractor found it on p. {clause.pages[0]} "
                f"(confidence {clause.confidence:.2f}); the model {model} {_their_side(found_as, best)}. "
                "The finding is kept as disputed" + ("; a person decides." if asks else "."))))
        clauses.extend(m for m in theirs if id(m) in standing or id(m) not in shown_as_dispute)
    return clauses, notices, gate


def _their_side(found_as: str, best: Clause | None) -> str:
    if best is None:
        return "gave no valid clause of this category"
    quote = " ".join(best.text.split())[:160]
    if found_as == "lower":
        return f"quoted it at a lower confidence ({best.confidence:.2f}): \"{quote}\""
    return f"quoted other text (p. {best.pages[0]}): \"{quote}\""


def _ask_adapting(ask: Task, step: str, prompt, ref, max_tokens, budget, *, shrink: Callable | None = None):
    """Ask once (Prefect retries transient errors inside ``ask``). Permanent answers that a different
    request can fix are handled here with a new, different request, never the same one again:
    context overflow -> fewer passages (marked [TRUNCATED]); output cut at max_tokens -> once with
    twice the output budget; an output budget the provider refuses (``OutputLimitRejected``) -> the
    budget its message allows, else half, twice at most.  A budget skip raises ``BudgetExceeded``
    (``model_calls.model_result``).  A truncated answer's complete items (``PartialAnswer.partial``) are paid
    for: if asking again fails or is skipped, they are the result."""
    notices: list[Notice] = []
    raised_output, lowered_output = False, 0
    partial = None
    while True:
        try:
            return model_result(step, ask(prompt, ref, max_tokens, budget)), prompt, notices
        except ContextTooLong as error:
            smaller = shrink(prompt) if shrink else None
            if smaller is None:
                raise
            notices.append(Notice(code=error.code, message=(
                f"{TRUNCATED_MARK} prompt too long for {ref.model}; sent {len(smaller.passages)} of "
                f"{len(prompt.passages)} passages instead")))
            prompt = smaller
        except OutputTruncated as error:
            partial = getattr(error, "partial", None) or partial
            if raised_output:
                if partial is None:
                    raise
                return partial, prompt, notices
            raised_output, max_tokens = True, max_tokens * 2
            notices.append(Notice(code=error.code,
                                  message=f"answer cut at the output limit; asked again with max_tokens={max_tokens}"))
        except OutputLimitRejected as error:
            allowed = error.allowed_output_tokens
            fits = allowed if allowed is not None and allowed < max_tokens else max_tokens // 2
            if lowered_output >= 2 or fits < MIN_OUTPUT_TOKENS:
                if partial is None:
                    raise
                return partial, prompt, [*notices, Notice(code=error.code, message=(
                    f"{ref.model} refused the output budget ({error.message[:160]}); the complete items of the "
                    "truncated answer are used instead"))]
            lowered_output, max_tokens = lowered_output + 1, fits
            notices.append(Notice(code=error.code, message=(
                f"{ref.model} refused the output budget ({error.message[:160]}); asked again with "
                f"max_tokens={max_tokens}")))
        except Exception as error:
            if partial is None:
                raise
            if not isinstance(error, BudgetExceeded):
                _log_failure(error, step)
            code = getattr(error, "code", STEP_TIMEOUT if isinstance(error, TimeoutError) else STEP_FAILED)
            return partial, prompt, [*notices, Notice(code=code, message=(
                f"asking again with max_tokens={max_tokens}: {getattr(error, 'message', error)}; the complete items "
                "of the truncated answer are used instead"))]


def cascade(document: ParsedDocument, filtered: FilteredDocument, offline: Extraction, book: Playbook,
            extractor: str, ask_extraction_model: Task) -> CascadeResult:
    """Offline first; the model sees only high-risk categories and those the offline model is unsure of.
    ``ask_extraction_model``: the review's configured task (``ReviewTasks.ask_extraction_model``)."""
    categories = list(book.categories)
    settings = book.steps.extract
    send = cascade_categories(category_confidence(filtered, categories), extract_thresholds(categories),
                              book.high_risk, margin=settings.cascade_margin)
    naive = naive_prompt_tokens(document)
    summary = dict(categories_total=len(categories), prompt_tokens_naive=naive)
    if not send or not filtered.passages:
        return CascadeResult(extraction=offline, cost=Cost(), summary=CascadeSummary(
            categories_sent=[], model_calls=0, model_calls_saved=1, prompt_tokens_sent=0, **summary))

    budget = BudgetContext(budgets=book.budgets, run_cost=Cost())
    must_confirm = set(book.gated_categories) | set(book.high_risk)
    terms = None
    try:
        ref = provider_ref(extractor)
        try:
            result, prompt, notices = _ask_adapting(ask_extraction_model, "extract", build_prompt(filtered, send),
                                                    ref, settings.max_output_tokens, budget, shrink=truncate_prompt)
        except ContextTooLong:  # over the window even shrunk to one passage: the summary path
            terms, asked = key_terms(offline.clauses), summary_categories(send, must_confirm)

            def fit(below: int | None):  # the summary prompt; after a refusal, one smaller than the refused one
                return fit_summary_prompt(filtered, offline.clauses, terms, asked, below=below)

            # always sent: only the model knows what its window takes (our token count is an estimate)
            result, prompt, notices = _ask_adapting(ask_extraction_model, "extract", fit(None), ref,
                                                    settings.max_output_tokens, budget, shrink=lambda p: fit(p.tokens))
            terms = terms.model_copy(update={"model_asked": True})
            result = result.model_copy(update={"answered": [c for c in asked if c in (result.answered or asked)]})
            notices.insert(0, _summary_notice(ref.model, asked, answered=True))
    except BudgetExceeded as error:
        degraded = offline.model_copy(update={"notices": [*offline.notices, _notice(error)],
                                              "extractor": f"offline (budget: {extractor} skipped)"})
        return CascadeResult(extraction=degraded, cost=Cost(), key_terms=terms, summary=CascadeSummary(
            categories_sent=[], model_calls=0, model_calls_saved=1, prompt_tokens_sent=0, **summary))
    except Exception as error:  # whatever failed, the finished offline result stands
        _log_failure(error, "extract")
        failure = _failure_notice(error, "extract", settings.timeout_seconds)
        path = [_summary_notice(extractor, summary_categories(send, must_confirm), answered=False)] if terms else []
        kept = offline.model_copy(update={
            "extractor": f"offline ({extractor} failed: {failure.code})",
            "notices": [*offline.notices, *path, failure, Notice(code=DEGRADED, message=(
                f"the model step failed ({failure.code}); the offline result is kept. The model could not confirm: "
                f"{', '.join(send)}."))]})
        return CascadeResult(extraction=kept, cost=Cost(), degraded=True, unconfirmed=list(send), key_terms=terms,
                             summary=CascadeSummary(categories_sent=list(send), model_calls=0, model_calls_saved=0,
                                                    prompt_tokens_sent=0, **summary))
    answered, unconfirmed = _answered(send, result.answered)  # an answer used in part covers only some
    clauses, disputes, gate = merge_findings(offline.clauses, result.clauses, answered, model=result.model,
                                             must_confirm=must_confirm)
    if unconfirmed:
        notices.append(Notice(code=DEGRADED, message=(
            f"the model's answer was used in part; the offline result is kept for what it did not cover. The model "
            f"could not confirm: {', '.join(unconfirmed)}.")))
    extraction = Extraction(contract_id=offline.contract_id, extractor=f"{extractor} ({result.model}) + offline",
                            clauses=clauses, categories_checked=categories,
                            notices=[*offline.notices, *notices, *result.notices, *disputes])
    return CascadeResult(extraction=extraction, cost=result.cost, gate=gate, degraded=bool(unconfirmed),
                         unconfirmed=unconfirmed, key_terms=terms, summary=CascadeSummary(
        categories_sent=send, model_calls=result.cost.calls, model_calls_saved=0,
        prompt_tokens_sent=prompt.tokens, truncated=prompt.truncated, summary_path=terms is not None, **summary))


def _summary_notice(model: str, categories: list[str], *, answered: bool) -> Notice:
    """``CG-MODEL-SUMMARY-PATH``: the summary path was taken (``answered``: and the model answered it)."""
    if answered:
        outcome = ("the model was asked about an offline summary of the key terms and the gated passages only "
                   f"({', '.join(categories)})")
    else:
        outcome = ("the summary prompt (an offline summary of the key terms and the gated passages) failed too; "
                   "the offline result is kept")
    return Notice(code=SUMMARY_PATH, message=(
        f"the passages are over {model}'s context window even shrunk to one; {outcome}. The report shows the summary."))


def _answered(sent: list[str], answered: list[str] | None) -> tuple[list[str], list[str]]:
    """(categories the model's answer covers, categories sent that it does not); ``answered`` None: all."""
    if answered is None:
        return list(sent), []
    return [c for c in sent if c in answered], [c for c in sent if c not in answered]


def generate(clauses: list[Clause], book: Playbook, run_cost: Cost, ask_generation_model: Task) -> GenerationResult:
    """Redlines and counterparty questions for gated / high-risk clauses (skipped without a provider).
    ``ask_generation_model``: the review's configured task (``ReviewTasks.ask_generation_model``)."""
    settings = book.steps.generate
    targets = clauses_needing_suggestions(clauses, book)
    if not targets:
        return GenerationResult()
    if not settings.provider:
        return GenerationResult(notices=[Notice(code="CG-GENERATE-SKIPPED", message=(
            "no generation model configured (playbook steps.generate.provider); no redlines suggested"))])
    budget = BudgetContext(budgets=book.budgets, run_cost=run_cost)
    try:
        ref = provider_ref(settings.provider)
        result, _, notices = _ask_adapting(ask_generation_model, "generate",
                                           build_generation_prompt(targets, book), ref,
                                           settings.max_output_tokens, budget)
    except BudgetExceeded as error:
        return GenerationResult(notices=[_notice(error)])
    except Exception as error:  # no redlines; the findings stand
        _log_failure(error, "generate")
        failure = _failure_notice(error, "generate", settings.timeout_seconds)
        return GenerationResult(degraded=True, notices=[failure, Notice(code=DEGRADED, message=(
            f"the generation step failed ({failure.code}); the findings are kept, no redlines or questions were "
            f"suggested for {', '.join(dict.fromkeys(c.category for c in targets))}."))])
    _, uncovered = _answered(list(dict.fromkeys(c.category for c in targets)), result.answered)
    return GenerationResult(suggestions=result.suggestions, notices=[*notices, *result.notices], cost=result.cost,
                            degraded=bool(uncovered))


def final_status(status: str, degraded: bool) -> str:
    """A review that would end ``complete`` ends ``degraded`` when a model step failed; any other
    status (a gate still waiting, a decision, a failure) says more and stays."""
    return "degraded" if degraded and status == "complete" else status
