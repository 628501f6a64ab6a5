"""Benchmark the review cascade and its human gate on CUAD's HOLDOUT split (``tools.cuad.is_holdout``).

    python bench/cascade.py [--limit N] [--modes offline,oracle,noisy] [--noise 0.15] [--seed 0]
                            [--playbook default] [--protocol anthropic|openai] [--max-output-tokens N]
                            [--json FILE] [--code-label TEXT]

Each held-out contract (page text cached by ``tools.cuad.load_pages``, as ``bench/extractor.py``) goes through the
review's own steps as the flow body (``clausegate.pipeline.review._review``) runs them: ``prefilter`` ->
``extract_step`` (offline) -> ``cascade`` (the model path) -> ``assemble_review`` with the playbook's gates plus
the categories the cascade sends to a person.  Modes:

* ``offline``: no model (the cascade is not run, as with ``extractor: offline``);
* ``oracle``: the model is the project's fake server (``clausegate.demo.model_server.FakeModelServer``, on
  127.0.0.1, one per mode) answering with ``bench/cascade_responders.Oracle``: CUAD's labels, about the shown
  passages only; spoken to by the product's own provider client (a model block saved in the Prefect server the
  bench runs on, ``--protocol``) through the extraction task's body (``ask_extraction_model.fn``: budget guard,
  ledger, grounding of the answer), inside a flow run of the bench;
* ``noisy``: the oracle with each contract x category answer flipped with probability ``--noise`` (``--seed``).

For each mode it prints:

* contract-level micro / macro F1 over the 36 non-metadata categories (found = a non-possible clause of the
  category; true = CUAD labels it), and passage-level micro F1 (as ``bench/extractor.py``);
* the gate: gated categories per contract (``Review.gated_categories``), the share of gated contract x category
  pairs (not counting the pseudo-category *Document integrity*) that CUAD does not label for the contract
  (false gates), and the contracts with at least one false gate;
* the six high-risk categories: found-or-possible recall, and "gated or listed" recall (gated, or a possible
  clause, or taken off the gate by the model: ``Review.cleared_by_model`` when the review has it), and "any"
  (found or gated or listed), n positives;
* the contract x category pairs a model cleared (every finding of the category taken off the gate) and how many
  of them CUAD labels (a clause the review then does not report as found);
* prompt tokens sent per contract asked (median) and its median ratio to ``CascadeSummary.prompt_tokens_naive``
  and to the whole contract's tokens; model calls (the cascade's count and the fake server's).

The holdout is only read; nothing is fitted on it.  Uses PREFECT_API_URL if set, else Prefect's temporary
local server (on a private PREFECT_HOME unless one is set).  CUAD v1 (Hendrycks et al., NeurIPS 2021), CC BY 4.0.
"""

from __future__ import annotations

import os
import sys
import tempfile

if not os.environ.get("PREFECT_API_URL") and not os.environ.get("PREFECT_HOME"):  # before prefect is imported
    os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="cg-bench-cascade-")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")  # a line per model call, and the absent rate limit's warning
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

import argparse  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from cascade_responders import Noisy, Oracle  # noqa: E402  bench/cascade_responders.py
from extractor import HIGH_RISK, prf  # noqa: E402  bench/extractor.py
from prefilter import load_holdout, parsed_document  # noqa: E402  bench/prefilter.py

from clausegate.review.assemble import assemble_review, custom_step, extract_step  # noqa: E402
from clausegate.review.categories import CLAUSE_CATEGORIES  # noqa: E402
from clausegate.review.document.codes import INTEGRITY_CATEGORY  # noqa: E402
from clausegate.review.passages import page_passages  # noqa: E402
from clausegate.review.playbook import load_playbook  # noqa: E402
from clausegate.review.prefilter import prefilter  # noqa: E402
from tools import cuad  # noqa: E402

API_KEY = "sk-bench-cascade-0123456789"


@dataclass
class Prepared:
    """One contract's parse, pre-filter and offline extraction (deterministic: computed once for every mode)."""

    entry: dict
    pages: list[str]
    rows: list[dict]
    document: object
    filtered: object
    offline: object
    custom: object


@dataclass
class Outcome:
    """One contract's review in one mode."""

    prepared: Prepared
    review: object
    summary: object  # CascadeSummary or None (offline)
    server_calls: int = 0


def prepare(docs, book) -> list[Prepared]:
    categories = list(book.categories)
    out = []
    for entry, pages, rows in docs:
        document = parsed_document(entry, pages)
        filtered = prefilter(document, categories)
        offline = extract_step(filtered, categories).model_copy(update={"contract_id": document.contract_id})
        custom = custom_step(document, book.custom_categories, book.high_risk) if book.custom_categories else None
        out.append(Prepared(entry, pages, rows, document, filtered, offline, custom))
    return out


def assemble(p: Prepared, book, extraction, model_gate: list[str], summary) -> object:
    """``assemble_review`` as the flow body calls it (with ``disputed`` and ``possible_gates`` once the product
    has them, as the body then passes them; before, the disputed categories joined ``gated``)."""
    common = dict(playbook=book.name, min_confidence=book.steps.extract.min_confidence,
                  protected=[*book.gated_categories, *book.high_risk, *book.position_gated],
                  cascade=summary, positions=book.positions, custom=p.custom)
    if "disputed" in inspect.signature(assemble_review).parameters:
        return assemble_review(p.document, p.filtered, extraction, gated=book.gated_categories, disputed=model_gate,
                               possible_gates=getattr(book, "possible_findings", "gate") == "gate", **common)
    return assemble_review(p.document, p.filtered, extraction, gated=[*book.gated_categories, *model_gate], **common)


def offline_reviews(prepared: list[Prepared], book) -> list[Outcome]:
    return [Outcome(p, assemble(p, book, p.offline, [], None), None) for p in prepared]


def save_block(server, protocol: str) -> str:
    """A model block for the fake server, saved in the bench's Prefect server: the name the cascade is given."""
    from pydantic import SecretStr

    from blocks.models import AnthropicModel, OpenAICompatibleModel

    kind, cls = (("anthropic-model", AnthropicModel) if protocol == "anthropic"
                 else ("openai-compatible-model", OpenAICompatibleModel))
    name = f"bench-cascade-{uuid.uuid4().hex[:8]}"  # fresh: no answer of an earlier run is reused
    cls(base_url=server.url, model="fake-oracle", api_key=SecretStr(API_KEY),
        read_timeout_seconds=30.0).save(name, overwrite=True)
    return f"{kind}/{name}"


def model_reviews(prepared: list[Prepared], book, responder: Oracle, protocol: str) -> list[Outcome]:
    """Every contract through the cascade against one fake server answering with ``responder``."""
    from prefect import flow

    from clausegate.demo.model_server import FakeModelServer
    from clausegate.pipeline.cascade import cascade
    from clausegate.pipeline.tasks import ask_extraction_model

    def ask(prompt, ref, max_tokens, budget):  # the task's body, in this flow run (no task run, no result cache)
        return ask_extraction_model.fn(prompt, ref, max_tokens, budget)

    with FakeModelServer(protocol, api_key=API_KEY, responder=responder) as server:
        extractor = save_block(server, protocol)

        @flow(name="bench-cascade", persist_result=False)
        def run() -> list[Outcome]:
            out = []
            for p in prepared:
                responder.contract = p.entry["filename"]
                before = server.calls
                result = cascade(p.document, p.filtered, p.offline, book, extractor, ask)
                review = assemble(p, book, result.extraction, result.gate, result.summary)
                out.append(Outcome(p, review, result.summary, server.calls - before))
            return out

        return run()


def _categories(items) -> set[str]:
    """Category names of a list of names, clauses or dicts (``Review.cleared_by_model``, whatever its item)."""
    names = set()
    for item in items or []:
        name = item if isinstance(item, str) else (item.get("category") if isinstance(item, dict)
                                                   else getattr(item, "category", None))
        if name:
            names.add(name)
    return names


def measure(outcomes: list[Outcome]) -> dict:
    cats = list(CLAUSE_CATEGORIES)
    ci = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    doc_counts, pas_counts = np.zeros((k, 3), dtype=int), np.zeros((k, 3), dtype=int)
    hr = {c: {"n": 0, "found": 0, "found_or_possible": 0, "gated_or_listed": 0, "gated": 0, "surfaced": 0}
          for c in HIGH_RISK}
    gates, false_gates, gated_total, contracts_false = [], 0, 0, []
    tokens_sent, ratio_naive, ratio_whole, calls, server_calls, asked = [], [], [], 0, 0, 0
    notices: dict[str, int] = {}
    by_category: dict[str, dict[str, int]] = {}  # gated category -> gated / false / with a possible clause only
    disputes: dict[str, int] = {}  # the model's side of each disputed finding (Dispute.model_found)
    cleared_pairs = cleared_labelled = 0  # contract x category taken off the gate; of which CUAD labels it
    for o in outcomes:
        review, rows = o.review, o.prepared.rows
        labelled = {r["category"] for r in rows}
        found = {c.category for c in review.clauses if not c.possible}
        possible = {c.category for c in review.clauses if c.possible} - found
        gated = [c for c in review.gated_categories if c != INTEGRITY_CATEGORY]
        cleared = _categories(getattr(review, "cleared_by_model", []))
        truth = np.array([c in labelled for c in cats])
        pred = np.array([c in found for c in cats])
        doc_counts[:, 0] += pred & truth
        doc_counts[:, 1] += pred & ~truth
        doc_counts[:, 2] += ~pred & truth
        _passage_counts(o, ci, pas_counts)
        for c in HIGH_RISK:
            if c in labelled:
                h = hr[c]
                h["n"] += 1
                h["found"] += c in found
                h["found_or_possible"] += c in found or c in possible
                h["gated_or_listed"] += c in gated or c in possible or c in cleared
                h["gated"] += c in gated
                h["surfaced"] += c in found or c in possible or c in gated or c in cleared
        gates.append(len(review.gated_categories))
        wrong = [c for c in gated if c not in labelled]
        gated_total += len(gated)
        false_gates += len(wrong)
        if wrong:
            contracts_false.append({"contract": o.prepared.entry["filename"], "false": wrong})
        for c in gated:
            row = by_category.setdefault(c, {"gated": 0, "false": 0, "possible_only": 0, "false_possible_only": 0})
            row["gated"] += 1
            row["false"] += c not in labelled
            row["possible_only"] += c in possible
            row["false_possible_only"] += c in possible and c not in labelled
        cleared_only = cleared - found - possible  # the category is left with no finding of its own
        cleared_pairs += len(cleared_only)
        cleared_labelled += len(cleared_only & labelled)
        for cl in review.clauses:
            if cl.dispute is not None:
                disputes[cl.dispute.model_found] = disputes.get(cl.dispute.model_found, 0) + 1
        for n in review.warnings:
            if n.code.startswith("CG-MODEL"):
                notices[n.code] = notices.get(n.code, 0) + 1
        server_calls += o.server_calls
        s = o.summary
        if s is not None:
            calls += s.model_calls
            if s.prompt_tokens_sent:
                asked += 1
                tokens_sent.append(s.prompt_tokens_sent)
                ratio_naive.append(s.prompt_tokens_sent / max(1, s.prompt_tokens_naive))
                ratio_whole.append(s.prompt_tokens_sent / max(1, o.prepared.filtered.tokens_total))
    per_cat = {c: prf(*doc_counts[ci[c]]) for c in cats}
    n = len(outcomes)
    return {
        "contracts": n,
        "contract_micro": list(prf(*doc_counts.sum(axis=0))),
        "contract_macro_f1": float(np.mean([per_cat[c][2] for c in cats])),
        "passage_micro": list(prf(*pas_counts.sum(axis=0))),
        "per_category_contract": {c: list(v) for c, v in per_cat.items()},
        "gates_per_contract": {"mean": float(np.mean(gates)) if gates else 0.0,
                               "median": float(np.median(gates)) if gates else 0.0,
                               "max": int(max(gates, default=0)), "total": int(sum(gates)),
                               "histogram": {str(g): gates.count(g) for g in sorted(set(gates))}},
        "gated_pairs": gated_total,
        "false_gates": false_gates,
        "false_gate_share": false_gates / gated_total if gated_total else 0.0,
        "contracts_with_false_gate": len(contracts_false),
        "false_gate_list": contracts_false,
        "gates_by_category": dict(sorted(by_category.items(), key=lambda kv: -kv[1]["gated"])),
        "disputed_findings": disputes,
        "cleared_categories": cleared_pairs,
        "cleared_categories_labelled": cleared_labelled,
        "high_risk": {c: {**h, **{f"{key}_recall": h[key] / h["n"] if h["n"] else 0.0
                                   for key in ("found", "found_or_possible", "gated_or_listed", "surfaced")}}
                      for c, h in hr.items()},
        "cleared_by_model_available": any(hasattr(o.review, "cleared_by_model") for o in outcomes),
        "contracts_asked": asked,
        "prompt_tokens_sent_median": float(statistics.median(tokens_sent)) if tokens_sent else 0.0,
        "ratio_to_naive_median": float(statistics.median(ratio_naive)) if ratio_naive else 0.0,
        "ratio_to_contract_median": float(statistics.median(ratio_whole)) if ratio_whole else 0.0,
        "model_calls": calls,
        "server_calls": server_calls,
        "model_notices": notices,
    }


def _passage_counts(o: Outcome, ci: dict[str, int], counts: np.ndarray) -> None:
    """Passage-level tp / fp / fn of one review (``bench/extractor.py``'s rule: spans and clauses located in
    ``page_passages``)."""
    by_page = {pno: [text for text, _ in ps] for pno, ps in enumerate(page_passages(o.prepared.pages), start=1) if ps}
    truth, pred = set(), set()
    for row in o.prepared.rows:
        if row["category"] in ci:
            for pno in cuad.span_pages(row):
                truth |= {(ci[row["category"]], pno, i) for i in cuad.locate_span(row["text"], by_page.get(pno, []))}
    for cl in o.review.clauses:
        if cl.category in ci and not cl.possible:
            pred |= {(ci[cl.category], pno, i) for pno in cl.pages
                     for i in cuad.locate_span(cl.text, by_page.get(pno, []))}
    for c, _, _ in pred & truth:
        counts[c, 0] += 1
    for c, _, _ in pred - truth:
        counts[c, 1] += 1
    for c, _, _ in truth - pred:
        counts[c, 2] += 1


def print_mode(mode: str, r: dict) -> None:
    print(f"\n== {mode}: {r['contracts']} contracts, {r['seconds']:.0f} s")
    mi = r["contract_micro"]
    print(f"contract-level micro P {mi[0]:.3f} R {mi[1]:.3f} F1 {mi[2]:.3f}; macro F1 {r['contract_macro_f1']:.3f}; "
          f"passage-level micro F1 {r['passage_micro'][2]:.3f}")
    g = r["gates_per_contract"]
    print(f"gates per contract: mean {g['mean']:.2f}, median {g['median']:.0f}, max {g['max']} "
          f"(histogram {g['histogram']}); false gates {r['false_gates']}/{r['gated_pairs']} = "
          f"{r['false_gate_share']:.1%} of gated pairs; contracts with a false gate {r['contracts_with_false_gate']}"
          f"/{r['contracts']}")
    print("gated (false; by a possible clause only: false) by category: " + ", ".join(
        f"{c} {v['gated']} ({v['false']}; {v['possible_only']}: {v['false_possible_only']})"
        for c, v in r["gates_by_category"].items()))
    if r["disputed_findings"]:
        print(f"disputed findings by the model's side: {r['disputed_findings']}")
    if r["cleared_categories"]:
        print(f"contract x category left with no finding because the model cleared it: {r['cleared_categories']}, "
              f"of which CUAD labels {r['cleared_categories_labelled']}")
    listed = "gated, possible or cleared by the model" if r["cleared_by_model_available"] else \
        "gated or possible (Review.cleared_by_model not in this version)"
    print(f"recall of the high-risk categories  {'n':>3} {'found':>6} {'found/possible':>15} {'gated or listed':>16} "
          f"{'any of these':>13}")
    for c, h in r["high_risk"].items():
        print(f"{c:<35} {h['n']:>3} {h['found_recall']:>6.2f} {h['found_or_possible_recall']:>15.2f} "
              f"{h['gated_or_listed_recall']:>16.2f} {h['surfaced_recall']:>13.2f}")
    print(f"  (gated or listed = {listed}; any = found or that)")
    if r["contracts_asked"]:
        print(f"model asked for {r['contracts_asked']} contracts: prompt tokens sent median "
              f"{r['prompt_tokens_sent_median']:.0f}, median ratio to the naive prompt "
              f"{r['ratio_to_naive_median']:.3f}, "
              f"to the whole contract {r['ratio_to_contract_median']:.3f}; model calls {r['model_calls']} "
              f"(fake server: {r['server_calls']} requests); model notices {r['model_notices'] or 'none'}")
    if r.get("responder"):
        print(f"responder: {r['responder']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=0, help="only the first N holdout contracts")
    ap.add_argument("--modes", default="offline,oracle,noisy")
    ap.add_argument("--noise", type=float, default=0.15,
                    help="noisy mode: share of contract x category answers flipped")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--playbook", default="default")
    ap.add_argument("--protocol", choices=("anthropic", "openai"), default="anthropic")
    ap.add_argument("--max-output-tokens", type=int, default=None,
                    help="what-if: the playbook's steps.extract.max_output_tokens set to this")
    ap.add_argument("--json", default=None, help="write every figure here")
    ap.add_argument("--code-label", default=None,
                    help="what code ran, for the JSON (default: the checkout's commit, '+ uncommitted changes' if any)")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - {"offline", "oracle", "noisy"}
    if unknown:
        sys.exit(f"unknown mode(s): {', '.join(sorted(unknown))}")
    if not cuad.cuad_available():
        sys.exit(f"CUAD not found at {cuad.cuad_dir()}")
    started = time.time()
    book = load_playbook(args.playbook)
    if args.max_output_tokens:
        extract = book.steps.extract.model_copy(update={"max_output_tokens": args.max_output_tokens})
        book = book.model_copy(update={"steps": book.steps.model_copy(update={"extract": extract})})
    docs = load_holdout(args.limit)
    labels = {entry["filename"]: rows for entry, _, rows in docs}
    prepared = prepare(docs, book)
    print(f"ClauseGate cascade benchmark - CUAD holdout ({cuad.SPLIT_NAME}): {len(prepared)} contracts, playbook "
          f"{book.name} (model output limit {book.steps.extract.max_output_tokens} tokens), protocol {args.protocol}, "
          f"noise {args.noise} seed {args.seed} "
          f"(prepared in {time.time() - started:.0f} s)")
    results = {}
    for mode in modes:
        t0 = time.time()
        responder = None
        if mode == "offline":
            outcomes = offline_reviews(prepared, book)
        else:
            responder = Oracle(labels) if mode == "oracle" else Noisy(labels, noise=args.noise, seed=args.seed)
            outcomes = model_reviews(prepared, book, responder, args.protocol)
        results[mode] = measure(outcomes)
        results[mode]["seconds"] = time.time() - t0
        if responder is not None:
            results[mode]["responder"] = {"answers": responder.answers, **responder.stats}
        print_mode(mode, results[mode])
    if args.json:
        out = {"split": cuad.SPLIT_NAME, "playbook": book.name, "protocol": args.protocol,
               "max_output_tokens": book.steps.extract.max_output_tokens, "noise": args.noise,
               "seed": args.seed, "limit": args.limit, "code": args.code_label or _commit(), "modes": results}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    print(f"{time.time() - started:.0f}s")


def _commit() -> str:
    """The checkout's short commit, '+ uncommitted changes' when tracked files differ from it ('' outside git)."""
    import subprocess

    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")
    except Exception:  # not a checkout
        return ""


if __name__ == "__main__":
    main()
