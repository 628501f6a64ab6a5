"""One verified TLS context per process for Prefect's API clients (instead of one per client).

Prefect 3.9 builds a new ``ssl.create_default_context(cafile=...)`` for every API client it makes
(``prefect/client/orchestration/__init__.py``: ``PrefectClient`` / ``SyncPrefectClient.__init__``), even for an
``http://`` API URL, and a flow run makes several (its async and sync clients, two reads of the server's default
result storage, ...).  Loading the CA bundle is ~25 ms of CPU each time: a tenth of a whole offline review.

:func:`share_api_tls_context` makes those clients share one context per CA file instead.  It does not weaken TLS:

- only the *verified* path is shared: ``create_default_context(cafile=F)`` (Prefect's ``PREFECT_API_SSL_CERT_FILE``
  or certifi's bundle), the same call Prefect makes; it is rebuilt when the file changes (inode, size, mtime);
- the insecure path (``PREFECT_API_TLS_INSECURE_SKIP_VERIFY``: ``create_default_context()`` and then verification
  switched off by Prefect) always gets a new context of its own, so it can never switch off verification for
  another client;
- a shared context found no longer verifying (certificates required, host names checked) is replaced, not used.

The shim replaces only the name ``ssl`` inside ``prefect.client.orchestration`` (a proxy to the real module);
nothing else in the process sees it.  Installed when ``clausegate.pipeline.sync_body`` is imported (every flow).
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

from prefect.client import orchestration


class _SharedVerifiedContexts:
    """Stands in for the ``ssl`` module inside ``prefect.client.orchestration``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[tuple, ssl.SSLContext] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(ssl, name)

    def create_default_context(self, purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH, *, cafile: str | None = None,
                               capath: str | None = None, cadata: Any = None) -> ssl.SSLContext:
        if not cafile or capath is not None or cadata is not None or purpose != ssl.Purpose.SERVER_AUTH:
            return ssl.create_default_context(purpose, cafile=cafile, capath=capath, cadata=cadata)
        try:
            st = os.stat(cafile)
        except OSError:  # let ssl raise its own error
            return ssl.create_default_context(purpose, cafile=cafile)
        key = (os.path.abspath(cafile), st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            context = self._contexts.get(key)
            if context is None or context.verify_mode != ssl.CERT_REQUIRED or not context.check_hostname:
                context = ssl.create_default_context(purpose, cafile=cafile)
                self._contexts = {key: context}  # one CA file in use at a time: drop contexts of older files
            return context


_SHARED = _SharedVerifiedContexts()


def share_api_tls_context() -> None:
    """Make Prefect's API clients in this process share one verified TLS context per CA file (idempotent)."""
    if getattr(orchestration, "ssl", None) is ssl:
        orchestration.ssl = _SHARED
