"""The gateway's one Prefect client (clausegate/inbox/connection.py) against a local HTTP server that
answers as a busy Prefect server does: 503 while its database is locked, slowly under load.

* A 503 is retried within about a second (not after Prefect's 2 s, 4 s, ... backoff), with the same body.
* Writes go out at most ``WRITES_AT_ONCE`` at a time, however many requests want one; reads are not held.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import time

import httpx
import pytest
from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

from clausegate.inbox.connection import QUICK_RETRY_PAUSES, WRITES_AT_ONCE, QuickRetry, SharedClient


class BusyPrefect(http.server.ThreadingHTTPServer):
    """Answers POST /api/busy with 503 ``failures`` times, then 200; POST /api/slow after 0.2 s, counting
    how many it holds at once; everything else (the client's CSRF probe) 404."""

    daemon_threads = True

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.bodies: list[bytes] = []
        self.in_flight = 0
        self.most_at_once = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/api"


class Handler(http.server.BaseHTTPRequestHandler):
    server: BusyPrefect

    def log_message(self, *args) -> None:
        pass

    def _answer(self, status: int, body: bytes = b"{}") -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(404, b'{"detail": "Not Found"}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/api/busy":
            with self.server.lock:
                self.server.bodies.append(body)
                failing = len(self.server.bodies) <= self.server.failures
            if failing:  # what prefect.server answers for "database is locked"
                self._answer(503, b'{"exception_message": "Service Unavailable"}')
            else:
                self._answer(200, body)
        elif self.path == "/api/slow":
            with self.server.lock:
                self.server.in_flight += 1
                self.server.most_at_once = max(self.server.most_at_once, self.server.in_flight)
            time.sleep(0.2)
            with self.server.lock:
                self.server.in_flight -= 1
            self._answer(200)
        else:
            self._answer(404)


@pytest.fixture
def busy():
    servers: list[BusyPrefect] = []

    def start(failures: int = 0) -> BusyPrefect:
        server = BusyPrefect(failures)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_503_is_retried_quickly_with_the_same_body(busy):
    server = busy(failures=2)

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=QuickRetry(httpx.AsyncHTTPTransport())) as client:
            return await client.post(f"{server.url}/busy", json={"run": "one"})

    started = time.monotonic()
    response = asyncio.run(post())
    assert response.status_code == 200 and response.json() == {"run": "one"}
    assert time.monotonic() - started < 1.5  # Prefect's own client waits ~2 s before its first retry
    assert server.bodies == [b'{"run":"one"}'] * 3


def test_a_server_that_stays_busy_gets_its_503_back_after_the_quick_retries(busy):
    server = busy(failures=100)

    async def post() -> httpx.Response:
        async with httpx.AsyncClient(transport=QuickRetry(httpx.AsyncHTTPTransport())) as client:
            return await client.post(f"{server.url}/busy", json={})

    assert asyncio.run(post()).status_code == 503  # then Prefect's client retries (its own backoff) or fails
    assert len(server.bodies) == len(QUICK_RETRY_PAUSES) + 1


def test_writes_go_out_a_few_at_a_time_through_one_client(busy):
    server = busy()
    shared = SharedClient()

    async def burst() -> list[int]:
        async def write() -> int:
            async with shared.writing() as client:
                return (await client.request("POST", "/slow")).status_code

        try:
            codes = await asyncio.gather(*(write() for _ in range(10)))
            first = await shared.get()
            assert await shared.get() is first  # one client for every request of the loop
            return codes
        finally:
            await shared.aclose()

    with temporary_settings(updates={PREFECT_API_URL: server.url, PREFECT_API_AUTH_STRING: None}):
        assert asyncio.run(burst()) == [200] * 10
    assert server.most_at_once == WRITES_AT_ONCE
