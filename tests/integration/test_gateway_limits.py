"""Request bodies are judged before they are read: size caps while streaming, the key before the upload.

The gateway runs as its own process (``clausegate gateway``, real uvicorn on 127.0.0.1), so its memory
can be read from ``/proc/<pid>/status`` while a raw-socket client streams bodies of hundreds of MB at it,
chunked or with a Content-Length, and stops sending the moment an answer arrives.  A gateway that
buffers (or spools) the body first only answers after the whole body was sent, and its peak RSS
grows by the body's size; a bounded one answers 413/401 after at most the route's cap.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from blocks.slack import SlackSettings
from clausegate.security.at_rest import file_is_sealed
from tests.support.deployments import deploy_once
from tests.support.inbox_support import cancel_open_inbox_runs, make_key
from tests.support.prefect_server import free_port
from tests.support.slack_client import sign

pytestmark = pytest.mark.usefixtures("prefect_server")

ROOT = Path(__file__).resolve().parents[2]
SECRET = "limits-test-signing-secret"
BLOCK = "cg-limits-test"
MB = 1024 * 1024
# Loopback socket buffers (client send + server receive) can absorb a few MB before the server reads
# anything; a gateway that stops reading at its cap answers long before this much was sent.
EARLY = 24 * MB
# Peak RSS may grow a little (first requests, buffers); a buffering gateway grows by the body size.
RSS_GROWTH = 48 * MB
# 8 parallel uploads of 19 MB: streamed, a few chunk buffers each; held whole (and copied to seal) > 300 MB.
UPLOAD_RSS_GROWTH = 64 * MB


# ----------------------------------------------------------------------------------------- raw HTTP
class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, sent: int, seconds: float) -> None:
        self.status, self.headers, self.body, self.sent, self.seconds = status, headers, body, sent, seconds

    def json(self):
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<{self.status} after {self.sent / MB:.1f} MB sent in {self.seconds:.1f} s: {self.body[:200]!r}>"


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes] | None:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
    length = int(headers.get("content-length", "0"))
    if len(rest) < length:
        return None
    return status, headers, rest[:length]


def stream(port: int, path: str, headers: dict[str, str], total: int, *, chunked: bool = True,
           first: bytes = b"", declared: int | None = None, timeout: float = 120.0) -> RawResponse:
    """POST ``first`` + filler up to ``total`` body bytes; stop sending as soon as the server answers.

    ``chunked``: Transfer-Encoding: chunked (no length announced); else ``Content-Length: declared``
    (default ``total``).  Returns the answer and how many body bytes had been sent when it came.
    """
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items())]
    length = total if declared is None else declared
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    filler = b"x" * (256 * 1024)
    sent, pending, finished, raw = 0, b"", False, b""
    started = time.monotonic()
    sock.setblocking(False)
    try:
        while time.monotonic() - started < timeout:
            if not pending and not finished:
                if sent < total:
                    piece = (first if sent == 0 and first else filler)[: total - sent]
                    sent += len(piece)
                    pending = (f"{len(piece):x}\r\n".encode() + piece + b"\r\n") if chunked else piece
                else:
                    pending, finished = (b"0\r\n\r\n" if chunked else b""), True
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 1.0)
            if readable:
                try:
                    data = sock.recv(65536)
                except (ConnectionResetError, BlockingIOError):
                    data = b""
                raw += data
                parsed = _parse(raw)
                if parsed or not data:
                    break
            if writable and pending:
                try:
                    pending = pending[sock.send(pending):]
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    pending, finished, total = b"", True, sent  # the server hung up: read what it answered
        # Read the rest of an answer already begun.
        sock.setblocking(True)
        sock.settimeout(5)
        while _parse(raw) is None:
            try:
                data = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not data:
                break
            raw += data
    finally:
        sock.close()
    parsed = _parse(raw)
    if parsed is None:
        return RawResponse(0, {}, raw, sent, time.monotonic() - started)
    return RawResponse(*parsed, sent=sent, seconds=time.monotonic() - started)


# ----------------------------------------------------------------------------------------- the gateway
def peak_rss(pid: int) -> int:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]) * 1024


class GatewayProcess:
    def __init__(self, data_dir: Path, max_upload_mb: float = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir / "gateway.log"
        env = {**os.environ, "CLAUSEGATE_INBOX_DATA_DIR": str(data_dir),
               "CLAUSEGATE_INBOX_MAX_UPLOAD_MB": f"{max_upload_mb:g}",
               "CLAUSEGATE_INBOX_RATE_PER_MINUTE": "1000", "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "clausegate.cli", "gateway", "--port", str(self.port), "--block", BLOCK],
            cwd=data_dir, env=env, stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.2)

    @property
    def peak_rss(self) -> int:
        return peak_rss(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    SlackSettings(bot_token="xoxb-limits", signing_secret=SECRET, channel="C0GATES",
                  api_base_url="http://127.0.0.1:9/api/").save(BLOCK, overwrite=True)
    server = GatewayProcess(tmp_path_factory.mktemp("limits-gateway"))
    try:
        warm_up(server)
        yield server
    finally:
        server.stop()


def warm_up(server: GatewayProcess) -> None:
    """Exercise every route once so first-request imports do not count as body memory."""
    body = urlencode({"payload": json.dumps({"type": "view_closed", "user": {"id": "U1"}})}).encode()
    assert httpx.post(server.url + "/slack/interactions", content=body, headers=slack_headers(body)).status_code == 200
    key, _ = make_key("warmup")
    httpx.post(server.url + "/inbox/tasks", headers={"Authorization": f"Bearer {key}"},
               files={"file": ("c.pdf", b"%PDF-1.4\n", "application/pdf")}, data={"playbook": "no-such-playbook"})
    httpx.get(server.url + "/inbox/tasks", headers={"Authorization": "Bearer nope"})


def slack_headers(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    return {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": sign(SECRET, ts, body)}


def multipart_head(boundary: str = "cgboundary") -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n%PDF-1.4\n").encode()


def assert_error(response: RawResponse, status: int, code: str) -> dict:
    assert response.status == status, response
    detail = response.json()["detail"]
    assert detail["code"] == code and detail["message"] and detail["hint"], detail
    return detail


# ----------------------------------------------------------------------------------------- tests
def test_a_chunked_slack_body_is_refused_at_the_cap_before_anything_is_verified(gateway):
    before = gateway.peak_rss
    # unauthenticated: the signature cannot be checked before the body
    headers = {"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(int(time.time())),
               "X-Slack-Signature": "v0=" + "0" * 64}
    response = stream(gateway.port, "/slack/interactions", headers, 256 * MB)
    grown = gateway.peak_rss - before
    print(f"slack chunked 256 MB: {response}; gateway peak RSS +{grown / MB:.1f} MB")
    assert response.sent < EARLY, response
    assert grown < RSS_GROWTH, f"the gateway's peak RSS grew by {grown / MB:.0f} MB"
    detail = assert_error(response, 413, "CG-GATEWAY-TOO-LARGE")
    assert "256 KB" in detail["message"], detail
    assert httpx.get(gateway.url + "/healthz").status_code == 200


def test_a_declared_oversized_body_is_refused_before_a_byte_of_it_is_read(gateway):
    headers = slack_headers(b"")
    response = stream(gateway.port, "/slack/commands", headers, 64 * 1024, chunked=False, declared=10 * 1024 * MB,
                      timeout=10)
    assert_error(response, 413, "CG-GATEWAY-TOO-LARGE")
    assert response.sent <= 64 * 1024 and response.headers.get("connection") == "close", response
    # Every route has a cap, also those that never read a body.
    small = stream(gateway.port, "/inbox/tasks/00000000-0000-0000-0000-000000000000/cancel", {}, 1 * MB,
                   chunked=False, timeout=10)
    assert_error(small, 413, "CG-INBOX-TOO-LARGE")
    key, _ = make_key("declared")
    upload = stream(gateway.port, "/inbox/tasks", {"Authorization": f"Bearer {key}",
                                                   "Content-Type": "multipart/form-data; boundary=cgboundary"},
                    64 * 1024, chunked=False, declared=2 * 1024 * MB, first=multipart_head(), timeout=10)
    assert_error(upload, 413, "CG-INBOX-TOO-LARGE")


def test_a_small_chunked_slack_request_still_works(gateway):
    # Another user than the warm-up's: the same body in the same second would be a (refused) replay.
    body = urlencode({"payload": json.dumps({"type": "view_closed", "user": {"id": "U2"}})}).encode()
    response = stream(gateway.port, "/slack/interactions", slack_headers(body), len(body), first=body, timeout=10)
    assert response.status == 200, response
    forged = stream(gateway.port, "/slack/interactions", {**slack_headers(body), "X-Slack-Signature": "v0=" + "1" * 64},
                    len(body), first=body, timeout=10)
    assert forged.status == 403, forged


@pytest.mark.parametrize("authorization", [None, "Bearer cgk_0123456789ab_" + "A" * 43, "Bearer garbage"])
def test_an_upload_without_a_valid_key_gets_401_before_its_body_is_read(gateway, authorization):
    before = gateway.peak_rss
    headers = {"Content-Type": "multipart/form-data; boundary=cgboundary"}
    if authorization:
        headers["Authorization"] = authorization
    response = stream(gateway.port, "/inbox/tasks", headers, 128 * MB, first=multipart_head())
    grown = gateway.peak_rss - before
    print(f"inbox 128 MB upload without a valid key: {response}; gateway peak RSS +{grown / MB:.1f} MB")
    assert response.sent < EARLY, response
    assert_error(response, 401, "CG-INBOX-AUTH")
    assert grown < RSS_GROWTH
    # Nothing was spooled: no temporary upload files were left behind either.
    assert not list(Path(gateway.log.parent).rglob(".upload-*"))


def test_an_authenticated_chunked_upload_is_cut_off_at_the_upload_limit(gateway):
    key, _ = make_key("bigsender")
    before = gateway.peak_rss
    response = stream(gateway.port, "/inbox/tasks", {"Authorization": f"Bearer {key}",
                                                     "Content-Type": "multipart/form-data; boundary=cgboundary"},
                      256 * MB, first=multipart_head())
    grown = gateway.peak_rss - before
    print(f"inbox chunked 256 MB upload with a valid key: {response}; gateway peak RSS +{grown / MB:.1f} MB")
    assert response.sent < EARLY, response
    assert grown < RSS_GROWTH
    detail = assert_error(response, 413, "CG-INBOX-TOO-LARGE")
    assert "MB" in detail["message"] and str(gateway.log.parent) not in response.body.decode(), detail


@pytest.mark.slow
def test_parallel_uploads_stream_to_disk_without_growing_the_gateway(tmp_path_factory):
    """8 uploads of 19 MB at once (a valid key, under a 20 MB limit): each is sealed to disk while it streams
    in, so the gateway's peak RSS grows by a fraction of the 152 MB sent, not by several copies of each."""
    root = tmp_path_factory.mktemp("upload-rss")
    deploy_once(root)
    (root / "gateway").mkdir()
    server = GatewayProcess(root / "gateway", max_upload_mb=20)
    key, _ = make_key("bulk")
    headers = {"Authorization": f"Bearer {key}"}

    def upload(i: int) -> httpx.Response:
        body = b"%PDF-1.4\n" + os.urandom(19 * MB - 9)  # distinct contents: no upload is de-duplicated
        return httpx.post(server.url + "/inbox/tasks", headers=headers, timeout=300,
                          files={"file": (f"bulk-{i}.pdf", body, "application/pdf")}, data={"playbook": "default"})

    try:
        assert upload(0).status_code == 201  # the first upload's imports and buffers are not what is measured
        before = server.peak_rss
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(upload, range(1, 9)))
        grown = server.peak_rss - before
        print(f"8 parallel 19 MB uploads: gateway peak RSS {before / MB:.0f} MB -> +{grown / MB:.1f} MB")
        assert [a.status_code for a in answers] == [201] * 8, [a.text[:200] for a in answers]
        assert grown < UPLOAD_RSS_GROWTH, f"the gateway's peak RSS grew by {grown / MB:.0f} MB"
        stored = list((root / "gateway" / "uploads").rglob("bulk-*.pdf"))
        assert len(stored) == 9 and all(file_is_sealed(p) for p in stored)
        assert not list((root / "gateway").rglob(".upload-*"))  # no temporary file left behind
    finally:
        server.stop()
        cancel_open_inbox_runs()
