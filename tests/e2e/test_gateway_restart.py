"""A gateway that stops or restarts loses no acknowledged answer and forgets no request it has seen.

Real processes: ``clausegate gateway`` (and, to kill it between Slack's acknowledgement and the resume,
the same app with a resolver that first waits: ``python -m tests.support.slow_gateway``), the session
Prefect server, the fake Slack in this process; signed requests over HTTP; runs really Suspended at a
gate (``open_synthetic_gate``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from clausegate.demo.slack_server import FakeSlack
from tests.support.gates import (
    SIGNING_SECRET,
    open_synthetic_gate,
    slack_settings,
    state_of,
    suspend_at,
    wait_for_state,
)
from tests.support.prefect_server import free_port
from tests.support.processes import stop_process_group, wait_http
from tests.support.slack_client import SlackTestClient
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "clausegate")
BLOCK = "gateway-restart"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")]


@pytest.fixture(scope="module")
def fake():
    with FakeSlack(token="xoxb-restart-tests") as server:
        slack_settings(server).save(BLOCK, overwrite=True)
        yield server


class Gateway:
    """One gateway process on its own port: ``clausegate gateway``, or ``python -m MODULE BLOCK PORT *extra``."""

    def __init__(self, logs: Path, name: str, module: str | None = None, *extra: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = logs / f"{name}.log"
        command = ([sys.executable, "-m", module, BLOCK, str(self.port), *extra] if module else
                   [CLI, "gateway", "--port", str(self.port), "--block", BLOCK])
        self.proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                     stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        wait_http(self.url + "/healthz", self.proc, self.log, timeout=90)


def reply(fake, name: str, timeout: float = 60.0) -> str:
    found = wait_until(lambda: [r for r in fake.responses if r["name"] == name], timeout,
                       what=f"a reply on {name}", ignore=())
    return found[-1]["body"]["text"]


def test_a_click_acknowledged_by_a_killed_gateway_is_applied_by_the_next(fake, tmp_path):
    settings = slack_settings(fake)
    gate = open_synthetic_gate(settings, filename="killed.pdf")
    message = next(m for m in fake.messages.values() if gate.flow_run_id in str(m["blocks"]))
    slow = Gateway(tmp_path, "slow", "tests.support.slow_gateway", "60")
    try:
        slack = SlackTestClient(slow.url, SIGNING_SECRET, response_base=f"{fake.url}/actions")
        response = slack.click(message, "approve", user=("U0DANA", "dana"), response_url=fake.response_url("killed"))
        assert response.status_code == 200  # Slack was told the click arrived ...
        os.killpg(slow.proc.pid, signal.SIGKILL)  # ... and the gateway dies before it resumes the run
        slow.proc.wait(10)
    finally:
        stop_process_group(slow.proc)
    # the process has exited (waited for) during its resolver's 60 s pause: it never asked Prefect to resume
    assert state_of(gate.flow_run_id)[1] == "Suspended"

    after = Gateway(tmp_path, "after")
    try:
        wait_for_state(gate.flow_run_id, {"Resuming", "Scheduled"}, timeout=60)
        text = reply(fake, "killed")
        assert "approved by dana (U0DANA)" in text and "after a gateway restart" in text, text
    finally:
        stop_process_group(after.proc)


def test_a_refused_request_replayed_to_a_restarted_gateway_is_still_a_replay(fake, tmp_path):
    settings = slack_settings(fake)
    gate = open_synthetic_gate(settings, filename="replayed.pdf", suspend=False)  # Running: not at its gate yet
    first = Gateway(tmp_path, "first")
    try:
        slack = SlackTestClient(first.url, SIGNING_SECRET, response_base=f"{fake.url}/actions")
        response = slack.command("/resolve", f"{gate.flow_run_id} approve", response_url=fake.response_url("early"))
        assert response.status_code == 200
        assert "not waiting for a decision" in reply(fake, "early")
        body, headers, path = slack.last
    finally:
        stop_process_group(first.proc)

    suspend_at(gate)  # the run reaches its gate; the same signed bytes arrive again, at a new gateway process
    second = Gateway(tmp_path, "second")
    try:
        replay = SlackTestClient(second.url, SIGNING_SECRET).send(body, headers, path=path)
        assert replay.status_code == 403 and "replayed" in replay.text, replay.text
    finally:
        stop_process_group(second.proc)
    # the gateway has shut down (SIGTERM: uvicorn finishes what it was doing, and the process was waited for), so
    # anything the replay could have set off is over by now
    assert second.proc.returncode is not None and state_of(gate.flow_run_id)[1] == "Suspended"
