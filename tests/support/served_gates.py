"""The served stack the gate end-to-end tests share (tests/e2e/test_gates_e2e.py, test_gate_roles.py): the session
Prefect server, the contract-review deployment served by a warm-started process worker
(``python -m tests.support.serve_review NAME SLOTS``),
the gateway (``clausegate gateway``) and the fake Slack Web API (real HTTP, in the test's process); and the gated
contract each of their runs reviews."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from clausegate.demo.slack_server import FakeSlack
from tests.support.contracts import GATED_PAGES
from tests.support.gates import SIGNING_SECRET, slack_settings
from tests.support.pdf_factory import make_text_pdf
from tests.support.prefect_server import free_port
from tests.support.processes import start_served, stop_process_group, wait_http
from tests.support.slack_client import SlackTestClient

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "clausegate")


@dataclass
class GateStack:
    fake: FakeSlack
    gateway_url: str
    api_url: str
    slack: SlackTestClient  # signed requests to the gateway, as Slack sends them


@contextmanager
def served_gate_stack(prefect_server, logs: Path, *, name: str, slots: int, token: str,
                      **slack_overrides) -> Iterator[GateStack]:
    """The stack with a SlackSettings block and a deployment both called ``name`` (``slots`` runs at once); the
    block's fields as :func:`tests.support.gates.slack_settings` makes them, with ``slack_overrides``."""
    fake = FakeSlack(token=token).start()
    slack_settings(fake, **slack_overrides).save(name, overwrite=True)
    env = {**os.environ, "CLAUSEGATE_SLACK_BLOCK": name, "PYTHONPATH": str(ROOT)}
    serve_log, gateway_log = logs / "serve.log", logs / "gateway.log"
    port = free_port()
    gateway = subprocess.Popen([CLI, "gateway", "--port", str(port), "--block", name], cwd=ROOT, env=env,
                               stdout=open(gateway_log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    serve = None
    try:
        serve = start_served(["tests.support.serve_review", name, str(slots)], f"contract-review/{name}", serve_log,
                             env)
        wait_http(f"http://127.0.0.1:{port}/healthz", gateway, gateway_log)
        url = f"http://127.0.0.1:{port}"
        yield GateStack(fake, url, prefect_server.api_url,
                        SlackTestClient(url, SIGNING_SECRET, response_base=f"{fake.url}/actions"))
    finally:
        stop_process_group(gateway)
        if serve is not None:
            stop_process_group(serve)
        fake.stop()
        print(f"\nserve log: {serve_log}\ngateway log: {gateway_log}")


def start_gated_review(deployment: str, label: str, folder: Path, playbook: str) -> tuple[str, Path]:
    """A run of ``contract-review/<deployment>`` on the gated contract (uncapped liability and liquidated damages;
    a reference of its own, so no two runs share a cache): (its run id, its reports folder)."""
    from prefect.deployments import run_deployment

    pages = [GATED_PAGES[0] + f"\nReference: CG-{uuid.uuid4().hex[:10].upper()} ({label}).", *GATED_PAGES[1:]]
    pdf = make_text_pdf(folder / f"{label}.pdf", pages)
    out = folder / "reports"
    run = run_deployment(f"contract-review/{deployment}", timeout=0,
                         parameters={"source": str(pdf), "playbook": playbook, "out_dir": str(out)})
    return str(run.id), out
