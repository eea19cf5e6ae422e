"""What a participant's browser may send the study server, checked before the study's logic sees it.

Why a module of its own, and why so strict: the study server is on the open internet for days, and this layer
stands between a stray or hostile request and the study's logic. A state-changing request must come from the
study's own page (its ``Origin``, if sent, is the server's own; it carries the participant's CSRF token in a header,
which a cross-site form cannot set), be small (4 KiB: an answer is at most 100 characters), and be one UTF-8 JSON
object with only the expected fields. Their values are checked by ``StudyFlow.answer``, the one place that owns them
(it is called without HTTP too). Every refusal here is an ``HttpRefusal`` with the status the server answers and one
line saying why, so a refused request never reaches ``StudyFlow`` and stores nothing.

Nothing here imports the web framework: the checks take plain headers and bytes, so ``harness`` imports it without
the ``collect`` extra.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from typing import Any

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
