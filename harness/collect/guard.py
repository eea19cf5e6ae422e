"""What a participant's browser may send the study server, checked before the study's logic sees it.

Why a module of its own, and why so strict: the study server is on the open internet for days, and this layer
stands between a stray or hostile request and the study's logic. A state-changing request must come from the
study's own page (its ``Origin``, if sent, is the server's own; it carries the participant's CSRF token in a header,
which a cross-site form cannot set), be small (4 KiB: an answer is at most 100 characters), and be one UTF-8 JSON
object with only the expected fields. Their values are checked by ``StudyFlow.answer``, the one place that owns them
(it is called without HTTP too). Every refusal here is an ``HttpRefusal`` with the status the server answers and one
line saying why, so a refused request never reaches ``StudyFlow`` and stores nothing.

Three checks guard the study's participant rows rather than one request:

* ``AllowedHosts``: every request but ``GET /healthz`` must name, in ``Host`` and in ``X-Forwarded-Host`` where sent,
  a host the study is served under. Why: with DNS rebinding a page on ``evil.example`` is re-pointed at the server's
  address; the browser then sends ``Host: evil.example`` with a matching ``Origin``, which ``check_origin`` alone
  cannot tell from the server's own (it trusts the ``Host``). Allowed: the address the server listens on (with
  ``localhost``, ``127.0.0.1`` and ``::1`` when it is a loopback one), any IP literal when it listens on every
  interface (rebinding needs a name), and the names given with ``--allowed-host`` (exact, case-insensitive; a
  leading dot, ``.example.org``, also admits every name under it).
* ``JoinLimiter``: how many NEW participants one client address may start per minute (a token bucket, the burst
  as large as the rate; an IPv6 client counts by its /64 network, which one machine may fill). Why: a script
  joining with made-up ids would otherwise take every place of the study. Returning participants are not counted.
* ``placeholder_id``: an id that is still the platform's placeholder (a preview link's ``{{%PROLIFIC_PID%}}``) is not
  a participant: it would join as one, and every preview would be the same person.

Nothing here imports the web framework: the checks take plain headers and bytes, so ``harness`` imports it without
the ``collect`` extra.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import re
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harness.errors import HarnessError
from harness.files import unique_keys

#: The largest request body accepted (bytes), checked against ``Content-Length`` and against the bytes read.
MAX_BODY_BYTES = 4096
_JSON_NAMES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}
#: The fields of ``POST /api/answer`` and whether each is required.
ANSWER_FIELDS = {"seq": True, "step": True, "answer": True, "client_ms": False, "timed_out": False}
#: New participants one client address may start per minute unless ``--joins-per-minute`` says otherwise.
DEFAULT_JOINS_PER_MINUTE = 20
#: Client addresses the join limiter remembers at most (the least recently seen one is forgotten first).
MAX_TRACKED_ADDRESSES = 10_000
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")
#: A ``Host`` value: a name or an IPv4 address, or an IPv6 address in brackets, then an optional port.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]+))(?::[0-9]{1,5})?")
#: A platform's placeholder: ``{{...}}``, ``${...}``, ``%NAME%``, or the whole id a bracketed name (``[workerId]``).
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\$\{|%[A-Za-z_][A-Za-z0-9_]*%|^\s*[\[{<][A-Za-z_][\w .:-]*[\]}>]\s*$")


class HttpRefusal(Exception):
    """A request refused before the study's logic: ``status`` is the HTTP status, ``message`` one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def request_scheme(scheme: str, headers: Mapping[str, str]) -> str:
    """``https`` when the request came over TLS, directly or through a proxy that says so (X-Forwarded-Proto)."""
    forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return "https" if scheme == "https" or forwarded == "https" else "http"


def own_origins(scheme: str, headers: Mapping[str, str]) -> set[str]:
    """The origins this server is reached under: the ``Host`` it was asked for, and the one a proxy forwarded.

    A browser cannot be made to send forged ``X-Forwarded-*`` headers cross-site without a CORS preflight, which
    this server never grants, so trusting them here admits no foreign page."""
    origins = set()
    hosts = [headers.get("host", ""), headers.get("x-forwarded-host", "").split(",")[0].strip()]
    for host in filter(None, hosts):
        for s in {scheme, request_scheme(scheme, headers)}:
            origins.add(f"{s}://{host}".lower())
    return origins


def check_origin(scheme: str, headers: Mapping[str, str]) -> None:
    """An ``Origin`` header, where the browser sent one, must be this server's own (403 otherwise)."""
    origin = headers.get("origin")
    if origin is not None and origin.lower() not in own_origins(scheme, headers):
        raise HttpRefusal(403, "the request came from another site (Origin)")


class AllowedHosts:
    """The hosts the study is served under, from the address the server listens on (``bind_host``) and the names
    given with ``--allowed-host`` (``extra``); ``check`` refuses a request naming any other (see the module)."""

    def __init__(self, bind_host: str, extra: Iterable[str] = ()) -> None:
        bind = bind_host.strip().strip("[]").lower()
        self.any_ip = bind in _WILDCARDS
        self.names: set[str] = set() if self.any_ip else {bind.rstrip(".")}
        if not self.any_ip and _loopback(bind):
            self.names.update(LOOPBACK_NAMES)
        self.suffixes: set[str] = set()
        for given in extra:
            name = allowed_host_name(given)
            (self.suffixes if name.startswith(".") else self.names).add(name.lstrip("."))

    def allows(self, host: str) -> bool:
        """Whether a host name (no port; any case, a trailing dot ignored) is one the study is served under."""
        name = host.lower().rstrip(".")
        if name in self.names or any(name == s or name.endswith("." + s) for s in self.suffixes):
            return True
        return self.any_ip and _ip(name) is not None

    def check(self, headers: Mapping[str, str]) -> None:
        """``Host`` and the first ``X-Forwarded-Host`` (where sent) must name an allowed host (400 otherwise)."""
        forwarded = headers.get("x-forwarded-host")
        for value in (headers.get("host", ""), *([forwarded.split(",")[0]] if forwarded is not None else [])):
            match = _HOST.fullmatch(value.strip().lower())
            if match is None:
                raise HttpRefusal(400, f"malformed host '{value.strip()[:100]}' (Host or X-Forwarded-Host)")
            name = (match["v6"] or match["name"]).rstrip(".")
            if not self.allows(name):
                raise HttpRefusal(400, f"host '{name[:100]}' is not one this study is served under (start the "
                                  f"server with --allowed-host {name[:100]} if it is yours)")  # fmt: skip


def allowed_host_name(value: str) -> str:
    """A name given with ``--allowed-host``, lower-cased: a host name (a leading dot: it and every name under it) or
    an IP address (IPv6 with or without brackets); a scheme, port, path or wildcard is refused in one line."""
    name = value.strip().lower().rstrip(".")
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if _ip(bare) is not None:
        return bare
    if not re.fullmatch(r"\.?[a-z0-9_-]+(\.[a-z0-9_-]+)*", name):
        raise HarnessError(f"--allowed-host {value!r}: expected a host name such as study.example.org or "
                           ".example.org, or an IP address (no scheme, port, path or '*')")  # fmt: skip
    return name


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _loopback(name: str) -> bool:
    address = _ip(name)
    return name == "localhost" or (address is not None and address.is_loopback)


class JoinLimiter:
    """How many new participants one client address may start: ``per_minute``, in bursts of up to as many (a token
    bucket per address; 0: no limit). Thread-safe. An address idle for a minute has a full bucket again, so it is
    forgotten; at most ``max_addresses`` are remembered (the least recently seen is forgotten first)."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        max_addresses: int = MAX_TRACKED_ADDRESSES,
    ) -> None:
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 0:
            raise HarnessError(f"joins per minute: expected a whole number from 0 (0: no limit), got {per_minute!r}")
        self.per_minute, self.clock, self.max_addresses = per_minute, clock, max_addresses
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, when), oldest first
        self._lock = threading.Lock()

    def take(self, address: str | None) -> int:
        """Count one new join from ``address``: 0 when it may join, else the whole seconds until it may (nothing
        is counted then)."""
        if not self.per_minute:
            return 0
        key, rate = client_key(address), self.per_minute / 60
        with self._lock:
            now = self.clock()
            while self._buckets and now - next(iter(self._buckets.values()))[1] > 60:
                self._buckets.popitem(last=False)
            tokens, then = self._buckets.pop(key, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + max(0.0, now - then) * rate)
            allowed = tokens >= 1
            self._buckets[key] = (tokens - 1 if allowed else tokens, now)
            while len(self._buckets) > self.max_addresses:
                self._buckets.popitem(last=False)
            return 0 if allowed else max(1, math.ceil((1 - tokens) / rate))

    def __len__(self) -> int:
        return len(self._buckets)


def client_key(address: str | None) -> str:
    """Whom a join is counted against: the client's IPv4 address, or its IPv6 address's /64 network."""
    ip = _ip(address or "")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip) if ip is not None else (address or "unknown")[:100]


def placeholder_id(value: str) -> bool:
    """Whether a participant id is a platform's placeholder left unsubstituted (a preview or test link): it holds
    ``{{`` or ``}}`` (Prolific's ``{{%PROLIFIC_PID%}}``), ``${`` (Qualtrics' ``${e://Field/id}``), a ``%NAME%``
    (``%PROLIFIC_PID%``, SONA's ``%SURVEY_CODE%``), or is a bracketed name as a whole (``[workerId]``, ``{PID}``,
    ``<PID>``); also once URL-decoded, for a link encoded twice."""
    return any(_PLACEHOLDER.search(v) is not None for v in (value, urllib.parse.unquote(value)))


def check_csrf(headers: Mapping[str, str], expected: str) -> None:
    """The participant's CSRF token must come back in ``X-CSRF-Token`` (compared in constant time; 403)."""
    sent = headers.get("x-csrf-token", "")
    if not sent or not hmac.compare_digest(sent.encode("utf-8", "replace"), expected.encode("utf-8")):
        raise HttpRefusal(403, "missing or wrong CSRF token (reload the page)")


def check_content_type(headers: Mapping[str, str]) -> None:
    """Only ``application/json`` (optionally ``; charset=utf-8``) is accepted (415)."""
    value = headers.get("content-type", "")
    media, _, params = value.partition(";")
    if media.strip().lower() != "application/json":
        raise HttpRefusal(415, "expected Content-Type: application/json")
    for param in filter(None, (p.strip() for p in params.split(";"))):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise HttpRefusal(415, "expected a UTF-8 body")


def check_length(headers: Mapping[str, str]) -> None:
    """A declared ``Content-Length`` over the limit is refused before anything is read (413)."""
    declared = headers.get("content-length")
    if declared is None:
        return
    if not declared.strip().isdigit():
        raise HttpRefusal(400, "malformed Content-Length")
    if int(declared) > MAX_BODY_BYTES:
        raise HttpRefusal(413, f"request body over {MAX_BODY_BYTES} bytes")


def parse_object(body: bytes) -> dict[str, Any]:
    """The body as one JSON object: UTF-8, no NaN or Infinity, no key given twice (400 otherwise)."""
    if len(body) > MAX_BODY_BYTES:
        raise HttpRefusal(413, f"request body over {MAX_BODY_BYTES} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise HttpRefusal(400, "the body is not UTF-8") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=unique_keys)
    except (ValueError, RecursionError) as exc:
        raise HttpRefusal(400, f"malformed JSON ({_first_line(exc)})") from None
    if not isinstance(value, dict):
        raise HttpRefusal(400, f"expected a JSON object, got {_JSON_NAMES.get(type(value), 'something else')}")
    return value


def answer_fields(body: dict[str, Any]) -> dict[str, Any]:
    """The fields of an answer, with the optional ones defaulted; unknown or missing fields are refused (422). Their
    values are checked by ``StudyFlow.answer``, the one place that owns them (it is also called without HTTP)."""
    unknown = sorted(k for k in body if k not in ANSWER_FIELDS)
    if unknown:
        raise HttpRefusal(422, f"unknown field '{unknown[0][:40]}' (accepted: {', '.join(ANSWER_FIELDS)})")
    missing = [k for k, required in ANSWER_FIELDS.items() if required and k not in body]
    if missing:
        raise HttpRefusal(422, f"missing field '{missing[0]}'")
    return {"client_ms": None, "timed_out": False, **body}


def consent_fields(body: dict[str, Any]) -> None:
    """Consent carries no data: the body is ``{}``."""
    if body:
        raise HttpRefusal(422, f"unknown field '{sorted(body)[0][:40]}' (the consent body is {{}})")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or ["invalid"])[0][:120]
