"""Run a command and say where its CPU went, by kind of process (Linux: reads /proc twice a second).

    python tools/cpu_by_process.py -- python -m pytest -q -m "not slow"
    python tools/cpu_by_process.py --each /tmp/each.tsv -- python -m pytest -q   # and one line per process

Every process on the machine is sampled while the command runs (its own and anything else: run it on an idle
machine); each is counted once, at the most CPU seen for it (less what it had used before the command started),
under a kind told from its command line (a Prefect server, a pytest-xdist worker, a warm-start fork, ...). A process
that lives less than half a second may be missed, and one's last half second is not counted: the figures are a
floor, good for proportions.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import defaultdict

KINDS = (  # (kind, a string its command line holds), first match wins
    ("prefect server", "prefect server start"), ("prefect server", "prefect.server.api.server"),
    ("postgres", "/bin/postgres"), ("postgres", "postgres: "), ("pytest-xdist worker", "exec(eval(sys.stdin"),
    ("parse sandbox", "pool_worker"), ("warm start", "clausegate.stack.warmstart"),
    ("flow run (prefect.engine)", "prefect.runner._workspace_supervisor"),
    ("flow run (prefect.engine)", "prefect.engine"),
    ("prefect worker", "prefect worker start"), ("gateway", "clausegate.gateway"), ("clausegate command", "clausegate"),
    ("pytest", "pytest"),
)


def kind_of(command: str) -> str:
    return next((kind for kind, marker in KINDS if marker in command), "other")


def sample(seen: dict[tuple[str, str], list], tick: int) -> None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            key = (pid, fields[19])  # pid and start time: a reused pid is another process
            cpu = (int(fields[11]) + int(fields[12])) / tick
            if key not in seen:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
                seen[key] = [kind_of(command), cpu, command[:300]]
            seen[key][1] = max(seen[key][1], cpu)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    tick, seen = os.sysconf("SC_CLK_TCK"), {}
    sample(seen, tick)
    before = {key: cpu for key, (_, cpu, _) in seen.items()}  # what the processes already running had used
    started = time.monotonic()
    command = subprocess.Popen(argv[argv.index("--") + 1:])
    while command.poll() is None:
        sample(seen, tick)
        time.sleep(0.5)
    totals, counts = defaultdict(float), defaultdict(int)
    for key, (kind, cpu, _) in seen.items():
        if cpu - before.get(key, 0.0) > 0:
            totals[kind] += cpu - before.get(key, 0.0)
            counts[kind] += 1
    total = sum(totals.values()) or 1.0
    print(f"\n{time.monotonic() - started:.1f} s wall, {total:.1f} CPU-s sampled", file=sys.stderr)
    for kind, cpu in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{cpu:9.1f} CPU-s {cpu / total:6.1%} {counts[kind]:6d} processes  {kind}", file=sys.stderr)
    if "--each" in argv[:argv.index("--")]:
        each = argv[argv.index("--each") + 1]
        with open(each, "w", encoding="utf-8") as out:
            for key, (kind, cpu, line) in sorted(seen.items(), key=lambda kv: -kv[1][1]):
                if cpu - before.get(key, 0.0) > 0:
                    out.write(f"{cpu - before.get(key, 0.0):.2f}\t{kind}\t{line}\n")
    return command.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
