"""A fake Anthropic / OpenAI-compatible model server speaking the real wire protocols on 127.0.0.1.

    server = FakeModelServer("anthropic", api_key="k", responder=lambda req: '{"clauses": []}').start()
    server.script(["429", "529", "ok"])     # the next three requests; then random faults or ok
    ... AnthropicClient(base_url=server.url, api_key="k", model="m") ...
    server.requests[0].fault, server.calls; server.stop()
    server.billed_tokens(), server.billed_eur(3.0, 15.0)   # what it charged: delivered 200 answers only
    server.down("hang"); ...; server.up()   # an outage: every request hangs (or any fault kind) until up()
    server.probes                           # GET /v1/models requests (the breaker's probe; not in requests/calls)
    FakeModelServer("openai", request_limit=2, limit_window_seconds=3)   # 2 requests per 3 s, then 429
    FakeModelServer("anthropic", max_output_tokens=1000)   # a larger max_tokens is refused (400), as for real

or as a process: ``python -m clausegate.demo.model_server --protocol openai --port 8901 --fault-rate 0.3 --seed 1``.

Auth is checked like the real services (``x-api-key`` + ``anthropic-version``; ``Authorization:
Bearer``); answers carry real usage fields, request ids and rate-limit headers (with ``request_limit``
the remaining/reset headers count down for real and a request over the limit gets a 429). Faults: see FAULTS.

Billing: like a provider's invoice, the fake keeps the usage of every answer it charged for
(``RecordedRequest.usage``/``billed``): each HTTP 200 it delivered, usable or not (``not_json`` and
``truncated`` answers are charged too); errors are free.  An answer whose client had already hung up
(a ``slow`` answer past the client's read timeout) is not delivered and not charged, but counted in
``abandoned`` so a test can see it.  ``billed_eur`` prices the usage per request, rounded to 1/1000
cent per request, at the prices the caller gives.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import threading
import time
from collections.abc import Iterable
from typing import Any

from clausegate.demo.model_http import ModelHTTPServer
from clausegate.demo.model_wire import (
    DEFAULT_API_KEY,
    ERRORS,
    FAULTS,
    RANDOM_FAULTS,
    STATUS_OVERRIDES,
    RecordedRequest,
    RequestWindow,
    Responder,
    default_responder,
    estimate_tokens,
    fault_kind,
    json_or_none,
    models_body,
    prompts_of,
    rate_limit_headers,
    redacted,
)

__all__ = ["DEFAULT_API_KEY", "FAULTS", "FakeModelServer", "RecordedRequest", "default_responder", "prompts_of"]

class FakeModelServer:
    """One protocol ("anthropic" or "openai") on 127.0.0.1; start() runs it in a daemon thread."""

    def __init__(
        self,
        protocol: str = "anthropic",
        *,
        api_key: str | None = DEFAULT_API_KEY,
        port: int = 0,
        responder: Responder | None = None,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = RANDOM_FAULTS,
        seed: int | None = None,
        retry_after: float = 1.0,
        slow_seconds: float = 2.0,
        known_models: Iterable[str] | None = None,
        context_window: int | None = None,
        hang_seconds: float = 300.0,
        retry_after_statuses: Iterable[int] = (429, 503),
        request_limit: int | None = None,
        limit_window_seconds: float = 60.0,
        max_output_tokens: int | None = None,
    ) -> None:
        if protocol not in ("anthropic", "openai"):
            raise ValueError(f"protocol must be 'anthropic' or 'openai', not {protocol!r}")
        self.protocol = protocol
        self.path = "/v1/messages" if protocol == "anthropic" else "/v1/chat/completions"
        self.api_key = api_key
        self.responder = responder or default_responder
        self.fault_rate = fault_rate
        self.fault_kinds = [fault_kind(k) for k in fault_kinds]
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.hang_seconds = hang_seconds  # a "hang" answers nothing until up()/stop() or this long
        self.retry_after_statuses = frozenset(retry_after_statuses)  # statuses that send retry-after
        self._outage: str | None = None
        self.window = RequestWindow(request_limit, limit_window_seconds) if request_limit else None
        self.max_output_tokens = max_output_tokens  # a larger max_tokens gets the provider's 400
        self._released = threading.Event()
        self.known_models = set(known_models) if known_models is not None else None
        self.context_window = context_window or (200_000 if protocol == "anthropic" else 128_000)
        self.requests: list[RecordedRequest] = []
        self.probes: list[str] = []  # GET /v1/models: the fault of each ("ok" or the outage's kind)
        self._script: list[str] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = ModelHTTPServer(("127.0.0.1", port), fake=self)
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeModelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-{self.protocol}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # wake hung requests
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting and inspection ------------------------------------------------------------
    def script(self, kinds: Iterable[str]) -> None:
        """Queue the faults of the next requests (``"429"``, ``"rate_limit"``, ``"ok"``, ...)."""
        with self._lock:
            self._script.extend(fault_kind(k) for k in kinds)

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def billed(self) -> list[RecordedRequest]:
        """The requests the fake charged for (delivered 200 answers), in order."""
        with self._lock:
            return [r for r in self.requests if r.billed]

    @property
    def abandoned(self) -> list[RecordedRequest]:
        """200 answers the client never received (it had hung up): not charged."""
        with self._lock:
            return [r for r in self.requests if r.usage is not None and r.delivered is False]

    def billed_tokens(self) -> tuple[int, int]:
        """(input, output) tokens of every charged answer."""
        billed = self.billed
        return sum(r.usage["input_tokens"] for r in billed), sum(r.usage["output_tokens"] for r in billed)

    def billed_eur(self, eur_per_million_input: float, eur_per_million_output: float) -> float:
        """EUR charged at these prices: each answer priced on its own and rounded to 1/1000 cent."""
        return round(sum(round((r.usage["input_tokens"] * eur_per_million_input
                                + r.usage["output_tokens"] * eur_per_million_output) / 1_000_000, 5)
                         for r in self.billed), 6)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script.clear()

    def down(self, kind: str = "hang") -> None:
        """An outage: every request (after the script) gets ``kind`` (default: hang, no answer at all)
        until :meth:`up`."""
        with self._lock:
            self._outage = fault_kind(kind)
            self._released.clear()

    def up(self) -> None:
        """End the outage; requests still hanging are released (their clients have long gone)."""
        with self._lock:
            self._outage = None
            self._released.set()

    def _next_fault(self) -> str:
        with self._lock:
            if self._script:
                return self._script.pop(0)
            if self._outage:
                return self._outage
            if self.fault_kinds and self._rng.random() < self.fault_rate:
                return self._rng.choice(self.fault_kinds)
        return "ok"

    # -- one request ---------------------------------------------------------------------
    def handle_models(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """``GET /v1/models`` (free, as for real): the model list, or the outage's fault while down()."""
        with self._lock:
            kind = self._outage or "ok"
            self.probes.append(kind)
        if path.split("?")[0] != "/v1/models":
            kind = "not_found"
        kind = self._auth_problem(headers) or kind
        if kind == "hang":
            self._released.wait(self.hang_seconds)
        elif kind == "slow":
            time.sleep(self.slow_seconds)
        context = self._context(headers, None, len(self.probes))
        if kind in ERRORS:
            status = STATUS_OVERRIDES[self.protocol].get(kind, ERRORS[kind][0])
            return status, {}, json.dumps(self._error_body(kind, context)).encode()
        return 200, {}, json.dumps(models_body(self.protocol, sorted(self.known_models or {"fake-model"}))).encode()

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        """Decide and build the answer; records the request. Returns (status, headers, body)."""
        return self.handle_request(path, headers, raw)[1:]

    def handle_request(self, path: str, headers: dict[str, str],
                       raw: bytes) -> tuple[RecordedRequest, int, dict[str, str], bytes]:
        """``handle`` plus the request's record (the handler marks it delivered or not)."""
        body = json_or_none(raw)
        record = RecordedRequest(path=path, headers=redacted(headers), body=body, fault=self._next_fault())
        with self._lock:
            self.requests.append(record)
            number = len(self.requests)
        kind = self._precheck(path, headers, body) or record.fault
        # a request the service takes counts against its limit; a 429 says nothing is left until the reset
        allowed, remaining, reset = self.window.take() if self.window and kind not in ERRORS else (True, 49, 1.2)
        if not allowed or kind == "rate_limit":
            kind, remaining, reset = "rate_limit", 0, (max(reset, 0.001) if not allowed else self.retry_after)
        if kind == "slow":
            time.sleep(self.slow_seconds)
        elif kind == "hang":
            self._released.wait(self.hang_seconds)
        context = self._context(headers, body, number)
        context["retry_after"] = reset if kind == "rate_limit" else self.retry_after
        status, extra, payload = self._answer(kind, body, context)
        record.fault, record.status = kind, status
        if status == 200:
            usage = payload.get("usage") or {}
            record.usage = {"input_tokens": int(usage.get("input_tokens", usage.get("prompt_tokens", 0))),
                            "output_tokens": int(usage.get("output_tokens", usage.get("completion_tokens", 0)))}
        common = rate_limit_headers(self.protocol, context["request_id"], limit=self.window.limit if self.window
                                    else 50, remaining=remaining, reset_seconds=reset)
        return record, status, {**common, **extra}, json.dumps(payload).encode()

    def _precheck(self, path: str, headers: dict[str, str], body: Any) -> str | None:
        """What the real service would refuse before looking at the request's content."""
        if path != self.path:
            return "not_found"
        auth = self._auth_problem(headers)
        if auth:
            return auth
        if self.protocol == "anthropic" and "anthropic-version" not in headers:
            return "no_version"
        required = ("model", "max_tokens", "messages") if self.protocol == "anthropic" else ("model", "messages")
        if not isinstance(body, dict) or any(name not in body for name in required):
            return "bad_request"
        if self.known_models is not None and body["model"] not in self.known_models:
            return "not_found"
        if estimate_tokens(json.dumps(body)) > self.context_window:
            return "context_too_long"
        if self.max_output_tokens is not None and int(body.get("max_tokens") or 0) > self.max_output_tokens:
            return "output_too_large"
        return None

    def _auth_problem(self, headers: dict[str, str]) -> str | None:
        if self.api_key is None:
            return None
        if self.protocol == "anthropic":
            given = headers.get("x-api-key")
        else:
            given = headers.get("authorization", "").removeprefix("Bearer ").strip() or None
        if given is None:
            return "missing_key"
        return None if given == self.api_key else "unauthorized"

    def _context(self, headers: dict[str, str], body: Any, number: int) -> dict[str, Any]:
        given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        return {
            "request_id": f"req_fake{number:06d}",
            "model": body.get("model", "") if isinstance(body, dict) else "",
            "tokens": estimate_tokens(json.dumps(body)) if body is not None else 0,
            "window": self.context_window,
            "retry_after": self.retry_after,
            "requested": body.get("max_tokens") if isinstance(body, dict) else None,
            "output_limit": self.max_output_tokens,
            "masked": (given[:3] + "*" * 8 + given[-4:]) if len(given) > 8 else "****",
        }

    def _answer(self, kind: str, body: Any, context: dict[str, Any]) -> tuple[int, dict[str, str], dict]:
        if kind == "context_too_long":
            context["tokens"] = max(context["tokens"], context["window"] + 50_000)
        if kind in ERRORS:
            status = STATUS_OVERRIDES[self.protocol].get(kind, ERRORS[kind][0])
            extra = {"retry-after": str(math.ceil(self.retry_after))} if status in self.retry_after_statuses else {}
            return status, extra, self._error_body(kind, context)
        if kind == "unprocessable":  # FastAPI-style validation error of local servers
            return 422, {}, {"detail": [{"loc": ["body", "messages"], "msg": "field required", "type": "missing"}]}
        text, truncated = self._content(kind, body)
        return 200, {}, self._ok_body(body, text, truncated, context)

    def _content(self, kind: str, body: dict) -> tuple[str, bool]:
        answer = self.responder(body)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        if kind == "not_json":
            return "I'm sorry, I cannot answer in JSON. The contract has a termination clause on page 2.", False
        limit = int(body.get("max_tokens") or 1_000_000) * 4
        if kind == "truncated":
            return text[: max(1, len(text) // 2)], True
        return (text[:limit], True) if len(text) > limit else (text, False)

    def _error_body(self, kind: str, context: dict[str, Any]) -> dict:
        _, a_type, a_message, o_type, o_code, o_message = ERRORS[kind]
        if self.protocol == "anthropic":
            error = {"type": a_type, "message": a_message.format(**context)}
            return {"type": "error", "error": error, "request_id": context["request_id"]}
        return {"error": {"message": o_message.format(**context), "type": o_type, "param": None, "code": o_code}}

    def _ok_body(self, body: dict, text: str, truncated: bool, context: dict[str, Any]) -> dict:
        system, user = prompts_of(body)
        input_tokens, output_tokens = estimate_tokens(system + user) + 8, estimate_tokens(text)
        if self.protocol == "anthropic":
            return {
                "id": f"msg_{context['request_id']}", "type": "message", "role": "assistant",
                "model": context["model"], "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if truncated else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            }
        return {
            "id": f"chatcmpl-{context['request_id']}", "object": "chat.completion", "created": int(time.time()),
            "model": context["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "length" if truncated else "stop"}],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens},
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake Anthropic/OpenAI model server on 127.0.0.1.")
    parser.add_argument("--protocol", choices=("anthropic", "openai"), default="anthropic")
    parser.add_argument("--port", type=int, default=8900)
    parser.add_argument("--api-key", default=DEFAULT_API_KEY, help="expected key; '' accepts requests without one")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--kinds", default=",".join(RANDOM_FAULTS), help="comma-separated random fault kinds")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--slow-seconds", type=float, default=2.0)
    parser.add_argument("--request-limit", type=int, default=None, help="requests per --limit-window, then 429")
    parser.add_argument("--limit-window", type=float, default=60.0, help="seconds")
    parser.add_argument("--max-output-tokens", type=int, default=None, help="a larger max_tokens gets a 400")
    args = parser.parse_args(argv)
    server = FakeModelServer(
        args.protocol, api_key=args.api_key or None, port=args.port, fault_rate=args.fault_rate,
        fault_kinds=[k for k in args.kinds.split(",") if k], seed=args.seed, retry_after=args.retry_after,
        slow_seconds=args.slow_seconds, request_limit=args.request_limit, limit_window_seconds=args.limit_window,
        max_output_tokens=args.max_output_tokens)
    print(f"fake {args.protocol} model server on {server.url} (fault rate {args.fault_rate})", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
