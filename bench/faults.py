"""Fault tolerance and spend accounting of the model path: N contracts through the contract-review
flow against the fake Claude and OpenAI-style servers at several fault rates, then a provider outage.

    python bench/faults.py [--contracts 50] [--rates 0,0.1,0.3] [--seed 7] [--outage 3] [--outage-seconds 30]
                           [--in-flight 1] [--kinds rate_limit,...] [--outage-kind slow|overloaded]

Per rate it prints: share of runs finished (Completed), share in an explicit partial/failed state
(Failed with a review that names the failing step), lost runs (neither), model calls per contract,
faults injected, wasted calls (calls beyond those the 0 % run needed for the same contracts; run
0 first), and the money, three ways that must agree:

* **€ billed**: what the fakes charged (every delivered HTTP 200, usable or not; their own records);
* **€ ledger**: the growth of the spend ledger as each budget period reads it (day, month, year:
  one ledger, so the three must be equal);
* **€ reports**: the sum of the reports' own spend (``cost.eur``) and, apart, spend reused from cache.

``abandoned`` counts answers the fakes computed after the client had hung up (a ``slow`` fault past
the read timeout): not delivered, so not charged by the fake and not in the ledger.  A real provider
may charge for them; the client cannot know how much.

``degraded`` counts reviews that lost their model review (status ``degraded``), ``breaker`` those
among them skipped by an open circuit breaker (``CG-MODEL-CIRCUIT-OPEN``): at a fault rate that
retries cure, both should be 0.  ``--in-flight N`` reviews N contracts at once (threads, as the batch's
``max_in_flight``); ``--kinds`` picks the injected fault kinds.

The outage part (``--outage N``, 0 to skip) runs N contracts while both providers hang (every request
sleeps ``--outage-seconds``, past the 2 s read timeout; ``--outage-kind overloaded``: every request
gets a 529 / an OpenAI-style 503 instead), and the same N offline; the difference per contract is
the time a provider outage costs.

Each rate uses fresh model blocks, so no model answer is reused across rates; parsing and the
pre-filter are cached after the first rate (they cost nothing and are not what is measured).
Uses PREFECT_API_URL if set, else a temporary local server.  Contracts: held-out CUAD PDFs when
../shared/data/cuad exists, else the sample contracts repeated with unique bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH_KEY = "sk-bench-0123456789"
FAULT_KINDS = ("rate_limit", "overloaded", "server_error", "unavailable", "slow", "not_json", "truncated")
PRICES = dict(eur_per_million_input_tokens=3.0, eur_per_million_output_tokens=15.0)
PERIODS = ("day", "month", "year")


def contracts(n: int, work: Path) -> list[Path]:
    from tools.cuad import cuad_available, cuad_dir, is_holdout, load_manifest

    if cuad_available():
        rows = [e for e in load_manifest() if is_holdout(e["filename"])]
        rows.sort(key=lambda e: (cuad_dir() / e["pdf"]).stat().st_size)  # the smaller ones: faster bench
        return [cuad_dir() / e["pdf"] for e in rows[:n]]
    samples = sorted((ROOT / "samples").glob("*.pdf"))
    out = []
    for i in range(n):
        copy = work / f"sample-{i}.pdf"
        copy.write_bytes(samples[i % len(samples)].read_bytes() + f"\n%copy {i}\n".encode())
        out.append(copy)
    return out


def playbook(work: Path, extractor: str, generator: str | None) -> str:
    path = work / f"bench-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"""
name: bench-faults
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability,
             Liquidated Damages]
high_risk: [Uncapped Liability, Liquidated Damages, Cap on Liability]
steps:
  extract: {{extractor: "{extractor}", retries: 5, retry_delay_seconds: [0.2, 0.4, 0.8, 1.6, 3.2],
             max_output_tokens: 1024}}
  generate: {{provider: {json.dumps(generator)}, retries: 5, retry_delay_seconds: [0.2, 0.4, 0.8, 1.6, 3.2]}}
budgets: {{per_run_eur: 1.0, per_period_eur: 1000.0, max_tokens_per_run: 500000}}
""")
    return str(path)


def ledger() -> dict[str, float]:
    from clausegate.ops.budget import spent_this_period

    return {period: spent_this_period(period) for period in PERIODS}


def start_servers(rate: float, seed: int, *, kinds=FAULT_KINDS, slow_seconds: float = 2.5):
    """Both fakes and their blocks (read timeout 2 s; the breaker's defaults)."""
    from pydantic import SecretStr

    from blocks.models import AnthropicModel, OpenAICompatibleModel
    from clausegate.demo.model_server import FakeModelServer
    from clausegate.demo.responders import contract_responder

    servers = {kind: FakeModelServer(kind, api_key=BENCH_KEY, responder=contract_responder, fault_rate=rate,
                                     fault_kinds=kinds, seed=seed, retry_after=1, slow_seconds=slow_seconds).start()
               for kind in ("anthropic", "openai")}
    tag = uuid.uuid4().hex[:6]
    common = {"api_key": SecretStr(BENCH_KEY), "read_timeout_seconds": 2.0, **PRICES}
    AnthropicModel(base_url=servers["anthropic"].url, model="claude-bench", fallback_model="claude-bench-fallback",
                   **common).save(f"bench-{tag}", overwrite=True)
    OpenAICompatibleModel(base_url=servers["openai"].url, model="gpt-bench", fallback_model="gpt-bench-fallback",
                          **common).save(f"bench-{tag}", overwrite=True)
    return servers, tag


DEGRADED: dict[str, int] = {}  # per review_all call: {"degraded": n, "breaker": n}


def review_all(pdfs: list[Path], book: str, out: Path,
               in_flight: int = 1) -> tuple[int, int, int, dict[str, int], float]:
    from concurrent.futures import ThreadPoolExecutor

    from flows.contract_review import contract_review

    def one(pdf: Path):
        return asyncio.run(contract_review(str(pdf), playbook=book, out_dir=str(out), return_state=True))

    finished = partial = lost = 0
    codes: dict[str, int] = {}
    DEGRADED.update(degraded=0, breaker=0)
    started = time.perf_counter()
    with ThreadPoolExecutor(max(1, in_flight)) as pool:
        states = list(pool.map(one, pdfs))
    for state in states:
        if state.is_completed():
            finished += 1
            review = state.result()
            if review.status == "degraded":
                DEGRADED["degraded"] += 1
                DEGRADED["breaker"] += any(w.code == "CG-MODEL-CIRCUIT-OPEN" for w in review.warnings)
        elif state.is_failed() and state.message and state.message.startswith("CG-"):
            partial += 1
            code = state.message.split(" ", 1)[0]
            codes[code] = codes.get(code, 0) + 1
        else:
            lost += 1
    return finished, partial, lost, codes, time.perf_counter() - started


def report_money(out: Path) -> tuple[float, float]:
    """(own spend, spend reused from cache) summed over the JSON reports in ``out``."""
    own = reused = 0.0
    for path in out.glob("*.json"):
        cost = json.loads(path.read_text()).get("cost") or {}
        own += float(cost.get("eur", 0.0))
        reused += float(cost.get("reused_eur", 0.0))
    return round(own, 6), round(reused, 6)


def run_rate(rate: float, pdfs: list[Path], work: Path, seed: int, *, kinds=FAULT_KINDS, in_flight: int = 1) -> dict:
    servers, tag = start_servers(rate, seed, kinds=kinds)
    book = playbook(work, f"anthropic-model/bench-{tag}", f"openai-compatible-model/bench-{tag}")
    out = work / f"out-{tag}"
    before = ledger()
    finished, partial, lost, codes, elapsed = review_all(pdfs, book, out, in_flight)
    degraded = dict(DEGRADED)
    after = ledger()
    time.sleep(0.5)  # let a handler thread still writing its last answer finish its record
    calls = sum(s.calls for s in servers.values())
    faults = sum(1 for s in servers.values() for r in s.requests if r.fault != "ok")
    billed = round(sum(s.billed_eur(PRICES["eur_per_million_input_tokens"], PRICES["eur_per_million_output_tokens"])
                       for s in servers.values()), 6)
    billed_calls = sum(len(s.billed) for s in servers.values())
    abandoned = sum(len(s.abandoned) for s in servers.values())
    own, reused = report_money(out)
    for s in servers.values():
        s.stop()
    return dict(rate=rate, n=len(pdfs), finished=finished, partial=partial, lost=lost, calls=calls, faults=faults,
                billed=billed, billed_calls=billed_calls, abandoned=abandoned,
                ledger={p: round(after[p] - before[p], 6) for p in PERIODS}, reports=own, reused=reused,
                seconds=elapsed, codes=codes, **degraded)


def run_outage(pdfs: list[Path], work: Path, seed: int, hang_seconds: float, kind: str = "slow") -> dict:
    """Both providers hang (every request sleeps past the read timeout; ``kind`` "overloaded": every
    request gets a 529) vs. the same contracts offline."""
    offline_book = playbook(work, "offline", None)
    _, _, _, _, offline = review_all(pdfs, offline_book, work / "out-offline")  # also warms parse/pre-filter
    _, _, _, _, offline = review_all(pdfs, offline_book, work / "out-offline")
    servers, tag = start_servers(1.0, seed, kinds=(kind,), slow_seconds=hang_seconds)
    book = playbook(work, f"anthropic-model/bench-{tag}", f"openai-compatible-model/bench-{tag}")
    finished, partial, lost, codes, hung = review_all(pdfs, book, work / f"out-outage-{tag}")
    calls = sum(s.calls for s in servers.values())
    for s in servers.values():
        s.stop()
    n = len(pdfs)
    return dict(n=n, offline=offline / n, hung=hung / n, lost_seconds=(hung - offline) / n, calls=calls / n,
                finished=finished, partial=partial, lost=lost, codes=codes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contracts", type=int, default=50)
    parser.add_argument("--rates", default="0,0.1,0.3")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--outage", type=int, default=3, help="contracts reviewed while the providers hang (0: skip)")
    parser.add_argument("--outage-seconds", type=float, default=30.0, help="how long a hung request sleeps")
    parser.add_argument("--outage-kind", choices=("slow", "overloaded"), default="slow")
    parser.add_argument("--in-flight", type=int, default=1, help="contracts reviewed at once")
    parser.add_argument("--kinds", default=",".join(FAULT_KINDS), help="comma-separated injected fault kinds")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-faults-"))
    pdfs = contracts(args.contracts, work)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    results = [run_rate(float(r), pdfs, work, args.seed, kinds=kinds, in_flight=args.in_flight)
               for r in args.rates.split(",")]
    outage = (run_outage(pdfs[: args.outage], work, args.seed, args.outage_seconds, args.outage_kind)
              if args.outage > 0 else None)
    base = results[0] if results and results[0]["rate"] == 0 else None
    for r in results:  # calls beyond those a fault-free run needed for the same contracts
        r["wasted"] = r["calls"] - base["calls"] if base else 0
    print(f"\n{len(pdfs)} contracts, fake Claude (extraction) + fake OpenAI-style (generation), seed {args.seed}, "
          f"{args.in_flight} in flight, faults {','.join(kinds)}")
    print(f"{'fault rate':>10} {'finished':>9} {'partial':>8} {'lost':>5} {'degraded':>9} {'breaker':>8} "
          f"{'calls/contract':>15} {'faults':>7} {'wasted':>7} {'wasted/faults':>14} {'min':>5}")
    for r in results:
        ratio = r["wasted"] / r["faults"] if r["faults"] else 0.0
        print(f"{r['rate']:>10.0%} {r['finished'] / r['n']:>9.1%} {r['partial'] / r['n']:>8.1%} {r['lost']:>5d} "
              f"{r['degraded']:>9d} {r['breaker']:>8d} {r['calls'] / r['n']:>15.2f}"
              f" {r['faults']:>7d} {r['wasted']:>7d} {ratio:>14.2f} "
              f"{r['seconds'] / 60:>5.1f}")
        if r["codes"]:
            print(f"{'':>10} partial-failure codes: {json.dumps(r['codes'])}")
    print("\nmoney (EUR; must match): billed by the fakes vs. the ledger as each period reads it vs. the reports")
    print(f"{'fault rate':>10} {'billed':>10} {'paid calls':>10} {'ledger day':>11} {'month':>10} {'year':>10} "
          f"{'reports':>10} {'reused':>8} {'match':>6} {'abandoned':>9}")
    for r in results:
        figures = [r["billed"], *r["ledger"].values(), r["reports"]]
        match = "yes" if max(figures) - min(figures) < 1e-6 else "NO"
        print(f"{r['rate']:>10.0%} {r['billed']:>10.6f} {r['billed_calls']:>10d} {r['ledger']['day']:>11.6f} "
              f"{r['ledger']['month']:>10.6f} {r['ledger']['year']:>10.6f} {r['reports']:>10.6f} {r['reused']:>8.6f} "
              f"{match:>6} {r['abandoned']:>9d}")
    if outage:
        what = (f"hang {args.outage_seconds:g} s per request" if args.outage_kind == "slow"
                else "answer 529 (OpenAI-style: 503 overloaded) to every request")
        print(f"\nprovider outage (both fakes {what}; read timeout 2 s, 5 retries): {outage['n']} contracts")
        print(f"  offline {outage['offline']:.1f} s/contract, during the outage {outage['hung']:.1f} s/contract "
              f"({outage['calls']:.1f} requests/contract): {outage['lost_seconds']:.1f} s lost per contract")
        print(f"  finished {outage['finished']}, partial {outage['partial']} {json.dumps(outage['codes'])}, "
              f"lost {outage['lost']}")


if __name__ == "__main__":
    main()
