"""Review report: JSON (the machine-readable record) and Markdown (for people and the Prefect UI)."""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

from clausegate.errors import ReportWriteError
from clausegate.review.change_report import change_lines
from clausegate.review.document.codes import INTEGRITY_CODES
from clausegate.review.gate_reasons import describe_reasons
from clausegate.review.key_terms.ics import calendar
from clausegate.review.key_terms.render import markdown_lines as key_terms_lines
from clausegate.review.money import eur_digits, eur_text
from clausegate.review.report_formats import CLAUSE_NOTE, document_line, markup_sections, where
from clausegate.review.schemas import Cost, Notice, Review
from clausegate.review.versions.report import version_lines

CLAUSE_TEXT_LIMIT = 400
SEALED_SUFFIX = ".sealed"  # strict text mode's sealed full review next to a report: <stem>.json.sealed


def report_stem(review: Review) -> str:
    stem = Path(review.filename).stem.replace(" ", "_")[:60]
    return f"{stem}-{review.contract_id[:12]}-{review.playbook}"


def _pages(pages: list[int]) -> str:
    if len(pages) == 1:
        return f"p. {pages[0]}"
    return f"pp. {pages[0]}–{pages[-1]}"


def _where(clause) -> str:
    """"§ 11.3 Limitation of Liability, p. 7" (the section when the extractor found one); "§ 8.5, ¶ 41" in a
    .docx, a character span in text (clausegate/review/report_formats.py)."""
    return where(clause)


def _cut(text: str, limit: int = CLAUSE_TEXT_LIMIT) -> str:
    """``text`` on one line; past ``limit`` cut at a word and ended with " […]", so a reader sees the cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 4].rsplit(" ", 1)[0].rstrip(" ,;:") + " […]"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _model_sections(review: Review) -> list[str]:
    """What a model disputed (both sides) and what it could not confirm (its step failed)."""
    lines: list[str] = []
    disputed = [c for c in review.clauses if c.dispute]
    if disputed:
        lines += ["", "## Disputed by the model (kept; a person decides in gated or high-risk categories)", "",
                  "| Category | Offline finding | Model |", "|---|---|---|"]
        for c in disputed:
            d = c.dispute
            if d.model_found == "nothing":
                theirs = f"{d.model}: no valid clause of this category"
                theirs += f" ({_md_cell(d.model_reason)})" if d.model_reason else ""
            else:
                what = "other text" if d.model_found == "other" else "this text at a lower confidence"
                theirs = (f"{d.model}: {what} ({_pages(d.model_pages)}, {d.model_confidence:.2f}): "
                          f"{_md_cell(_cut(d.model_text or '', 200))}")
            if d.not_cleared:
                theirs += f"; not cleared: {_md_cell(d.not_cleared)}"
            at = _pages(c.pages) if review.format == "pdf" else _where(c)
            ours = f"{at}, {c.confidence:.2f}: {_md_cell(_cut(c.text, 200))}"
            lines.append(f"| {c.category} | {ours} | {theirs} |")
    if review.cleared_by_model:
        lines += ["", "## Cleared by the model (low-confidence findings it took off the gate; a person can overturn "
                  "them)", ""]
        for c in review.cleared_by_model:
            theirs = "not there" if c.cleared.model_found == "nothing" else \
                f"other text ({_pages(c.cleared.model_pages)}): {_md_cell(_cut(c.cleared.model_text or '', 160))}"
            lines += [f"**{c.category}** · {_md_cell(_where(c) if review.format != 'pdf' else _pages(c.pages))} · "
                      f"offline confidence {c.confidence:.2f} · {c.cleared.model}: {theirs}", "",
                      f"> {_cut(c.text)}", "", f"Model's reason: {_md_cell(c.cleared.reason)}", ""]
    if review.model_unconfirmed:
        lines += ["", "## Not confirmed by the model (its step failed; offline result kept)", "",
                  ", ".join(review.model_unconfirmed)]
    if review.key_terms:
        asked = ("the model was asked about it and the gated passages" if review.key_terms.model_asked
                 else "the model could not take it either")
        lines += ["", f"## Key terms (summary path: the passages were over the model's context window; {asked})", "",
                  "| Term | Category | Where | Text |", "|---|---|---|---|"]
        for t in review.key_terms.terms:
            where = ", ".join([_pages(t.pages)] + ([f"§ {t.section}"] if t.section else [])) if t.pages else ""
            lines.append(f"| {t.topic} | {t.category or 'not found'} | {_md_cell(where)} | {_md_cell(t.text)} |")
    return lines


def _clause_lines(clause) -> list[str]:
    """A finding as a line (category, place, confidence) with its quote on a line of its own: a table cell would
    be squeezed (the Prefect UI cut a quote column after ~25 characters at a 1400-pixel window)."""
    mark = (" *(team-defined)*" if clause.custom else "") + (" **(disputed)**" if clause.dispute else "")
    return [f"**{clause.category}**{mark} · {_md_cell(_where(clause))} · confidence {clause.confidence:.2f}", "",
            f"> {_cut(clause.text)}", ""]


def _position_lines(review: Review) -> list[str]:
    """Each finding against the playbook's position, and the required clauses not found."""
    if not review.positions:
        return []
    lines = ["", "## Against the playbook's positions", "", "| Category | Where | Verdict | Why |", "|---|---|---|---|"]
    for check in review.positions:  # a PDF's page; a .docx's § and ¶, a text's span, as elsewhere in the report
        found = review.clauses[check.clause] if check.clause is not None and check.clause < len(review.clauses) \
            else None
        where = (_md_cell(_where(found)) if found and review.format != "pdf" else
                 _pages(check.pages) if check.pages else "not found")
        lines.append(f"| {check.category} | {where} | **{check.verdict}** | {_md_cell(check.reason)} |")
    return lines


def render_markdown(review: Review) -> str:
    lines = [
        f"# Contract review: {review.filename}",
        "",
        f"- **Status:** `{review.status}`",
        f"- **Contract id:** `{review.contract_id}`",
        f"- **Playbook:** {review.playbook} · **Extractor:** {review.extractor}",
        document_line(review),
        f"- **Text reviewed:** {review.tokens_kept:,} of {review.tokens_total:,} tokens",
        f"- **Cost:** {_cost_line(review.cost)}",
    ]
    if review.annotated:  # next to this report (clausegate/pipeline/annotate.py); each finding below says where
        lines.append(f"- **Annotated copy:** [{review.annotated}]({quote(review.annotated)}): "
                     + ("sealed (strict text mode): the inbox API serves it to the task's key"
                        if review.annotated.endswith(SEALED_SUFFIX) else
                        {"docx": "a Word comment on each finding, the fallback wording as a tracked change",
                         "pdf": "a highlight with a note on each finding"}.get(review.format,
                                                                               "the findings marked in the text")))
    if review.reused_from:
        r = review.reused_from
        lines.append(f"- **Reused from:** {_md_cell(r.filename)} (`{r.contract_id[:12]}`, reviewed "
                     f"{r.reviewed_at:%Y-%m-%d %H:%M} UTC): the same text, so its pre-filter, extraction and model "
                     "answers were reused; its decisions were not")
    if review.language is not None and not review.language.english:
        lines.append(f"- **Language:** {review.language.name} ({review.language.code}): not read by the offline reader")
    lines += key_terms_lines(review.contract_terms, review.language)  # the first thing a reader needs
    if review.failure:
        f = review.failure
        lines += ["", "## Stopped", "", f"Step **{f.step}** stopped with `{f.code}`"
                  + (f" on field `{f.field}`" if f.field else "") + f": {_md_cell(f.message)}"]
    integrity = [w for w in review.warnings if w.code in INTEGRITY_CODES]
    if integrity:
        doc = "PDF" if review.format == "pdf" else "document"
        lines += ["", f"## Document integrity: the {doc} may not say what this review read", "",
                  "Text a reader cannot see, or text that does not read as words, was found. Check these places in "
                  f"the {doc} itself; hidden text in a contract is a red flag to raise with the sender.", ""]
        lines += [_warning_line(w) for w in integrity]
    if review.gated_categories:
        lines += ["", "## Needs a person", ""]
        lines += [f"- {c}" + (f": {_md_cell(why)}" if (why := describe_reasons(review.gate_reasons, c)) else "")
                  for c in review.gated_categories]
    if review.notes:
        lines += ["", "## Listed for a person (possible findings in gated categories; the run did not wait)", ""]
        lines += [f"- {c}" for c in review.notes]
    lines += _position_lines(review)
    lines += _model_sections(review)
    lines += markup_sections(review)
    lines += version_lines(review)  # the earlier version: what changed, decisions carried or asked again
    if review.decisions:
        lines += ["", "## Decisions", "", "| Gate | Finding | Role | Decision | Reviewer | Via | Comment | When |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {d.gate} | {(d.finding + ' ') if d.finding else ''}{', '.join(d.categories)} | {d.role or '-'} "
                  f"| {d.decision}{f' (tracked change {d.change.change.id}: {d.change.decision})' if d.change else ''} "
                  f"| {_md_cell(d.reviewer)} | {d.via}{' (carried)' if d.carried else ''} "
                  f"| {_md_cell(d.comment)} | {d.decided_at:%Y-%m-%d %H:%M} |"
                  for d in review.decisions]
        lines += change_lines(review)  # the counterparty's tracked changes: accepted, rejected or countered
    by_category: dict[str, list] = defaultdict(list)
    found = [c for c in review.clauses if not c.possible]
    for clause in found:
        by_category[clause.category].append(clause)
    lines += ["", f"## Clauses found ({len(found)} in {len(by_category)} categories)", ""]
    if by_category:
        for clauses in by_category.values():  # grouped by category, in the review's order
            for clause in clauses:
                lines += _clause_lines(clause)
    else:
        lines.append("No clauses of the playbook's categories were found.")
    possible = [c for c in review.clauses if c.possible]
    if possible:
        lines += ["", f"## Possible clauses ({len(possible)}): scored near the threshold, check them", ""]
        for clause in possible:
            lines += _clause_lines(clause)
    if review.suggestions:
        lines += ["", "## Suggested redlines and questions for the counterparty", ""]
        for x in review.suggestions:
            at = _pages(x.pages) if x.pages and review.format == "pdf" else next(
                (_where(c) for c in review.clauses if c.category == x.category and not c.possible), "n/a")
            lines.append(f"- **{x.category}** ({at}): {_md_cell(x.redline)}")
            lines += [f"  - {_md_cell(q)}" for q in x.questions]
    if review.cost_by_step or review.cascade:
        lines += ["", "## Cost", "", "Paid by this run (every answer a provider billed, failed attempts included) "
                  "and, apart, answers reused from the cache at what an earlier run paid for them.", "",
                  "| Step | Model calls | Input tokens | Output tokens | € this run | Reused calls | € reused |",
                  "|---|---|---|---|---|---|---|"]
        for step, c in [*review.cost_by_step.items(), ("**run**", review.cost)]:
            lines.append(f"| {step} | {c.calls} | {c.input_tokens:,} | {c.output_tokens:,} | {eur_digits(c.eur)} "
                         f"| {c.reused_calls} | {eur_digits(c.reused_eur)} |")
        if review.cascade:
            k = review.cascade
            lines += ["", f"Cascade: {len(k.categories_sent)} of {k.categories_total} categories sent to the model "
                          f"({', '.join(k.categories_sent) or 'none'}); prompt {k.prompt_tokens_sent:,} tokens vs. "
                          f"{k.prompt_tokens_naive:,} for the whole document with every category; "
                          f"model calls saved: {k.model_calls_saved}" + (" · **[TRUNCATED]**" if k.truncated else "")]
    if review.failure is None and review.scope == "clause":
        lines += ["", CLAUSE_NOTE]
    elif review.failure is None:
        lines += ["", f"## Missing categories ({len(review.missing_categories)})", ""]
        lines.append(", ".join(review.missing_categories) or "None: every category was found.")
    others = [w for w in review.warnings if w.code not in INTEGRITY_CODES]
    if others:
        lines += ["", "## Warnings", ""]
        lines += [_warning_line(w) for w in others]
    return "\n".join(lines) + "\n"


def _warning_line(w: Notice) -> str:
    return f"- `{w.code}`" + (f" (page {w.page})" if w.page else "") + f": {_md_cell(w.message)}"


def _cost_line(cost: Cost) -> str:
    tokens = cost.input_tokens + cost.output_tokens
    line = f"{eur_text(cost.eur)} this run ({cost.calls} model calls, {tokens:,} tokens)"
    if cost.reused_calls or cost.reused_eur:
        line += f"; {eur_text(cost.reused_eur)} reused from cache ({cost.reused_calls} model calls, not paid again)"
    return line


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def report_paths(review: Review, out_dir: str | Path) -> tuple[Path, Path]:
    """Where ``review``'s report goes: ``<out_dir>/<stem>.json`` and ``.md``."""
    stem = report_stem(review)
    return Path(out_dir) / f"{stem}.json", Path(out_dir) / f"{stem}.md"


def _terms_first(data: dict) -> dict:
    """The JSON with the key terms and language right after the contract's identity and status."""
    head = [k for k in ("contract_id", "filename", "playbook", "status", "contract_terms", "language") if k in data]
    return {**{k: data[k] for k in head}, **{k: v for k, v in data.items() if k not in head}}


def write_report(review: Review, out_dir: str | Path, *, private: bool = False) -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.md`` atomically (owner-only files; ``<stem>.ics`` too when the key terms
    date a term's end: its calendar); return the JSON's and the Markdown's paths.
    ``private``: a folder this creates is owner-only too (strict text mode)."""
    folder = Path(out_dir)
    try:
        folder.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
        json_path, md_path = report_paths(review, folder)
        _atomic_write(json_path, json.dumps(_terms_first(review.model_dump(mode="json")), indent=2,
                                             ensure_ascii=False) + "\n")
        _atomic_write(md_path, render_markdown(review))
        if review.contract_terms is not None and review.contract_terms.renewal is not None:
            _atomic_write(json_path.with_suffix(".ics"), calendar([review]).decode("utf-8"))
    except OSError as exc:
        raise ReportWriteError(
            f"cannot write the report to {folder}: {exc.strerror or exc}",
            hint="choose a writable folder with --out (finished steps are cached; rerunning costs nothing)",
        ) from None
    return json_path, md_path
