"""Fault tolerance of the model path: N contracts through the contract-review flow against the fake
Claude and OpenAI-style servers at several fault rates.

    python bench/faults.py [--contracts 50] [--rates 0,0.1,0.3] [--seed 7]

Per rate it prints: share of runs finished (Completed), share in an explicit partial/failed state
(Failed with a review that names the failing step), lost runs (neither), model calls per contract,
faults injected, wasted calls (calls beyond those the 0 % run needed for the same contracts; run
0 first), € spent (the spend ledger: every paid answer, used or not) vs. € at 0 %.
Each rate uses fresh model blocks, so no model answer is reused across rates; parsing and the
pre-filter are cached after the first rate (they cost nothing and are not what is measured).
Uses PREFECT_API_URL if set, else a temporary local server.  Contracts: held-out CUAD PDFs when
../shared/data/cuad exists, else the sample contracts repeated with unique bytes.
"""

from __future__ import annotations

import argparse
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


def contracts(n: int, work: Path) -> list[Path]:
    from clausegate.cuad_split import cuad_available, cuad_dir, is_holdout, load_manifest

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


def playbook(work: Path, extractor: str, generator: str) -> str:
    path = work / f"bench-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"""
name: bench-faults
categories: [Revenue/Profit Sharing, Minimum Commitment, Price Restrictions, Cap on Liability, Uncapped Liability, Liquidated Damages]
high_risk: [Uncapped Liability, Liquidated Damages, Cap on Liability]
steps:
  extract: {{extractor: "{extractor}", retries: 5, retry_delay_seconds: [0.2, 0.4, 0.8, 1.6, 3.2], max_output_tokens: 1024}}
  generate: {{provider: "{generator}", retries: 5, retry_delay_seconds: [0.2, 0.4, 0.8, 1.6, 3.2]}}
budgets: {{per_run_eur: 1.0, per_period_eur: 1000.0, max_tokens_per_run: 500000}}
""")
    return str(path)


def run_rate(rate: float, pdfs: list[Path], work: Path, seed: int) -> dict:
    from pydantic import SecretStr

    from blocks.models import AnthropicModel, OpenAICompatibleModel
    from clausegate.fakes.model_server import FakeModelServer
    from clausegate.fakes.responders import contract_responder
    from flows.contract_review import contract_review

    servers = {kind: FakeModelServer(kind, api_key=BENCH_KEY, responder=contract_responder, fault_rate=rate,
                                     fault_kinds=FAULT_KINDS, seed=seed, retry_after=1, slow_seconds=2.5).start()
               for kind in ("anthropic", "openai")}
    tag = uuid.uuid4().hex[:6]
    prices = dict(eur_per_million_input_tokens=3.0, eur_per_million_output_tokens=15.0)
    AnthropicModel(base_url=servers["anthropic"].url, model="claude-bench", fallback_model="claude-bench-fallback",
                   api_key=SecretStr(BENCH_KEY), read_timeout_seconds=2.0, **prices).save(f"bench-{tag}", overwrite=True)
    OpenAICompatibleModel(base_url=servers["openai"].url, model="gpt-bench", fallback_model="gpt-bench-fallback",
                          api_key=SecretStr(BENCH_KEY), read_timeout_seconds=2.0, **prices).save(f"bench-{tag}", overwrite=True)
    book = playbook(work, f"anthropic-model/bench-{tag}", f"openai-compatible-model/bench-{tag}")
    from clausegate.budget import spent_this_period

    finished = partial = lost = 0
    spent_before = spent_this_period("year")
    codes: dict[str, int] = {}
    started = time.perf_counter()
    for pdf in pdfs:
        state = contract_review(str(pdf), playbook=book, out_dir=str(work / f"out-{tag}"), return_state=True)
        if state.is_completed():
            finished += 1
        elif state.is_failed() and state.message and state.message.startswith("CG-"):
            partial += 1
            code = state.message.split(" ", 1)[0]
            codes[code] = codes.get(code, 0) + 1
        else:
            lost += 1
    elapsed = time.perf_counter() - started
    calls = sum(s.calls for s in servers.values())
    faults = sum(1 for s in servers.values() for r in s.requests if r.fault != "ok")
    eur = spent_this_period("year") - spent_before  # the ledger: every paid answer, used or not
    for s in servers.values():
        s.stop()
    return dict(rate=rate, n=len(pdfs), finished=finished, partial=partial, lost=lost, calls=calls, faults=faults,
                eur=eur, seconds=elapsed, codes=codes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contracts", type=int, default=50)
    parser.add_argument("--rates", default="0,0.1,0.3")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cg-faults-"))
    pdfs = contracts(args.contracts, work)
    results = [run_rate(float(r), pdfs, work, args.seed) for r in args.rates.split(",")]
    base = results[0] if results and results[0]["rate"] == 0 else None
    base_eur = base["eur"] if base else None
    for r in results:  # calls beyond those a fault-free run needed for the same contracts
        r["wasted"] = r["calls"] - base["calls"] if base else 0
    print(f"\n{len(pdfs)} contracts, fake Claude (extraction) + fake OpenAI-style (generation), seed {args.seed}")
    print(f"{'fault rate':>10} {'finished':>9} {'partial':>8} {'lost':>5} {'calls/contract':>15} {'faults':>7} "
          f"{'wasted':>7} {'wasted/faults':>14} {'€ spent':>9} {'€ vs 0%':>8} {'min':>5}")
    for r in results:
        ratio = r["wasted"] / r["faults"] if r["faults"] else 0.0
        vs = f"{r['eur'] / base_eur:.2f}x" if base_eur else "-"
        print(f"{r['rate']:>10.0%} {r['finished'] / r['n']:>9.1%} {r['partial'] / r['n']:>8.1%} {r['lost']:>5d} "
              f"{r['calls'] / r['n']:>15.2f} {r['faults']:>7d} {r['wasted']:>7d} {ratio:>14.2f} {r['eur']:>9.4f} "
              f"{vs:>8} {r['seconds'] / 60:>5.1f}")
        if r["codes"]:
            print(f"{'':>10} partial-failure codes: {json.dumps(r['codes'])}")


if __name__ == "__main__":
    main()
