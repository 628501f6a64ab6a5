#!/usr/bin/env python3
"""Scale-out demo: ClauseGate's deployments on a Prefect server backed by PostgreSQL, two workers.

    python tools/scaleout_postgres.py [--contracts 20] [--inbox DIR] [--workers 2] [--json result.json] [--keep]

What it does, all on loopback and in a throwaway folder (removed at the end unless --keep):

1. a throwaway PostgreSQL cluster (``initdb`` + ``pg_ctl``; trust auth on 127.0.0.1 only, fsync off).
   PostgreSQL refuses to run as root: as root the script creates the system user ``clausegate-pg``
   (``useradd``) if missing and runs the PostgreSQL commands as that user (``runuser``/``su``);
2. a Prefect server with ``PREFECT_SERVER_DATABASE_CONNECTION_URL=postgresql+asyncpg://...``;
3. the pool, queues and limits (``clausegate.stack.configuration``) and ``prefect deploy`` of prefect.yaml;
4. N process workers, each with its own PREFECT_HOME, exactly like workers on separate machines
   (they share only the API URL, the code checkout and the inbox/report folders);
5. a run of the ``nightly-batch`` deployment over the inbox (20 generated contracts by default),
   (reviews as tasks of the batch run and its chunk runs), then checks: every contract reviewed exactly
   once, no batch run executed by two workers, batch runs on every worker (reviews per worker are printed:
   the runs claim contracts from one list, so that split depends on who is free first).

Exit status 0 when the checks pass.  ``--json`` writes the figures for tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

import asyncpg
import httpx
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    FlowRunFilterParentFlowRunId,
    TaskRunFilter,
    TaskRunFilterName,
)
from prefect.deployments import run_deployment
from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as `python tools/scaleout_postgres.py`: the checkout's clausegate

from clausegate.batch.sources import load_source
from clausegate.security import credentials
from clausegate.stack.configuration import POOL, configure, set_pool_command
from clausegate.stack.deploy import deploy, deployable
from clausegate.stack.environment import local_timezone, prefect_argv
from clausegate.stack.processes import ProcessRecord, start_process, stop_process, wait_healthy
from clausegate.stack.state import StackPaths
from clausegate.stack.warmstart import WARM_SOCKET_ENV, serve_argv, warm_command

PG_USER = "clausegate-pg"
PLAYBOOK = """\
name: scaleout
description: Scale-out demo playbook (no human gates, so every run completes)
categories: [Governing Law, Cap on Liability, Uncapped Liability, Anti-Assignment, Termination For Convenience,
             Audit Rights]
"""
CLAUSES = [
    "Governing Law. This Agreement shall be governed by and construed in accordance with the laws of the State "
    "of {state}.",
    "Limitation of Liability. In no event shall either party's aggregate liability exceed the fees paid in the twelve "
    "months preceding the claim.",
    "Assignment. Neither party may assign this Agreement without the prior written consent of the other party.",
    "Termination. Either party may terminate this Agreement for convenience upon {days} days prior written notice.",
    "Audit. Supplier shall keep accurate records and Customer may audit such records once per calendar year.",
]
STATES = ["New York", "Delaware", "California", "Texas", "Illinois"]


def log(msg: str) -> None:
    print(f"[scaleout {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------ contracts
def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_pdf(pages: list[str]) -> bytes:
    """A small, valid, text-layer PDF (Helvetica, simple wrapping) without extra dependencies."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for text in pages:
        lines = [line for para in text.split("\n") for line in (textwrap.wrap(para, 90) or [""])]
        ops = ["BT", "/F1 11 Tf", "14 TL", "50 780 Td"] + [f"({_pdf_escape(line)}) Tj T*" for line in lines] + ["ET"]
        stream = "\n".join(ops).encode("latin-1", "replace")
        content_no = len(objects) + 2
        page_no = len(objects) + 1
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Contents {content_no} 0 R "
                       f"/Resources << /Font << /F1 {{font}} 0 R >> >> >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(page_no)
    font_no = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    objects = [o.replace(b"{font}", str(font_no).encode()) for o in objects]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def make_contracts(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        title = f"MASTER SERVICES AGREEMENT No. {1000 + i}\nbetween Acme Holdings {i} Inc. and Widget Services Ltd."
        body = [c.format(state=STATES[i % len(STATES)], days=30 + i) for c in CLAUSES]
        path = folder / f"contract-{i:02d}.pdf"
        path.write_bytes(text_pdf([title, "\n".join(body[:3]), "\n".join(body[3:])]))
        paths.append(path)
    return paths


# ------------------------------------------------------------------------------ PostgreSQL
def find_pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(candidate)
    raise SystemExit(f"[CG-SCALEOUT-NO-POSTGRES] `{name}` not found (PATH, /usr/lib/postgresql/*/bin). "
                     "Next step: install PostgreSQL server binaries (apt-get install postgresql).")


def ensure_pg_user() -> str | None:
    """As root: the unprivileged user PostgreSQL runs as (created if missing). Otherwise None."""
    if os.geteuid() != 0:
        return None
    if subprocess.run(["id", "-u", PG_USER], capture_output=True).returncode != 0:
        for cmd in (["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER],
                    ["adduser", "--system", "--no-create-home", "--disabled-login", "--group", PG_USER]):
            if shutil.which(cmd[0]) and subprocess.run(cmd, capture_output=True).returncode == 0:
                log(f"created system user {PG_USER}")
                break
        else:
            raise SystemExit(f"[CG-SCALEOUT-NO-USER] cannot create user {PG_USER} (useradd/adduser failed).")
    return PG_USER


def as_pg_user(argv: list[str], user: str | None) -> list[str]:
    if user is None:
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *argv]
    return ["su", "-s", "/bin/sh", user, "-c", " ".join(shlex.quote(a) for a in argv)]


class Postgres:
    def __init__(self, base: Path, port: int) -> None:
        self.user = ensure_pg_user()
        self.dir = base / "pg"
        self.data = self.dir / "data"
        self.port = port
        self.logfile = self.dir / "postgres.log"
        self.pg_ctl = find_pg_bin("pg_ctl")
        self.initdb = find_pg_bin("initdb")
        find_pg_bin("postgres")

    def _run(self, argv: list[str], timeout: float = 180) -> None:
        result = subprocess.run(as_pg_user(argv, self.user), capture_output=True, text=True, timeout=timeout,
                                cwd="/")
        if result.returncode != 0:
            raise SystemExit(f"[CG-SCALEOUT-POSTGRES] {' '.join(argv[:2])} failed: {result.stderr.strip()[-800:]}")

    def start(self) -> str:
        self.dir.mkdir(parents=True)
        if self.user:
            shutil.chown(self.dir, self.user, self.user)
            os.chmod(self.dir, 0o700)
        self._run([self.initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                   "--locale=C", "--no-sync"])
        opts = (f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off -c synchronous_commit=off "
                f"-c full_page_writes=off -c max_connections=200")
        self._run([self.pg_ctl, "-D", str(self.data), "-l", str(self.logfile), "-o", opts, "-w", "-t", "120", "start"])
        async def create_db() -> None:
            conn = await asyncpg.connect(host="127.0.0.1", port=self.port, user="postgres", database="postgres")
            try:
                await conn.execute("CREATE DATABASE prefect")
            finally:
                await conn.close()

        asyncio.run(create_db())
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/prefect"

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(as_pg_user([self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"], self.user),
                           capture_output=True, timeout=120, cwd="/")


# ------------------------------------------------------------------------------ the run
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--contracts", type=int, default=20, help="generated contracts (ignored with --inbox)")
    ap.add_argument("--inbox", type=Path, help="use these PDFs instead of generated ones")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--worker-limit", type=int, default=3)
    ap.add_argument("--max-in-flight", type=int, default=4, help="reviews at once per batch run")
    ap.add_argument("--max-parallel-runs", type=int, default=4,
                    help="batch runs sharing the contracts (more than one worker's slots: the work must split)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the batch")
    ap.add_argument("--json", type=Path, help="write the result figures here")
    ap.add_argument("--keep", action="store_true", help="keep the throwaway folder (logs, database)")
    ap.add_argument("--warm-start", action="store_true",
                    help="one preloaded fork server per worker (clausegate up --warm-start)")
    ap.add_argument("--playbook", help="playbook for the batch (default: a gate-free 6-category test playbook)")
    args = ap.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="clausegate-scaleout-"))
    os.chmod(base, 0o755)  # the PostgreSQL user must reach base/pg
    paths = StackPaths.for_project(ROOT, home=base / "stack")
    pg = Postgres(base, free_port())
    procs: list[ProcessRecord] = []
    result: dict = {"ok": False}
    t0 = time.monotonic()
    try:
        log(f"throwaway folder {base}")
        db_url = pg.start()
        log(f"PostgreSQL up on 127.0.0.1:{pg.port} (as {pg.user or 'current user'})")
        port = free_port()
        api_url = f"http://127.0.0.1:{port}/api"
        server_env = {**os.environ, "PREFECT_HOME": str(base / "server-home"),
                      "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_DATABASE_CONNECTION_URL": db_url,
                      "PREFECT_UI_ENABLED": "false", "PREFECT_SERVER_API_HOST": "127.0.0.1",
                      "PREFECT_SERVER_API_PORT": str(port)}
        server_env.pop("PREFECT_API_URL", None)
        # Authenticated like `clausegate up`: the server and every client share the generated credential.
        auth = credentials.api_auth_string(create=True)
        server_env["PREFECT_SERVER_API_AUTH_STRING"] = auth
        os.environ["PREFECT_API_AUTH_STRING"] = auth
        server = start_process("server", prefect_argv("server", "start", "--host", "127.0.0.1", "--port", str(port)),
                               env=server_env, log=base / "server.log", cwd=base)
        procs.append(server)
        if not wait_healthy(api_url, 240, server):
            raise SystemExit(f"[CG-STACK-START] Prefect server on PostgreSQL not healthy; see {base / 'server.log'}")
        log(f"Prefect server on PostgreSQL: {api_url} ({time.monotonic() - t0:.0f} s)")
        if httpx.post(f"{api_url}/flow_runs/filter", json={}, timeout=10).status_code != 401:
            raise SystemExit("[CG-STACK-AUTH] the Prefect API answered a request without the credential")
        result["api_auth"] = "basic auth: anonymous requests answered 401"
        os.environ["PREFECT_API_URL"] = api_url
        # Prefect read its settings at import (above): point the live settings at this server too (kept
        # referenced: a collected context manager would restore the old settings).
        live_settings = temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_API_AUTH_STRING: auth})
        live_settings.__enter__()
        configure(api_url, paths, timezone_name=local_timezone(), log=log)
        names = [n for n in deployable(paths)[0] if n in ("contract-review", "nightly-batch")]
        deploy(api_url, paths, names, log_file=base / "deploy.log")
        log(f"deployed {', '.join(names)} from prefect.yaml")

        worker_names = [f"scaleout-worker-{chr(ord('a') + i)}" for i in range(args.workers)]
        set_pool_command(api_url, warm_command() if args.warm_start else None)
        for name in worker_names:  # one PREFECT_HOME each: like separate machines
            env = {**os.environ, "PREFECT_HOME": str(base / name), "PREFECT_API_URL": api_url,
                   "CLAUSEGATE_PROJECT_DIR": str(ROOT), "PREFECT_WORKER_QUERY_SECONDS": "1",
                   "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
            if args.warm_start:
                sock = base / f"{name}.sock"
                procs.append(start_process(f"{name}-warm", serve_argv(sock),
                                           env={**env, "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"},
                                           log=base / f"{name}-warm.log", cwd=ROOT))
                for _ in range(600):
                    if sock.exists():
                        break
                    time.sleep(0.2)
                env[WARM_SOCKET_ENV] = str(sock)
            procs.append(start_process(name, prefect_argv("worker", "start", "--pool", POOL, "--name",
                                                          name, "--limit", str(args.worker_limit)),
                                       env=env, log=base / f"{name}.log", cwd=ROOT))
        log(f"started {len(worker_names)} workers (limit {args.worker_limit} each)")

        inbox = args.inbox.resolve() if args.inbox else base / "inbox"
        if args.inbox:
            files = load_source(inbox).discover()
        else:
            files = make_contracts(inbox, args.contracts)
        book = base / "scaleout.yaml"
        book.write_text(PLAYBOOK)
        if args.playbook:
            book = Path(args.playbook).resolve() if Path(args.playbook).exists() else args.playbook
        out = base / "reports"
        log(f"nightly-batch over {len(files)} contracts …")
        started = time.monotonic()
        parent = run_deployment("nightly-batch/nightly-batch", timeout=args.timeout, poll_interval=2, parameters={
            "source": str(inbox), "playbook": str(book), "out_dir": str(out), "max_in_flight": args.max_in_flight,
            "poll_seconds": 1.0, "work_queue": "low", "max_parallel_runs": args.max_parallel_runs})
        wall = time.monotonic() - started
        if not parent.state or not parent.state.is_completed():
            raise SystemExit(f"[CG-SCALEOUT-BATCH] nightly-batch ended {parent.state}; see {base}/*.log")

        with get_client(sync_client=True) as client:
            # the batch run and its chunk runs review as tasks; contract-review runs only for gates (none here)
            batch_runs = [client.read_flow_run(parent.id)] + client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent.id])), limit=200)
            # Task runs reach the database through events, written by the server a moment later: wait for them.
            deadline = time.monotonic() + 60
            while True:
                extract_tasks = client.read_task_runs(
                    flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[r.id for r in batch_runs])),
                    task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="extract-clauses")), limit=200)
                finished = sum(t.state_name in ("Completed", "Cached") for t in extract_tasks)
                if finished >= len(files) or time.monotonic() > deadline:
                    break
                time.sleep(1)
        summary = json.loads(max((out / "batches").glob(f"batch-*-{str(parent.id)[:8]}.json"),
                                 key=lambda p: p.stat().st_mtime).read_text())
        reviews = [r for r in summary["rows"] if r["status"] in ("reviewed", "failed", "waiting")]
        by_worker = Counter(r["worker"] for r in reviews)
        per_contract = Counter(r["contract_id"] for r in reviews)
        # Both workers may *try* the same scheduled run; the server lets one propose PENDING and tells the
        # other to abort ("Aborted submission of flow run ..."). Executed = tried - aborted, per worker.
        executed: dict[str, list[str]] = {}
        races = 0
        for name in worker_names:
            text = (base / f"{name}.log").read_text(errors="replace")
            tried = set(re.findall(r"submitting flow run '([0-9a-f-]{36})'", text))
            aborted = set(re.findall(r"Aborted submission of flow run '([0-9a-f-]{36})'", text))
            races += len(tried & aborted)
            for run_id in tried - aborted:
                executed.setdefault(run_id, []).append(name)
        run_ids = {str(r.id) for r in batch_runs}
        double = {rid: ws for rid, ws in executed.items() if len(ws) > 1}
        mislabelled = [r.name for r in batch_runs if executed.get(str(r.id)) != [r.labels.get("prefect.worker.name")]]
        reports = [p for p in out.glob("*.json")]
        result = {
            "contracts": len(files), "reviews": len(reviews),
            "completed": sum(r["status"] == "reviewed" for r in reviews),
            "batch_runs": len(batch_runs), "reviews_per_worker": dict(by_worker),
            "batch_runs_per_worker": dict(Counter(w for ws in executed.values() for w in ws)),
            "max_reviews_per_contract": max(per_contract.values(), default=0),
            "distinct_contracts": len(per_contract), "runs_executed_by_two_workers": len(double),
            "submission_races_aborted_by_server": races, "runs_whose_log_and_label_disagree": len(mislabelled),
            "batch_runs_seen_in_worker_logs": len(run_ids & set(executed)),
            "extract_tasks": sum(t.state_name in ("Completed", "Cached") for t in extract_tasks),
            "reports": len(reports),
            "batch_wall_seconds": round(wall, 1), "contracts_per_minute": round(len(reviews) / (wall / 60), 1),
            "batch_totals": summary["totals"], "database": "postgresql", "workers": worker_names,
        }
        checks = {
            "every contract reviewed exactly once": result["distinct_contracts"] == len(files)
            and result["max_reviews_per_contract"] == 1 and result["reviews"] == len(files),
            "every review completed": result["completed"] == len(files),
            "no batch run was executed by two workers": not double and not mislabelled
            and result["batch_runs_seen_in_worker_logs"] == len(batch_runs),
            "each contract extracted once": result["extract_tasks"] == len(files),
            "one report per contract": result["reports"] == len(files),
            "batch runs on every worker": all(any(name in ws for ws in executed.values()) for name in worker_names),
        }
        result["checks"] = checks
        result["ok"] = all(checks.values())
        log(f"batch: {len(reviews)} reviews in {len(batch_runs)} batch runs in {wall:.1f} s "
            f"({result['contracts_per_minute']} contracts/min)")
        for name in worker_names:
            log(f"  {name}: {result['batch_runs_per_worker'].get(name, 0)} batch runs, {by_worker[name]} reviews")
        log(f"  {races} submission race(s) between workers, each aborted by the server (one run, one worker)")
        for text, passed in checks.items():
            log(f"  [{'ok' if passed else 'FAILED'}] {text}")
        return 0 if result["ok"] else 1
    finally:
        for record in reversed(procs):
            stop_process(record)
        pg.stop()
        result["total_seconds"] = round(time.monotonic() - t0, 1)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")
        if args.keep:
            log(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
