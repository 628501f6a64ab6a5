"""The HTTP side of the fake model server (``model_server.FakeModelServer``): POST to the protocol's
path, GET ``/v1/models``; an answer whose client gave up first is not delivered (nor charged)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from clausegate.demo.model_wire import peer_gone


class ModelHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], *, fake: Any) -> None:
        self.fake = fake  # the FakeModelServer that decides each answer
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelHTTPServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = None
        try:
            record, status, extra, payload = self.server.fake.handle_request(self.path, headers, raw)
        except Exception as exc:  # a broken responder is a 500, not a dropped connection
            status, extra = 500, {}
            error = {"type": "api_error", "message": f"fake responder failed: {exc!r}"}
            payload = json.dumps({"error": error}).encode()
        delivered = self._send(status, extra, payload)
        if record is not None:
            record.delivered = delivered

    def do_GET(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._send(*self.server.fake.handle_models(self.path, headers))

    def _send(self, status: int, extra: dict[str, str], payload: bytes) -> bool:
        """Send the answer; False when the client gave up first (read timeout): nothing delivered or charged."""
        if peer_gone(self.connection):
            self.close_connection = True
            return False
        try:
            self.send_response(status)
            for name, value in {"content-type": "application/json", **extra}.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            self.close_connection = True
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests
        return
