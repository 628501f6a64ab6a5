"""The batch's output: per-contract rows and totals (:class:`BatchSummary`), written as CSV + JSON
(``write_summary``) and rendered for the run's artifacts (``table_rows``, ``summary_markdown``)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from clausegate.batch.plan import ContractOutcome
from clausegate.review.money import eur_digits, eur_text

CSV_FIELDS = ["file", "contract_id", "status", "review_status", "clauses", "gates_waiting", "cost_eur",
              "error_code", "detail", "flow_run_name", "flow_run_id", "worker", "seconds"]


class BatchTotals(BaseModel):
    contracts: int = 0
    submitted: int = 0
    reviewed: int = 0
    failed: int = 0
    waiting: int = 0
    skipped: int = 0
    unfinished: int = 0
    clauses: int = 0
    gates_waiting: int = 0
    cost_eur: float = 0.0
    wall_seconds: float = 0.0
    contracts_per_minute: float = 0.0


# How the summary names a review's steps (clausegate/pipeline/tasks.py, ``timed_step``), in the order they run.
STEP_LABELS = {"parse": "parse (fingerprint + sandboxed parse)", "prefilter": "pre-filter", "extract": "extract",
               "suggestions": "suggestions (model)", "report": "report (files)"}


class TimeBreakdown(BaseModel):
    """Where the reviews' time went: the summed wall time of every contract reviewed as tasks, split into
    the steps' work (task bodies) and ``orchestration``, the rest of each contract's wall time: Prefect's
    task runs around the work (cache lookups, result persistence, states) and the review's glue code."""

    contracts: int = 0
    contract_seconds: float = 0.0
    steps: dict[str, float] = Field(default_factory=dict)
    orchestration: float = 0.0
    reviews_at_once: float = 0.0


class BatchSummary(BaseModel):
    source: str
    playbook: str
    # How the contracts were reviewed, e.g. "tasks of this run" or "tasks of 2 chunk runs".
    mode: str = "tasks of this run"
    extractor: str = ""
    max_in_flight: int | None = None
    # The batch run's own phases (discover, reviews, gate runs, chunk runs) -> wall seconds.
    phases: dict[str, float] = Field(default_factory=dict)
    started_at: datetime
    finished_at: datetime | None = None
    rows: list[ContractOutcome] = Field(default_factory=list)

    @property
    def totals(self) -> BatchTotals:
        rows = self.rows
        by = {s: sum(1 for r in rows if r.status == s) for s in ("reviewed", "failed", "waiting", "unfinished")}
        finished = by["reviewed"] + by["failed"] + by["waiting"]
        wall = ((self.finished_at or datetime.now(UTC)) - self.started_at).total_seconds()
        return BatchTotals(
            contracts=len(rows),
            submitted=finished + by["unfinished"],
            reviewed=by["reviewed"],
            failed=by["failed"] + sum(1 for r in rows if r.status == "not-submitted"),
            waiting=by["waiting"],
            skipped=sum(1 for r in rows if r.status in ("skipped", "in-flight", "duplicate")),
            unfinished=by["unfinished"],
            clauses=sum(r.clauses or 0 for r in rows if r.status in ("reviewed", "failed", "waiting")),
            gates_waiting=sum(r.gates_waiting for r in rows),
            cost_eur=round(sum(r.cost_eur for r in rows if r.status in ("reviewed", "failed", "waiting")), 6),
            wall_seconds=round(wall, 2),
            contracts_per_minute=round(finished / (wall / 60), 2) if wall > 0 and finished else 0.0,
        )

    @property
    def breakdown(self) -> TimeBreakdown:
        timed = [r for r in self.rows if r.step_seconds and r.seconds is not None]
        steps: dict[str, float] = {}
        for row in timed:
            for step, seconds in row.step_seconds.items():
                steps[step] = steps.get(step, 0.0) + max(0.0, seconds)
        total = sum(r.seconds or 0.0 for r in timed)
        # "at once" over the time the reviews ran (this run's reviews phase when it was timed), not the batch's
        # whole wall time: start-up, discovery and gate runs made 4 at a time read as 0.2
        wall = self.phases.get("reviews") or self.totals.wall_seconds
        return TimeBreakdown(contracts=len(timed), contract_seconds=round(total, 2),
                             steps={k: round(v, 2) for k, v in steps.items()},
                             orchestration=round(max(0.0, total - sum(steps.values())), 2),
                             reviews_at_once=round(total / wall, 2) if wall > 0 else 0.0)

    def as_json(self) -> dict[str, Any]:
        return {**self.model_dump(mode="json"), "totals": self.totals.model_dump(mode="json"),
                "time_breakdown": self.breakdown.model_dump(mode="json")}


def summary_stem(summary: BatchSummary, run_id: str = "") -> str:
    """``batch-<started>[-<run id[:8]>]``: the run id lets a parent batch find its chunk runs' summaries."""
    return f"batch-{summary.started_at:%Y%m%dT%H%M%S}" + (f"-{run_id[:8]}" if run_id else "")


def write_summary(summary: BatchSummary, folder: str | Path, stem: str | None = None) -> tuple[Path, Path]:
    """``<stem>.csv`` (one row per contract, then a TOTAL row) and ``<stem>.json`` (rows + totals)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or summary_stem(summary)
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    totals = summary.totals
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in summary.rows:
            writer.writerow(row.model_dump(mode="json"))
        writer.writerow({"file": "TOTAL", "contract_id": f"{totals.contracts} contracts",
                         "status": f"{totals.reviewed} reviewed / {totals.failed} failed / {totals.waiting} waiting / "
                                   f"{totals.skipped} skipped",
                         "clauses": totals.clauses, "gates_waiting": totals.gates_waiting,
                         "cost_eur": totals.cost_eur, "seconds": totals.wall_seconds})
    json_path.write_text(json.dumps(summary.as_json(), indent=2) + "\n", encoding="utf-8")
    return csv_path, json_path


def read_rows(folder: str | Path, run_id: str) -> list[ContractOutcome]:
    """The rows of the newest summary a run (by id) wrote to ``folder`` ([] when none)."""
    found = sorted(Path(folder).glob(f"batch-*-{run_id[:8]}.json"))
    if not found:
        return []
    try:
        data = json.loads(found[-1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [ContractOutcome(**row) for row in data.get("rows", [])]


def table_rows(summary: BatchSummary) -> list[dict[str, Any]]:
    """Rows for ``create_table_artifact`` (the per-contract table; totals go in the Markdown)."""
    return [{"contract": r.file, "status": r.status + (f" ({r.review_status})" if r.review_status else ""),
             "clauses found": "" if r.clauses is None else r.clauses, "gates waiting": r.gates_waiting,
             "cost (EUR)": eur_digits(r.cost_eur), "error code": r.error_code, "worker": r.worker}
            for r in summary.rows]


def summary_markdown(summary: BatchSummary, files: Iterable[Path] = (), reports: str | Path | None = None) -> str:
    """The summary artifact; ``reports``: the folder of the contracts' reports (a batch review publishes no
    artifact of its own, so this is where the UI points for each contract's review)."""
    t = summary.totals
    lines = [
        f"# Batch review: {summary.source}",
        "",
        f"- **Playbook:** {summary.playbook} · **Reviewed as:** {summary.mode}",
        f"- **Contracts:** {t.contracts} — {t.reviewed} reviewed, {t.failed} failed, {t.waiting} waiting at a gate, "
        f"{t.skipped} skipped (already reviewed / in flight / duplicate), {t.unfinished} unfinished",
        f"- **Clauses found:** {t.clauses} · **Gates waiting:** {t.gates_waiting} · **Cost:** {eur_text(t.cost_eur)}",
    ]
    lines += throughput_lines(summary)
    failed = [r for r in summary.rows if r.status in ("failed", "not-submitted", "unfinished")]
    if failed:
        lines += ["", "## Failed or unfinished", "", "| Contract | Code | Detail |", "|---|---|---|"]
        lines += [f"| {r.file} | `{r.error_code}` | {r.detail.replace('|', '/')[:160]} |" for r in failed]
    if reports is not None:
        lines += ["", f"Reports: `{reports}/<file>-<contract id, 12 hex>-{summary.playbook}.json|md`, one per "
                      "contract (the batch's reviews publish no Markdown artifact each; a contract-review run does)"]
    files = list(files)
    if files:
        lines += ["", "Summary files: " + ", ".join(f"`{f}`" for f in files)]
    return "\n".join(lines) + "\n"


def throughput_lines(summary: BatchSummary) -> list[str]:
    """The throughput line, and where the time went (per step, then the batch run's phases)."""
    t, b = summary.totals, summary.breakdown
    at_once = f" (up to {summary.max_in_flight} per run)" if summary.max_in_flight else ""
    lines = [f"- **Throughput:** {t.contracts_per_minute:.1f} contracts/minute · **Wall time:** {t.wall_seconds:.1f} s "
             f"· **Reviews at once:** {b.reviews_at_once:.1f} on average{at_once}"]
    if summary.phases:
        lines.append("- **Batch run:** " + " · ".join(f"{k} {v:.1f} s" for k, v in summary.phases.items()))
    if not b.contracts:
        return lines
    per = b.contract_seconds / b.contracts
    lines += ["", "## Where the time went", "",
              f"{b.contracts} contracts reviewed as tasks: {b.contract_seconds:.1f} s of review wall time in all "
              f"({per:.2f} s per contract).  A step's time is its own work (nothing when served from the cache); "
              "*Prefect / orchestration* is the rest of each contract's wall time: task runs, cache lookups, "
              "result persistence, the review's glue code.", "",
              "| Where | Seconds | Per contract | Share |", "|---|---:|---:|---:|"]
    order = [*STEP_LABELS, *sorted(set(b.steps) - set(STEP_LABELS))]
    for step in order:
        if step in b.steps:
            label = STEP_LABELS.get(step, step)
            if step == "extract" and summary.extractor:
                label += f" ({summary.extractor})"
            lines.append(_share_row(label, b.steps[step], b))
    lines.append(_share_row("Prefect / orchestration (the rest)", b.orchestration, b))
    return lines


def _share_row(label: str, seconds: float, b: TimeBreakdown) -> str:
    share = seconds / b.contract_seconds if b.contract_seconds > 0 else 0.0
    return f"| {label} | {seconds:.2f} | {seconds / b.contracts:.3f} | {share:.0%} |"
