"""The fault-injecting proxy itself: faithful relaying, each fault kind, the request log and schedules."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.fault_proxy import Fault, FaultProxy, format_retry_after


class _Upstream(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 drops SYNs under concurrency (1 s retransmits)

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.lock = threading.Lock()
        self.calls = 0
        self.last_response = b""
        self.last_headers: dict[str, str] = {}

    @property
    def address(self) -> tuple[str, int]:
        return "127.0.0.1", self.server_address[1]


class _EchoHandler(BaseHTTPRequestHandler):
    """POST /v1/echo: JSON echoing the body and a call counter (Content-Length); /v1/chunked: same, chunked."""

    protocol_version = "HTTP/1.1"
    server: _Upstream

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.calls += 1
            count = self.server.calls
            self.server.last_headers = dict(self.headers.items())
        payload = json.dumps({"echo": body.decode(), "count": count}).encode()
        self.server.last_response = payload
        if self.path == "/v1/echo":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        elif self.path == "/v1/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(payload) // 2
            for piece in (payload[:half], payload[half:]):
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_error(404)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def _post(
    proxy: FaultProxy, body: bytes = b'{"prompt": "hi"}', path: str = "/v1/echo", timeout: httpx.Timeout | float = 5.0
) -> httpx.Response:
    return httpx.post(proxy.url + path, content=body, headers={"Content-Type": "application/json"}, timeout=timeout)


def test_clean_request_is_relayed_byte_exact(upstream: _Upstream) -> None:
    with FaultProxy(upstream.address) as proxy:
        response = httpx.post(proxy.url + "/v1/echo", content=b'{"a": 1}', headers={"X-Test": "kept"})
    assert response.status_code == 200
    assert response.content == upstream.last_response
    assert json.loads(response.content) == {"echo": '{"a": 1}', "count": 1}
    assert response.headers["connection"] == "close"
    assert upstream.last_headers["Connection"] == "close"
    assert upstream.last_headers["Host"] == f"127.0.0.1:{upstream.address[1]}"
    assert upstream.last_headers["X-Test"] == "kept"
    assert proxy.log == [(0, "POST", "/v1/echo", "ok")]


def test_chunked_upstream_response_is_relayed(upstream: _Upstream) -> None:
    with FaultProxy(upstream.address) as proxy:
        response = _post(proxy, b"chunky", path="/v1/chunked")
    assert response.status_code == 200
    assert response.content == upstream.last_response


@pytest.mark.parametrize(("retry_after", "header"), [(0.2, "0.2"), (1, "1"), (None, None)])
def test_rate_limit_answers_429_without_upstream(upstream: _Upstream, retry_after: float | None, header: str) -> None:
    with FaultProxy(upstream.address, [Fault("rate_limit", retry_after=retry_after)]) as proxy:
        response = _post(proxy)
    assert response.status_code == 429
    assert response.headers.get("retry-after") == header
    assert response.json() == {"error": {"message": "rate limited by fault proxy", "type": "rate_limit"}}
    assert upstream.calls == 0
    assert proxy.log == [(0, "POST", "/v1/echo", "rate_limit")]


def test_server_error_answers_500_without_upstream(upstream: _Upstream) -> None:
    with FaultProxy(upstream.address, [Fault("server_error")]) as proxy:
        response = _post(proxy)
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert upstream.calls == 0


def test_stall_times_out_the_client_but_reaches_upstream(upstream: _Upstream) -> None:
    proxy = FaultProxy(upstream.address, [Fault("stall", stall_seconds=2)]).start()
    try:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            _post(proxy, timeout=httpx.Timeout(5.0, read=0.5))
        assert time.monotonic() - started < 3
        deadline = time.monotonic() + 2
        while upstream.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert upstream.calls == 1
    finally:
        started = time.monotonic()
        proxy.stop()
    assert time.monotonic() - started < 2
    assert proxy.log == [(0, "POST", "/v1/echo", "stall")]


def test_stall_ends_with_a_close_and_no_response(upstream: _Upstream) -> None:
    with FaultProxy(upstream.address, [Fault("stall", stall_seconds=0.3)]) as proxy:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
            sock.sendall(b"POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            assert sock.recv(1024) == b""
        assert 0.25 < time.monotonic() - started < 2
        assert _post(proxy).status_code == 200  # the fault was for request 0 only
    assert upstream.calls == 2
    assert [outcome for *_, outcome in proxy.log] == ["stall", "ok"]


def test_stall_is_abandoned_when_the_proxy_stops(upstream: _Upstream) -> None:
    proxy = FaultProxy(upstream.address, [Fault("stall", stall_seconds=30)]).start()
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    try:
        sock.sendall(b"POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        deadline = time.monotonic() + 2
        while upstream.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        proxy.stop()
        assert time.monotonic() - started < 2
        assert sock.recv(1024) == b""
    finally:
        sock.close()


@pytest.mark.parametrize("path", ["/v1/echo", "/v1/chunked"])
def test_cut_breaks_the_response_after_reaching_upstream(upstream: _Upstream, path: str) -> None:
    with (
        FaultProxy(upstream.address, [Fault("cut")]) as proxy,
        pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)),
    ):
        _post(proxy, path=path)
    assert upstream.calls == 1
    assert proxy.log == [(0, "POST", path, "cut")]


def test_cut_sends_head_and_half_the_body(upstream: _Upstream) -> None:
    with (
        FaultProxy(upstream.address, [Fault("cut")]) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock,
    ):
        sock.sendall(b"POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.")
    assert b" 200 " in head.split(b"\r\n")[0]
    assert f"Content-Length: {len(upstream.last_response)}".encode() in head
    assert body == upstream.last_response[: len(upstream.last_response) // 2]


def test_log_follows_the_fault_list_in_order(upstream: _Upstream) -> None:
    faults = [None, Fault("rate_limit", retry_after=0.1), None, Fault("server_error")]
    with FaultProxy(upstream.address, faults) as proxy, httpx.Client(base_url=proxy.url) as client:
        statuses = [client.post("/v1/echo", content=f"{i}".encode()).status_code for i in range(6)]
    assert statuses == [200, 429, 200, 500, 200, 200]
    assert proxy.log == [
        (0, "POST", "/v1/echo", "ok"),
        (1, "POST", "/v1/echo", "rate_limit"),
        (2, "POST", "/v1/echo", "ok"),
        (3, "POST", "/v1/echo", "server_error"),
        (4, "POST", "/v1/echo", "ok"),
        (5, "POST", "/v1/echo", "ok"),
    ]
    assert upstream.calls == 4


def test_schedule_callable_sees_index_method_path_and_body(upstream: _Upstream) -> None:
    seen: list[tuple[int, str, str, bytes]] = []

    def schedule(index: int, method: str, path: str, body: bytes) -> Fault | None:
        seen.append((index, method, path, body))
        return Fault("server_error") if b"fail" in body else None

    with FaultProxy(upstream.address, schedule) as proxy, httpx.Client(base_url=proxy.url) as client:
        statuses = [client.post("/v1/echo", content=body).status_code for body in (b"ok", b"fail", b"ok")]
    assert statuses == [200, 500, 200]
    assert seen == [(0, "POST", "/v1/echo", b"ok"), (1, "POST", "/v1/echo", b"fail"), (2, "POST", "/v1/echo", b"ok")]
    assert [outcome for *_, outcome in proxy.log] == ["ok", "server_error", "ok"]
    assert upstream.calls == 2


def test_many_concurrent_clients(upstream: _Upstream) -> None:
    n = 64
    with (
        FaultProxy(upstream.address, lambda i, *_: Fault("rate_limit") if i % 4 == 3 else None) as proxy,
        httpx.Client(base_url=proxy.url, limits=httpx.Limits(max_connections=n)) as client,
        ThreadPoolExecutor(max_workers=16) as pool,
    ):
        responses = list(pool.map(lambda i: client.post("/v1/echo", content=f"req-{i}".encode()), range(n)))
    assert sorted(r.status_code for r in responses) == [200] * (n - n // 4) + [429] * (n // 4)
    echoes = sorted(r.json()["echo"] for r in responses if r.status_code == 200)
    assert len(set(echoes)) == n - n // 4
    assert [index for index, *_ in proxy.log] == list(range(n))
    assert upstream.calls == n - n // 4


def test_unreachable_upstream_gives_502() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    with FaultProxy(("127.0.0.1", dead_port)) as proxy:
        response = _post(proxy)
    assert response.status_code == 502
    assert proxy.log == [(0, "POST", "/v1/echo", "ok")]


def test_lifecycle_and_helpers() -> None:
    proxy = FaultProxy(("127.0.0.1", 9))
    with pytest.raises(RuntimeError):
        _ = proxy.port
    proxy.stop()  # stopping an unstarted proxy is a no-op
    with proxy:
        assert proxy.url == f"http://127.0.0.1:{proxy.port}"
        with pytest.raises(RuntimeError):
            proxy.start()
    with pytest.raises(ValueError):
        Fault("explode")  # type: ignore[arg-type]
    assert [format_retry_after(s) for s in (0.2, 1, 1.0, 1.25, 0)] == ["0.2", "1", "1", "1.25", "0"]
