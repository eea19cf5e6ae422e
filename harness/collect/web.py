"""The study server: ``harness collect serve`` serves a study to participants' browsers over HTTP.

Why so thin: what a participant does next, resuming, balanced assignment and refusing replays live in
``StudyFlow`` (tested without HTTP); this module maps requests onto it, and ``guard`` refuses anything malformed
before it gets there. The protocol (docs/collect.md):

* ``GET /`` (with the platform's id parameter, e.g. ``?PROLIFIC_PID=...``): join or come back, set the
  ``hc_session`` cookie, 303 to ``study``; ``GET /study``: the page; ``GET /api/state``: where the participant is;
* ``POST /api/consent`` and ``POST /api/answer``: JSON, with the participant's ``X-CSRF-Token``;
* ``GET /admin`` and ``GET /admin/status.json``: the progress report, behind the admin token;
* ``GET /healthz``: ``ok``.

Every response carries a strict Content-Security-Policy (no inline script or style), ``X-Frame-Options: DENY``,
``nosniff`` and ``no-referrer``; pages and API answers are never cached. Starlette and uvicorn are the optional
``collect`` extra, imported only when a server is made, so ``harness`` works without them. Endpoints that touch
the database are synchronous (Starlette runs them on its thread pool; the store gives each thread its own
connection and serialises writes); the two POSTs read their body asynchronously, bounded, then do the same.

Before anything else, every request but ``GET /healthz`` must name an allowed host (``guard.AllowedHosts``: the
address listened on, and the ``--allowed-host`` names, e.g. the proxy's public one), or gets 400: DNS rebinding stops
there. ``GET /`` refuses a platform's placeholder for an id (400) and, for NEW participants only, more than
``joins_per_minute`` joins per client address and minute (429, ``Retry-After``): neither creates a participant.

Behind a reverse proxy that serves the study under a path (``https://host/study1/``) and strips that prefix, give
``root_path="/study1"`` (uvicorn's convention): redirects and cookie paths then name the public path, and the page's
own links are relative. The session cookie is ``Secure`` when the request came over https (``X-Forwarded-Proto``).
"""

from __future__ import annotations

import hashlib
import hmac
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.collect.flow import Participant, Refused, StudyFlow
from harness.collect.guard import (
    DEFAULT_JOINS_PER_MINUTE,
    MAX_BODY_BYTES,
    AllowedHosts,
    HttpRefusal,
    JoinLimiter,
    answer_fields,
    check_content_type,
    check_csrf,
    check_length,
    check_origin,
    consent_fields,
    parse_object,
    placeholder_id,
    request_scheme,
)
from harness.collect.pages import admin_page, message_page, study_page
from harness.collect.status import progress
from harness.errors import HarnessError
from harness.extras import require_extras

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

SESSION_COOKIE = "hc_session"
ADMIN_COOKIE = "hc_admin"
STATIC = Path(__file__).parent / "static"
#: No script or style but the server's own files; no framing; forms and fetches only to the server itself.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
}


def require_extra() -> None:
    """Fail in one line when starlette or uvicorn is missing (the ``collect`` extra is optional)."""
    require_extras(("collect",), "harness collect serve")


def create_app(flow: StudyFlow, admin_token: str, *, allowed_hosts: AllowedHosts | Sequence[str] = (),
               joins_per_minute: int = DEFAULT_JOINS_PER_MINUTE) -> Starlette:  # fmt: skip
    """The study's ASGI app over ``flow``; ``admin_token`` opens ``/admin`` (it must not be blank). Requests must name
    one of ``allowed_hosts`` (names alone: those and loopback's); ``joins_per_minute``: see ``guard.JoinLimiter``."""
    require_extra()
    if not admin_token or not admin_token.strip():
        raise HarnessError("the admin token must not be empty")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    hosts = allowed_hosts if isinstance(allowed_hosts, AllowedHosts) else AllowedHosts("127.0.0.1", allowed_hosts)
    handlers = _Handlers(flow, admin_token, JoinLimiter(joins_per_minute))
    routes = [
        Route("/", handlers.enter, methods=["GET"]),
        Route("/study", handlers.study, methods=["GET"]),
        Route("/api/state", handlers.state, methods=["GET"]),
        Route("/api/consent", handlers.consent, methods=["POST"]),
        Route("/api/answer", handlers.answer, methods=["POST"]),
        Route("/admin", handlers.admin, methods=["GET"]),
        Route("/admin/status.json", handlers.admin_json, methods=["GET"]),
        Route("/healthz", handlers.healthz, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(_SecurityHeaders, hosts=hosts)],
        exception_handlers={Exception: _internal_error},
    )


class _Handlers:
    """The endpoints, bound to one study's flow."""

    def __init__(self, flow: StudyFlow, admin_token: str, joins: JoinLimiter) -> None:
        self.flow, self.admin_token, self.joins = flow, admin_token, joins
        # The admin cookie holds a keyed digest of the token, never the token itself.
        self.admin_cookie = hmac.new(admin_token.encode(), b"harness-collect-admin", hashlib.sha256).hexdigest()

    # ------------------------------------------------------------------------------------------------ participants
    def enter(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        external_id = next((request.query_params[n] for n in self.flow.study.id_params
                            if request.query_params.get(n, "").strip()), None)  # fmt: skip
        if external_id is not None and placeholder_id(external_id):
            return _page("This link does not work", f"This link still holds the platform's placeholder "
                         f"{external_id[:80]} instead of your id (a preview or test link). Please open the study "
                         "from the study platform.", 400)  # fmt: skip
        participant = None if external_id else self._participant(request)
        if participant is None:
            client = request.client.host if request.client else None  # returning (a known id, a cookie): no limit
            wait = 0 if external_id and self.flow.is_known(external_id) else self.joins.take(client)
            if wait:
                return _page("Please try again in a minute", "Too many people started this study from your network "
                             "in the last minute. Please open the study link again in a minute.", 429,
                             {"retry-after": str(wait)})  # fmt: skip
            try:
                participant = self.flow.join(external_id)
            except Refused as exc:
                return _page("This link does not work", f"The participant id in the link was refused: {exc.message}"
                             " Please open the study link from the study platform again.", 400)  # fmt: skip
        response = RedirectResponse(_root(request) + "/study", status_code=303)
        _set_cookie(response, request, SESSION_COOKIE, participant.session, "/", "lax")
        return response

    def study(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        if self._participant(request) is None:
            return _page("Session not found", "Please open the study link again (the one from the study platform) "
                         "to start or continue the study.", 403)  # fmt: skip
        return HTMLResponse(study_page(self.flow.study.title))

    def state(self, request: Request) -> Response:
        participant = self._participant(request)
        if participant is None:
            return _error(401, "no session: open the study link again")
        study = self.flow.study
        return _json({
            "csrf": participant.csrf,
            "kind": study.kind,
            "title": study.title,
            "state": self.flow.state(participant),
            "texts": {"consent": study.consent, "instructions": study.instructions},
            "response_seconds": study.response_seconds,
            "allow_skip": study.allow_skip,
        })  # fmt: skip

    async def consent(self, request: Request) -> Response:
        return await self._post(request, self._consent)

    async def answer(self, request: Request) -> Response:
        return await self._post(request, self._answer)

    def _consent(self, participant: Participant, body: dict[str, Any]) -> dict[str, Any]:
        consent_fields(body)
        return self.flow.consent(participant)  # not stored when no place is free: the state says why

    def _answer(self, participant: Participant, body: dict[str, Any]) -> dict[str, Any]:
        fields = answer_fields(body)
        return self.flow.answer(
            participant, fields["seq"], fields["step"], fields["answer"], fields["client_ms"], fields["timed_out"]
        )

    async def _post(self, request: Request, act: Callable[[Participant, dict[str, Any]], dict[str, Any]]) -> Response:
        """Check a state-changing request in order (session, origin, token, type, size, JSON), then act on the
        thread pool. Any refusal answers ``{"error": ...}`` with its status and stores nothing."""
        from starlette.concurrency import run_in_threadpool

        try:
            participant = await run_in_threadpool(self._participant, request)
            if participant is None:
                raise HttpRefusal(401, "no session: open the study link again")
            check_origin(request.url.scheme, request.headers)
            check_csrf(request.headers, participant.csrf)
            check_content_type(request.headers)
            check_length(request.headers)
            body = parse_object(await _read_body(request))
            return _json(await run_in_threadpool(act, participant, body))
        except (HttpRefusal, Refused) as exc:
            return _error(exc.status, exc.message)

    def _participant(self, request: Request) -> Participant | None:
        return self.flow.by_session(request.cookies.get(SESSION_COOKIE))

    # ------------------------------------------------------------------------------------------------ admin
    def admin(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse, RedirectResponse

        token = request.query_params.get("token")
        if token is not None:  # once: trade the token in the URL for a cookie, and drop it from the address bar
            if not self._token_ok(token):
                return _page("Not authorised", "Wrong admin token.", 401)
            response = RedirectResponse(_root(request) + "/admin", status_code=303)
            _set_cookie(response, request, ADMIN_COOKIE, self.admin_cookie, "/admin", "strict")
            return response
        if not self._admin_ok(request):
            return _page("Not authorised", "The admin page needs the admin token (Authorization: Bearer TOKEN, or "
                         "open admin?token=TOKEN once).", 401)  # fmt: skip
        study = self.flow.study
        return HTMLResponse(admin_page(study.name, study.kind, progress(self.flow)))

    def admin_json(self, request: Request) -> Response:
        if not self._admin_ok(request):
            return _error(401, "the admin token is missing or wrong (Authorization: Bearer TOKEN)")
        return _json(progress(self.flow))

    def _admin_ok(self, request: Request) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token:
            return self._token_ok(token.strip())
        cookie = request.cookies.get(ADMIN_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode("utf-8", "replace"), self.admin_cookie.encode())

    def _token_ok(self, token: str) -> bool:
        return hmac.compare_digest(token.encode("utf-8", "replace"), self.admin_token.encode("utf-8"))

    def healthz(self, request: Request) -> Response:
        from starlette.responses import PlainTextResponse

        return PlainTextResponse("ok")


def _set_cookie(
    response: Response, request: Request, name: str, value: str, path: str, samesite: Literal["lax", "strict"]
) -> None:
    """An HttpOnly cookie under the server's public path, ``Secure`` when the request came over https."""
    secure = request_scheme(request.url.scheme, request.headers) == "https"
    response.set_cookie(name, value, path=_root(request) + path, httponly=True, samesite=samesite, secure=secure)


async def _read_body(request: Request) -> bytes:
    """The body, read in chunks and refused (413) as soon as it passes the limit, whatever Content-Length said."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise HttpRefusal(413, f"request body over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _json(value: Any, status: int = 200) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(value, status_code=status)


def _error(status: int, message: str) -> Response:
    return _json({"error": " ".join(message.split())}, status)


def _page(title: str, message: str, status: int, headers: dict[str, str] | None = None) -> Response:
    from starlette.responses import HTMLResponse

    return HTMLResponse(message_page(title, message), status_code=status, headers=headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """An unexpected error: one line to the log, a bare answer to the client (the headers are set here because
    this handler runs outside the middleware)."""
    print(f"harness collect: error answering {request.method} {request.url.path}: {exc!r}", file=sys.stderr)
    if request.url.path.startswith(_root(request) + "/api/"):
        response = _error(500, "internal error: the answer was not stored; try again")
    else:
        response = _page("Something went wrong", "Please reload the page in a moment.", 500)
    for key, value in _headers_for(request.url.path).items():
        response.headers[key] = value
    return response


def _headers_for(path: str) -> dict[str, str]:
    static = "/static/" in path
    return {**SECURITY_HEADERS, "cache-control": "no-cache" if static else "no-store"}


class _SecurityHeaders:
    """Refuses a request naming a host not allowed (but ``/healthz``), before anything else, and adds the security
    headers to every response (pure ASGI, so streaming and static files keep working)."""

    def __init__(self, app: Any, hosts: AllowedHosts) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, root = scope.get("path", ""), str(scope.get("root_path", "")).rstrip("/")
        extra = [(k.encode(), v.encode()) for k, v in _headers_for(path).items()]

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k for k, _ in extra}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + extra}
            await send(message)

        if path != root + "/healthz":
            try:  # a header given twice: its first value, as Starlette's ``Headers.get`` reads it
                self.hosts.check({k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])})
            except HttpRefusal as exc:
                api = path.startswith(root + "/api/")
                refusal = _error(400, exc.message) if api else _page("Wrong address", exc.message, 400)
                await refusal(scope, receive, send_with_headers)
                return
        await self.app(scope, receive, send_with_headers)


# ------------------------------------------------------------------------------------------------ serving


def serve(flow: StudyFlow, admin_token: str, host: str = "127.0.0.1", port: int = 8000, root_path: str = "",
          allowed_hosts: Sequence[str] = (), joins_per_minute: int = DEFAULT_JOINS_PER_MINUTE) -> None:  # fmt: skip
    """Serve the study until SIGTERM or SIGINT, then shut down cleanly (requests in flight finish). Requests must
    name ``host`` or one of ``allowed_hosts`` (``guard.AllowedHosts``); ``joins_per_minute``: see ``create_app``.

    Port 0 picks a free port. Once listening, prints one line to stdout: ``harness collect: serving '<study>' on
    http://HOST:PORT/``. ``admin_token`` opens ``/admin``; where it comes from is the caller's (``harness collect
    serve``: ``harness.cli.collect.admin_token``). Access logs are off: URLs carry participant ids."""
    require_extra()
    import uvicorn

    app = create_app(flow, admin_token, allowed_hosts=AllowedHosts(host, allowed_hosts),
                     joins_per_minute=joins_per_minute)  # fmt: skip
    sock = _listen(host, port)
    shown_host = sock.getsockname()[0]
    url = f"http://{f'[{shown_host}]' if ':' in shown_host else shown_host}:{sock.getsockname()[1]}/"
    config = uvicorn.Config(
        app, root_path=root_path.rstrip("/"), access_log=False, log_level="warning", proxy_headers=True,
        lifespan="off", timeout_graceful_shutdown=10,
    )  # fmt: skip
    server = _server_class()(config, f"harness collect: serving '{flow.study.name}' on {url}")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        flow.store.close()


@contextmanager
def serving_in_thread(flow: StudyFlow, admin_token: str, host: str = "127.0.0.1", root_path: str = "",
                      allowed_hosts: Sequence[str] = (),
                      joins_per_minute: int = DEFAULT_JOINS_PER_MINUTE) -> Iterator[str]:  # fmt: skip
    """The study served from a thread of this process on a free port, for tests and scripts: yields the base URL
    (no trailing slash); the server is stopped, and waited for, when the block ends. The last two: see ``serve``."""
    require_extra()
    import uvicorn

    app = create_app(flow, admin_token, allowed_hosts=AllowedHosts(host, allowed_hosts),
                     joins_per_minute=joins_per_minute)  # fmt: skip
    sock = _listen(host, 0)
    config = uvicorn.Config(app, root_path=root_path, access_log=False, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            sock.close()
            raise HarnessError("the study server did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HarnessError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    sock.listen(128)
    return sock


def _server_class() -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, announcing itself once listening, and leaving on a signal without re-raising it (a
        clean shutdown exits 0)."""

        def __init__(self, config: uvicorn.Config, announce: str) -> None:
            super().__init__(config)
            self.announce = announce

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                print(self.announce, flush=True)

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            handled = (signal.SIGINT, signal.SIGTERM)
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server
