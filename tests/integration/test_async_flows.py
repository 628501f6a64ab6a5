"""Our flows are ``async def`` around synchronous bodies (clausegate/pipeline/sync_body.py), against a real server.

What the async engine must not cost us: the body still runs as in a sync flow (Prefect's sync-or-async
functions run synchronously there, one API client, the run's own thread so task timeouts interrupt a
blocking call), a ``Failed`` state or an ``Abort`` from the body still decides the run, heartbeats are
still sent (zombie detection).  Every flow in flows/ is async: a sync one waits up to ~1 s at its end.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import time
import uuid
from pathlib import Path

import pytest
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from prefect.exceptions import Abort
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.states import Failed

from clausegate.pipeline.sync_body import async_body

pytestmark = pytest.mark.usefixtures("prefect_server", "drained_prefect_workers")
FLOWS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "flows").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", FLOWS)
def test_every_flow_is_async(module):
    flows = [obj for obj in vars(importlib.import_module(f"flows.{module}")).values()
             if getattr(obj, "isasync", None) is not None and hasattr(obj, "fn")]
    assert flows and all(f.isasync for f in flows), f"flows/{module}.py: a sync flow waits ~1 s at its end"


@task(timeout_seconds=1)
def sleepy() -> str:
    time.sleep(8)  # one blocking call: only SIGALRM (the run's main thread) cuts it short
    return "slept"


def body_as_a_sync_flow_sees_it(key: str) -> dict:
    artifact = create_markdown_artifact(markdown="x", key=key)  # sync-or-async: must run, not return a coroutine
    with get_client(sync_client=True) as one, get_client(sync_client=True) as two:
        same_client = one is two
    started = time.monotonic()
    try:
        sleepy()
        outcome = "not cut"
    except TimeoutError:
        outcome = "cut"
    return {"artifact": str(artifact), "same_client": same_client, "main_thread": threading.current_thread()
            is threading.main_thread(), "timeout": outcome, "seconds": time.monotonic() - started}


@pytest.mark.timeout(300, method="thread")  # pytest-timeout's default SIGALRM would take Prefect's alarm away
def test_the_body_runs_as_in_a_sync_flow_with_heartbeats_and_no_wait_at_the_end():
    probe = flow(name="async-probe")(async_body(body_as_a_sync_flow_sees_it))
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: 30}):
        state = asyncio.run(probe(f"probe-{uuid.uuid4().hex[:8]}", return_state=True))
    assert state.is_completed(), state.message
    seen = state.result()
    uuid.UUID(seen["artifact"])  # created synchronously: an id, not "<coroutine ...>"
    assert seen["same_client"] and seen["main_thread"]
    assert seen["timeout"] == "cut" and seen["seconds"] < 5, seen  # the task timeout interrupted time.sleep(8)
    run_id = state.state_details.flow_run_id
    deadline = time.monotonic() + 30
    while not (heartbeats := _heartbeats(run_id)) and time.monotonic() < deadline:
        time.sleep(1)
    assert heartbeats, "the async engine must still send the run's heartbeats (zombie detection)"


def _heartbeats(run_id) -> list:
    with get_client(sync_client=True) as client:
        page = client.read_events(EventFilter(event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                                              resource=EventResourceFilter(id=[f"prefect.flow-run.{run_id}"])), limit=5)
    return page.events


def failing(kind: str):
    if kind == "state":
        return Failed(message="CG-TEST: stopped")
    raise Abort("CG-TEST: not this attempt's run")


@pytest.mark.parametrize("kind", ["state", "abort"])
def test_a_failed_state_or_an_abort_from_the_body_decides_the_run(kind):
    probe = flow(name="async-probe-fail")(async_body(failing))
    if kind == "state":
        state = asyncio.run(probe(kind, return_state=True))
        assert state.is_failed() and "CG-TEST: stopped" in state.message
    else:
        with pytest.raises(Abort, match="not this attempt"):
            asyncio.run(probe(kind, return_state=True))
