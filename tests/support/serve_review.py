"""Serve a flow as a deployment for the end-to-end tests, the way `clausegate up` runs flow runs::

    python -m tests.support.serve_review NAME [LIMIT]

registers ``contract-review/NAME`` on the Prefect server of the environment, on a process work pool of its own
(``served-NAME``) whose flow-run command is the warm start (clausegate/stack/warmstart.py), and runs a process
worker for it (at most LIMIT runs at a time, default 4) until stopped. Each flow run, and each resume of a
suspended one, forks from the warm-start process this command starts beside the worker instead of starting a new
Python (`serve` starts one per run: about 4 CPU-seconds of imports and the offline model each time).
``PREFECT_WORKER_QUERY_SECONDS`` sets how fast runs are picked up. Start it with
``tests.support.processes.start_served`` (which waits for the deployment); the worker, the warm-start process and
every run are in its process group.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prefect.flows import Flow
from prefect.workers.process import ProcessWorker

from clausegate.stack.warmstart import WARM_SOCKET_ENV, serve_argv, warm_command

ROOT = Path(__file__).resolve().parents[2]


def _warm_pool_template() -> dict:
    template = ProcessWorker.get_default_base_job_template()
    template["variables"]["properties"]["command"]["default"] = warm_command()
    return template


def _start_warm_start() -> Path:
    """The zygote flow runs fork from, in this process group; its socket once it listens."""
    sock = Path(tempfile.mkdtemp(prefix="served-warm-")) / "warm.sock"
    zygote = subprocess.Popen(serve_argv(sock), cwd=ROOT, stdout=sys.stdout, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not sock.exists():
        if zygote.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the warm-start process did not start (exit code {zygote.poll()})")
        time.sleep(0.1)
    return sock


def serve_warm(flow: Flow, name: str, limit: int) -> None:
    """Deploy ``flow`` as ``NAME`` on the pool ``served-NAME`` and work that pool with warm-started runs."""
    os.environ[WARM_SOCKET_ENV] = str(_start_warm_start())
    pool = f"served-{name}"
    template = _warm_pool_template()
    worker = ProcessWorker(work_pool_name=pool, name=pool, limit=limit, base_job_template=template)

    async def work() -> None:
        async with worker:
            await worker.sync_with_backend()  # creates the pool with the warm command
            deployment = await flow.ato_deployment(name=name, work_pool_name=pool,
                                                   job_variables={"working_dir": str(ROOT)})
            await deployment.aapply()
            await worker.start()

    asyncio.run(work())


def main(argv: list[str]) -> None:
    from flows.contract_review import contract_review

    name, limit = argv[0], int(argv[1]) if len(argv) > 1 else 4
    serve_warm(contract_review, name, limit)


if __name__ == "__main__":
    main(sys.argv[1:])
