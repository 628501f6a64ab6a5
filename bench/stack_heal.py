"""How fast the stack heals itself: `kill -9` each process of `clausegate up` once and time until the stack answers
again (clausegate/stack/supervise.py restarts it), checking that no other process was restarted.

    python bench/stack_heal.py                 # starts its own stack (embedded PostgreSQL) on free ports
    python bench/stack_heal.py --deploy        # ... with the seven deployments, as `clausegate up` does

"Answering" means every probe passes: the Prefect API answers a query of its database (POST /api/flow_runs/count),
the worker has polled its queues since the kill, the warm-start socket accepts a connection, the gateway's
/healthz answers 200 and the fake Slack's port accepts a connection.  Prints one line per process and the
worst; exits 1 when one took longer than --goal seconds (30) or another process was restarted.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _connects(address, family=socket.AF_INET) -> bool:
    with socket.socket(family) as sock:
        sock.settimeout(2)
        try:
            sock.connect(address)
            return True
        except OSError:
            return False


def probes(state: dict, auth: str, since: datetime) -> dict[str, bool]:
    """Which parts of the stack answer now (see the module's docstring)."""
    from clausegate.stack.configuration import POOL

    api = state["api_url"]
    user, _, password = auth.partition(":")
    result: dict[str, bool] = {}
    try:
        result["api+database"] = httpx.post(f"{api}/flow_runs/count", json={}, auth=(user, password),
                                            timeout=5).status_code == 200
        queues = httpx.post(f"{api}/work_pools/{POOL}/queues/filter", json={}, auth=(user, password), timeout=5)
        polled = [q.get("last_polled") for q in queues.json()] if queues.status_code == 200 else []
        result["worker polls"] = any(t and datetime.fromisoformat(t.replace("Z", "+00:00")) > since for t in polled)
    except (httpx.HTTPError, ValueError):
        result["api+database"] = result["worker polls"] = False
    if state.get("warm_start"):
        result["warm-start socket"] = _connects(state["warm_start"], socket.AF_UNIX)
    if state.get("gateway_url"):
        try:
            result["gateway"] = httpx.get(f"{state['gateway_url']}/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            result["gateway"] = False
    fake = next((p for p in state["processes"] if p["name"] == "fake-slack"), None)
    if fake:
        host_port = fake["url"].split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        result["fake slack"] = _connects((host_port[0], int(host_port[1])))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deploy", action="store_true", help="deploy prefect.yaml too (slower start, same healing)")
    parser.add_argument("--goal", type=float, default=30.0, help="seconds allowed from the kill to answering")
    parser.add_argument("--timeout", type=float, default=180.0, help="give up on one process after this long")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="clausegate-heal-"))
    os.environ["CLAUSEGATE_SECRETS_DIR"] = str(work / "secrets")
    for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        os.environ.pop(name, None)
    from clausegate.security import credentials
    from clausegate.stack.lifecycle import down, up
    from clausegate.stack.processes import process_start_time, records
    from clausegate.stack.starters import SUPERVISOR
    from clausegate.stack.state import StackOptions, StackPaths, read_state

    paths = StackPaths.for_project(ROOT, home=work / "stack")
    options = StackOptions(port=_free_port(), gateway_port=_free_port(), fake_slack_port=_free_port(),
                           deploy=args.deploy, ui=False, slack="demo")
    began = time.monotonic()
    state = up(options, paths, echo=lambda m: None)
    auth = credentials.api_auth_string()
    print(f"stack up in {time.monotonic() - began:.1f} s: "
          + ", ".join(f"{r.name} {r.pid}" for r in records(state)) + f"  (load {os.getloadavg()[0]:.1f})")
    rows, failed = [], False
    try:
        since = datetime.now(UTC)
        deadline = time.monotonic() + args.timeout
        while not all(probes(read_state(paths), auth, since).values()):
            if time.monotonic() > deadline:
                raise SystemExit(f"the fresh stack never answered: {probes(read_state(paths), auth, since)}")
            time.sleep(0.5)
        for victim in [r.name for r in records(state) if r.name != SUPERVISOR]:
            before = {r.name: r.pid for r in records(read_state(paths))}
            killed_at = datetime.now(UTC)
            start = time.monotonic()
            os.kill(before[victim], signal.SIGKILL)
            answered, first = None, {}
            while time.monotonic() - start < args.timeout:
                new = {r.name: r for r in records(read_state(paths))}.get(victim)
                replaced = bool(new and new.pid != before[victim] and new.alive())
                if replaced:
                    first.setdefault("restarted", time.monotonic() - start)
                passed = probes(read_state(paths), auth, killed_at)
                for part, ok in passed.items():
                    if ok and replaced:
                        first.setdefault(part, time.monotonic() - start)
                if replaced and all(passed.values()):
                    answered = time.monotonic() - start
                    break
                time.sleep(0.25)
            after = {r.name: r.pid for r in records(read_state(paths))}
            others = [n for n in before if n != victim and after.get(n) != before[n]]
            rows.append((victim, answered, others, os.getloadavg()[0]))
            failed |= answered is None or answered > args.goal or bool(others)
            print(f"{victim:11s} kill -9 -> answering again in "
                  + (f"{answered:5.1f} s" if answered is not None else f"> {args.timeout:.0f} s (never)")
                  + f"; others restarted: {', '.join(others) or 'none'}  (load {os.getloadavg()[0]:.1f})",
                  flush=True)
            print("            first seen after the kill: " + ", ".join(f"{k} {v:.1f} s" for k, v in first.items()),
                  flush=True)
    finally:
        results = down(paths, echo=lambda m: None)
        time.sleep(3)
        still = [f"{n} {p}" for n, p, _ in results if process_start_time(p)]
        print(f"down: {', '.join(f'{n} {o}' for n, _, o in results)}; after 3 s still running: "
              f"{', '.join(still) or 'nothing'}; state: {len(read_state(paths)['processes'])} processes")
    timed = [a for _, a, _, _ in rows if a is not None]
    print(f"worst: {max(timed):.1f} s over {len(rows)} processes (goal {args.goal:.0f} s)" if timed else "no timings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
