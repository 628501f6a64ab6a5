"""Benchmark: N CUAD contracts through the nightly batch on the local stack (offline extractor).

    python bench/batch.py [--n 100] [--worker-limit 4] [--query-seconds 2] [--max-in-flight 12]
                          [--playbook bench-all|default|PATH] [--skip-plain] [--keep]

1. Picks N CUAD PDFs (seeded sample of ../shared/data/cuad/full_contract_pdf) into a temp inbox.
2. Plain baseline: the same review steps as plain Python in this process (parse in its sandboxed
   child, prefilter, offline extract, assemble, write the report), model warm: the *review work*.
3. Starts the local stack exactly as `clausegate up` does (SQLite server, pool/queues/limits,
   `prefect deploy`, one process worker; no gateway, Slack off) in a temp folder; the timed
   sla-sweeper / failure-alert schedules are switched off so they do not compete.
4. Runs the nightly-batch deployment over the inbox and waits for it.  Contracts/minute = N / wall
   time of the batch run (trigger -> batch run finished).
5. Breakdown from Prefect's own records (per contract-review run): queue wait (created -> a worker
   claims it), process start (claimed -> Running: new Python process, imports, pull step, flow
   load), flow run (Running -> end: tasks + model load + API calls), of which task time; and CPU
   seconds of the whole stack (server + worker + every flow-run process, from rusage).

"Prefect overhead share" = 1 - (review work / cores) / batch wall time, i.e. the share of the wall
time that perfect 2-core parallel plain-Python review would not need.

The default playbook ``bench-all`` is the built-in default (all 41 categories) without human gates,
so every run completes; ``--playbook default`` includes the gates (gated contracts suspend and
count as "waiting").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CUAD_PDFS = REPO.parent / "shared" / "data" / "cuad" / "full_contract_pdf"
BENCH_PLAYBOOK = """\
name: bench-all
description: All 41 CUAD categories, offline extractor, no human gates (benchmark).
categories: all
steps:
  extract: {extractor: offline}
"""


def pick(n: int, seed: int) -> list[Path]:
    files = sorted(p for p in CUAD_PDFS.rglob("*") if p.suffix.lower() == ".pdf")
    if len(files) < n:
        sys.exit(f"only {len(files)} PDFs under {CUAD_PDFS}")
    return sorted(random.Random(seed).sample(files, n))


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def plain_review(files: list[Path], book_path: str, out: Path) -> dict:
    """The review steps without Prefect: what the work itself costs on this machine."""
    from clausegate.review import assemble
    from clausegate.review.document.sandbox import fingerprint, parse_pdf
    from clausegate.review.playbook import load_playbook
    from clausegate.review.report import write_report

    book = load_playbook(book_path)
    cats = list(book.categories)
    p = book.steps.parse
    warm = parse_pdf(fingerprint(files[0]), max_chars=p.max_chars, timeout_seconds=p.timeout_seconds, memory_mb=p.memory_mb)
    assemble.prefilter_step(warm, cats)  # load the offline model once (a warm worker would have it)
    t0, c0, k0 = time.perf_counter(), time.process_time(), children_cpu()
    per: list[float] = []
    failed = 0
    for path in files:
        s = time.perf_counter()
        src = fingerprint(path, max_bytes=int(p.max_file_mb * 1024 * 1024))
        try:
            doc = parse_pdf(src, max_chars=p.max_chars, timeout_seconds=p.timeout_seconds, memory_mb=p.memory_mb, ocr=p.ocr)
            filtered = assemble.prefilter_step(doc, cats)
            ex = _extract(steps, filtered, cats)
            review = assemble.assemble_review(doc, filtered, ex, playbook=book.name, gated=book.gated_categories)
        except Exception as error:  # noqa: BLE001
            failed += 1
            review = assemble.failed_review(contract_id=src.contract_id, filename=src.filename, playbook=book.name,
                                         step="parse", error=error)
        write_report(review, out)
        per.append(time.perf_counter() - s)
    wall = time.perf_counter() - t0
    cpu = (time.process_time() - c0) + (children_cpu() - k0)
    return {"wall": wall, "cpu": cpu, "per_contract_median": statistics.median(per), "failed": failed}


def _extract(steps, filtered, cats):
    import inspect

    if len(inspect.signature(assemble.extract_step).parameters) >= 3:  # older signature took the extractor name
        return assemble.extract_step(filtered, cats, "offline")
    return assemble.extract_step(filtered, cats)


def run_stats(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"median {statistics.median(values):5.2f} s · p90 {p90:5.2f} s · mean {statistics.mean(values):5.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--worker-limit", type=int, default=4)
    ap.add_argument("--query-seconds", type=float, default=2.0)
    ap.add_argument("--max-in-flight", type=int, default=12)
    ap.add_argument("--playbook", default="bench-all")
    ap.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=True,
                    help="as `clausegate up` (default on): fork flow runs from a preloaded process")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the server and worker (e.g. PREFECT_SERVER_SERVICES_..._ENABLED=false)")
    ap.add_argument("--skip-plain", action="store_true")
    ap.add_argument("--mode", choices=["deployments", "local"], default="deployments",
                    help="deployments: the nightly-batch deployment fans out to the worker (default); local: the same "
                         "batch with in-process flow calls (`clausegate batch --local`), no worker, for comparison")
    ap.add_argument("--local-workers", type=int, default=2, help="threads for --mode local")
    ap.add_argument("--dispatch", choices=["deployments", "chunks", "inline"], default="deployments",
                    help="nightly-batch's dispatch parameter (chunks: N nightly-batch runs reviewing subflows; "
                         "inline: subflows in the batch run itself)")
    ap.add_argument("--chunks", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not CUAD_PDFS.is_dir():
        sys.exit(f"CUAD PDFs not found at {CUAD_PDFS}")

    from clausegate import stack

    base = Path(tempfile.mkdtemp(prefix="clausegate-bench-"))
    inbox, out = base / "inbox", base / "reports"
    inbox.mkdir()
    files = []
    for i, src in enumerate(pick(args.n, args.seed)):
        dst = inbox / f"{i:03d}-{src.name.replace(' ', '_')}"
        shutil.copyfile(src, dst)
        files.append(dst)
    book = args.playbook
    if book == "bench-all":
        (base / "bench-all.yaml").write_text(BENCH_PLAYBOOK)
        book = str(base / "bench-all.yaml")
    cores = os.cpu_count() or 1
    mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"bench/batch: {len(files)} CUAD contracts ({mb:.1f} MB), playbook {args.playbook}, {cores} cores, "
          f"load avg at start {os.getloadavg()[0]:.2f}")

    result: dict = {"n": len(files), "cores": cores, "worker_limit": args.worker_limit, "warm_start": args.warm_start,
                    "dispatch": args.dispatch, "chunks": args.chunks, "threads": args.local_workers,
                    "query_seconds": args.query_seconds, "max_in_flight": args.max_in_flight}
    if not args.skip_plain:
        plain = plain_review(files, book, base / "plain-reports")
        result["plain"] = plain
        print(f"plain review work (no Prefect, 1 process, model warm): {plain['wall']:.1f} s wall, {plain['cpu']:.1f} "
              f"CPU-s, {plain['per_contract_median']:.2f} s median per contract -> ideal on {cores} cores "
              f"{len(files) / (plain['wall'] / cores / 60):.0f} contracts/min")

    paths = stack.StackPaths.for_project(REPO, home=base / "stack")
    port = _free_port()
    options = stack.StackOptions(port=port, worker_limit=args.worker_limit, worker_query_seconds=args.query_seconds,
                                 start_gateway=False, slack="off", ui=False, warm_start=args.warm_start,
                                 extra_env={"PREFECT_API_LOG_RETRYABLE_ERRORS": "true",
                                            **dict(kv.split("=", 1) for kv in args.env)})
    k_before = children_cpu()
    t_up = time.perf_counter()
    state = stack.up(options, paths, echo=lambda m: None)
    result["stack_up_seconds"] = round(time.perf_counter() - t_up, 1)
    os.environ["PREFECT_API_URL"] = state["api_url"]
    from prefect.settings import PREFECT_API_URL, temporary_settings

    try:
        from prefect.client.orchestration import get_client
        from prefect.deployments import run_deployment

        settings = temporary_settings(updates={PREFECT_API_URL: state["api_url"]})  # prefect was imported already
        settings.__enter__()

        with get_client(sync_client=True) as client:
            for name in ("sla-sweeper/sla-sweeper", "failure-alert/failure-alert"):
                try:
                    dep = client.read_deployment_by_name(name)
                except Exception:  # noqa: BLE001
                    continue
                for sched in dep.schedules:
                    client.update_deployment_schedule(dep.id, sched.id, active=False)
        print(f"local stack up in {result['stack_up_seconds']} s (worker limit {args.worker_limit}, "
              f"PREFECT_WORKER_QUERY_SECONDS={args.query_seconds:g}, warm start {'on' if args.warm_start else 'off'})")
        t0, p0 = time.perf_counter(), time.process_time()
        if args.mode == "local":
            from clausegate import batch

            todo, _ = batch.plan_batch(batch.load_source(inbox).discover(), playbook="bench-all", out_dir=out)
            rows = batch.run_batch(todo, batch.LocalDispatcher(playbook=book, out_dir=str(out),
                                                               workers=args.local_workers),
                                   max_in_flight=args.local_workers, poll_seconds=0.5)
            wall = time.perf_counter() - t0
            result["in_process_cpu"] = time.process_time() - p0
            parent = type("P", (), {"state_name": "local"})()
            stats = {"runs": len(rows), "completed": sum(r.status == "reviewed" for r in rows),
                     "failed": sum(r.status == "failed" for r in rows), "waiting": 0, "queue_wait": [],
                     "process_start": [], "flow_run": [r.seconds for r in rows if r.seconds], "task_time": [],
                     "per_task": {}}
        else:
            parent = run_deployment("nightly-batch/nightly-batch", timeout=7200, poll_interval=2, parameters={
                "source": str(inbox), "playbook": book, "out_dir": str(out), "max_in_flight": args.max_in_flight,
                "poll_seconds": 1.0, "work_queue": "low", "dispatch": args.dispatch,
                "inline_threads": args.local_workers, "chunks": args.chunks})
            wall = time.perf_counter() - t0
            stats = _breakdown(parent.id)
        per_process = {r.name: _proc_cpu(r.pid) for r in stack.records(stack.read_state(paths)) if r.alive()}
    except BaseException:
        per_process = {}
        raise
    finally:
        stack.down(paths, echo=lambda m: None)
    reaped_cpu = children_cpu() - k_before
    snapshot_cpu = sum(own + kids for own, kids in per_process.values())
    # The snapshot (server, worker, warm-start process, each with the children they reaped) misses only
    # runs still being torn down; the reaped total misses processes not reaped by us.  Take the larger.
    stack_cpu = max(reaped_cpu, snapshot_cpu) + result.get("in_process_cpu", 0.0)
    locked = sum(p.read_text(errors="replace").count("database is locked") for p in paths.logs.glob("*.log"))

    n = len(files)
    result.update(wall=round(wall, 1), contracts_per_minute=round(n / (wall / 60), 1), batch_state=parent.state_name,
                  stack_cpu_seconds=round(stack_cpu, 1), sqlite_locked_messages=locked, **stats)
    if args.mode != "local" and not parent.state.is_completed():
        print(f"\nthe nightly-batch run did not complete: {parent.state_name}: {parent.state.message}")
    print(f"\nnightly-batch run: {parent.state_name}; {stats['completed']} completed, {stats['failed']} failed, "
          f"{stats['waiting']} waiting of {stats['runs']} contract-review runs")
    print(f"THROUGHPUT: {n} contracts in {wall:.1f} s = {result['contracts_per_minute']} contracts/minute "
          f"(target >= 40)")
    print("per contract-review run (from Prefect's records):")
    print(f"  queue wait (created -> claimed by worker)      {run_stats(stats['queue_wait'])}")
    print(f"  process start (claimed -> Running)             {run_stats(stats['process_start'])}")
    print(f"  created -> Running (any dispatch)              {run_stats(stats['pre_start'])}")
    print(f"  flow run (Running -> end)                      {run_stats(stats['flow_run'])}")
    busy = sum(stats["flow_run"]) or sum(sum(v) for v in stats["per_task"].values())
    print(f"  reviews busy: {busy:.0f} review-seconds in {wall:.0f} s wall = {busy / wall:.1f} running at once on average")
    print(f"  of which task run time                         {run_stats(stats['task_time'])}")
    for name, vals in sorted(stats["per_task"].items()):
        print(f"    {name:24s}                     {run_stats(vals)}")
    print(f"CPU: whole stack {stack_cpu:.0f} CPU-s for {n} contracts = {stack_cpu / n:.2f} CPU-s per contract "
          f"(incl. server start/idle)")
    print("  by process (own + reaped children, before shutdown): " + ", ".join(
        f"{name} {own:.0f}+{kids:.0f}" for name, (own, kids) in per_process.items()))
    result["cpu_by_process"] = per_process
    if "plain" in result:
        plain = result["plain"]
        work_share = min(1.0, (plain["wall"] / cores) / wall)
        result["review_work_share"] = round(work_share, 3)
        result["prefect_overhead_share"] = round(1 - work_share, 3)
        print(f"review work: {plain['cpu'] / n:.2f} CPU-s per contract in plain Python ({plain['wall']:.1f} s for all, "
              f"{plain['wall'] / cores:.1f} s ideal on {cores} cores)")
        print(f"SHARE OF WALL TIME: review work {work_share:.0%}, Prefect overhead {1 - work_share:.0%} "
              f"(per-run processes, imports, model reloads, API/DB, polling)")
        print(f"CPU view: review {plain['cpu']:.0f} CPU-s vs stack {stack_cpu:.0f} CPU-s -> "
              f"{1 - plain['cpu'] / stack_cpu:.0%} of the CPU went to everything but the review work")
    print(f"SQLite 'database is locked' retries logged: {locked}")
    print(f"load avg at end {os.getloadavg()[0]:.2f} (shared machine: other jobs skew the figures)")
    stats_json = {k: (statistics.median(v) if isinstance(v, list) and v else v) for k, v in result.items()
                  if k not in ("per_task",)}
    if args.json:
        args.json.write_text(json.dumps(stats_json, indent=2, default=str) + "\n")
    if args.keep:
        print(f"kept {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)


def _proc_cpu(pid: int) -> tuple[float, float]:
    """(own, waited-for children) CPU seconds of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return (0.0, 0.0)
    tick = os.sysconf("SC_CLK_TCK")
    return ((int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _breakdown(parent_id) -> dict:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        FlowRunFilterTags,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    with get_client(sync_client=True) as client:
        def children(parents, *, tag=None):
            found, offset = [], 0
            flt = (FlowRunFilter(tags=FlowRunFilterTags(all_=[tag])) if tag else
                   FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=parents)))
            while True:
                page = client.read_flow_runs(flow_run_filter=flt, limit=200, offset=offset,
                                             sort=FlowRunSort.START_TIME_ASC)
                found += page
                if len(page) < 200:
                    return found
                offset += 200

        runs = children([parent_id])
        # contract-review deployment runs are top-level runs carrying the batch's tag (they must be able to suspend)
        runs += children([], tag=f"batch:{parent_id}")
        chunk_runs = [r.id for r in runs if "-chunk-" in r.name]
        if chunk_runs:  # dispatch=chunks: the reviews are subflows of the chunk runs
            runs += children(chunk_runs)
        task_sources = None
        if chunk_runs and not [r for r in runs if r.name.startswith("review-")]:
            task_sources = chunk_runs  # chunk_reviews=tasks: the review steps are tasks of the chunk runs
        runs = [r for r in runs if r.name.startswith("review-")]
        queue_wait, process_start, flow_run, task_time, pre_start = [], [], [], [], []
        per_task: dict[str, list[float]] = {}
        for run in runs:
            states = client.read_flow_run_states(run.id)
            at = {}
            for s in states:
                at.setdefault(s.name, s.timestamp)
            created = at.get("Scheduled") or run.created
            if at.get("Pending") and created:
                queue_wait.append((at["Pending"] - created).total_seconds())
            if at.get("Pending") and at.get("Running"):
                process_start.append((at["Running"] - at["Pending"]).total_seconds())
            if run.start_time and run.end_time:
                flow_run.append((run.end_time - run.start_time).total_seconds())
            if run.start_time and run.created:
                pre_start.append((run.start_time - run.created).total_seconds())
        ids = task_sources or [r.id for r in runs]
        total_by_run: dict = {}
        for i in range(0, len(ids), 50):
            offset = 0
            while True:
                page = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids[i:i + 50])),
                                             limit=200, offset=offset)
                for t in page:
                    if t.start_time and t.end_time:
                        secs = (t.end_time - t.start_time).total_seconds()
                        per_task.setdefault(t.name.rsplit("-", 1)[0], []).append(secs)
                        total_by_run[t.flow_run_id] = total_by_run.get(t.flow_run_id, 0.0) + secs
                if len(page) < 200:
                    break
                offset += 200
        task_time = list(total_by_run.values()) if not task_sources else []

    if task_sources:  # no run per contract: count reviews by their first and last step
        return {"runs": len(per_task.get("fingerprint", [])), "completed": len(per_task.get("write-report", [])),
                "failed": 0, "waiting": 0, "queue_wait": [], "process_start": [], "flow_run": [], "task_time": [],
                "pre_start": [], "per_task": per_task}
    return {"runs": len(runs), "completed": sum(r.state_name == "Completed" for r in runs),
            "failed": sum(r.state_type and r.state_type.value in ("FAILED", "CRASHED") for r in runs),
            "waiting": sum(r.state_type and r.state_type.value == "PAUSED" for r in runs),
            "queue_wait": queue_wait, "process_start": process_start, "flow_run": flow_run, "task_time": task_time,
            "pre_start": pre_start,
            "per_task": per_task}


if __name__ == "__main__":
    main()
