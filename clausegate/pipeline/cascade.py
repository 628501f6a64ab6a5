"""The model path of a review, as the flow body (``clausegate.pipeline.review``) calls it: the
offline-first cascade, the generation step, the final status, the timeout check at load, and the
merge of the model's findings with the offline ones.

Each model call is one cached task (``ask_extraction_model`` / ``ask_generation_model`` in
``clausegate.pipeline.tasks``), handed in already configured for the review; this module decides what to
send, shrinks the prompt on a context-overflow answer (a new, smaller request, never a retry of
the same one), and degrades to the offline result when a budget would be exceeded.

The model is a second reader (``clausegate.review.llm.merge``): every playbook category with a candidate
passage its answer can decide (offline evidence within ``steps.extract.cascade_margin`` log-odds of the threshold,
or a "possible" finding) and every gated or high-risk one is asked about.  Its answer moves the offline evidence
by that margin, no more: it confirms, adds, or takes a *low-confidence* finding off the gate under the guards
that module lists (shown passage, a reason, no integrity or injection signal, the playbook's ``model_review``);
every other disagreement is a dispute, and in a gated or high-risk category a person decides
(``CascadeResult.gate``).  A finding taken off the gate stays in the review (``Clause.cleared``, "Cleared by the
model").

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
from clausegate.pipeline.answer_store import AnswerStore
from clausegate.pipeline.model_calls import BudgetContext, ModelExtraction, model_result, provider_ref
from clausegate.providers.errors import ContextTooLong, OutputLimitRejected, OutputTruncated
from clausegate.review.document.codes import INTEGRITY_CODES
from clausegate.review.instructions import instruction_signal
from clausegate.review.llm import answer_memory as memory
from clausegate.review.llm.extract import (
    PASSAGES_PER_CATEGORY,
    TRUNCATED_MARK,
    ExtractionPrompt,
    cascade_categories,
    logit,
    naive_prompt_tokens,
    truncate_prompt,
)
from clausegate.review.llm.merge import MergeRules, merge_findings
from clausegate.review.llm.redlines import build_generation_prompt, clauses_needing_suggestions
from clausegate.review.llm.summary import fit_summary_prompt, key_terms, summary_categories
from clausegate.review.money import add_costs
from clausegate.review.offline.extract import category_confidence, extract_thresholds
from clausegate.review.playbook import Playbook, check_step_timeouts
from clausegate.review.schemas import (
    CascadeSummary,
    Clause,
    Cost,
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
    paid: list[Cost] = []  # the truncated answers asked again: each was a paid call of this step

    def counted(result, *, own: bool = False):  # the result, its cost with the earlier paid calls of this step
        earlier = paid[:-1] if own else paid
        return result.model_copy(update={"cost": add_costs(result.cost, *earlier)}) if earlier else result

    while True:
        try:
            return counted(model_result(step, ask(prompt, ref, max_tokens, budget))), prompt, notices
        except ContextTooLong as error:
            smaller = shrink(prompt) if shrink else None
            if smaller is None:
                raise
            notices.append(Notice(code=error.code, message=(
                f"{TRUNCATED_MARK} prompt too long for {ref.model}; sent {len(smaller.passages)} of "
                f"{len(prompt.passages)} passages instead")))
            prompt = smaller
        except OutputTruncated as error:
            if getattr(error, "partial", None) is not None:
                partial = error.partial
                paid.append(partial.cost)
            if raised_output:
                if partial is None:
                    raise
                return counted(partial, own=True), prompt, notices
            raised_output, max_tokens = True, max_tokens * 2
            notices.append(Notice(code=error.code,
                                  message=f"answer cut at the output limit; asked again with max_tokens={max_tokens}"))
        except OutputLimitRejected as error:
            allowed = error.allowed_output_tokens
            fits = allowed if allowed is not None and allowed < max_tokens else max_tokens // 2
            if lowered_output >= 2 or fits < MIN_OUTPUT_TOKENS:
                if partial is None:
                    raise
                return counted(partial, own=True), prompt, [*notices, Notice(code=error.code, message=(
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
            return counted(partial, own=True), prompt, [*notices, Notice(code=code, message=(
                f"asking again with max_tokens={max_tokens}: {getattr(error, 'message', error)}; the complete items "
                "of the truncated answer are used instead"))]


def _ask_remembering(ask: Task, filtered: FilteredDocument, send: list[str], ref, max_tokens, budget):
    """Ask about ``send`` in one prompt, less the passages earlier answers cover for the same categories
    (``clausegate.review.llm.answer_memory``), and remember what this answer says.  Returns the joined answer, the
    prompt as sent with every passage the model has read for this review, and the notices."""
    model_id = f"{ref.block}/{ref.model}@{ref.base_url}"
    wanted = memory.pairs(filtered, send, PASSAGES_PER_CATEGORY)
    texts = {p.passage.id: p.passage.text for p in wanted}
    store = AnswerStore.of(ask)
    records = store.recall({pid: memory.passage_key(text, model_id) for pid, text in texts.items()}) if store else {}
    answers = memory.answers_of(records, send)
    asking = memory.to_ask(wanted, answers)
    reused = {answers[(p.passage.id, p.category)].call for p in wanted if p not in asking}
    result, sent, notices, models, covered = None, None, [], {}, set()
    if asking:
        result, sent, notices = _ask_adapting(ask, "extract", memory.prompt_for(asking), ref, max_tokens, budget,
                                              shrink=truncate_prompt)
        call = memory.call_key(sent, model_id)
        said = memory.split(sent, result.clauses, result.absent, result.answered, call)
        answers.update(said)
        models[call], covered = result.model, set(sent.categories if result.answered is None else result.answered)
        if store is not None:
            store.keep({call: memory.CallReceipt(cost=result.cost, paid_by=result.paid_by, model=result.model),
                        **{memory.passage_key(texts[pid], model_id): record
                           for pid, record in memory.remembered_records(records, said).items()}})
    receipts = store.receipts(reused) if store and reused else {}
    for call, receipt in receipts.items():  # answers reused: the meter reports them as spend reused, not spent
        models[call] = receipt.model
        model_result("extract", ModelExtraction(clauses=[], notices=[], cost=receipt.cost, model=receipt.model,
                                                paid_by=receipt.paid_by))
    clauses, absent, unanswered = memory.join(wanted, answers, models, covered)
    joined = ModelExtraction(
        clauses=clauses, absent=absent, notices=list(result.notices) if result else [],
        cost=result.cost if result else Cost(), paid_by=result.paid_by if result else "",
        model=result.model if result else next(iter(models.values()), ref.model),
        answered=[c for c in send if c not in unanswered] if unanswered else None)
    whole = ExtractionPrompt(categories=list(send), passages=memory.shown(wanted, sent),
                             system=sent.system if sent else "", user=sent.user if sent else "",
                             truncated=bool(sent and sent.truncated))
    return joined, whole, notices


def cascade(document: ParsedDocument, filtered: FilteredDocument, offline: Extraction, book: Playbook,
            extractor: str, ask_extraction_model: Task) -> CascadeResult:
    """Offline first; the model reads every category with a candidate passage and the high-risk ones (module doc).
    ``ask_extraction_model``: the review's configured task (``ReviewTasks.ask_extraction_model``)."""
    categories = list(book.categories)
    settings = book.steps.extract
    confidence, thresholds = category_confidence(filtered, categories), extract_thresholds(categories)
    margins = {c: logit(confidence[c]) - logit(thresholds[c]) for c in confidence}
    must_confirm = set(book.gated_categories) | set(book.high_risk)
    send = cascade_categories(confidence, thresholds, sorted(must_confirm), margin=settings.cascade_margin,
                              possible={c.category for c in offline.clauses if c.possible})
    naive = naive_prompt_tokens(document)
    summary = dict(categories_total=len(categories), prompt_tokens_naive=naive)
    if not send or not filtered.passages:
        return CascadeResult(extraction=offline, cost=Cost(), summary=CascadeSummary(
            categories_sent=[], model_calls=0, model_calls_saved=1, prompt_tokens_sent=0, **summary))

    budget = BudgetContext(budgets=book.budgets, run_cost=Cost())
    terms = None
    try:
        ref = provider_ref(extractor)
        try:
            result, prompt, notices = _ask_remembering(ask_extraction_model, filtered, send, ref,
                                                       settings.max_output_tokens, budget)
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
    signal, warning = _distrust(document, filtered)
    rules = MergeRules(weight=settings.cascade_margin, must_confirm=frozenset(must_confirm),
                       may_clear=book.model_may_clear, signal=signal)
    merged = merge_findings(offline.clauses, result.clauses, result.absent, answered, prompt.passages, margins, rules,
                            model=result.model)
    clauses, disputes, gate = merged.clauses, merged.notices, merged.gate
    if warning is not None:
        notices.append(warning)
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


def _distrust(document: ParsedDocument, filtered: FilteredDocument) -> tuple[str | None, Notice | None]:
    """Why no model answer may take a finding of this document off the gate (``clausegate.review.llm.merge``): a
    document-integrity warning, or instruction-like text in what the model reads (then also its warning to add)."""
    integrity = next((n.code for n in document.notices if n.code in INTEGRITY_CODES), None)
    if integrity is not None:
        return f"a document-integrity warning ({integrity})", None
    warning = instruction_signal(p.text for p in filtered.passages)
    if warning is not None:
        return f"instruction-like text addressed to a model or reviewer ({warning.code})", warning
    return None, None


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
