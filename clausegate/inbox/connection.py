"""One Prefect client per gateway process (per event loop), shared by every request; writes taken in turn.

Where a burst of submissions spent its time (bench/inbox_load.py, 20 parallel uploads on SQLite):

* ``get_client()`` builds a new client per call: a new httpx client (with its TLS context, even for
  plain http: ~0.1 s of CPU on a loaded 2-core machine) and a new connection, on the event loop.  A
  submission used three, so that CPU alone serialised a burst.  The shared client keeps its
  connections open (at most Prefect's 16) and is safe for concurrent use (httpx's pool).
* Twenty writes at once (rate slot, new flow run) queue in the database's write lock until the server
  gives up and answers 503; Prefect's client then retries after 2 s, 4 s, ...: the tail of the burst
  was retry sleeps.  :meth:`SharedClient.writing` lets ``WRITES_AT_ONCE`` writes out at a time (the rest
  wait here, in order), and :class:`QuickRetry` retries a 503 a few times within about a second before
  Prefect's own slower retries take over.  A 503 is the server's "nothing was done, try again"
  (``prefect.server.api.server``: retryable database errors), which Prefect's client retries anyway;
  every write of the inbox is also safe to repeat (a flow run has its idempotency key).

Neither depends on the database: on PostgreSQL the bound costs a little parallelism and 503s are rare.
The client is opened on first use in the running loop (a test or a CLI call from another loop gets its
own) and closed by :meth:`SharedClient.aclose` (the gateway's lifespan).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator

import httpx
from prefect.client.orchestration import PrefectClient, get_client

WRITES_AT_ONCE = 2  # measured at 20 parallel uploads on SQLite: 1 slower, 4 and 16 much slower
QUICK_RETRY_PAUSES = (0.05, 0.1, 0.2, 0.4)  # seconds (± half), then Prefect's client retries (2 s, 4 s, ...)


class QuickRetry(httpx.AsyncBaseTransport):
    """Wraps the Prefect client's transport: a 503 answer is retried after short pauses before it is returned."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        for pause in QUICK_RETRY_PAUSES:
            response = await self.inner.handle_async_request(request)
            if response.status_code != httpx.codes.SERVICE_UNAVAILABLE:
                return response
            await response.aread()
            await response.aclose()
            await asyncio.sleep(pause * random.uniform(0.5, 1.5))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class SharedClient:
    def __init__(self, writes_at_once: int = WRITES_AT_ONCE) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Future[PrefectClient] | None = None
        self.writes_at_once = writes_at_once
        self._writes: asyncio.Semaphore | None = None

    async def get(self) -> PrefectClient:
        """The open client of the running loop (opened once; concurrent first callers wait for the same one)."""
        loop = asyncio.get_running_loop()
        opening = self._opening
        failed = opening is not None and opening.done() and (opening.cancelled() or opening.exception() is not None)
        if opening is None or self._loop is not loop or failed:
            if self._loop is not loop:
                self._writes = asyncio.Semaphore(self.writes_at_once)
            self._loop, opening = loop, loop.create_task(self._open())
            self._opening = opening
        return await asyncio.shield(opening)

    @staticmethod
    async def _open() -> PrefectClient:
        client = get_client()
        http = client._client  # Prefect's httpx client: its transport carries Prefect's TLS and pool settings
        if isinstance(getattr(http, "_transport", None), httpx.AsyncBaseTransport):
            http._transport = QuickRetry(http._transport)
        await client.__aenter__()
        return client

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[PrefectClient]:
        """``async with shared.use() as client``: the shared client, left open afterwards."""
        yield await self.get()

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[PrefectClient]:
        """``async with shared.writing() as client``: the shared client for a write, at most ``writes_at_once``
        of them in flight (the others wait here, in order, instead of in the database's lock)."""
        client = await self.get()
        async with self._writes:
            yield client

    async def aclose(self) -> None:
        opening, self._opening, self._loop = self._opening, None, None
        if opening is not None and opening.done() and not opening.cancelled() and opening.exception() is None:
            await opening.result().__aexit__(None, None, None)
