"""Serve the contract-review flow as a deployment, for the end-to-end tests that need a real runner
(no worker, no ``prefect deploy``)::

    python -m tests.support.serve_review NAME [LIMIT]

registers ``contract-review/NAME`` on the Prefect server of the environment and runs its flow runs
(at most LIMIT at a time, default 4) until stopped; ``PREFECT_RUNNER_POLL_FREQUENCY`` sets how fast it
picks them up. Start it with ``tests.support.processes.start_served`` (which waits for the deployment).
"""

from __future__ import annotations

import sys

from prefect import serve

from flows.contract_review import contract_review


def main(argv: list[str]) -> None:
    name, limit = argv[0], int(argv[1]) if len(argv) > 1 else 4
    serve(contract_review.to_deployment(name=name), limit=limit, pause_on_shutdown=False)


if __name__ == "__main__":
    main(sys.argv[1:])
