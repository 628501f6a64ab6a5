"""Fixtures shared by the whole suite, and the session's one real Prefect server (embedded PostgreSQL, temporary
PREFECT_HOME; ``CLAUSEGATE_TEST_DATABASE=sqlite`` for SQLite, tests/support/prefect_server.py).

Prefect reads its settings when it is first imported, so the server's environment (PREFECT_HOME, API URL,
API credential) is set right here, when pytest imports this file: before any test module, per-folder
conftest.py or support module is imported, and before this file's own imports that load prefect (hence
their ``noqa: E402``). Every in-process flow and every subprocess the tests start talks to that one server;
it starts lazily, on the first test that asks for the ``prefect_server`` fixture.

Fixtures here: ``prefect_server``, ``cuad_dir``, ``drained_prefect_workers`` (module scope, opt in);
the fake model servers ``anthropic_server`` / ``openai_server`` / ``model_server`` (one run per protocol);
``no_tesseract``; and, for every test, ``fresh_cooldowns`` and ``_no_open_circuit_breakers``.
Folder-only fixtures live in tests/<folder>/conftest.py; helpers (plain functions) in tests/support/.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.prefect_server import PrefectServer

assert "prefect" not in sys.modules, "tests/conftest.py must set the Prefect environment before prefect is imported"
_SERVER = PrefectServer(Path(tempfile.mkdtemp(prefix="clausegate-test-prefect-")))
os.environ.update(_SERVER.env())

from prefect.events.worker import EventsWorker  # noqa: E402  (prefect: after its environment, above)
from prefect.logging.handlers import APILogWorker  # noqa: E402

from clausegate.cli.server import restore_prefect_settings  # noqa: E402
from clausegate.demo.model_server import FakeModelServer  # noqa: E402
from clausegate.providers.circuit import VARIABLE_PREFIX  # noqa: E402
from clausegate.providers.cooldown import COOLDOWNS, CooldownRegistry  # noqa: E402
from tests.support.fake_model import fake_model_server  # noqa: E402
from tests.support.unit_costs import scope_of, unit_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CUAD_DIR = ROOT.parent / "shared" / "data" / "cuad"


def pytest_unconfigure(config):
    while _CLIENTS:
        _CLIENTS.pop().close()
    if _SERVER.process is not None:
        _drain_prefect_workers(at_exit=True)  # while the server is still up (else ~75 s of retries at exit)
    _SERVER.stop()


def _drain_prefect_workers(*, at_exit: bool) -> None:
    """Flush Prefect's log and event workers (in-process flows queue their logs and events there)."""
    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=10, at_exit=at_exit)
        except Exception:
            pass


# ------------------------------------------------------------------------------------ Prefect server
@pytest.fixture(scope="session")
def prefect_server() -> PrefectServer:
    if _SERVER.process is None:
        _SERVER.start()
    return _SERVER


@pytest.fixture(scope="module")
def drained_prefect_workers():
    """Flush Prefect's log and event workers after a module's in-process flows, while the server is still up.

    Otherwise they flush at interpreter exit, after the session server has stopped, and retry for
    over a minute ("Error logging to API ... All connection attempts failed").
    """
    yield
    _drain_prefect_workers(at_exit=False)


@pytest.fixture(autouse=True)
def _no_open_circuit_breakers(request: pytest.FixtureRequest):
    """Each test starts with every provider circuit closed.

    Breaker state is a Prefect Variable per endpoint URL, and fake servers get ports the OS hands out again:
    a breaker a test left open for 127.0.0.1:PORT would otherwise skip a later test's calls to that port.
    Only a test that uses the session server can leave one (a breaker writes its Variable only inside a flow or
    task run, clausegate/providers/circuit.py ``default_store``), so only such a test is followed by the check.
    """
    yield
    if _SERVER.process is None or "prefect_server" not in request.fixturenames:
        return
    client = _server_client()
    found = client.post("/variables/filter", json={"variables": {"name": {"like_": VARIABLE_PREFIX}}}).json()
    for variable in found if isinstance(found, list) else []:
        client.delete(f"/variables/name/{variable['name']}")


_CLIENTS: list[httpx.Client] = []


def _server_client() -> httpx.Client:
    """One keep-alive client to the session server for the per-test checks: building an ``httpx.Client`` (its TLS
    context) costs ~50 ms of CPU, paid once instead of after each of the suite's tests."""
    if not _CLIENTS:
        _CLIENTS.append(httpx.Client(base_url=_SERVER.api_url, auth=tuple(_SERVER.auth_string.split(":", 1)),
                                     timeout=10))
    return _CLIENTS[0]


@pytest.fixture(autouse=True)
def _cli_settings_do_not_leak():
    """A command run in-process (``CliRunner``) enters Prefect settings for the rest of its process: the API
    credential of the stack it found, the stack's URL (clausegate/cli/typer_app.py).  A test that ran one against a
    stack of its own would leave the next tests talking to the session server with that stack's credential."""
    yield
    restore_prefect_settings()


# ------------------------------------------------------------------------------------ data
@pytest.fixture(scope="session")
def cuad_dir() -> Path:
    if not CUAD_DIR.is_dir():
        pytest.skip("../shared/data/cuad is not present")
    return CUAD_DIR


# ------------------------------------------------------------------------------------ fake model servers
# Function-scoped (starting one takes milliseconds); bind 127.0.0.1 on a free port and expect
# tests.support.fake_model.KEY. Build a client with tests.support.fake_model.client_for(server).
@pytest.fixture
def anthropic_server() -> Iterator[FakeModelServer]:
    with fake_model_server("anthropic") as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[FakeModelServer]:
    with fake_model_server("openai") as server:
        yield server


@pytest.fixture(params=["anthropic", "openai"])
def model_server(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    """Runs the test once per protocol."""
    with fake_model_server(request.param) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_cooldowns() -> Iterator[CooldownRegistry]:
    """The process-wide rate-limit cooldowns are empty before and after each test: one test's 429 never
    delays the next test's calls."""
    COOLDOWNS.clear()
    yield COOLDOWNS
    COOLDOWNS.clear()


# ------------------------------------------------------------------------------------ OCR
@pytest.fixture
def no_tesseract(monkeypatch, tmp_path):
    """A PATH on which no `tesseract` exists (the test machine may or may not have one)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("tesseract") is None


# ------------------------------------------------------------------ order and progress
_FOLDERS = ("unit", "integration", "e2e")
_FOLDER_NOTES = {"unit": "plain Python, no server",
                 "integration": "flows and services against the session Prefect server",
                 "e2e": "real processes: deployments, workers, the stack; each test takes tens of seconds"}


def _folder(item: pytest.Item) -> str:
    parts = Path(str(item.fspath)).relative_to(ROOT).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"


def pytest_collection_modifyitems(session, config, items):
    """Unit tests first, then integration, then the slow end-to-end tests (a stable sort: each module's tests
    stay together, in their order), so a failure in fast code shows within the first minutes."""
    items.sort(key=lambda item: _FOLDERS.index(_folder(item)) if _folder(item) in _FOLDERS else len(_FOLDERS))
    config._clausegate_counts = {name: sum(_folder(i) == name for i in items) for name in _FOLDERS}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent when xdist is not installed
def pytest_xdist_make_scheduler(config, log):
    """Under xdist (``-n``, the default in pyproject.toml with ``--dist loadscope``) each module is one work unit
    (its module fixtures start once; a few long tests are units of their own), handed out longest first
    (tests/support/unit_costs.py): the long end-to-end units start at once on every worker and the short unit
    modules fill the gaps at the end, so no worker runs a long unit alone at the tail while the others are idle."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 (only under xdist)

    class LongestFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            longest = max(self.workqueue, key=lambda scope: unit_seconds(scope, len(self.workqueue[scope])))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


def pytest_runtest_logstart(nodeid, location):
    """A line when the run enters tests/unit, tests/integration or tests/e2e: how many tests and what they are,
    so the long end-to-end stretch does not look like a hang."""
    folder = nodeid.split("/")[1] if nodeid.startswith("tests/") and nodeid.count("/") >= 2 else "other"
    config = _PYTEST_CONFIG[0] if _PYTEST_CONFIG else None
    if config is None or folder == getattr(config, "_clausegate_folder", None) or folder not in _FOLDERS:
        return
    if config.pluginmanager.hasplugin("dsession"):  # workers interleave the folders: no headers under xdist
        return
    config._clausegate_folder = folder
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    count = getattr(config, "_clausegate_counts", {}).get(folder, 0)
    if reporter is not None and count:
        if getattr(reporter._tw, "width_of_current_line", 0):
            reporter.write_line("")  # end the line of dots first
        reporter.write_line(f"tests/{folder}: {count} tests ({_FOLDER_NOTES[folder]})", bold=True)


_PYTEST_CONFIG: list = []


def pytest_configure(config):
    _PYTEST_CONFIG.append(config)


