"""Benchmark: the two commands a newcomer runs, timed whole (process start to exit), on held-out CUAD contracts.

    python bench/commands.py [--reviews 5] [--batch 20] [--repeats 2] [--seed 11] [--skip-review] [--skip-batch]

1. `clausegate review FILE` (held-out contracts) with a local stack up in this project folder (one is started
   with no gateway and Slack off if none is up, and stopped at the end).
   Each contract is reviewed twice, as two copies with
   different bytes (so neither is a cache hit): once as a newcomer runs it (in the stack's warm-start
   process, clausegate/cli/launch.py) and once with ``--no-warm-start`` (in the command's own process),
   alternating which goes first.  Target: <= 3 s with a stack up.
2. `clausegate batch DIR` with no stack and no PREFECT_API_URL (a temporary server), on ``--batch`` contracts
   not reviewed before, ``--repeats`` times each way: as a newcomer runs it (the launcher starts the temporary
   server as the command starts, clausegate/stack/temporary_server.py) and without it (the command run
   without the launcher, so Prefect starts its temporary server when the flow first needs it).  A warm-up
   run on one contract migrates the temporary server's new database first (reported, not counted).  Prints
   the whole command's wall time and the rate the batch itself reports ("N contracts/min"), which is the
   figure the 20.9/min baseline is in; target >= 250 contracts/min; and checks the result table fits 80 columns.

Ratios between the two ways in one run matter, not absolute times (shared 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.cuad import cuad_dir, is_holdout  # noqa: E402  (after the path is set)

CLAUSEGATE = [sys.executable, "-c", "from clausegate.cli.launch import main; main()"]  # as the installed command
WITHOUT_LAUNCHER = [sys.executable, "-c", "import sys; from clausegate.cli import app; app(prog_name='clausegate')"]
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d+ \|")
RATE = re.compile(r"([\d.]+) contracts/min \(([\d.]+) s")


def held_out(n: int, seed: int, only_held_out: bool = True) -> list[Path]:
    files = sorted(p for p in (cuad_dir() / "full_contract_pdf").rglob("*.pdf")
                   if is_holdout(p.name) or not only_held_out)
    if len(files) < n:
        sys.exit(f"only {len(files)} {'held-out ' if only_held_out else ''}CUAD PDFs")
    return random.Random(seed).sample(files, n)


def unique_copy(pdf: Path, folder: Path, tag: str) -> Path:
    """The same contract with different bytes (a new content hash: no cache hit)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{tag}-{pdf.name.replace(' ', '_')}"
    target.write_bytes(pdf.read_bytes() + f"\n%bench {uuid.uuid4().hex}\n".encode())
    return target


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, done


def _check(done: subprocess.CompletedProcess, what: str) -> str:
    output = done.stdout + done.stderr
    if done.returncode not in (0, 1):  # 1: a review/batch with failures still ran; anything else is a bench error
        sys.exit(f"{what} failed ({done.returncode}):\n{output[-3000:]}")
    return output


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def bench_review(args, work: Path) -> None:
    env = {**os.environ, "CLAUSEGATE_PROJECT_DIR": str(REPO), "COLUMNS": "100"}
    env.pop("PREFECT_API_URL", None)
    from clausegate.cli.launch import api_listening, stack_state  # the launcher's own check

    os.environ["CLAUSEGATE_PROJECT_DIR"] = str(REPO)
    started = not api_listening(stack_state())
    if started:
        print("review: no stack up in this project; starting one (no gateway, Slack off) …", flush=True)
        up = subprocess.run([*CLAUSEGATE, "up", "--no-gateway", "--slack", "off", "--port", str(_free_port())],
                            env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
        if up.returncode != 0:
            sys.exit(f"clausegate up failed:\n{up.stdout[-3000:]}{up.stderr[-3000:]}")
    try:
        warm, plain = [], []
        for i, pdf in enumerate(held_out(args.reviews, args.seed)):
            a, b = unique_copy(pdf, work / "review", f"w{i}"), unique_copy(pdf, work / "review", f"p{i}")
            runs = [("warm", a, []), ("plain", b, ["--no-warm-start"])]
            for kind, copy, extra in (runs if i % 2 == 0 else runs[::-1]):
                seconds, done = timed([*CLAUSEGATE, "review", str(copy), "--out", str(work / "review-out"), *extra],
                                      env, work)
                output = _check(done, f"review {copy.name}")
                in_zygote = "warm-start process" in " ".join(output.split())
                if in_zygote != (kind == "warm"):
                    sys.exit(f"review {copy.name} ({kind}) ran {'in' if in_zygote else 'outside'} the warm-start "
                             f"process:\n{output[-2000:]}")
                (warm if kind == "warm" else plain).append(seconds)
                print(f"  {pdf.name[:60]:60s} {kind:5s} {seconds:5.2f} s (exit {done.returncode})", flush=True)
    finally:
        if started:
            subprocess.run([*CLAUSEGATE, "down"], env=env, cwd=REPO, capture_output=True, timeout=300)
    w, p = _median(warm), _median(plain)
    print(f"REVIEW with a stack up, median of {len(warm)}: in the stack's warm-start process {w:.2f} s, in the "
          f"command's own process (--no-warm-start) {p:.2f} s -> {p / w:.1f}x")
    print(f"  target <= 3 s with a stack up: {w:.2f} s -> {_met(w <= 3.0)}")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_batch(args, work: Path) -> None:
    project = work / "no-stack"  # no prefect.yaml, no state: no stack here
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CLAUSEGATE_PROJECT_DIR")}
    env.update(PREFECT_HOME=str(work / "prefect-home"), COLUMNS="80",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    pool = held_out(args.batch * args.repeats * 2 + 1, args.seed + 1, only_held_out=False)
    warmup = project / "warmup"
    unique_copy(pool.pop(), warmup, "warmup")
    seconds, done = timed([*CLAUSEGATE, "batch", str(warmup), "--out", str(work / "batch-out")], env, project)
    _check(done, "warm-up batch")
    print(f"batch: warm-up (first start on a new PREFECT_HOME, database migrations), 1 contract: {seconds:.1f} s")
    figures: dict[str, list[tuple[float, float]]] = {"launcher": [], "prefect": []}
    widest = 0
    for r in range(args.repeats):
        for kind, argv in (("launcher", CLAUSEGATE), ("prefect", WITHOUT_LAUNCHER))[:: 1 if r % 2 == 0 else -1]:
            folder = project / f"{kind}-{r}"
            for pdf in pool[: args.batch]:
                unique_copy(pdf, folder, kind)
            del pool[: args.batch]
            seconds, done = timed([*argv, "batch", str(folder), "--out", str(work / "batch-out")], env, project)
            output = _check(done, f"batch {folder.name}")
            rate = RATE.search(output.replace("\n", " "))
            if not rate or f"{args.batch} reviewed" not in output:
                sys.exit(f"batch {folder.name}: no '{args.batch} reviewed' / rate in its output:\n{output[-3000:]}")
            printed = [line for line in done.stdout.splitlines() if not LOG_LINE.match(line)]  # not Prefect's logs
            widest = max([widest, *map(len, printed)])
            figures[kind].append((seconds, float(rate.group(1))))
            print(f"  {kind:8s} run {r + 1}: {args.batch} contracts, whole command {seconds:5.1f} s "
                  f"({args.batch / seconds * 60:5.1f}/min); the batch reports {rate.group(1)} contracts/min "
                  f"({rate.group(2)} s)", flush=True)
    for kind, label in (("launcher", "as a newcomer runs it (temporary server started by the launcher)"),
                        ("prefect", "without the launcher (Prefect starts the temporary server on first use)")):
        wall = _median([s for s, _ in figures[kind]])
        rate = _median([r for _, r in figures[kind]])
        print(f"BATCH no stack, {label}: whole command {wall:.1f} s ({args.batch / wall * 60:.0f}/min), "
              f"batch's own rate {rate:.0f} contracts/min")
    new_wall, old_wall = _median([s for s, _ in figures["launcher"]]), _median([s for s, _ in figures["prefect"]])
    rate = _median([r for _, r in figures["launcher"]])
    print(f"  whole command, previous / now: {old_wall / new_wall:.2f}x")
    print(f"  target >= 250 contracts/min (the batch's own rate, as the issue measured it): {rate:.0f} -> "
          f"{_met(rate >= 250)}")
    print(f"  result table fits 80 columns: widest line {widest} -> {_met(widest <= 80)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reviews", type=int, default=5)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--skip-review", action="store_true")
    ap.add_argument("--skip-batch", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="clausegate-bench-commands-"))
    print(f"bench/commands: {os.cpu_count()} cores, load avg at start {os.getloadavg()[0]:.2f}")
    try:
        if not args.skip_review:
            bench_review(args, work)
        if not args.skip_batch:
            bench_batch(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load avg at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
