"""A fake Slack Web API on 127.0.0.1 that speaks the real protocol (for tests and demos).

    slack = FakeSlack(token="xoxb-test").start()
    client = WebClient(token="xoxb-test", base_url=slack.api_url)      # or SlackSettings(api_base_url=...)
    client.chat_postMessage(channel="C1", text="hi", blocks=[...])
    slack.calls("chat.postMessage")[0].args["blocks"]; slack.message("C1", ts)
    slack.fail("chat.postMessage", "503", times=3)       # the next 3 calls of that method fail
    slack.response_url("click-1") -> URL whose POSTs are recorded in slack.responses
    slack.stop()

or as a process: ``python -m clausegate.demo.slack_server --port 8902 --token xoxb-test``.

Methods: ``auth.test``, ``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``, ``views.open`` (a modal,
recorded in ``views``) under ``/api/``;
anything else answers ``unknown_method``. Bodies may be JSON or form-encoded, as slack-sdk sends
them. Auth like Slack: ``Authorization: Bearer <token>`` (or a ``token`` field); none gives
``not_authed``, a wrong one ``invalid_auth`` (HTTP 200, ``ok: false``). Block Kit limits that
Slack enforces (50 blocks, 3000-character section text, 2000-character button values, 75-character
button labels) give ``invalid_blocks``, so view bugs show up here and not only in production.

Faults (``fail(method, kind, times)``, method ``*`` for all): ``500``/``503`` (HTTP error, text
body), ``ratelimited`` (HTTP 429, ``Retry-After``), ``timeout`` (answers after ``delay`` seconds),
or any Slack error code such as ``channel_not_found``, ``not_in_channel``, ``invalid_auth``
(HTTP 200, ``ok: false``). ``down()`` makes every API call answer 503 until ``up()``.
``response_url`` posts (``/actions/<id>``) are recorded in ``responses`` and answered ``ok``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from clausegate.demo.slack_views import open_view

__all__ = ["DEFAULT_TOKEN", "FakeSlack", "RecordedCall"]

DEFAULT_TOKEN = "xoxb-fake-clausegate"
METHODS = ("auth.test", "chat.postMessage", "chat.update", "chat.postEphemeral", "views.open")
HTTP_FAULTS = {"500": 500, "503": 503}


@dataclass
class RecordedCall:
    method: str
    args: dict[str, Any]
    headers: dict[str, str]
    status: int = 200
    error: str | None = None
    at: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


@dataclass
class _Fault:
    kind: str
    times: int
    retry_after: int = 1
    delay: float = 5.0
    match: str | None = None  # only calls whose arguments contain this text


class FakeSlack:
    """The fake Slack Web API server (see the module docstring)."""

    def __init__(self, token: str = DEFAULT_TOKEN, host: str = "127.0.0.1", port: int = 0,
                 channels: set[str] | None = None) -> None:
        self.token = token
        self.channels = channels  # None: every channel exists
        self._lock = threading.Lock()
        self._calls: list[RecordedCall] = []
        self.responses: list[dict[str, Any]] = []
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.views: list[dict[str, Any]] = []  # views.open: {"trigger_id", "view"}
        self._faults: dict[str, list[_Fault]] = {}
        self._down = False
        self._ts = itertools.count(1)
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def start(self) -> FakeSlack:
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-slack", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- control -----------------------------------------------------------------------------
    def fail(self, method: str, kind: str, times: int = 1, *, retry_after: int = 1, delay: float = 5.0,
             match: str | None = None) -> None:
        """Make the next ``times`` calls of ``method`` (``*``: any) fail with ``kind``; with ``match``,
        only calls whose arguments contain that text (e.g. a file name) count."""
        with self._lock:
            self._faults.setdefault(method, []).append(_Fault(kind, times, retry_after, delay, match))

    def down(self) -> None:
        with self._lock:
            self._down = True

    def up(self) -> None:
        with self._lock:
            self._down = False

    def reset(self) -> None:
        with self._lock:
            self._calls.clear()
            self.responses.clear()
            self.messages.clear()
            self._faults.clear()
            self._down = False

    def response_url(self, name: str = "r") -> str:
        return f"{self.url}/actions/{name}"

    # -- inspection --------------------------------------------------------------------------
    def calls(self, method: str | None = None, *, ok_only: bool = False) -> list[RecordedCall]:
        with self._lock:
            return [c for c in self._calls if (method is None or c.method == method) and (c.ok or not ok_only)]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        with self._lock:
            return self.messages.get((channel, ts))

    def wait_for(self, method: str, count: int = 1, timeout: float = 30.0, *,
                 ok_only: bool = True) -> list[RecordedCall]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.calls(method, ok_only=ok_only)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        got = len(self.calls(method, ok_only=ok_only))
        raise TimeoutError(f"fake Slack got {got} {method} call(s), wanted {count}")

    def wait_for_response(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.responses) >= count:
                    return list(self.responses)
            time.sleep(0.05)
        raise TimeoutError(f"fake Slack got {len(self.responses)} response_url post(s), wanted {count}")

    # -- protocol ----------------------------------------------------------------------------
    def _take_fault(self, method: str, args: dict[str, Any]) -> _Fault | None:
        text = json.dumps(args, default=str)
        with self._lock:
            if self._down:
                return _Fault("503", 1)
            for name in (method, "*"):
                queue = self._faults.get(name) or []
                for fault in queue:
                    if fault.match is not None and fault.match not in text:
                        continue
                    fault.times -= 1
                    if fault.times <= 0:
                        queue.remove(fault)
                    return fault
        return None

    def _record(self, call: RecordedCall) -> None:
        with self._lock:
            self._calls.append(call)

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def handle_api(self, method: str, args: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        """One Web API call -> (status, extra headers, JSON body or text)."""
        safe_headers = {k: ("Bearer ***" if k.lower() == "authorization" else v) for k, v in headers.items()}
        call = RecordedCall(method=method, args={k: v for k, v in args.items() if k != "token"}, headers=safe_headers)

        def answer(status: int, body: Any, extra: dict[str, str] | None = None, error: str | None = None):
            call.status, call.error = status, error
            self._record(call)
            return status, extra or {}, body

        if method not in METHODS:
            return answer(404, {"ok": False, "error": "unknown_method"}, error="unknown_method")
        fault = self._take_fault(method, args)
        if fault is not None:
            if fault.kind in HTTP_FAULTS:
                status = HTTP_FAULTS[fault.kind]
                return answer(status, "Service Unavailable" if status == 503 else "Internal Server Error",
                              error=fault.kind)
            if fault.kind == "ratelimited":
                return answer(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(fault.retry_after)},
                              error="ratelimited")
            if fault.kind == "timeout":
                time.sleep(fault.delay)
            else:
                return answer(200, {"ok": False, "error": fault.kind}, error=fault.kind)

        token = args.get("token")
        auth = headers.get("authorization") or headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
        if not token:
            return answer(200, {"ok": False, "error": "not_authed"}, error="not_authed")
        if token != self.token:
            return answer(200, {"ok": False, "error": "invalid_auth"}, error="invalid_auth")

        if method == "auth.test":
            return answer(200, {"ok": True, "url": "https://fake-clausegate.slack.com/", "team": "Fake",
                                "user": "clausegate", "team_id": "T0FAKE", "user_id": "U0BOT", "bot_id": "B0FAKE"})

        if method == "views.open":  # a modal (clausegate/demo/slack_views.py)
            body, opened = open_view(args, next(self._ts))
            if opened is not None:
                with self._lock:
                    self.views.append(opened)
            return answer(200, body, error=None if body["ok"] else body["error"])

        channel = str(args.get("channel") or "")
        if not channel:
            return answer(200, {"ok": False, "error": "channel_not_found"}, error="channel_not_found")
        if self.channels is not None and channel not in self.channels:
            return answer(200, {"ok": False, "error": "channel_not_found"}, error="channel_not_found")
        text, blocks = args.get("text"), _blocks_of(args)
        if blocks is None and not text:
            return answer(200, {"ok": False, "error": "no_text"}, error="no_text")
        problems = _block_kit_problems(blocks or [])
        if problems:
            return answer(200, {"ok": False, "error": "invalid_blocks", "errors": problems}, error="invalid_blocks")

        if method == "chat.postMessage":
            ts = self._next_ts()
            message = {"type": "message", "text": text or "", "blocks": blocks or [], "ts": ts, "bot_id": "B0FAKE",
                       "user": "U0BOT"}
            with self._lock:
                self.messages[(channel, ts)] = message
            return answer(200, {"ok": True, "channel": channel, "ts": ts, "message": message})
        if method == "chat.update":
            ts = str(args.get("ts") or "")
            with self._lock:
                message = self.messages.get((channel, ts))
                if message is not None:
                    message = {**message, "text": text or "", "blocks": blocks or [], "edited": {"user": "U0BOT"}}
                    self.messages[(channel, ts)] = message
            if message is None:
                return answer(200, {"ok": False, "error": "message_not_found"}, error="message_not_found")
            return answer(200, {"ok": True, "channel": channel, "ts": ts, "text": text or "", "message": message})
        # chat.postEphemeral
        if not args.get("user"):
            return answer(200, {"ok": False, "error": "user_not_in_channel"}, error="user_not_in_channel")
        return answer(200, {"ok": True, "message_ts": self._next_ts()})

    def handle_response_url(self, name: str, body: Any) -> None:
        with self._lock:
            self.responses.append({"name": name, "body": body, "at": time.time()})

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any, extra: dict[str, str] | None = None) -> None:
                if isinstance(body, (dict, list)):
                    data, ctype = json.dumps(body).encode(), "application/json; charset=utf-8"
                else:
                    data, ctype = str(body).encode(), "text/plain; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> tuple[bytes, dict[str, Any]]:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                ctype = (self.headers.get("Content-Type") or "").lower()
                if not raw:
                    return raw, {}
                if "json" in ctype:
                    try:
                        data = json.loads(raw)
                    except json.JSONDecodeError:
                        return raw, {"__invalid_json__": True}
                    return raw, data if isinstance(data, dict) else {"__invalid_json__": True}
                return raw, {k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}

            def do_POST(self) -> None:
                _, args = self._body()
                path = self.path.split("?", 1)[0]
                if path.startswith("/actions/"):
                    fake.handle_response_url(path[len("/actions/"):], args)
                    self._send(200, "ok")
                    return
                if not path.startswith("/api/"):
                    self._send(404, {"ok": False, "error": "not_found"})
                    return
                if args.get("__invalid_json__"):
                    self._send(200, {"ok": False, "error": "invalid_json"})
                    return
                status, extra, body = fake.handle_api(path[len("/api/"):], args, dict(self.headers.items()))
                self._send(status, body, extra)

            do_GET = do_POST  # auth.test etc. may be called with GET

        return Handler


def _blocks_of(args: dict[str, Any]) -> list[dict] | None:
    blocks = args.get("blocks")
    if isinstance(blocks, str):  # form-encoded calls send blocks as a JSON string
        try:
            blocks = json.loads(blocks)
        except json.JSONDecodeError:
            return [{"type": "invalid"}]
    return blocks if isinstance(blocks, list) else None


def _block_kit_problems(blocks: list[dict]) -> list[str]:
    """The subset of Slack's Block Kit validation that catches view bugs."""
    problems: list[str] = []
    if len(blocks) > 50:
        problems.append(f"too many blocks: {len(blocks)} > 50")
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in {"section", "header", "context", "actions", "divider", "rich_text", "image"}:
            problems.append(f"blocks[{i}]: unsupported type {kind!r}")
            continue
        if kind == "section":
            text = (block.get("text") or {}).get("text", "")
            if len(text) > 3000:
                problems.append(f"blocks[{i}].text: {len(text)} > 3000 characters")
            for j, f in enumerate(block.get("fields") or []):
                if len(f.get("text", "")) > 2000:
                    problems.append(f"blocks[{i}].fields[{j}]: > 2000 characters")
        if kind == "header" and len((block.get("text") or {}).get("text", "")) > 150:
            problems.append(f"blocks[{i}].text: header > 150 characters")
        if kind == "actions":
            elements = block.get("elements") or []
            if not 1 <= len(elements) <= 25:
                problems.append(f"blocks[{i}].elements: {len(elements)} elements")
            for j, el in enumerate(elements):
                if len(str(el.get("value", ""))) > 2000:
                    problems.append(f"blocks[{i}].elements[{j}].value: > 2000 characters")
                if len((el.get("text") or {}).get("text", "")) > 75:
                    problems.append(f"blocks[{i}].elements[{j}].text: > 75 characters")
                if len(str(el.get("action_id", ""))) > 255:
                    problems.append(f"blocks[{i}].elements[{j}].action_id: > 255 characters")
        if kind == "context" and len(block.get("elements") or []) > 10:
            problems.append(f"blocks[{i}].elements: > 10 context elements")
    return problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Slack Web API for ClauseGate tests and demos.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8902)
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="the bot token it accepts")
    args = parser.parse_args(argv)
    fake = FakeSlack(token=args.token, host=args.host, port=args.port)
    print(f"fake Slack Web API on {fake.api_url} (token {args.token[:8]}…); "
          f"response_url target {fake.url}/actions/<id>", flush=True)
    try:
        fake._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake._server.server_close()


if __name__ == "__main__":
    main()
