"""Benchmark: N parallel clients upload contracts to the inbox (``POST /inbox/tasks``) at once.

    python bench/inbox_load.py [--n 20] [--per-client 1] [--port 4330] [--gateway-port 8330] [--worker] [--keep]
    python bench/inbox_load.py --database sqlite                  # the stack on SQLite, to compare
    python bench/inbox_load.py --gateway-url http://127.0.0.1:8787 [--key cgk_…]   # a stack that is already up

1. Brings up the local stack as `clausegate up` does (embedded PostgreSQL, or SQLite with
   ``--database sqlite``; pool/queues, deployments, gateway; no worker unless ``--worker``, Slack off) in a
   temp folder with its own secrets folder; or uses a running gateway (``--gateway-url``; the Prefect API
   from PREFECT_API_URL / the stack's credential).
2. Makes an inbox key for the sender ``bench-load`` (``clausegate.inbox.keys``, as `clausegate inbox keys
   create` does) with a rate limit high enough not to refuse the burst.
3. One warm-up submission (not counted: the sender's rate limit and the deployment id get created/cached).
4. N clients (httpx, one connection each) wait at one start line, then each uploads a distinct CUAD PDF
   (``../shared/data/cuad/full_contract_pdf``, a comment appended so every run's content is new; generated
   fixture PDFs when absent) with a distinct idempotency key, ``--per-client`` times in a row.  Each
   answer's latency (request sent -> answer read) and status are recorded.
5. Nothing lost: every 201/200 carries a task id whose ``GET /inbox/tasks/{id}`` answers 200, and the
   Prefect server holds exactly one new flow run per 201 (the runs tagged with this bench's topic:
   count of runs == count of 201s, same ids).

Prints p50 / p95 / max, accepted / refused / lost, and the target (p95 <= 2 s at 20 parallel
clients, nothing lost) with met / not met.  The machine is shared: compare runs made together.

    python bench/inbox_load.py --reads 60 [--limit 100]      # reading: the list and the single task view

``--reads N`` measures reading instead (``GET /inbox/tasks?limit=100`` over 60 tasks with reviews must not
decode every review): the stack with a worker reviews one contract on a playbook without gates (a team playbook in
``CLAUSEGATE_INBOX_PLAYBOOKS_DIR``), then N - 1 more tasks are created Completed with that run's persisted
(sealed) review as their result, so every one is a task with a real review to decode.  It times
``GET /inbox/tasks?limit=L`` three times (the first is cold: no outcome recorded on the runs yet) and
``GET /inbox/tasks/{id}`` on 10 tasks, and prints each with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CUAD_PDFS = REPO.parent / "shared" / "data" / "cuad" / "full_contract_pdf"
SENDER = "bench-load"
TARGET_P95 = 2.0
TARGET_N = 20


def pick(n: int, seed: int, scratch: Path, folder: Path = CUAD_PDFS) -> list[tuple[str, bytes]]:
    """n distinct PDFs (name, bytes): CUAD when present, else generated text PDFs."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".pdf") if folder.is_dir() else []
    if len(files) >= n:  # a comment line after %%EOF makes each run's bytes new (no dedupe against earlier runs)
        return [(p.name, p.read_bytes() + f"\n% bench {uuid.uuid4()}\n".encode())
                for p in random.Random(seed).sample(files, n)]
    from tests.support.pdf_factory import make_text_pdf  # local import: only without CUAD

    print(f"CUAD PDFs not found (or fewer than {n}) at {folder}: using generated fixture PDFs")
    out = []
    for i in range(n):
        path = make_text_pdf(scratch / f"fixture-{i}.pdf", [f"Fixture contract {i} {uuid.uuid4()}.",
                                                           "Governing Law. New York law governs this Agreement."])
        out.append((path.name, path.read_bytes()))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q  # linear interpolation between closest ranks (numpy's default)
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def proc_cpu(pid: int) -> float:
    """CPU seconds a live process used so far (from /proc; 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stack_pids(paths) -> dict[str, int]:
    from clausegate.stack.processes import records
    from clausegate.stack.state import read_state

    return {r.name: r.pid for r in records(read_state(paths)) if r.alive()} if paths is not None else {}


def start_stack(args, base: Path) -> tuple[str, str, object]:
    from clausegate.stack.lifecycle import up
    from clausegate.stack.state import StackOptions, StackPaths

    paths = StackPaths.for_project(REPO, home=base / "stack")
    options = StackOptions(port=args.port, gateway_port=args.gateway_port, start_worker=args.worker,
                           database=args.database, slack="off", ui=False, warm_start=False)
    t0 = time.perf_counter()
    state = up(options, paths, echo=lambda m: None)
    if not state.get("gateway_url"):
        raise SystemExit(f"the gateway did not start; see {paths.logs / 'gateway.log'}")
    print(f"local stack up in {time.perf_counter() - t0:.1f} s (worker {'on' if args.worker else 'off'}); "
          f"gateway log {paths.logs / 'gateway.log'}")
    return state["api_url"], state["gateway_url"], paths


async def one_client(client: httpx.AsyncClient, key: str, uploads: list[tuple[str, bytes]], topic: str,
                     start: asyncio.Event, results: list[dict]) -> None:
    await start.wait()
    for name, data in uploads:
        idem = f"bench-{uuid.uuid4().hex}"
        t0 = time.perf_counter()
        try:
            response = await client.post("/inbox/tasks", headers={"Authorization": f"Bearer {key}"},
                                         files={"file": (name, data, "application/pdf")},
                                         data={"playbook": "default", "topic": topic, "idempotency_key": idem})
            elapsed = time.perf_counter() - t0
            body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
            results.append({"status": response.status_code, "seconds": elapsed, "task_id": body.get("task_id"),
                            "detail": body.get("detail"), "bytes": len(data)})
        except httpx.HTTPError as exc:
            results.append({"status": f"error:{type(exc).__name__}", "seconds": time.perf_counter() - t0,
                            "task_id": None, "detail": str(exc), "bytes": len(data)})


async def burst(gateway_url: str, key: str, files: list[tuple[str, bytes]], n: int, per_client: int,
                topic: str) -> tuple[list[dict], float]:
    start = asyncio.Event()
    results: list[dict] = []
    clients = [httpx.AsyncClient(base_url=gateway_url, timeout=600, limits=httpx.Limits(max_connections=1))
               for _ in range(n)]
    try:
        tasks = [asyncio.create_task(one_client(c, key, files[i * per_client:(i + 1) * per_client], topic, start,
                                                results)) for i, c in enumerate(clients)]
        await asyncio.sleep(0.2)  # every client waiting at the start line
        t0 = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        wall = time.perf_counter() - t0
    finally:
        for c in clients:
            await c.aclose()
    return results, wall


async def check_lost(gateway_url: str, key: str, results: list[dict], topic: str) -> dict:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags

    from clausegate.inbox.status import TAG, tag

    accepted = {r["task_id"] for r in results if r["status"] in (200, 201) and r["task_id"]}
    created = {r["task_id"] for r in results if r["status"] == 201 and r["task_id"]}  # 200: an earlier task
    no_id = sum(1 for r in results if r["status"] in (200, 201) and not r["task_id"])
    get_failed = []
    async with httpx.AsyncClient(base_url=gateway_url, timeout=120) as client:
        for task_id in sorted(accepted):
            response = await client.get(f"/inbox/tasks/{task_id}", headers={"Authorization": f"Bearer {key}"})
            if response.status_code != 200 or response.json().get("task_id") != task_id:
                get_failed.append((task_id, response.status_code))
    runs: list = []
    async with get_client() as prefect:
        while True:  # the API serves at most 200 per page
            page = await prefect.read_flow_runs(flow_run_filter=FlowRunFilter(
                tags=FlowRunFilterTags(all_=[TAG, tag("topic", topic)])), limit=200, offset=len(runs))
            runs += page
            if len(page) < 200:
                break
    run_ids = {str(r.id) for r in runs}
    return {"accepted": len(accepted), "created": len(created), "accepted_without_id": no_id,
            "get_failed": get_failed, "runs": len(runs), "missing_runs": sorted(created - run_ids),
            "extra_runs": sorted(run_ids - created)}


def report(n: int, per_client: int, results: list[dict], wall: float, lost: dict) -> dict:
    seconds = [r["seconds"] for r in results]
    statuses: dict[str, int] = {}
    for r in results:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    p50, p95, worst = percentile(seconds, 0.5), percentile(seconds, 0.95), max(seconds)
    lost_count = (len(lost["missing_runs"]) + len(lost["get_failed"]) + lost["accepted_without_id"]
                  + (len(results) - lost["accepted"] - lost["accepted_without_id"]))
    print(f"\n{n} parallel clients x {per_client} upload(s) = {len(results)} submissions in {wall:.1f} s wall "
          f"({len(results) / wall * 60:.0f}/min)")
    print(f"  latency  p50 {p50:.2f} s   p95 {p95:.2f} s   max {worst:.2f} s   (mean {statistics.mean(seconds):.2f} s)")
    print(f"  answers  {', '.join(f'{k}: {v}' for k, v in sorted(statuses.items()))}")
    print(f"  accepted {lost['accepted']} task ids ({lost['created']} new: 201); GET failed {len(lost['get_failed'])}; "
          f"new flow runs on the server {lost['runs']} (missing {len(lost['missing_runs'])}, extra "
          f"{len(lost['extra_runs'])}) -> lost {lost_count}")
    for r in results:
        if r["status"] not in (200, 201):
            print(f"    refused/failed: {r['status']} after {r['seconds']:.2f} s: {str(r['detail'])[:200]}")
    met_p95 = p95 <= TARGET_P95
    met_lost = lost_count == 0 and not lost["extra_runs"] and lost["runs"] == lost["created"]
    scope = "" if n == TARGET_N else f" (target is stated at {TARGET_N} clients; this run used {n})"
    print(f"target: p95 <= {TARGET_P95:g} s at {TARGET_N} parallel clients{scope}: "
          f"{'met' if met_p95 else 'NOT met'} (p95 {p95:.2f} s); nothing lost: "
          f"{'met' if met_lost else 'NOT met'} (lost {lost_count}, runs {lost['runs']} / created {lost['created']})")
    return {"n": n, "per_client": per_client, "submissions": len(results), "wall": round(wall, 2),
            "p50": round(p50, 3), "p95": round(p95, 3), "max": round(worst, 3), "statuses": statuses,
            "lost": lost_count, "runs": lost["runs"], "accepted": lost["accepted"], "created": lost["created"],
            "target_p95_met": met_p95, "nothing_lost_met": met_lost,
            "load_avg": os.getloadavg()[0]}


READ_PLAYBOOK = """\
name: bench-read
description: every CUAD category (a full-size review), no human gates (runs complete instead of waiting)
categories: all
high_risk: [Uncapped Liability, Cap on Liability, Liquidated Damages, Minimum Commitment]
"""


def seed_done(client: httpx.Client, key: str, pdf: tuple[str, bytes], topic: str, deadline: float = 1800) -> str:
    """One task reviewed by the worker (no gates): its id once it is done."""
    auth = {"Authorization": f"Bearer {key}"}
    r = client.post("/inbox/tasks", headers=auth, files={"file": pdf}, data={"playbook": "bench-read", "topic": topic})
    if r.status_code not in (200, 201):
        raise SystemExit(f"seed submission refused: {r.text[:500]}")
    task_id, t0, status = r.json()["task_id"], time.perf_counter(), "pending"
    while time.perf_counter() - t0 < deadline:
        status = client.get(f"/inbox/tasks/{task_id}", headers=auth).json()["status"]
        if status in ("done", "escalated", "failed", "cancelled"):
            break
        time.sleep(2)
    print(f"seed review {task_id}: {status} after {time.perf_counter() - t0:.0f} s")
    if status != "done":
        raise SystemExit("the seed review did not end done; see the worker's log")
    return task_id


def copy_result(data: dict, storage: Path) -> dict:
    """The seed's result metadata for a copy of its result file under a new key (each clone decodes its own file:
    Prefect caches a result read by its key)."""
    key = Path(data["storage_key"])
    source = key if key.is_absolute() else storage / key
    target = source.with_name(uuid.uuid4().hex)
    target.write_bytes(source.read_bytes())
    return {**data, "storage_key": str(target) if key.is_absolute() else target.name}


async def clone_done(seed_id: str, n: int, storage: Path) -> list[str]:
    """n Completed runs of the deployment with the seed run's tags, labels, parameters and persisted result (raw API:
    the client's state helpers drop result metadata).  Each is created Scheduled for the year 2100 (no worker takes it)
    and then set Completed."""
    from prefect.client.orchestration import get_client

    async with get_client() as prefect:
        seed = (await prefect.request("GET", "/flow_runs/{id}", path_params={"id": seed_id})).json()
        later = {"type": "SCHEDULED", "name": "Scheduled", "state_details": {"scheduled_time": "2100-01-01T00:00:00Z"}}
        ids = []
        for _ in range(n):
            done = {"type": "COMPLETED", "name": "Completed", "data": copy_result(seed["state"]["data"], storage)}
            r = await prefect.request("POST", "/deployments/{id}/create_flow_run", path_params={
                "id": seed["deployment_id"]}, json={"tags": seed["tags"], "parameters": seed["parameters"],
                                                    "labels": seed.get("labels") or {}, "state": later})
            run_id = r.json()["id"]
            await prefect.request("POST", "/flow_runs/{id}/set_state", path_params={"id": run_id},
                                  json={"state": done, "force": True})
            ids.append(run_id)
    return ids


def timed_get(client: httpx.Client, path: str, key: str, **params) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    response = client.get(path, headers={"Authorization": f"Bearer {key}"}, params=params)
    return time.perf_counter() - t0, response


def reads(args, gateway_url: str, key: str, files: list[tuple[str, bytes]], storage: Path) -> dict:
    topic = f"bench-read-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=gateway_url, timeout=600) as client:
        seed = seed_done(client, key, files[0], topic)
        ids = [seed] + asyncio.run(clone_done(seed, args.reads - 1, storage))
        print(f"{len(ids)} tasks with reviews (sender {SENDER}); load avg {os.getloadavg()[0]:.1f}")
        lists = []
        for attempt in ("cold", "warm", "warm"):
            seconds, r = timed_get(client, "/inbox/tasks", key, limit=args.limit, topic=topic)
            items = r.json().get("tasks", []) if r.status_code == 200 else []
            lists.append(round(seconds, 2))
            print(f"  GET /inbox/tasks?limit={args.limit} ({attempt}): {r.status_code}, {len(items)} tasks "
                  f"({sum(1 for t in items if t['status'] == 'done')} done) in {seconds:.2f} s "
                  f"({len(r.content) / 1024:.0f} KB); load avg {os.getloadavg()[0]:.1f}")
        singles = []
        for task_id in ids[:10]:
            seconds, r = timed_get(client, f"/inbox/tasks/{task_id}", key)
            singles.append(seconds)
            if r.status_code != 200 or r.json().get("review") is None:
                print(f"  single view {task_id}: {r.status_code} without a review: {r.text[:300]}")
        print(f"  GET /inbox/tasks/{{id}} x {len(singles)}: p50 {percentile(singles, 0.5):.2f} s, max "
              f"{max(singles):.2f} s; load avg {os.getloadavg()[0]:.1f}")
    return {"tasks": len(ids), "limit": args.limit, "list_seconds": lists,
            "single_p50": round(percentile(singles, 0.5), 3), "single_max": round(max(singles), 3),
            "load_avg": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=TARGET_N, help="parallel clients")
    ap.add_argument("--per-client", type=int, default=1, help="uploads per client, one after the other")
    ap.add_argument("--port", type=int, default=4330, help="Prefect API port of the stack this bench starts")
    ap.add_argument("--gateway-port", type=int, default=8330, help="gateway port of the stack this bench starts")
    ap.add_argument("--gateway-url", help="use this running gateway instead of starting a stack")
    ap.add_argument("--key", help="an inbox key for --gateway-url (default: make one for sender bench-load)")
    ap.add_argument("--worker", action="store_true", help="also start a worker (runs execute during the burst)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--pdfs", type=Path, default=CUAD_PDFS, help="folder of PDFs to upload (default: CUAD)")
    ap.add_argument("--database", default="postgres", choices=["postgres", "sqlite"],
                    help="the stack's database (as `clausegate up --database`)")
    ap.add_argument("--keep", action="store_true", help="leave the stack running")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--reads", type=int, help="measure the list and the single view over this many reviewed tasks")
    ap.add_argument("--limit", type=int, default=100, help="--reads: the list's page size")
    args = ap.parse_args()

    base = Path(tempfile.mkdtemp(prefix="clausegate-inbox-load-"))
    paths = None
    if args.gateway_url is None:
        os.environ["CLAUSEGATE_SECRETS_DIR"] = str(base / "secrets")  # this stack's own credential and keys
    if args.reads:
        args.worker = True  # the seed review
        (base / "playbooks").mkdir()
        (base / "playbooks" / "bench-read.yaml").write_text(READ_PLAYBOOK)
        os.environ.setdefault("CLAUSEGATE_INBOX_PLAYBOOKS_DIR", str(base / "playbooks"))  # the stack's gateway
    files = pick(args.n * args.per_client + 1, args.seed, base, args.pdfs)
    warmup, files = files[0], files[1:]
    print(f"bench/inbox_load: {args.n} clients x {args.per_client}, {len(files)} distinct PDFs "
          f"({sum(len(d) for _, d in files) / 1e6:.1f} MB), {os.cpu_count()} cores, "
          f"load avg at start {os.getloadavg()[0]:.2f}")
    if args.gateway_url is None:
        api_url, gateway_url, paths = start_stack(args, base)
    else:
        api_url, gateway_url = os.environ.get("PREFECT_API_URL", ""), args.gateway_url.rstrip("/")
    from clausegate.stack.environment import client_settings

    try:
        with client_settings(api_url) if api_url else contextlib.nullcontext():
            key = args.key
            if key is None:
                from clausegate.inbox import keys

                key, record = keys.new_key(SENDER, rate_per_minute=100_000, note="bench/inbox_load.py")
                keys.save(record)
            if args.reads:
                if paths is None and not os.environ.get("PREFECT_LOCAL_STORAGE_PATH"):
                    raise SystemExit("--reads with --gateway-url needs PREFECT_LOCAL_STORAGE_PATH (its storage)")
                storage = Path(os.environ.get("PREFECT_LOCAL_STORAGE_PATH") or paths.prefect_home / "storage")
                figures = reads(args, gateway_url, key, files, storage)
                if args.json:
                    args.json.write_text(json.dumps(figures, indent=2))
                return
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            with httpx.Client(base_url=gateway_url, timeout=120) as client:
                t0 = time.perf_counter()
                r = client.post("/inbox/tasks", headers={"Authorization": f"Bearer {key}"},
                                files={"file": warmup}, data={"playbook": "default", "topic": topic + "-warmup"})
                print(f"warm-up submission: {r.status_code} in {time.perf_counter() - t0:.2f} s")
                if r.status_code not in (200, 201):
                    raise SystemExit(f"warm-up refused: {r.text[:500]}")
            pids = stack_pids(paths)
            cpu_before = {name: proc_cpu(pid) for name, pid in pids.items()}
            own_before = time.process_time()
            results, wall = asyncio.run(burst(gateway_url, key, files, args.n, args.per_client, topic))
            cpu = {name: proc_cpu(pid) - cpu_before[name] for name, pid in pids.items()}
            cpu["bench clients"] = time.process_time() - own_before
            print("CPU seconds during the burst: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
                  + f" (wall {wall:.1f} s, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f})")
            lost = asyncio.run(check_lost(gateway_url, key, results, topic))
            figures = report(args.n, args.per_client, results, wall, lost)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2))
    finally:
        if paths is not None and not args.keep:
            from clausegate.stack.lifecycle import down

            down(paths, echo=lambda m: None)
        elif paths is not None:
            print(f"stack kept: {paths.home} (stop: clausegate down --home {paths.home})")


if __name__ == "__main__":
    main()
