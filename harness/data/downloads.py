"""Fetching files over HTTP with limits, so that a failed download never looks like data.

Used by ``harness data fetch`` (:mod:`harness.data.sets`) and by the loaders that fetch their official release on
first use (through :mod:`harness.plugins.loaders.downloads`, which re-exports this module). Four things have to hold for
every fetch, and they are here once so that no caller can get one of them wrong on its own:

* the bytes go to a temporary file beside the destination and only an :func:`os.replace` gives them the real
  name, so an interrupted, oversized or rejected transfer never leaves a file a loader would later read as data
  (and the rename cannot cross file systems);
* a size cap and a deadline over the whole transfer bound what a wrong or stalled server can cost; the socket
  timeout alone would let a server that trickles bytes run forever;
* a body shorter than the response's ``Content-Length`` is an error: ``http.client`` returns what arrived and
  says nothing when the server closes the connection early;
* the opener is passed in, so loaders keep a module-level ``_open_url`` their tests can replace.

Every URL opened through :func:`open_url` goes through the mirror named by ``HARNESS_DATA_MIRROR`` when it is set
(:func:`mirrored`): ``https://HOST/PATH`` is fetched from ``MIRROR/HOST/PATH``, for institutional mirrors and for
tests against a server on 127.0.0.1.
"""

from __future__ import annotations

import http.client
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.errors import HarnessError

#: ``opener(url, timeout)``: a readable binary response; the loaders' ``_open_url`` seams have this shape.
Opener = Callable[[str, float], BinaryIO]

#: Base URL of a mirror that serves ``https://HOST/PATH`` as ``MIRROR/HOST/PATH`` (see :func:`mirrored`).
MIRROR_ENV = "HARNESS_DATA_MIRROR"

#: What a transfer can fail with: urllib's errors are ``OSError``s, a broken response an ``HTTPException``.
TRANSFER_ERRORS = (OSError, HarnessError, http.client.HTTPException)


class DownloadFailed(HarnessError):
    """One URL of a multi-file download failed; it carries the URL so the not-found message can name it."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"Downloading {url} failed ({reason})")
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class Deadline:
    """A point in monotonic time, shared by several files so that their sum is bounded, not each one alone."""

    at: float
    #: The budget it was made with, only for the message (the reader wants "took longer than 180 s").
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise HarnessError(f"took longer than {self.seconds:.0f} s")


def mirror_base(value: str | None = None) -> str | None:
    """The mirror base URL (``value``, else ``HARNESS_DATA_MIRROR``), ending in ``/``; None when there is none."""
    text = (value if value is not None else os.environ.get(MIRROR_ENV, "")).strip()
    if not text:
        return None
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        where = "--mirror" if value is not None else MIRROR_ENV
        raise HarnessError(f"{where}: expected an http:// or https:// base URL, got {text!r}")
    return text if text.endswith("/") else text + "/"


def mirrored(url: str, mirror: str | None = None) -> str:
    """``url`` as fetched through the mirror: ``https://HOST/PATH?Q`` -> ``MIRROR/HOST/PATH?Q``; unchanged when
    no mirror is set (``mirror``, else ``HARNESS_DATA_MIRROR``) or the URL is not http(s).

    >>> mirrored("https://raw.githubusercontent.com/o/r/c/a.txt", "http://127.0.0.1:8000")
    'http://127.0.0.1:8000/raw.githubusercontent.com/o/r/c/a.txt'
    """
    base = mirror_base(mirror)
    scheme, rest = url.split("://", 1) if "://" in url else ("", url)
    if base is None or scheme not in ("http", "https"):
        return url
    return base + rest


def open_url(url: str, timeout: float, user_agent: str) -> BinaryIO:
    """Open ``url`` (through the mirror, if one is set); a named user agent because some hosts refuse urllib's."""
    request = urllib.request.Request(mirrored(url), headers={"User-Agent": user_agent})
    return urllib.request.urlopen(request, timeout=timeout)


def one_line(exc: BaseException) -> str:
    """An exception as one line, since loaders' not-found errors must stay one line (urllib's may hold newlines)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def describe(exc: BaseException) -> str:
    """What went wrong in a transfer, in words a user can act on, as one line."""
    if isinstance(exc, urllib.error.HTTPError):
        if "infinite loop" in str(exc.msg) or "redirection" in str(exc.msg):
            return f"redirect loop (HTTP {exc.code}; urllib gave up following redirects)"
        return f"HTTP {exc.code} {one_line(Exception(exc.reason))}"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot reach the server ({one_line(Exception(exc.reason))})"
    if isinstance(exc, TimeoutError):
        return f"timed out ({one_line(exc)})"
    return one_line(exc)


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server could not be reached at all (no network, a wrong host, nothing listening),
    as opposed to a server that answered badly: then every further URL on it would fail the same way."""
    return isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError)


def content_length(response: object) -> int | None:
    """The response's ``Content-Length`` header as a number, if it has a usable one."""
    headers = getattr(response, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def copy_limited(
    response: BinaryIO, out: BinaryIO, *, max_bytes: int, deadline: Deadline, what: str, chunk_size: int
) -> int:
    """Copy ``response`` to ``out`` in chunks, stopping at ``max_bytes`` or the deadline; the bytes copied.

    A response over the cap is taken to be something else than the expected file (an error page, a different
    release), hence the ``what`` in the message. A body shorter than the ``Content-Length`` the server announced
    is a truncated transfer.
    """
    total = 0
    while chunk := response.read(chunk_size):
        total += len(chunk)
        if total > max_bytes:
            raise HarnessError(f"more than {max_bytes} bytes, not {what}")
        deadline.check()
        out.write(chunk)
    expected = content_length(response)
    if expected is not None and total != expected:
        raise HarnessError(f"truncated transfer: {total} of the {expected} bytes announced (Content-Length) arrived")
    return total


def fetch_to_temp(
    url: str,
    folder: Path,
    *,
    opener: Opener,
    timeout: float,
    max_bytes: int,
    deadline: Deadline,
    what: str,
    prefix: str,
    chunk_size: int = 1 << 16,
) -> Path:
    """Stream ``url`` into a new hidden ``*.part`` file in ``folder`` and return its path; nothing is left on failure.

    Callers that rename several files only once all have arrived (or that extract from an archive) use this
    directly; :func:`fetch_atomic` is the one-file case.
    """
    deadline.check()
    try:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=".part", dir=folder)
    except OSError as exc:  # a folder that cannot be written: said once, naming it, not as a transfer error
        raise OSError(exc.errno, exc.strerror, str(folder)) from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out, opener(url, timeout) as response:
            copy_limited(response, out, max_bytes=max_bytes, deadline=deadline, what=what, chunk_size=chunk_size)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def fetch_atomic(
    url: str,
    dest: Path,
    *,
    opener: Opener,
    timeout: float,
    max_bytes: int,
    deadline: Deadline,
    what: str,
    check: Callable[[Path], None] | None = None,
    prefix: str | None = None,
    chunk_size: int = 1 << 16,
) -> Path:
    """Fetch ``url`` to ``dest``: the file takes its name only complete and, if ``check`` is given, accepted by it.

    ``check`` gets the temporary file and raises to reject it (e.g. a login page served with status 200).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = fetch_to_temp(
        url,
        dest.parent,
        opener=opener,
        timeout=timeout,
        max_bytes=max_bytes,
        deadline=deadline,
        what=what,
        prefix=prefix if prefix is not None else f".{dest.name}-",
        chunk_size=chunk_size,
    )
    try:
        if check is not None:
            check(tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest
