"""The crash scenario: N inbox tasks on `clausegate up`, then one `kill -9` each of the worker, the gateway and
the Prefect server, each followed by the runbook's `clausegate down && clausegate up`, and a SIGSTOP of the
warm-start process; then count where every task ended.

    python bench/crash_recovery.py --tasks 20              # its own stack (embedded PostgreSQL) on free ports
    python bench/crash_recovery.py --tasks 60 --settle-minutes 11

Each task is a distinct contract (pasted text, the payment-liability playbook: most wait at a gate). A quarter of
the tasks is submitted --gap seconds before each fault, so runs are claimed, starting or running when it strikes.
After the last fault the script polls the inbox until every task is settled or --settle-minutes pass, and prints:
done (done/escalated), waiting at a gate, failed (with their codes), stuck (pending/processing/cancelled at the
end, or Crashed: not requeued), lost (the inbox does not know the task), reviewed twice (a run with more than one
Completed state or more than one review artifact) and the recovery actions (requeues, stuck runs found, dead
letters; audit events). The zombie window and the stuck threshold are shortened for the bench (--zombie-seconds
60, --stuck-seconds 120; the product defaults are 150 and 300). Exit 1 unless 0 stuck, 0 lost and 0 reviewed twice.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTLED = {"done", "escalated", "waiting_for_human", "failed"}
CONTRACT = (
    "MASTER SERVICES AGREEMENT No. {n}\nThis Master Services Agreement No. {n} is entered into as of March {day}, "
    "2024 by and between Acme {n} Corp., a Delaware corporation, and Widget Ltd., a New York corporation.\n"
    "7. Liquidated Damages. If Supplier fails to deliver the Services by the Delivery Date, Supplier shall pay "
    "Customer liquidated damages equal to two percent (2%) of the fees for each week of delay.\n"
    "8. Limitation of Liability. {liability}\n"
    "9. Payment. Customer shall pay all undisputed invoices within {days} days of receipt.\n"
    "10. Governing Law. This Agreement shall be governed by the laws of the State of New York.")
CAPPED = ("In no event shall either party's aggregate liability exceed the total fees paid by Customer in the twelve "
          "months preceding the claim.")
UNCAPPED = ("The limitations of liability shall not apply to Supplier's indemnification obligations, breach of "
            "confidentiality, gross negligence or willful misconduct, for which Supplier's liability shall be "
            "unlimited.")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pid(paths, name: str) -> int | None:
    from clausegate.stack.processes import records
    from clausegate.stack.state import read_state

    found = next((r for r in records(read_state(paths)) if r.name == name), None)
    return found.pid if found is not None and found.alive() else None


def _prefect(state: dict):
    """Prefect client settings for the stack (Prefect read its settings at import: set them for the block)."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    from clausegate.security import credentials

    return temporary_settings(updates={PREFECT_API_URL: state["api_url"],
                                       PREFECT_API_AUTH_STRING: credentials.api_auth_string() or ""})


def _key(state: dict, tasks: int) -> str:
    """An inbox key made by the command a person runs (`clausegate inbox keys create`) against the stack."""
    from clausegate.security import credentials

    env = {**os.environ, "PREFECT_API_URL": state["api_url"],
           "PREFECT_API_AUTH_STRING": credentials.api_auth_string() or ""}
    made = subprocess.run([sys.executable, "-m", "clausegate.cli", "inbox", "keys", "create", "--sender",
                           "crash-bench", "--rate-per-minute", str(max(60, 2 * tasks))], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        raise SystemExit(f"no inbox key: {made.stdout}{made.stderr}")
    return made.stdout.strip().splitlines()[-1].strip()


def _submit(gateway: str, key: str, n: int) -> str:
    text = CONTRACT.format(n=n, day=1 + n % 28, days=20 + n, liability=UNCAPPED if n % 2 else CAPPED)
    for _ in range(30):
        try:
            answer = httpx.post(f"{gateway}/inbox/tasks", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                                json={"content": text, "playbook": "payment-liability", "topic": f"bench-{n}",
                                      "idempotency_key": f"crash-bench-{n}"})
            if answer.status_code in (200, 201):
                return answer.json()["task_id"]
            print(f"submit {n}: {answer.status_code} {answer.text[:200]}", flush=True)
        except httpx.HTTPError as exc:
            print(f"submit {n}: {exc!r}", flush=True)
        time.sleep(2)
    raise SystemExit(f"task {n} could not be submitted")


def _statuses(gateway: str, key: str, tasks: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for task in tasks:
        try:
            answer = httpx.get(f"{gateway}/inbox/tasks/{task}", headers={"Authorization": f"Bearer {key}"}, timeout=60)
        except httpx.HTTPError:
            out[task] = {"status": "unreachable"}
            continue
        out[task] = answer.json() if answer.status_code == 200 else {"status": f"http-{answer.status_code}"}
    return out


def _settled(view: dict) -> bool:
    """Done, at a gate or failed for good: a Crashed run (inbox ``failed``) is still dead-letters' to requeue."""
    return view.get("status") in SETTLED and view.get("state") != "Crashed"


def _twice(tasks: list[str]) -> list[str]:
    """Runs that completed more than once or wrote more than one review artifact."""
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    twice = []
    with get_client(sync_client=True) as client:
        for task in tasks:
            completed = [s for s in client.read_flow_run_states(UUID(task)) if s.is_completed()]
            artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[UUID(task)])))
            reviews = [a for a in artifacts if (a.key or "").startswith("review")]
            if len(completed) > 1 or len(reviews) > 1:
                twice.append(task)
    return twice


def _actions() -> Counter:
    """What dead-letters and the stuck-run sweep did (the audit log)."""
    from datetime import UTC, datetime, timedelta

    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter

    names = ["clausegate.audit.run.requeued", "clausegate.audit.run.stuck", "clausegate.audit.run.dead-lettered"]
    since = datetime.now(UTC) - timedelta(hours=6)
    found: Counter = Counter()
    with get_client(sync_client=True) as client:
        for name in names:  # (the events API answers at most 50 per page: counts stop there)
            page = client.read_events(EventFilter(occurred=EventOccurredFilter(since=since),
                                                  event=EventNameFilter(name=[name])), limit=50)
            found[name.rsplit(".", 1)[-1]] = len(page.events)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--gap", type=float, default=8.0, help="seconds from a share's submission to its fault")
    parser.add_argument("--sigstop-seconds", type=float, default=60.0, help="how long the warm-start process is "
                        "stopped (0: skip)")
    parser.add_argument("--settle-minutes", type=float, default=11.0)
    parser.add_argument("--zombie-seconds", type=int, default=60)
    parser.add_argument("--stuck-seconds", type=int, default=120)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="clausegate-crash-"))
    os.environ["CLAUSEGATE_SECRETS_DIR"] = str(work / "secrets")
    os.environ["CLAUSEGATE_ZOMBIE_SECONDS"] = str(args.zombie_seconds)
    os.environ["CLAUSEGATE_STUCK_SECONDS"] = str(args.stuck_seconds)
    for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        os.environ.pop(name, None)
    from clausegate.stack.lifecycle import down, up
    from clausegate.stack.state import StackOptions, StackPaths

    paths = StackPaths.for_project(ROOT, home=work / "stack")
    options = StackOptions(port=_free_port(), gateway_port=_free_port(), fake_slack_port=_free_port(), ui=False,
                           slack="demo")

    def restart(why: str) -> dict:
        began = time.monotonic()
        down(paths, echo=lambda m: None)
        state = up(options, paths, echo=lambda m: None)
        print(f"  {why}: clausegate down && up in {time.monotonic() - began:.0f} s (load {os.getloadavg()[0]:.1f})",
              flush=True)
        return state

    began = time.monotonic()
    state = up(options, paths, echo=lambda m: None)
    gateway = state["gateway_url"]
    print(f"stack up in {time.monotonic() - began:.0f} s; gateway {gateway}", flush=True)
    key = _key(state, args.tasks)
    failed = True
    try:
        groups = [list(range(args.tasks))[i::4] for i in range(4)]  # a share before each fault: some in flight
        tasks: list[str] = []
        for victim, group in zip(("worker", "gateway", "server"), groups, strict=False):  # (server: Prefect's)
            tasks += [_submit(gateway, key, n) for n in group]
            print(f"submitted {len(tasks)} tasks", flush=True)
            time.sleep(args.gap)
            pid = _pid(paths, victim)
            if pid is None:
                print(f"  {victim}: not running, skipped", flush=True)
                continue
            os.kill(pid, signal.SIGKILL)
            print(f"kill -9 {victim} ({pid})", flush=True)
            time.sleep(3)
            state = restart(f"after killing the {victim}")
            gateway = state["gateway_url"]
        tasks += [_submit(gateway, key, n) for n in groups[3]]
        print(f"submitted {len(tasks)} tasks", flush=True)
        if args.sigstop_seconds > 0 and (zygote := _pid(paths, "warm-start")) is not None:
            time.sleep(min(args.gap, 5))  # (stopped while the last share's runs fork or start)
            os.kill(zygote, signal.SIGSTOP)
            print(f"SIGSTOP warm-start ({zygote}) for {args.sigstop_seconds:.0f} s", flush=True)
            time.sleep(args.sigstop_seconds)
            os.kill(zygote, signal.SIGCONT)
        last_fault = time.monotonic()
        deadline = last_fault + args.settle_minutes * 60
        while True:
            seen = _statuses(gateway, key, tasks)
            count = Counter(v.get("status", "?") for v in seen.values())
            print(f"  +{(time.monotonic() - last_fault) / 60:4.1f} min: {dict(count)}", flush=True)
            if all(_settled(v) for v in seen.values()) or time.monotonic() > deadline:
                break
            time.sleep(30)
        settled_after = (time.monotonic() - last_fault) / 60
        codes = Counter((v.get("error") or {}).get("code") for v in seen.values() if v.get("status") == "failed")
        stuck = [t for t, v in seen.items() if not _settled(v) and not str(v.get("status")).startswith(("http-",
                                                                                                     "unreachable"))]
        lost = [t for t, v in seen.items() if str(v.get("status", "")).startswith(("http-", "unreachable"))]
        with _prefect(state):
            twice, actions = _twice(tasks), _actions()
        done = count["done"] + count["escalated"]
        print(f"\n{len(tasks)} tasks, {settled_after:.1f} min after the last fault: {done} done, "
              f"{count['waiting_for_human']} waiting at a gate, {count['failed']} failed {dict(codes)}, "
              f"{len(stuck)} stuck, {len(lost)} lost, {len(twice)} reviewed twice; recovery: {dict(actions)}")
        for task in stuck:
            print(f"  stuck {task}: {seen[task].get('status')} ({seen[task].get('state')})")
        for task, view in seen.items():
            if view.get("status") == "failed":
                print(f"  failed {task}: {((view.get('error') or {}).get('message') or '')[:300]}")
        failed = bool(stuck or lost or twice)
    finally:
        down(paths, echo=lambda m: None)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
