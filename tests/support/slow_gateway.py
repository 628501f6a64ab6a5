"""A real gateway process whose resolver waits before it resolves, so a test can kill it between Slack's
acknowledgement and the resume::

    python -m tests.support.slow_gateway BLOCK PORT DELAY_SECONDS

The app, routes and resolver are the product's (``create_app``, ``load_config``, ``resolve_gate``); only
the pause before ``resolve_gate`` is added.
"""

from __future__ import annotations

import sys
import time

import uvicorn

from clausegate.gates import resolve_gate
from clausegate.gateway import create_app
from clausegate.gateway.app import load_config


def main(argv: list[str]) -> None:
    block, port, delay = argv[0], int(argv[1]), float(argv[2])
    config = load_config(block, require_slack=True, with_inbox=False)

    def slow_resolver(*args, **kwargs):
        time.sleep(delay)
        return resolve_gate(*args, **kwargs)

    config.resolver = slow_resolver
    uvicorn.run(create_app(config), host="127.0.0.1", port=port, log_level="info")


if __name__ == "__main__":
    main(sys.argv[1:])
