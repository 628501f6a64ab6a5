"""The circuit breaker under faults a provider survives, and against a hanging provider.

    python bench/model_faults.py [--calls 120] [--in-flight 6] [--rate 0.3] [--seed 3] [--hang 3] [--read-timeout 20]

Part 1, **faults**: ``--calls`` model calls, ``--in-flight`` at a time, each a Prefect task with the
model retry policy (3 retries), against the fake Claude, which answers ``--rate`` of its requests with
a 529, a 500 or a hang past the 2 s read timeout.  It prints how many calls were answered, how many
an open breaker skipped (``CG-MODEL-CIRCUIT-OPEN``: their review would keep its offline result) and
how many failed all their attempts.  The endpoint answers most requests: the breaker should not open.

Part 2, **hang**: the fake hangs on every request (no answer at all) and its breaker is open, with a
cool-down of 3 s; ``--hang`` contracts are reviewed, each after the cool-down is over (so each one
meets the half-open breaker: the worst case), then the same contracts offline.  It prints the seconds
each review lost to the hanging provider (its time minus the offline review's) and the seconds of its
model step (the Prefect task runs that ask the model: the probe's wait is in there).  With a read timeout
of ``--read-timeout`` seconds (the blocks' default is 120), the goal is <= 5 s per contract.

Uses PREFECT_API_URL if set, else a temporary local server.  Contracts: held-out CUAD PDFs when
../shared/data/cuad exists, else the sample contracts with unique bytes (``bench/faults.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from faults import BENCH_KEY, PRICES, contracts  # noqa: E402
from prefect import flow, task  # noqa: E402
from prefect.runtime import task_run  # noqa: E402

from clausegate.providers.retry import MODEL_RETRY_POLICY  # noqa: E402

KINDS = ("overloaded", "server_error", "slow")  # 529, 500, no answer within the read timeout


def playbook(work: Path, extractor: str) -> str:
    path = work / f"bench-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"""
name: bench-model-faults
categories: [Revenue/Profit Sharing, Minimum Commitment, Cap on Liability, Uncapped Liability, Liquidated Damages]
high_risk: [Uncapped Liability, Liquidated Damages, Cap on Liability]
steps:
  extract: {{extractor: "{extractor}", retries: 3, retry_delay_seconds: [0.2, 0.4, 0.8], max_output_tokens: 1024}}
budgets: {{per_run_eur: 1.0, per_period_eur: 1000.0, max_tokens_per_run: 500000}}
""")
    return str(path)


def block(server, *, read_timeout: float, cooldown: float = 60.0) -> str:
    from pydantic import SecretStr

    from blocks.models import AnthropicModel

    name = f"bench-{uuid.uuid4().hex[:6]}"
    AnthropicModel(base_url=server.url, model="claude-bench", api_key=SecretStr(BENCH_KEY),
                   read_timeout_seconds=read_timeout, breaker_cooldown_seconds=cooldown,
                   **PRICES).save(name, overwrite=True)
    return f"anthropic-model/{name}"


def review(pdf: Path, book: str, out: Path):
    from flows.contract_review import contract_review

    started = time.perf_counter()
    state = asyncio.run(contract_review(str(pdf), playbook=book, out_dir=str(out), return_state=True))
    return state.result(), time.perf_counter() - started, state.state_details.flow_run_id


def model_step_seconds(flow_run_id) -> float:
    """Seconds the review's model-extraction task runs took (first attempt to final state); 0 without one."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sum((r.end_time - r.start_time).total_seconds() for r in runs
               if r.name.startswith("ask-extraction-model") and r.start_time and r.end_time)


@flow(name="bench-model-faults")
def many_calls(block: str, calls: int, in_flight: int) -> list[str]:
    """``calls`` model calls, ``in_flight`` at a time, each a task with Prefect retries (as reviews run them)."""
    outcomes: list[str] = []
    for start in range(0, calls, in_flight):
        futures = [one_call.submit(block, i) for i in range(start, min(calls, start + in_flight))]
        outcomes += [f.result() for f in futures]
    return outcomes


@task(**{**MODEL_RETRY_POLICY, "retries": 3, "retry_delay_seconds": [0.2, 0.4, 0.8], "retry_jitter_factor": None})
def one_call(block: str, i: int) -> str:
    from clausegate.config import load_model_block
    from clausegate.providers import ProviderCircuitOpen, ProviderError
    from clausegate.providers.retry import use_fallback_now

    try:
        load_model_block(block).get_client().complete("sys", f"call {i}", max_tokens=50,
                                                      use_fallback=use_fallback_now())
        return "answered"
    except ProviderCircuitOpen:
        return "breaker"
    except ProviderError as error:
        if error.transient and task_run.run_count <= 3:
            raise
        return "failed"


def run_faults(calls: int, in_flight: int, rate: float, seed: int) -> dict:
    from clausegate.demo.model_server import FakeModelServer
    from clausegate.providers.circuit import PrefectVariableStore

    server = FakeModelServer("anthropic", api_key=BENCH_KEY, fault_rate=rate, fault_kinds=KINDS, seed=seed,
                             slow_seconds=2.5).start()
    opened = []
    try:
        name = block(server, read_timeout=2.0)
        endpoint = server.url + "/v1/messages"
        started = time.perf_counter()
        outcomes = many_calls(name, calls, in_flight)
        state = PrefectVariableStore().read(endpoint)
        opened.append(bool(state and state.tripped))
        faults = sum(1 for r in server.requests if r.fault != "ok")
        return dict(n=calls, answered=outcomes.count("answered"), breaker=outcomes.count("breaker"),
                    failed=outcomes.count("failed"), requests=server.calls, faults=faults,
                    open_at_end=opened[0], seconds=time.perf_counter() - started)
    finally:
        server.stop()


def run_hang(pdfs: list[Path], work: Path, read_timeout: float) -> dict:
    from clausegate.demo.model_server import FakeModelServer
    from clausegate.providers.circuit import CircuitBreaker, PrefectVariableStore
    from clausegate.providers.errors import ProviderTimeout

    cooldown = 3.0
    offline_book = playbook(work, "offline")
    offline = []
    for pdf in pdfs:
        review(pdf, offline_book, work / "out-warm")  # parse and pre-filter cached for both runs
    for pdf in pdfs:
        offline.append(review(pdf, offline_book, work / "out-offline")[1])
    server = FakeModelServer("anthropic", api_key=BENCH_KEY).start()
    server.down("hang")
    try:
        book = playbook(work, block(server, read_timeout=read_timeout, cooldown=cooldown))
        endpoint = server.url + "/v1/messages"
        opener = CircuitBreaker(PrefectVariableStore(), failures=3, cooldown_seconds=cooldown, outage_seconds=0)
        for _ in range(3):  # the endpoint has been down for a while: its breaker is open
            opener.record_failure(endpoint, ProviderTimeout("no answer"))
        hung, steps, degraded = [], [], 0
        for pdf in pdfs:
            state = PrefectVariableStore().read(endpoint)
            time.sleep(max(0.0, state.open_until - time.time()) + 0.2 if state else 0.0)  # the cool-down is over
            result, seconds, run = review(pdf, book, work / "out-hang")
            hung.append(seconds)
            steps.append(model_step_seconds(run))
            degraded += result.status == "degraded"
        lost = [h - o for h, o in zip(hung, offline, strict=True)]
        return dict(n=len(pdfs), lost=lost, offline=offline, hung=hung, steps=steps, degraded=degraded,
                    calls=server.calls, probes=len(getattr(server, "probes", [])))
    finally:
        server.up()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=120, help="model calls at the fault rate (0: skip)")
    parser.add_argument("--in-flight", type=int, default=6, help="calls at once")
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--hang", type=int, default=3, help="contracts reviewed against the hanging provider (0: skip)")
    parser.add_argument("--read-timeout", type=float, default=20.0, help="the block's read timeout in part 2")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-model-faults-"))
    if args.calls:
        r = run_faults(args.calls, args.in_flight, args.rate, args.seed)
        print(f"\nfaults: {r['n']} model calls ({args.in_flight} at once, Prefect tasks with 3 retries), fake Claude "
              f"with {args.rate:.0%} faults ({', '.join(KINDS)}; read timeout 2 s), {r['seconds']:.0f} s")
        print(f"  answered: {r['answered']}/{r['n']}; skipped by an open breaker: {r['breaker']}; failed after the "
              f"retries: {r['failed']}; requests {r['requests']}, faults {r['faults']}; open at the end: "
              f"{r['open_at_end']}")
    if args.hang:
        r = run_hang(contracts(args.hang, work), work, args.read_timeout)
        print(f"\nhang: {r['n']} contracts, fake Claude hangs on every request, breaker open (cool-down 3 s, each "
              f"review after it), read timeout {args.read_timeout:g} s")
        print(f"  seconds lost per contract: {[round(s, 1) for s in r['lost']]} (median "
              f"{statistics.median(r['lost']):.1f}); offline {statistics.median(r['offline']):.1f} s, with the hang "
              f"{statistics.median(r['hung']):.1f} s; degraded {r['degraded']}/{r['n']}; model requests {r['calls']}, "
              f"probes {r['probes']}")
        print(f"  the model step's own seconds per contract: {[round(s, 1) for s in r['steps']]} (0: no model call)")


if __name__ == "__main__":
    main()
