"""Reading helpers shared by the loaders: UTF-8 text with line-numbered errors (``harness.files.read_utf8``, the
one reader every loader uses), JSON values and JSON Lines records keyed by a unique integer ``id``.

Every error names the file and line, in one line, so a damaged download or a hand-edited copy is found at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.api import HarnessError, decode_utf8, one_line, read_bytes, read_utf8, shorten_repr

__all__ = ["decode_utf8", "file_lines", "json_value", "jsonl_records", "read_bytes", "read_utf8"]

#: The largest number a data file may hold where a count or an id is read (more is a damaged file).
MAX_DATA_INT = 1_000_000_000


def file_lines(path: Path) -> list[str]:
    """The decoded file split at ``\\n`` (a trailing newline gives a last, empty line)."""
    return read_utf8(path, "data file").split("\n")


def json_value(text: str, where: str) -> Any:
    """``json.loads(text)``; any failure is a ``HarnessError`` starting with ``where`` (``PATH: line N``).

    Besides syntax errors, ``json`` raises a plain ValueError for an integer of more than 4,300 digits and a
    RecursionError for deep nesting; an escaped NUL (``\\u0000``) is refused too, as a raw NUL byte is.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise HarnessError(f"{where}: not valid JSON ({one_line(str(exc), 120)})") from None
    except RecursionError:
        raise HarnessError(f"{where}: not valid JSON (nested too deeply)") from None
    if "\\u0000" in text:
        raise HarnessError(f"{where}: a NUL character (\\u0000) in a string (a damaged file?)")
    return value


def jsonl_records(
    path: Path, lines: Iterable[str], required: Sequence[str], *, unique_id: bool = True
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` for each non-blank line of a JSON Lines file, ``where`` being ``"PATH: line N"``.

    Each record must be a JSON object holding every ``required`` field and (with ``unique_id``) an integer ``id``
    not seen on an earlier line; the error names the file, the line and the field. Files keyed otherwise pass
    ``unique_id=False`` and check their own key.
    """
    seen: dict[int, int] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}: line {line_no}"
        record = json_value(line, where)
        if not isinstance(record, dict):
            raise HarnessError(f"{where}: expected a JSON object")
        for name in required:
            if name not in record:
                raise HarnessError(f"{where}: field '{name}': missing")
        if not unique_id:
            yield where, record
            continue
        index = json_int(record["id"], where, "id", low=0)
        if index in seen:
            raise HarnessError(f"{where}: field 'id': {index} repeated (first at line {seen[index]})")
        seen[index] = line_no
        yield where, record


def json_int(value: object, where: str, name: str, low: int | None = None) -> int:
    """An integer field of a JSON record (not a boolean); with ``low``, from ``low`` to ``MAX_DATA_INT``.
    ``where`` is ``"PATH: line N"``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise HarnessError(f"{where}: field '{name}': expected an integer, got {shorten_repr(value)}")
    if low is not None and not low <= value <= MAX_DATA_INT:
        raise HarnessError(
            f"{where}: field '{name}': expected an integer from {low} to {MAX_DATA_INT}, got {shorten_repr(value)}"
        )
    return value
