"""The rows of a generic task's data: local files or a Hugging Face hub data set, as one ``Table``.

Each local file is read by ``file_rows.py`` (CSV and TSV cells as text, exactly as written, Parquet files through
``datasets``; JSON and JSON Lines files by ``json_rows.py``); a hub data set is read here through ``datasets`` (the
field's reader for it, with its own cache, so a hub data set is downloaded once). This module puts the rows
together and adds three things on top:

* every row keeps where it came from (``FILE: row N``, rows counted from 1, a CSV's header not counted), so that a
  bad value is one line naming the file, the row and the column;
* every file or hub data set that cannot be read is one line naming it and the real cause (``file_rows.py`` says
  what is wrong with a file);
* the data's identity: a hash of the bytes of every local file read, or the hub data set's name, configuration,
  split, revision and ``datasets`` fingerprint, recorded in the results so that changed data never reuses stored
  responses.

A field that needs a number converts the text where it is used; the ``columns`` option declares a column's type
for every use (templates that do arithmetic), converted here by ``convert``.

``join`` adds the columns of a second table to every row by a key column (a responses table beside a passages
table), and ``filter`` keeps the rows for which a template is true.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api import (
    DataNotFoundError,
    HarnessError,
    Option,
    Options,
    downloads_allowed,
    hash_files,
    one_of,
    optional,
    resolve_data_paths,
    shorten,
    shorten_repr,
)
from harness.data.tables.file_rows import FORMATS, file_format, file_rows, innermost_cause, quiet_datasets
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template
from harness.plugins.loaders.generic.header_rows import header_rows_option, take_labels

#: The types the ``columns`` option can declare.
COLUMN_TYPES = ("text", "int", "float")
#: Bad rows (or cells) listed in one error (the count says how many more there were).
MAX_REPORTED = 20


class BadRowsError(HarnessError):
    """Rows the mapping could not read: one line each, after a line saying how many."""


def bad_rows(problems: list[str], what: str) -> BadRowsError:
    """One error listing ``problems`` (up to ``MAX_REPORTED``; one problem is one line)."""
    if len(problems) == 1:
        return BadRowsError(f"{what}: {problems[0]}")
    more = f" (the first {MAX_REPORTED} follow)" if len(problems) > MAX_REPORTED else ""
    return BadRowsError(f"{what}: {len(problems)} bad rows{more}:\n" + "\n".join(problems[:MAX_REPORTED]))


@dataclass(frozen=True)
class HubSpec:
    """A hub data set: ``load_dataset(name, config, split=split, revision=revision)``."""

    name: str
    split: str
    config: str | None = None
    revision: str | None = None

    def label(self) -> str:
        parts = [self.name] + ([self.config] if self.config else []) + [f"split {self.split}"]
        return ", ".join(parts) + (f", revision {self.revision}" if self.revision else "")


@dataclass(frozen=True)
class JoinSpec:
    """Columns of another table added to every row whose ``on`` column matches."""

    files: tuple[str, ...]
    key: str
    format: str = "auto"
    #: Each row's key, when it is not a column of the same name: a column, or a template (``X{{ item }}_Irony``).
    by: Field | None = None


@dataclass
class Table:
    """Rows in data order, each with where it came from, and the data's identity."""

    rows: list[dict[str, Any]]
    #: ``(label, row number from 1)`` per row: ``label`` is the file (or hub data set) it came from.
    origins: list[tuple[str, int]]
    data_hash: str
    source: dict[str, Any] = field(default_factory=dict)
    #: ``header_rows``: ``{name: {column: label}}``, the rows under a file's header that label its columns.
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Per row, the cell it was read from, when a row is one cell of a file's row (shape ``participants``).
    cells: list[str] | None = None

    def where(self, index: int) -> str:
        label, number = self.origins[index]
        cell = f", column {self.cells[index]!r}" if self.cells is not None else ""
        return f"{label}: row {number}{cell}"


# ----------------------------------------------------------------------------------------------------- options


def _paths(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and value.strip():
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    raise ValueError(f"expected a file path or a list of them, got {shorten_repr(value)}")


_paths.type_name = "path | list of paths"  # type: ignore[attr-defined]

HUB_OPTIONS = Options(
    Option("name", str, None, "the hub data set (owner/name), or a local folder in the hub's layout", "str"),
    Option("split", str, None, "the split to read (required)", "str"),
    Option("config", optional(str), None, "the configuration (subset) name", "str"),
    Option("revision", optional(str), None, "a branch, tag or commit: pin it for reproducible results", "str"),
)


def _hub(value: Any) -> HubSpec:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping {{name, split, config, revision}}, got {shorten_repr(value)}")
    parsed = HUB_OPTIONS.parse(value, "hub")
    for key in ("name", "split"):
        if not isinstance(parsed[key], str) or not parsed[key].strip():
            raise ValueError(f"'{key}' is required (a non-empty string)")
    return HubSpec(parsed["name"], parsed["split"], parsed["config"], parsed["revision"])


_hub.type_name = "{name, split, config, revision}"  # type: ignore[attr-defined]

JOIN_OPTIONS = Options(
    Option("files", _paths, None, "the table to join (paths as in 'files')", "path | list"),
    Option("key", str, None, "the key column, in both tables", "str"),
    Option("format", one_of(*FORMATS), "auto", "as 'format'", " | ".join(FORMATS)),
    Option("by", optional(column_or_template("join.by")), None, "each row's key: a column or template (default: key)"),
)


def _join(value: Any) -> JoinSpec:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping {{files, key, format}}, got {shorten_repr(value)}")
    parsed = JOIN_OPTIONS.parse(value, "join")
    if parsed["files"] is None or not isinstance(parsed["key"], str) or not parsed["key"]:
        raise ValueError("'files' and 'key' are required")
    return JoinSpec(parsed["files"], parsed["key"], parsed["format"], parsed["by"])


_join.type_name = "{files, key, format, by}"  # type: ignore[attr-defined]


def _column_types(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(
            f"expected a mapping of column to type ({' | '.join(COLUMN_TYPES)}), got {shorten_repr(value)}"
        )
    for column, kind in value.items():
        if not isinstance(column, str) or not column:
            raise ValueError(f"expected column names as keys, got {shorten_repr(column)}")
        if kind not in COLUMN_TYPES:
            raise ValueError(f"column {column!r}: expected one of {', '.join(COLUMN_TYPES)}, got {shorten_repr(kind)}")
    return dict(value)


_column_types.type_name = "{column: text | int | float}"  # type: ignore[attr-defined]

#: Where the rows come from: the options every generic loader shares.
SOURCE_OPTIONS = Options(
    Option("files", optional(_paths), None, "data files under the data root, absolute, task:PATH or package:PKG/PATH"),
    Option("format", one_of(*FORMATS), "auto", "auto: by each file's extension", " | ".join(FORMATS)),
    Option("json_field", optional(str), None, "JSON files: the key whose value is the list of records", "str"),
    Option("json_key", optional(str), None, "JSON files: an object of records keyed by id; the key's column", "str"),
    Option("hub", optional(_hub), None, "a Hugging Face hub data set instead of files"),
    Option("join", optional(_join), None, "add the columns of another table by a key column"),
    Option("columns", optional(_column_types), None, "a column's type: text (as CSV cells are read), int or float"),
    Option("filter", optional(column_or_template("filter", native=True)), None, "keep rows for which this is true"),
    Option("header_rows", optional(header_rows_option), None, "CSV rows under the header that label its columns"),
)


# ------------------------------------------------------------------------------------------------------ reading


def read_table(
    parsed: Mapping[str, Any],
    data_dir: Path,
    loader: str,
    *,
    max_rows: int | None = None,
    reshape: Callable[[Table], None] | None = None,
) -> Table:
    """The rows the options name (``max_rows``: only the first rows of each file, for ``harness validate``).
    ``parsed``: the loader's options as its ``Options.parse`` returned them (every ``SOURCE_OPTIONS`` key present).

    ``reshape`` (the ``participants`` shape) turns the rows into others after ``columns`` and ``filter`` have seen
    them as read and before ``join`` adds a table's columns to the new rows; without it ``join`` comes first."""
    hub: HubSpec | None = parsed["hub"]
    files: tuple[str, ...] | None = parsed["files"]
    if (hub is None) == (files is None):
        raise HarnessError(f"data options of loader '{loader}': give exactly one of 'files' and 'hub'")
    if hub is not None and parsed["header_rows"]:
        raise HarnessError(f"data options of loader '{loader}': 'header_rows' is for CSV and TSV files, not 'hub'")
    if hub is not None:
        table = _read_hub(hub, max_rows)
    else:
        assert files is not None
        paths = resolve_data_paths(files, data_dir, "files")
        labelled: tuple[str, ...] | None = parsed["header_rows"]
        limit = None if max_rows is None else max_rows + len(labelled or ())
        table = _read_files(paths, parsed["format"], parsed["json_field"], limit, json_key=parsed["json_key"])
        if labelled:
            table.rows, table.origins, table.labels = take_labels(
                table.rows, table.origins, table.source["format"], labelled
            )
            table.source["header_rows"] = list(labelled)
    join: JoinSpec | None = parsed["join"]
    if join is not None and reshape is None:
        _apply_join(table, join, data_dir)
    types: dict[str, str] | None = parsed["columns"]
    if types is not None:
        _apply_types(table, types, loader)
    keep: Field | None = parsed["filter"]
    if keep is not None:
        _apply_filter(table, keep)
    if reshape is not None:
        reshape(table)
        if join is not None:
            _apply_join(table, join, data_dir)
    return table


def _read_files(
    paths: list[Path], fmt: str, json_field: str | None, max_rows: int | None, json_key: str | None = None
) -> Table:
    rows: list[dict[str, Any]] = []
    origins: list[tuple[str, int]] = []
    formats: list[str] = []
    for path in paths:
        chosen = file_format(path, fmt)
        formats.append(chosen)
        for number, row in enumerate(file_rows(path, chosen, json_field, max_rows, json_key), start=1):
            if max_rows is not None and number > max_rows:
                break
            rows.append(row)
            origins.append((str(path), number))
    source = {"files": [str(p) for p in paths], "format": sorted(set(formats))}
    return Table(rows, origins, hash_files(paths), source)


def _read_hub(hub: HubSpec, max_rows: int | None) -> Table:
    split = hub.split if max_rows is None else f"{hub.split}[:{max_rows}]"
    try:
        with quiet_datasets(offline=not downloads_allowed()) as datasets:
            dataset = datasets.load_dataset(hub.name, hub.config, split=split, revision=hub.revision)
            rows = list(dataset.to_list())
            fingerprint = str(getattr(dataset, "_fingerprint", ""))
    except Exception as exc:
        offline = "" if downloads_allowed() else " (downloads are off: HARNESS_OFFLINE is set)"
        raise DataNotFoundError(f"hub data set {hub.label()}: {innermost_cause(exc)}{offline}") from None
    identity = {"hub": hub.name, "config": hub.config, "split": hub.split, "revision": hub.revision}
    digest = hashlib.sha256(json.dumps({**identity, "fingerprint": fingerprint}, sort_keys=True).encode())
    source = {**identity, "fingerprint": fingerprint}
    label = f"hub {hub.name}" + (f" ({hub.config})" if hub.config else "") + f" {hub.split}"
    if not rows:
        raise HarnessError(f"hub data set {hub.label()}: no rows")
    return Table(rows, [(label, i) for i in range(1, len(rows) + 1)], "sha256:" + digest.hexdigest(), source)


def _apply_join(table: Table, join: JoinSpec, data_dir: Path) -> None:
    paths = resolve_data_paths(join.files, data_dir, "join.files")
    other = _read_files(paths, join.format, None, None)
    by_key: dict[str, tuple[int, dict[str, Any]]] = {}
    for index, row in enumerate(other.rows):
        if join.key not in row:
            raise HarnessError(
                f"{other.where(index)}: data option 'join.key': no column {join.key!r} in the joined table"
            )
        key = key_text(row[join.key])
        if key in by_key:
            raise HarnessError(
                f"{other.where(index)}: column {join.key!r}: {shorten_repr(row[join.key])} also on "
                f"{other.where(by_key[key][0])} (a joined table needs one row per key)"
            )
        by_key[key] = (index, row)
    for index, row in enumerate(table.rows):
        if join.by is None and join.key not in row:
            raise HarnessError(f"{table.where(index)}: data option 'join.key': no column {join.key!r}")
        wanted = row[join.key] if join.by is None else join.by.value(row, table.where(index))
        match = by_key.get(key_text(wanted))
        if match is None:
            named = f"column {join.key!r}" if join.by is None else f"data option 'join.by' ({join.by.given})"
            raise HarnessError(
                f"{table.where(index)}: {named}: {shorten_repr(wanted)} has no row in {paths[0]} (keys are compared "
                "as written: 01 is not 1)"
            )
        for column, value in match[1].items():
            if column != join.key or join.by is not None:
                if column in row:
                    raise HarnessError(
                        f"{paths[0]}: column {column!r} is in both tables (only the key '{join.key}' may be)"
                    )
                row[column] = value
    # Both tables' identities (each hashed as it was read; the files are not read again).
    table.data_hash = "sha256:" + hashlib.sha256((table.data_hash + other.data_hash).encode()).hexdigest()
    table.source["join"] = {"files": [str(p) for p in paths], "key": join.key} | (
        {"by": join.by.given} if join.by else {}
    )


def key_text(value: Any) -> str:
    """A key (a join key) as written: text exactly as it is, a JSON number by its digits (so a JSON ``1`` matches
    a CSV ``1``, but not ``01``, ``1.0`` or `` 1``), ``true``, ``false`` and ``null`` as JSON writes them."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _apply_types(table: Table, types: dict[str, str], loader: str) -> None:
    """The ``columns`` option: each named column converted in every row; an empty cell becomes null."""
    problems: list[str] = []
    for index, row in enumerate(table.rows):
        for column, kind in types.items():
            if column not in row:
                names = shorten(", ".join(map(str, row)), 160)
                raise HarnessError(
                    f"{table.where(index)}: data option 'columns': no column {column!r} (columns: {names})"
                )
            try:
                row[column] = convert(row[column], kind)
            except ValueError as exc:
                problems.append(f"{table.where(index)}: column {column!r} (declared {kind} in 'columns'): {exc}")
    if problems:
        raise bad_rows(problems, f"loader '{loader}'")


def convert(value: Any, kind: str) -> Any:
    """``value`` as ``kind`` (``text``, ``int`` or ``float``); empty text and null are null. ``ValueError`` says why
    not."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if kind == "text":
        if isinstance(value, (list, dict)):
            raise ValueError(f"expected text, got {shorten_repr(value)}")
        return key_text(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a number, got {shorten_repr(value)}")
    if kind == "int":
        if isinstance(value, int):
            return value
        try:
            return int(value.strip()) if isinstance(value, str) else _whole_float(value)
        except ValueError:
            pass
        try:
            return _whole_float(float(value))
        except ValueError:
            raise ValueError(f"expected a whole number, got {shorten_repr(value)}") from None
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except ValueError:
        raise ValueError(f"expected a number, got {shorten_repr(value)}") from None
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {shorten_repr(value)}")
    return number


def _whole_float(number: float) -> int:
    if not math.isfinite(number) or not number.is_integer():
        raise ValueError(f"not a whole number: {number!r}")
    return int(number)


def _apply_filter(table: Table, keep: Field) -> None:
    kept_rows: list[dict[str, Any]] = []
    kept_origins: list[tuple[str, int]] = []
    for index, row in enumerate(table.rows):
        value = keep.value(row, table.where(index))
        if not isinstance(value, bool):
            raise RowError(
                f"{table.where(index)}: data option 'filter': expected true or false, got {shorten_repr(value)}"
            )
        if value:
            kept_rows.append(row)
            kept_origins.append(table.origins[index])
    if not kept_rows:
        read = sorted({label for label, _ in table.origins})
        files = ", ".join(read[:2]) + (f" and {len(read) - 2} more" if len(read) > 2 else "")
        raise HarnessError(
            f"data option 'filter' {shorten_repr(keep.given, 80)} kept none of the {len(table.rows)} rows of {files}"
        )
    table.source["n_rows_read"] = len(table.rows)
    table.source["filter"] = keep.given
    table.rows, table.origins = kept_rows, kept_origins
