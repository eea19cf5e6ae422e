"""A fault-injecting HTTP/1.1 reverse proxy for loopback tests of the OpenAI-compatible API adapter.

Why it exists: a real API server rate-limits, fails with 5xx, stalls and drops connections mid-response, and the
harness's API adapter has to survive all of that and still end a run with results identical to a clean run. This
proxy sits between the adapter and a local upstream (a stub or a real server on 127.0.0.1) and injects exactly
those faults, deterministically, per request:

- ``rate_limit``: answer 429 itself (JSON error body, optional ``Retry-After``); the upstream never sees it;
- ``server_error``: answer 500 itself (JSON error body); the upstream never sees it;
- ``stall``: forward the request (the upstream does the work) but send the client nothing for ``stall_seconds``,
  then close the connection without a response;
- ``cut``: forward the request, then send the status line, the headers and only the first half of the body bytes,
  and close the connection.

Requests are numbered globally in arrival order from 0; a fault list (index ``i`` applies to request ``i``, past
its end requests pass) or a schedule callable decides the fault for each. Every response, relayed or generated,
carries ``Connection: close`` and the proxy closes the client connection after it, so keep-alive clients simply
reconnect. Standard library only (asyncio in a background thread), so any test can use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal

__all__ = ["Fault", "FaultKind", "FaultProxy", "Schedule"]

_logger = logging.getLogger(__name__)

FaultKind = Literal["rate_limit", "server_error", "stall", "cut"]
_KINDS: frozenset[str] = frozenset({"rate_limit", "server_error", "stall", "cut"})

# Request headers the proxy owns: it sets Host, Content-Length and Connection itself and never forwards a body
# chunked (a chunked request body is decoded and resent with a Content-Length).
_REQUEST_OWNED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection"}
)
_RESPONSE_CONNECTION = frozenset({b"connection", b"keep-alive", b"proxy-connection"})
_HEAD_LIMIT = 1 << 20


@dataclass(frozen=True)
class Fault:
    """One injected fault. ``retry_after`` only matters for ``rate_limit``, ``stall_seconds`` only for ``stall``."""

    kind: FaultKind
    retry_after: float | None = None
    stall_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {sorted(_KINDS)}")
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError("retry_after must be >= 0")
        if self.stall_seconds < 0:
            raise ValueError("stall_seconds must be >= 0")


Schedule = Callable[[int, str, str, bytes], "Fault | None"]
"""``schedule(request_index, method, path, body) -> Fault | None``; called on the proxy's thread."""


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes


class _BadRequest(Exception):
    pass


def format_retry_after(seconds: float) -> str:
    """Seconds as a short decimal: ``0.2`` -> ``"0.2"``, ``1.0`` -> ``"1"``, ``1.25`` -> ``"1.25"``."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _json_error(
    status: int, reason: str, message: str, error_type: str, extra: Sequence[tuple[str, str]] = ()
) -> bytes:
    body = json.dumps({"error": {"message": message, "type": error_type}}).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        *extra,
    ]
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def _split_response(raw: bytes) -> tuple[bytes, bytes] | None:
    """(header block without its blank line, body bytes as sent), or None when there is no complete header block."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        return None
    return raw[:end], raw[end + 4 :]


def _with_connection_close(head: bytes) -> bytes:
    """The header block, Connection/Keep-Alive headers replaced by ``Connection: close``, blank line included."""
    lines = head.split(b"\r\n")
    kept = [lines[0]]
    kept += [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _RESPONSE_CONNECTION]
    kept.append(b"Connection: close")
    return b"\r\n".join(kept) + b"\r\n\r\n"


def _is_framed(head: bytes) -> bool:
    """Whether the response says where its body ends (Content-Length or chunked), so a short body is detectable."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length" or (name == b"transfer-encoding" and b"chunked" in value.lower()):
            return True
    return False


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        line = await reader.readuntil(b"\r\n")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError as exc:
            raise _BadRequest(f"bad chunk size line {line!r}") from exc
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, up to the blank line
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    """One request from the client, or None when the client closed before sending a complete one."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = raw[:-4].decode("latin-1").split("\r\n")
    while lines and not lines[0]:  # tolerate stray CRLFs before the request line
        lines.pop(0)
    parts = lines[0].split(" ") if lines else []
    if len(parts) != 3:
        raise _BadRequest(f"bad request line {lines[:1]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise _BadRequest(f"bad header line {line!r}")
        headers.append((name.strip(), value.strip()))
    transfer_encoding = _header(headers, "transfer-encoding")
    length = _header(headers, "content-length")
    if transfer_encoding and "chunked" in transfer_encoding.lower():
        body = await _read_chunked(reader)
    elif length:
        try:
            size = int(length)
        except ValueError as exc:
            raise _BadRequest(f"bad Content-Length {length!r}") from exc
        body = await reader.readexactly(size)
    else:
        body = b""
    return _Request(parts[0], parts[1], parts[2], headers, body)


class FaultProxy:
    """Reverse proxy on 127.0.0.1 that relays to ``upstream`` and injects the scheduled faults.

    ``faults`` is either a sequence (request ``i`` gets ``faults[i]``; ``None`` or past the end: relay faithfully)
    or a callable ``schedule(request_index, method, path, body) -> Fault | None``. ``log`` holds
    ``(index, method, path, outcome)`` per request in arrival order, outcome ``"ok"`` or the fault kind.
    ``upstream_timeout`` bounds connecting to and reading from the upstream (502 to the client when it fails).
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        faults: Sequence[Fault | None] | Schedule = (),
        *,
        upstream_timeout: float = 60.0,
    ) -> None:
        self.upstream = upstream
        self._schedule: Schedule
        if callable(faults):
            self._schedule = faults
        else:
            fault_list = list(faults)
            self._schedule = lambda index, _method, _path, _body: fault_list[index] if index < len(fault_list) else None
        self.upstream_timeout = upstream_timeout
        self._log: list[tuple[int, str, str, str]] = []
        self._log_lock = threading.Lock()
        self._next_index = 0
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._port: int | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # -- public API -------------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FaultProxy is not started")
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> list[tuple[int, str, str, str]]:
        """A snapshot of ``(index, method, path, outcome)`` for every request so far, in index order."""
        with self._log_lock:
            return list(self._log)

    def start(self) -> FaultProxy:
        """Bind 127.0.0.1 on an ephemeral port in a background thread; returns once it is listening."""
        if self._thread is not None:
            raise RuntimeError("FaultProxy already started")
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            raise RuntimeError("FaultProxy failed to start") from self._startup_error
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop listening, abandon stalls and close every client connection; waits for the thread to end."""
        thread, loop, stopping = self._thread, self._loop, self._stopping
        if thread is None:
            return
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already finished
                loop.call_soon_threadsafe(stopping.set)
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError("FaultProxy thread did not stop in time")
        self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- event loop thread ------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # pragma: no cover - only if asyncio itself fails
            self._startup_error = self._startup_error or exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=_HEAD_LIMIT, backlog=1024)
        except BaseException as exc:
            self._startup_error = exc
            return
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 1.0)

    def _admit(self, request: _Request) -> Fault | None:
        """Number the request, ask the schedule for its fault and log the outcome (one step, so the log is ordered)."""
        index = self._next_index
        self._next_index += 1
        fault = self._schedule(index, request.method, request.target, request.body)
        with self._log_lock:
            self._log.append((index, request.method, request.target, fault.kind if fault else "ok"))
        return fault

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            try:
                request = await _read_request(reader)
            except (_BadRequest, asyncio.LimitOverrunError, ValueError) as exc:
                writer.write(_json_error(400, "Bad Request", str(exc), "invalid_request_error"))
                await writer.drain()
                return
            if request is None:
                return
            fault = self._admit(request)
            if fault is None:
                await self._relay(request, writer)
            elif fault.kind == "rate_limit":
                extra = [] if fault.retry_after is None else [("Retry-After", format_retry_after(fault.retry_after))]
                writer.write(_json_error(429, "Too Many Requests", "rate limited by fault proxy", "rate_limit", extra))
                await writer.drain()
            elif fault.kind == "server_error":
                writer.write(
                    _json_error(500, "Internal Server Error", "server error injected by fault proxy", "server_error")
                )
                await writer.drain()
            elif fault.kind == "stall":
                await self._stall(request, reader, fault.stall_seconds)
            else:
                await self._cut(request, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # the proxy is stopping; ending quietly keeps asyncio from logging the cancelled handler
        except Exception:
            _logger.exception("fault proxy: unexpected error while handling a connection")
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _upstream_request(self, request: _Request) -> bytes:
        host, port = self.upstream
        headers = [(k, v) for k, v in request.headers if k.lower() not in _REQUEST_OWNED]
        headers.insert(0, ("Host", f"{host}:{port}"))
        if request.body or _header(request.headers, "content-length") is not None or request.method in ("POST", "PUT"):
            headers.append(("Content-Length", str(len(request.body))))
        headers.append(("Connection", "close"))
        head = f"{request.method} {request.target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
        return head.encode("latin-1") + b"\r\n" + request.body

    async def _forward(self, request: _Request) -> bytes:
        """Send the request on a new upstream connection and return the raw response, read to EOF."""
        host, port = self.upstream
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), self.upstream_timeout)
        try:
            writer.write(self._upstream_request(request))
            await writer.drain()
            return await asyncio.wait_for(reader.read(), self.upstream_timeout)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _relay(self, request: _Request, writer: asyncio.StreamWriter) -> None:
        try:
            raw = await self._forward(request)
        except (OSError, asyncio.TimeoutError) as exc:
            writer.write(_json_error(502, "Bad Gateway", f"fault proxy: upstream failed: {exc!r}", "bad_gateway"))
            await writer.drain()
            return
        parts = _split_response(raw)
        writer.write(raw if parts is None else _with_connection_close(parts[0]) + parts[1])
        await writer.drain()

    async def _stall(self, request: _Request, reader: asyncio.StreamReader, seconds: float) -> None:
        """Forward, then stay silent until ``seconds`` after arrival (or the client leaves, or the proxy stops)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await self._forward(request)
        remaining = deadline - loop.time()
        if remaining > 0:
            # Reading to EOF returns early when the client gives up; nothing is ever written to it.
            with contextlib.suppress(OSError, asyncio.TimeoutError):
                await asyncio.wait_for(reader.read(), remaining)

    async def _cut(self, request: _Request, writer: asyncio.StreamWriter) -> None:
        """Forward, then send the head and half the body and close; with no body, half the head.

        A response that declares its length (Content-Length or chunked) is closed normally, so the client sees a
        short body; one delimited only by EOF would look complete after a normal close, so it is reset instead.
        """
        try:
            raw = await self._forward(request)
        except (OSError, asyncio.TimeoutError):
            return  # nothing to cut; the client just sees the connection close
        parts = _split_response(raw)
        if parts is None:
            payload, framed = raw[: len(raw) // 2], False
        else:
            head = _with_connection_close(parts[0])
            body = parts[1]
            payload = head + body[: len(body) // 2] if body else head[: len(head) // 2]
            framed = _is_framed(parts[0]) or not body
        transport = writer.transport
        transport.set_write_buffer_limits(high=0)  # so drain() waits until every byte has reached the socket
        writer.write(payload)
        await writer.drain()
        if not framed:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
