"""Session-wide test set-up: one real Prefect server (SQLite) in a temporary PREFECT_HOME.

The environment is set in ``pytest_configure`` (before test modules import prefect), so every
in-process flow and every subprocess the tests start talk to the same server.  The server
itself starts lazily, on the first test that asks for the ``prefect_server`` fixture.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUAD_DIR = ROOT.parent / "shared" / "data" / "cuad"
sys.path.insert(0, str(ROOT))

from tests.support.prefect_server import PrefectServer  # noqa: E402

_SERVER: PrefectServer | None = None


def pytest_configure(config):
    global _SERVER
    home = Path(tempfile.mkdtemp(prefix="clausegate-test-prefect-"))
    _SERVER = PrefectServer(home)
    os.environ.update(_SERVER.env())


def pytest_unconfigure(config):
    if _SERVER and _SERVER.process is not None:
        # Flush Prefect's log and event workers while the server is still up (else ~75 s of retries at exit).
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker

        for worker in (APILogWorker, EventsWorker):
            try:
                worker.drain_all(timeout=10)
            except Exception:
                pass
    if _SERVER:
        _SERVER.stop()


@pytest.fixture(autouse=True)
def _no_open_circuit_breakers():
    """Each test starts with every provider circuit closed.

    Breaker state is a Prefect Variable per endpoint URL, and fake servers get ports the OS hands out again:
    a breaker a test left open for 127.0.0.1:PORT would otherwise skip a later test's calls to that port.
    """
    yield
    if _SERVER is None or _SERVER.process is None:
        return
    import httpx

    from clausegate.providers.circuit import VARIABLE_PREFIX

    auth = tuple(_SERVER.auth_string.split(":", 1))
    with httpx.Client(base_url=_SERVER.api_url, auth=auth, timeout=10) as client:
        found = client.post("/variables/filter", json={"variables": {"name": {"like_": VARIABLE_PREFIX}}}).json()
        for variable in found if isinstance(found, list) else []:
            client.delete(f"/variables/name/{variable['name']}")


@pytest.fixture(scope="session")
def prefect_server() -> PrefectServer:
    assert _SERVER is not None
    if _SERVER.process is None:
        _SERVER.start()
    return _SERVER


@pytest.fixture(scope="session")
def cuad_dir() -> Path:
    if not CUAD_DIR.is_dir():
        pytest.skip("../shared/data/cuad is not present")
    return CUAD_DIR
