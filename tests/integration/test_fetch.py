"""The checked URL fetcher (``clausegate.security.fetch``) against real HTTP servers on 127.0.0.1.

The holes these tests close: allow-list entries matched as string prefixes (``http://ALLOWED@other:port/``
would pass), a bare host allowing every port, loopback/private addresses fetched, and 415/422 answers
that tell an open port from a closed one. Most tests go through ``intake.fetch_url`` (what the
inbox calls for ``source_url``); the Slack ``response_url`` post goes through the same rules.
"""

from __future__ import annotations

import asyncio
import datetime
import gzip
import http.server
import logging
import socket
import ssl
import threading
import time
import tracemalloc
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi.testclient import TestClient

from clausegate.config import InboxSettings
from clausegate.demo.slack_server import FakeSlack
from clausegate.gateway import GatewayConfig, create_app
from clausegate.gateway.slack import Answer, _post_back
from clausegate.inbox import intake
from clausegate.inbox.errors import SourceUnavailable, TooLarge
from clausegate.inbox.service import Inbox
from clausegate.security import fetch as checked
from clausegate.security import url_policies
from tests.support.gates import slack_settings
from tests.support.inbox_support import auth, inbox_settings, make_key
from tests.support.waiting import wait_until

PDF = b"%PDF-1.4\n% test document\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n"
MB = 1024 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _chunks(self, chunk: bytes, pause: float = 0.0, **headers: str) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        try:
            while self.server.sent < 512 * MB:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                self.server.sent += len(chunk)
                time.sleep(pause)
        except OSError:
            self.server.ended.append("hung up")  # the client hung up: what the cap and the timeout should make it do
        else:
            self.server.ended.append("drained")
        self.close_connection = True

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.server.requests.append((parts.path, self.headers.get("Host")))
        if parts.path.endswith(".pdf"):
            self._send(200, PDF, Content_Type="application/pdf")
        elif parts.path == "/host":  # a "PDF" naming the Host header it was asked for
            self._send(200, PDF + self.headers.get("Host", "").encode())
        elif parts.path == "/html":
            self._send(200, b"<!doctype html><title>Prefect</title>", Content_Type="text/html")
        elif parts.path == "/redirect":
            self._send(int(query.get("status", 302)), Location=query["to"])
        elif parts.path == "/hops":  # /hops?n=N redirects N times, then serves a PDF
            left = int(query["n"])
            self._send(302, Location=f"/hops?n={left - 1}") if left else self._send(200, PDF)
        elif parts.path == "/endless":
            self._chunks(b"%PDF-1.4\n" + b"0" * (64 * 1024 - 9))
        elif parts.path == "/drip":
            self._chunks(b"%", pause=0.2)
        elif parts.path == "/gzip-bomb":
            self._send(200, self.server.bomb, Content_Encoding="gzip", Content_Type="application/pdf")
        else:
            self._send(404, b"not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.requests.append((self.path, self.rfile.read(length)))
        self._send(200, b"ok")


class Server:
    """A threaded HTTP server on 127.0.0.1 that records what it was asked (and how much it sent)."""

    def __init__(self, tls=None) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.httpd.daemon_threads = True
        self.httpd.requests, self.httpd.sent, self.httpd.bomb, self.httpd.ended = [], 0, b"", []
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def requests(self) -> list:
        return self.httpd.requests

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def a():
    server = Server()
    yield server
    server.close()


@pytest.fixture(scope="module")
def b():
    server = Server()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _fresh(a, b):
    a.requests.clear()
    b.requests.clear()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def settings(tmp_path, allow: list[str], private: list[str] = (), **more) -> InboxSettings:
    values = dict(data_dir=tmp_path, url_allow_list=allow, url_allow_private_hosts=list(private), max_upload_mb=1.0,
                  url_timeout_seconds=5.0)
    return InboxSettings(**{**values, **more})


def fetch(url: str, config: InboxSettings, limit: float = 30.0):
    return asyncio.run(asyncio.wait_for(intake.fetch_url(url, config), limit))


def refusal(url: str, config: InboxSettings) -> SourceUnavailable:
    with pytest.raises(SourceUnavailable) as caught:
        fetch(url, config)
    return caught.value


@pytest.fixture
def fake_dns(monkeypatch):
    """Names under .test resolve as the test says (and the lookups are counted); the rest as usual."""
    real, table, calls = socket.getaddrinfo, {}, []

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name in table:
            calls.append(name)
            answer = table[name]
            addresses = answer(calls.count(name)) if callable(answer) else answer
            return [(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                     (ip, int(port or 0)) if ":" not in ip else (ip, int(port or 0), 0, 0)) for ip in addresses]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table, calls


# -- the allow-list is compared exactly, on parsed URLs ---------------------------------------------

def test_userinfo_cannot_smuggle_another_host_or_port(tmp_path, a, b):
    config = settings(tmp_path, [a.origin], private=["127.0.0.1"])
    assert fetch(f"{a.origin}/contract.pdf", config)[0] == PDF  # the allowed origin itself works
    for url in (f"http://127.0.0.1:{a.port}@127.0.0.1:{b.port}/contract.pdf",
                f"http://127.0.0.1:{a.port}:x@127.0.0.1:{b.port}/contract.pdf",
                f"http://user@127.0.0.1:{a.port}/contract.pdf"):
        refusal(url, config)
    assert not b.requests
    assert not intake.url_allowed(f"http://127.0.0.1:{a.port}@127.0.0.1:{b.port}/x.pdf", [a.origin])


def test_a_url_entry_is_not_a_string_prefix(tmp_path, a, fake_dns):
    table, _ = fake_dns
    table["files.test.evil.test"] = ["127.0.0.1"]
    config = settings(tmp_path, ["http://files.test", f"http://127.0.0.1:{a.port}/public"], private=["127.0.0.1",
                                                                                                "files.test.evil.test"])
    refusal(f"http://files.test.evil.test:{a.port}/contract.pdf", config)
    refusal(f"{a.origin}/publicity/contract.pdf", config)  # path prefix on whole segments
    refusal(f"{a.origin}/public/../secret/contract.pdf", config)  # compared after normalising
    refusal(f"{a.origin}/public/%2e%2e/secret/contract.pdf", config)
    refusal(f"{a.origin}/public/..%2Fsecret/contract.pdf", config)
    assert not a.requests
    assert fetch(f"{a.origin}/public/contract.pdf", config)[1] == "contract.pdf"


def test_a_bare_host_allows_the_default_ports_only(tmp_path, a):
    config = settings(tmp_path, ["127.0.0.1"], private=["127.0.0.1"])
    refusal(f"{a.origin}/contract.pdf", config)
    assert not a.requests
    assert not intake.url_allowed(f"{a.origin}/contract.pdf", ["127.0.0.1"])
    assert intake.url_allowed("http://127.0.0.1/contract.pdf", ["127.0.0.1"])
    assert intake.url_allowed("https://127.0.0.1:443/contract.pdf", ["127.0.0.1"])
    assert intake.url_allowed(f"https://127.0.0.1:{a.port}/c.pdf", [f"127.0.0.1:{a.port}"])
    assert not intake.url_allowed(f"https://127.0.0.1:{a.port}/c.pdf", [a.origin])  # scheme is part of it


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/c.pdf", "http:/127.0.0.1/c.pdf",
                                 "http://127.0.0.1\\@evil.test/c.pdf", "http://bücher.test/c.pdf",
                                 "http://xn--bcher-kva.test\u3002evil/c.pdf", "http://127.1/c.pdf",
                                 "http://2130706433/c.pdf", "http://0x7f000001/c.pdf", "http:///c.pdf",
                                 "http://127.0.0.1:99999/c.pdf", "http://127.0.0.1/c.pdf\x00", " http://127.0.0.1/c"])
def test_malformed_and_trick_urls_are_refused(tmp_path, url):
    config = settings(tmp_path, ["127.0.0.1", "http://evil.test", "bücher.test".encode("idna").decode()],
                      private=["127.0.0.1"])
    refusal(url, config)


def test_bad_allow_list_entries_fail_at_start_up(tmp_path):
    for entry in ("http://user@host", "host/path", "http://host/?q=1", "bücher.test", "host:0"):
        with pytest.raises(ValueError, match="allow-list entry"):
            Inbox(settings(tmp_path, [entry]))  # the gateway's inbox, built at start-up


# -- addresses: loopback, private, link-local ... refused unless the host is explicitly allowed --------

def test_loopback_is_refused_unless_the_host_is_allowed_as_private(tmp_path, a, monkeypatch):
    refusal(f"{a.origin}/contract.pdf", settings(tmp_path, [a.origin]))
    assert not a.requests
    assert fetch(f"{a.origin}/contract.pdf", settings(tmp_path, [a.origin], private=["127.0.0.1"]))[0] == PDF
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_LIST", f" {a.origin} , example.com")
    monkeypatch.setenv("CLAUSEGATE_INBOX_URL_ALLOW_PRIVATE_HOSTS", "127.0.0.1, ::1")
    from_env = InboxSettings(data_dir=tmp_path)
    assert from_env.url_allow_private_hosts == ["127.0.0.1", "::1"]
    assert fetch(f"{a.origin}/contract.pdf", from_env)[0] == PDF


@pytest.mark.parametrize("host", ["10.1.2.3", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:a01:203]",
                                  "0.0.0.0", "100.64.0.1", "224.0.0.1", "[fe80::1]", "[fd00::1]", "[2002:a00:1::]",
                                  "[64:ff9b::a9fe:a9fe]"])
def test_non_public_addresses_are_refused_before_connecting(tmp_path, host, caplog):
    config = settings(tmp_path, [f"{host}:8080"], private=["127.0.0.1"])
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="clausegate.security.fetch"):
        refusal(f"http://{host}:8080/contract.pdf", config)
    assert time.monotonic() - started < 2  # refused, not a connect attempt timing out
    assert "FETCH-ADDRESS" in caplog.text


def test_names_are_checked_on_every_address_and_the_checked_one_is_used(tmp_path, a, fake_dns):
    table, calls = fake_dns
    table["mixed.test"] = ["93.184.216.34", "127.0.0.1"]  # one public answer is not enough
    table["intranet.test"] = ["127.0.0.1"]
    table["rebind.test"] = lambda n: ["127.0.0.1"] if n == 1 else ["10.9.9.9"]  # a second lookup would differ
    refusal(f"http://mixed.test:{a.port}/contract.pdf", settings(tmp_path, [f"mixed.test:{a.port}"]))
    refusal(f"http://intranet.test:{a.port}/contract.pdf", settings(tmp_path, [f"intranet.test:{a.port}"]))
    assert not a.requests
    config = settings(tmp_path, [f"rebind.test:{a.port}"], private=["rebind.test"])
    data, _ = fetch(f"http://rebind.test:{a.port}/host", config)
    assert data == PDF + f"rebind.test:{a.port}".encode()  # pinned to the checked address, the name kept in Host
    assert calls.count("rebind.test") == 1


def _tls_server(tmp_path, name: str):
    """An HTTPS server on 127.0.0.1 whose self-signed certificate names ``name``; (server, client SSL context)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return Server(tls=context), ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))


def test_tls_to_the_pinned_address_still_checks_the_certificate_against_the_name(tmp_path, fake_dns, caplog):
    table, _ = fake_dns
    table["docs.tls.test"] = table["other.tls.test"] = ["127.0.0.1"]
    server, trust = _tls_server(tmp_path, "docs.tls.test")
    try:
        hosts = ["docs.tls.test", "other.tls.test"]
        policy = checked.Policy.build([f"https://{h}:{server.port}" for h in hosts], hosts, verify=trust, timeout=5)
        data, final = asyncio.run(checked.fetch(f"https://docs.tls.test:{server.port}/host", policy))
        assert data == PDF + f"docs.tls.test:{server.port}".encode() and final.host == "docs.tls.test"
        with caplog.at_level(logging.WARNING, logger="clausegate.security.fetch"), pytest.raises(checked.FetchRefused):
            asyncio.run(checked.fetch(f"https://other.tls.test:{server.port}/host", policy))  # cert names docs.tls.test
        assert "CERTIFICATE_VERIFY_FAILED" in caplog.text or "certificate" in caplog.text.lower()
    finally:
        server.close()


# -- redirects are re-checked ----------------------------------------------------------------------

def test_redirects_are_checked_like_the_first_url(tmp_path, a, b, fake_dns):
    table, _ = fake_dns
    table["public.test"] = ["127.0.0.1"]
    config = settings(tmp_path, [a.origin, f"public.test:{b.port}"], private=["127.0.0.1"])
    for target in (f"{b.origin}/contract.pdf", f"http://127.0.0.1:{closed_port()}/contract.pdf",
                   f"http://127.0.0.1:{a.port}@127.0.0.1:{b.port}/contract.pdf", "file:///etc/passwd",
                   f"http://public.test:{b.port}/contract.pdf"):  # allowed, but resolves to loopback, not private
        refusal(f"{a.origin}/redirect?to={target}", config)
    assert not b.requests
    allowed = settings(tmp_path, [a.origin, b.origin], private=["127.0.0.1"])
    for status in (301, 302, 303, 307, 308):
        data, name = fetch(f"{a.origin}/redirect?status={status}&to={b.origin}/final.pdf", allowed)
        assert (data, name) == (PDF, "final.pdf")
    assert fetch(f"{a.origin}/hops?n=5", allowed)[0] == PDF
    refusal(f"{a.origin}/hops?n=6", allowed)


# -- size cap while streaming, total timeout -------------------------------------------------------

def test_an_endless_chunked_answer_is_cut_at_the_cap(tmp_path, a):
    a.httpd.sent, a.httpd.ended = 0, []
    config = settings(tmp_path, [a.origin], private=["127.0.0.1"])
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(TooLarge):
            fetch(f"{a.origin}/endless", config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 10
    assert peak < 8 * MB, peak
    # the server's send loop ends when the client hangs up (or once it has sent everything: drained)
    ended = wait_until(lambda: list(a.httpd.ended), 10, what="the server's endless answer to end")
    assert ended == ["hung up"] and a.httpd.sent < 48 * MB, (ended, a.httpd.sent)


def test_a_compressed_answer_is_not_inflated(tmp_path, a):
    a.httpd.bomb = gzip.compress(b"\0" * 64 * MB, compresslevel=9)  # ~64 KB on the wire, 64 MB inflated
    config = settings(tmp_path, [a.origin], private=["127.0.0.1"])
    tracemalloc.start()
    try:
        with pytest.raises((SourceUnavailable, TooLarge)):
            fetch(f"{a.origin}/gzip-bomb", config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MB, peak


def test_a_slow_server_hits_the_total_timeout(tmp_path, a):
    config = settings(tmp_path, [a.origin], private=["127.0.0.1"], url_timeout_seconds=1.5)
    started = time.monotonic()
    with pytest.raises(SourceUnavailable):  # each byte arrives in time; the whole answer does not
        fetch(f"{a.origin}/drip", config, limit=15)
    assert time.monotonic() - started < 5


# -- one generic answer: nothing about ports, statuses or addresses --------------------------------

def test_closed_port_open_port_and_disallowed_urls_answer_the_same(tmp_path, a, caplog):
    closed = closed_port()
    config = settings(tmp_path, [a.origin, f"127.0.0.1:{closed}"], private=["127.0.0.1"])
    answers = {}
    with caplog.at_level(logging.WARNING, logger="clausegate.security.fetch"):
        for name, url in (("closed", f"http://127.0.0.1:{closed}/contract.pdf"), ("html", f"{a.origin}/html"),
                          ("404", f"{a.origin}/missing.txt"), ("not-allowed", f"http://127.0.0.1:{closed + 1}/x.pdf"),
                          ("private", "http://10.0.0.1/x.pdf"), ("userinfo", f"http://a@127.0.0.1:{a.port}/x.pdf")):
            try:
                stored = intake.store(*fetch(url, config), origin=f"url:{url}", settings=config)
                answers[name] = ("stored", stored.size_bytes)
            except Exception as error:  # any failure: compared below
                answers[name] = (type(error).__name__, error.http_status, error.code, error.message, error.hint)
    assert len(set(answers.values())) == 1, answers
    kind, status, code, message, hint = answers["closed"]
    assert (kind, status, code) == ("SourceUnavailable", 422, "CG-INBOX-SOURCE")
    assert str(a.port) not in message + hint and str(closed) not in message + hint and "127.0.0.1" not in message
    for reason in ("FETCH-CONNECT", "FETCH-NOT-PDF", "FETCH-STATUS", "FETCH-NOT-ALLOWED", "FETCH-USERINFO"):
        assert reason in caplog.text  # the specific reason is in the server log


def test_a_refused_url_is_logged_by_scheme_and_host_only(tmp_path, a, caplog):
    """The CG-FETCH-NOT-ALLOWED line leaves out the URL's path (a token in it must not reach the log)."""
    config = settings(tmp_path, [f"{a.origin}/public", f"{a.origin}/redirect"], private=["127.0.0.1"])
    secret = "tok-" + uuid.uuid4().hex
    with caplog.at_level(logging.WARNING, logger="clausegate.security.fetch"):
        refusal(f"{a.origin}/private/{secret}/contract.pdf", config)  # the first URL refused
        refusal(f"{a.origin}/redirect?to={a.origin}/elsewhere/{secret}.pdf", config)  # a redirect refused
    lines = [r.getMessage() for r in caplog.records if "FETCH-NOT-ALLOWED" in r.getMessage()]
    assert len(lines) == 2, caplog.text
    assert all(f"127.0.0.1:{a.port}" in line for line in lines), lines
    assert secret not in caplog.text and "/private" not in caplog.text and "/elsewhere" not in caplog.text


def test_the_gateway_no_longer_reaches_other_ports_through_an_allowed_url(tmp_path, a, prefect_server):
    """The userinfo example, over the real inbox route: userinfo to the Prefect API's port vs a closed port."""
    config = inbox_settings(tmp_path, url_allow_list=[a.origin], url_allow_private_hosts=["127.0.0.1"])
    key, _ = make_key(f"fetch-{uuid.uuid4().hex[:8]}")
    app = create_app(GatewayConfig(inbox=Inbox(config, ui_url="http://ui.example")))
    answers = []
    with TestClient(app) as client:
        for port in (prefect_server.port, closed_port()):
            url = f"http://127.0.0.1:{a.port}@127.0.0.1:{port}/api/health"
            response = client.post("/inbox/tasks", headers=auth(key),
                                   data={"source_url": url, "playbook": "deploy-test"})
            answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1] and answers[0][0] == 422, answers
    assert str(prefect_server.port) not in str(answers[0])


# -- Slack's response_url goes through the same rules -------------------------------------------------

def test_slack_response_url_posts_only_to_slack_or_the_configured_api_origin(a, b):
    with FakeSlack(token="xoxb-fetch-tests") as fake:
        config = GatewayConfig(slack=slack_settings(fake))
        answer = dict(run_id="r", decision="approve", user_id="U1", reviewer="dana", comment="", channel_id=None)
        _post_back(config, Answer(**answer, response_url=fake.response_url("ok")), "approved")
        assert [r["body"]["text"] for r in fake.wait_for_response(1, timeout=10)] == ["approved"]
        for url in (f"{b.origin}/steal", f"http://127.0.0.1:{fake.url.rsplit(':', 1)[1]}@127.0.0.1:{b.port}/steal",
                    f"{a.origin}/redirect?to={fake.response_url('redirected')}"):
            _post_back(config, Answer(**answer, response_url=url), "secret outcome")
        assert not b.requests and not a.requests
        assert len(fake.responses) == 1


    policy = url_policies.slack_policy(config.slack)
    assert policy.allows_url("https://hooks.slack.com/actions/T1/2/abc")
    for bad in ("http://hooks.slack.com/actions/T1/2/abc", "https://hooks.slack.com.evil.test/actions/x",
                "https://hooks.slack.com@evil.test/actions/x", "https://hooks.slack.com:8443/actions/x"):
        assert not policy.allows_url(bad), bad
    assert url_policies.slack_policy(None).allow == checked.Policy.build([checked.SLACK_HOOKS]).allow
