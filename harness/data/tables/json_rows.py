"""The records of a JSON or JSON Lines file, every value with the type the file writes.

Why not through ``datasets`` (as Parquet files are): Arrow makes one type of a column's values (``1``, ``"1"`` and
``"01"`` in one column all become the number 1, and ``1`` beside ``2.5`` becomes ``1.0``), and then option keys,
targets and ids written as the file writes them no longer match.

Apart from ``file_rows.py`` (which checks a file's bytes and decodes its text first, then calls ``json_rows``)
because taking a JSON document apart is a set of rules and errors of its own: a key given twice in one object,
JSON Lines in a ``.json`` file, the list under ``json_field``, records with different columns (every record gets
every column, a missing one null, as a table's rows do), and records keyed by id (``json_key``).

Records keyed by id (``{"item1": {...}, "item2": {...}}``) are how many annotation tools save their data: with
``json_key: id`` each value is a row and its key goes in column ``id``, as written (``"01"`` stays ``"01"``).
Without it such a document used to be one record with a column per item, which no mapping can read, so an object
whose values are all objects is an error that names the option.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, shorten, shorten_repr
from harness.files import DuplicateKeyError, unique_keys


def json_rows(
    path: Path, text: str, fmt: str, json_field: str | None, json_key: str | None = None
) -> list[dict[str, Any]]:
    """The records of a JSON Lines file (one object a line) or a JSON file (a list of objects, or the list under
    ``json_field``, or with ``json_key`` an object of records keyed by id), every value with the type the file
    writes (``1``, ``"1"`` and ``"01"`` stay three values). Every record gets every column any record has (a
    missing one is null), as a table's rows do."""
    records: list[Any]
    if fmt == "jsonl":
        records = _json_lines(path, text)
    else:
        try:
            document = _loads(text)
        except _JsonError as exc:
            if exc.extra_data and not json_field and not json_key:  # JSON Lines in a .json file: read it as such
                records = _json_lines(path, text)
                return _union(records)
            raise HarnessError(f"{path}: {exc.where}not valid JSON ({exc.why})") from None
        records = _keyed(path, document, json_field, json_key) if json_key else _records(path, document, json_field)
    return _union(records)


class _JsonError(Exception):
    def __init__(self, why: str, where: str = "", extra_data: bool = False) -> None:
        super().__init__(why)
        self.why, self.where, self.extra_data = why, where, extra_data


def _loads(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        raise _JsonError(str(exc)) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}: "
        raise _JsonError(exc.msg, where, exc.msg == "Extra data") from None
    except RecursionError:
        raise _JsonError("nested too deeply") from None


def _json_lines(path: Path, text: str) -> list[Any]:
    records: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = _loads(line)
        except _JsonError as exc:
            raise HarnessError(
                f"{path}: line {number}: not valid JSON ({exc.why}): {shorten(line.strip(), 60)}"
            ) from None
        if not isinstance(record, dict):
            raise HarnessError(
                f"{path}: line {number}: expected a JSON object (one record a line), got {_json_type(record)}"
            )
        records.append(record)
    return records


def _records(path: Path, document: Any, json_field: str | None) -> list[Any]:
    """The list of records a JSON document holds (under ``json_field`` when given)."""
    if json_field:
        document, where = _under(path, document, json_field), f"the value of data option 'json_field' ({json_field!r})"
    else:
        where = "the file"
    if isinstance(document, dict) and not json_field:
        lists = [k for k, v in document.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
        if lists:
            raise HarnessError(
                f"{path}: the file holds an object, not a list of records (set 'json_field' to the key of the list "
                f"of records: {shorten(', '.join(map(str, lists)), 80)}; or, if it is one record, write it in a list: "
                "[{...}])"
            )
        if _keyed_by_id(document):
            raise HarnessError(f"{path}: the file holds {_by_id(document)}")
        return [document]  # one object: one record
    if isinstance(document, dict) and _keyed_by_id(document):
        raise HarnessError(f"{path}: {where} holds {_by_id(document)}")
    if not isinstance(document, list):
        raise HarnessError(f"{path}: {where} holds {_json_type(document)}, not a list of records")
    for number, record in enumerate(document, start=1):
        if not isinstance(record, dict):
            raise HarnessError(f"{path}: record {number} of {where}: expected a JSON object, got {_json_type(record)}")
    return document


def _under(path: Path, document: Any, json_field: str) -> Any:
    """The value under ``json_field`` in the file's object."""
    if not isinstance(document, dict):
        held = _json_type(document)
        raise HarnessError(f"{path}: data option 'json_field' ({json_field!r}): the file holds {held}, not an object")
    if json_field not in document:
        keys = shorten(", ".join(map(str, document)), 120) or "none"
        raise HarnessError(f"{path}: data option 'json_field': no key {json_field!r} in the file (its keys: {keys})")
    return document[json_field]


def _keyed_by_id(document: dict[str, Any]) -> bool:
    """Records keyed by id, as far as can be told: at least two values, every one an object."""
    return len(document) >= 2 and all(isinstance(v, dict) for v in document.values())


def _by_id(document: dict[str, Any]) -> str:
    keys = shorten(", ".join(map(str, document)), 60)
    return (
        f"an object whose {len(document)} values are all objects (keys {keys}): records keyed by id? set "
        "'json_key: id' to read each value as a row with its key in column 'id' (or, if it is one record, write it "
        "in a list: [{...}])"
    )


def _keyed(path: Path, document: Any, json_field: str | None, json_key: str) -> list[dict[str, Any]]:
    """``json_key``: each value of the object (under ``json_field`` when given) is a row, its key first in the row
    in column ``json_key``, as written. Every bad value is counted, the first one named, in one line."""
    if json_field:
        document = _under(path, document, json_field)
        where = f"the value of data option 'json_field' ({json_field!r})"
    else:
        where = "the file"
    if not isinstance(document, dict):
        raise HarnessError(
            f"{path}: data option 'json_key' ({json_key!r}): {where} holds {_json_type(document)}, not an object of "
            "records keyed by id"
        )
    if not document:
        raise HarnessError(f"{path}: no rows ({where} is an empty object)")
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for key, record in document.items():
        if not isinstance(record, dict):
            problems.append(f"key {key!r}: expected a JSON object (a record), got {_json_type(record)}")
        elif json_key in record:
            problems.append(
                f"key {key!r}: the record already has a column {json_key!r} (data option 'json_key' puts the key "
                "there: name another column)"
            )
        else:
            rows.append({json_key: key, **record})
    if problems:
        more = f" (and {len(problems) - 1} more bad key{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise HarnessError(f"{path}: {problems[0]}{more}")
    return rows


def _union(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every record with every column (first-seen order), a missing one null."""
    columns: dict[str, None] = {}
    for record in records:
        for key in record:
            columns.setdefault(key, None)
    if all(len(record) == len(columns) for record in records):
        return records
    return [{key: record.get(key) for key in columns} for record in records]


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__} ({shorten_repr(value, 40)})"
