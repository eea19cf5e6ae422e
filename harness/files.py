"""Reading and writing the harness's own files so that every failure is one line naming the file.

Why one place: results, samples, stores and leaderboards are read by several commands, and each bad byte (not
UTF-8, not JSON, a folder where a file should be, a full disk) must give the same clear message wherever it is
met, never a traceback. Writes go through a temporary file and a rename, so a kill or a full disk never leaves a
half-written file in place of a good one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, shorten, shorten_repr


class WriteError(HarnessError):
    """A file could not be written (disk full, file-size limit, permissions); callers add what is still safe."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path = path
        super().__init__(f"{path}: cannot write ({exc.strerror or exc})")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links and relative parts); by resolved path when either is gone."""
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def read_bytes(path: Path, what: str = "file", max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``. A folder, a missing or unreadable file, or one larger than ``max_bytes`` is a one-line
    ``HarnessError`` naming the path; ``what`` says what it should have been ("task file", "data file")."""
    path = Path(path)
    try:
        if path.is_dir():
            raise HarnessError(f"{path}: is a folder, expected a {what}")
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise HarnessError(
                f"{path}: {path.stat().st_size} bytes, more than a {what} may hold ({max_bytes}); is it the right file?"
            )
        return path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the {what} ({exc.strerror or type(exc).__name__})") from None


def decode_utf8(data: bytes, source: object, *, strip_bom: bool = True) -> str:
    """``data`` as UTF-8 text, a leading byte-order mark dropped unless ``strip_bom`` is false.

    A byte that is not UTF-8, or a NUL byte (no text format read here has one: it means a binary or damaged file),
    is a ``HarnessError`` naming ``source``, the line and the byte offset::

        data/asset/asset.valid.orig: line 3: not valid UTF-8 (invalid continuation byte at byte offset 212)
    """
    try:
        text = data.decode("utf-8-sig" if strip_bom else "utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise HarnessError(
            f"{source}: line {line}: not valid UTF-8 ({exc.reason} at byte offset {exc.start})"
        ) from None
    check_no_nul(data, source)
    return text


def check_no_nul(data: bytes, source: object, first_line: int = 1, offset: int = 0) -> None:
    """Raise a ``HarnessError`` naming the line and byte offset of the first NUL byte of ``data``, if any
    (``first_line`` and ``offset`` place ``data`` inside a larger file)."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = first_line + data.count(b"\n", 0, nul)
        raise HarnessError(f"{source}: line {line}: NUL byte at byte offset {offset + nul} (a binary or damaged file?)")


def read_utf8(path: Path, what: str = "file", max_bytes: int | None = None, *, strip_bom: bool = True) -> str:
    """``read_bytes`` then ``decode_utf8``: the text of a UTF-8 file, every failure one line naming it."""
    return decode_utf8(read_bytes(path, what, max_bytes), path, strip_bom=strip_bom)


class DuplicateKeyError(ValueError):
    """A JSON object that gives one key twice (``json.loads`` alone would keep the last value silently)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` that refuses a key given twice in one object
    (``DuplicateKeyError``): what a study server's request body and a data file's records both need."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"key {shorten_repr(key, 40)} is given twice in one object")
        out[key] = value
    return out


def parse_json_line(line: str, path: Path, line_no: int) -> Any:
    try:
        return json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise HarnessError(f"{path}: line {line_no}: not JSON ({why}): {shorten(line.strip())}") from exc


def read_json(path: Path) -> Any:
    text = read_utf8(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except RecursionError as exc:
        raise HarnessError(f"{path}: not JSON the harness reads (nested too deeply)") from exc


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise HarnessError(f"{path}: expected a JSON object ({what}), got {type(data).__name__}")
    return data


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every record of a JSON-lines file; each line must be a JSON object. Errors name the file and line."""
    records: list[dict[str, Any]] = []
    for line_no, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        record = parse_json_line(line, path, line_no)
        if not isinstance(record, dict):
            raise HarnessError(f"{path}: line {line_no}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file and rename, so a kill never leaves a half-written file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise WriteError(path, exc) from exc
    try:
        # mkstemp makes the file private (0600); results and pages are for sharing, so use the usual mode.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(path, exc) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    lines = (json.dumps(r, ensure_ascii=False, sort_keys=True) for r in records)
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def ensure_output_dir(path: Path, option: str) -> None:
    """Create an output folder, or say in one line why it cannot be (a file, under a file, not writable)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise HarnessError(f"{option} {path}: is a file, expected a folder") from exc
    except NotADirectoryError as exc:
        raise HarnessError(f"{option} {path}: a part of the path is a file, not a folder") from exc
    except OSError as exc:
        raise HarnessError(f"{option} {path}: cannot create the folder ({exc.strerror or exc})") from exc
    if not path.is_dir():
        raise HarnessError(f"{option} {path}: is a file, expected a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise HarnessError(f"{option} {path}: the folder is not writable")
