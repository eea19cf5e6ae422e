"""The rows of a generic task's data: local files or a Hugging Face hub data set.

CSV and TSV files are read here with Python's ``csv`` module, JSON Lines and JSON files with its ``json`` module;
Parquet files and hub data sets through ``datasets`` (the field's reader for them, with its own cache, so a hub data
set is downloaded once). Three things are added on top:

* every row keeps where it came from (``FILE: row N``, rows counted from 1, a CSV's header not counted), so that a
  bad value is one line naming the file, the row and the column;
* every file that cannot be read is one line naming the file, the line or row where known, and the real cause
  (not UTF-8, UTF-16, an extra field, a broken JSON row, not a Parquet file, empty, a header without rows), never
  the reader's own log lines or its generic "An error occurred while generating the dataset";
* the data's identity: a hash of the bytes of every local file read, or the hub data set's name, configuration,
  split, revision and ``datasets`` fingerprint, recorded in the results so that changed data never reuses stored
  responses.

Why CSV cells are text, exactly as written: a type inferred from a column's cells changes what people wrote
(ratings ``1.0``..``5.0`` become ``1``..``5``, an answer ``007`` becomes ``7``, the ids ``01`` and ``1`` become
one), and then option keys, targets and ids written as the file writes them no longer match. Only an empty cell
is empty (``NA``, ``null`` and ``None`` are words a participant may have typed). A field that needs a number
(counts, proportions, ``n_people``, ``target_index``) converts the text where it is used, naming the file, row and
column when it is not a number; the ``columns`` option declares a column's type for every use (templates that do
arithmetic). JSON and Parquet values keep the types the file gives them: JSON is not read through ``datasets``
because Arrow makes one type of a column's values (``1``, ``"1"`` and ``"01"`` in one column all become the
number 1, and ``1`` beside ``2.5`` becomes ``1.0``).

``join`` adds the columns of a second table to every row by a key column (a responses table beside a passages
table), and ``filter`` keeps the rows for which a template is true.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import io
import json
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import downloads_allowed, hash_files
from harness.errors import DataNotFoundError, HarnessError, one_line, shorten, shorten_repr
from harness.options import Option, Options, one_of, optional
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template

FORMATS = ("auto", "csv", "tsv", "json", "jsonl", "parquet")
_BY_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet"}
#: The types the ``columns`` option can declare.
COLUMN_TYPES = ("text", "int", "float")
#: Bad rows (or cells) listed in one error (the count says how many more there were).
MAX_REPORTED = 20
#: Byte-order marks of encodings that are not UTF-8, longest first (UTF-32 LE starts with UTF-16 LE's mark).
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_PARQUET_MAGIC = b"PAR1"


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


@dataclass
class Table:
    """Rows in data order, each with where it came from, and the data's identity."""

    rows: list[dict[str, Any]]
    #: ``(label, row number from 1)`` per row: ``label`` is the file (or hub data set) it came from.
    origins: list[tuple[str, int]]
    data_hash: str
    source: dict[str, Any] = field(default_factory=dict)

    def where(self, index: int) -> str:
        label, number = self.origins[index]
        return f"{label}: row {number}"


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
)


def _join(value: Any) -> JoinSpec:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping {{files, key, format}}, got {shorten_repr(value)}")
    parsed = JOIN_OPTIONS.parse(value, "join")
    if parsed["files"] is None or not isinstance(parsed["key"], str) or not parsed["key"]:
        raise ValueError("'files' and 'key' are required")
    return JoinSpec(parsed["files"], parsed["key"], parsed["format"])


_join.type_name = "{files, key, format}"  # type: ignore[attr-defined]


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
    Option("files", optional(_paths), None, "data files: paths under the data root (or absolute), globs allowed"),
    Option("format", one_of(*FORMATS), "auto", "auto: by each file's extension", " | ".join(FORMATS)),
    Option("json_field", optional(str), None, "JSON files: the key whose value is the list of records", "str"),
    Option("hub", optional(_hub), None, "a Hugging Face hub data set instead of files"),
    Option("join", optional(_join), None, "add the columns of another table by a key column"),
    Option("columns", optional(_column_types), None, "a column's type: text (as CSV cells are read), int or float"),
    Option("filter", optional(column_or_template("filter", native=True)), None, "keep rows for which this is true"),
)


# ------------------------------------------------------------------------------------------------------ reading


def read_table(options: Mapping[str, Any], data_dir: Path, loader: str, *, max_rows: int | None = None) -> Table:
    """The rows the options name (``max_rows``: only the first rows of each file, for ``harness validate``)."""
    parsed = SOURCE_OPTIONS.parse({k: v for k, v in options.items() if k in SOURCE_OPTIONS}, f"loader '{loader}'")
    hub: HubSpec | None = parsed["hub"]
    files: tuple[str, ...] | None = parsed["files"]
    if (hub is None) == (files is None):
        raise HarnessError(f"data options of loader '{loader}': give exactly one of 'files' and 'hub'")
    if hub is not None:
        table = _read_hub(hub, max_rows)
    else:
        assert files is not None
        paths = resolve_paths(files, data_dir, "files")
        table = _read_files(paths, parsed["format"], parsed["json_field"], max_rows)
    join: JoinSpec | None = parsed["join"]
    if join is not None:
        _apply_join(table, join, data_dir)
    types: dict[str, str] | None = parsed["columns"]
    if types is not None:
        _apply_types(table, types, loader)
    keep: Field | None = parsed["filter"]
    if keep is not None:
        _apply_filter(table, keep)
    return table


def resolve_paths(given: tuple[str, ...], data_dir: Path, option: str) -> list[Path]:
    """Each path under the data root (or absolute, or ``~``), globs expanded in sorted order; all must exist."""
    found: list[Path] = []
    for text in given:
        path = Path(text).expanduser()
        path = path if path.is_absolute() else data_dir / path
        if glob.has_magic(str(path)):
            matches = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
            if not matches:
                raise DataNotFoundError(f"data option '{option}': no file matches {path}")
            found.extend(matches)
        elif path.is_file():
            found.append(path)
        else:
            raise DataNotFoundError(
                f"data option '{option}': {path} not found (paths are under the data root {data_dir}: "
                "--data-dir DIR or HARNESS_DATA_DIR=DIR)"
            )
    return found


def file_format(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise HarnessError(
            f"{path}: cannot tell the format from the extension {suffix or '(none)'}: set 'format' "
            f"({', '.join(FORMATS[1:])})"
        )
    return _BY_SUFFIX[suffix]


def _read_files(paths: list[Path], fmt: str, json_field: str | None, max_rows: int | None) -> Table:
    rows: list[dict[str, Any]] = []
    origins: list[tuple[str, int]] = []
    formats: list[str] = []
    for path in paths:
        chosen = file_format(path, fmt)
        formats.append(chosen)
        for number, row in enumerate(file_rows(path, chosen, json_field, max_rows), start=1):
            if max_rows is not None and number > max_rows:
                break
            rows.append(row)
            origins.append((str(path), number))
    source = {"files": [str(p) for p in paths], "format": sorted(set(formats))}
    return Table(rows, origins, hash_files(paths), source)


def file_rows(path: Path, fmt: str, json_field: str | None = None, max_rows: int | None = None) -> list[dict[str, Any]]:
    """One file's rows (CSV and TSV cells as text, exactly as written); a file that cannot be read is one line
    naming it, the line or row where known, and the cause."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    if not data.strip():
        raise HarnessError(f"{path}: empty file ({'0 bytes' if not data else 'only white space'}), no rows")
    if fmt == "parquet":
        _check_parquet(path, data)
    else:
        for mark, encoding in _BOMS:
            if data.startswith(mark):
                raise HarnessError(
                    f"{path}: {encoding} text (it starts with the {encoding} byte order mark "
                    f"{mark.hex(' ').upper()}), not UTF-8; save it as UTF-8"
                )
    if fmt in ("csv", "tsv"):
        rows = _csv_rows(path, _utf8(path, data), "\t" if fmt == "tsv" else ",", fmt, max_rows)
    elif fmt in ("json", "jsonl"):
        rows = _json_rows(path, _utf8(path, data), fmt, json_field)
    else:
        rows = _parquet_rows(path)
    if not rows:
        raise HarnessError(f"{path}: no rows ({_why_no_rows(fmt, json_field)})")
    return rows


def _why_no_rows(fmt: str, json_field: str | None) -> str:
    if fmt == "json" and json_field:
        return f"the list under data option 'json_field' ({json_field!r}) is empty"
    return {"json": "an empty list of records", "jsonl": "no records", "parquet": "a table of 0 rows"}.get(
        fmt, "nothing to read"
    )


def _utf8(path: Path, data: bytes) -> str:
    """``data`` as UTF-8 text (a UTF-8 byte-order mark dropped); anything else is one line saying what it is."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise HarnessError(
            f"{path}: line {line}: not UTF-8 (byte 0x{data[exc.start]:02x} at byte offset {exc.start}; Latin-1 or "
            "Windows-1252?); save it as UTF-8"
        ) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        sample = data[:200]
        utf16 = sample.count(b"\x00") * 3 >= len(sample)  # every other byte NUL: UTF-16 text without its mark
        why = "UTF-16 text without a byte order mark?; save it as UTF-8" if utf16 else "a binary or damaged file?"
        raise HarnessError(f"{path}: line {line}: NUL byte at byte offset {nul} ({why})")
    return text


def _check_parquet(path: Path, data: bytes) -> None:
    if len(data) >= 12 and data.startswith(_PARQUET_MAGIC) and data.endswith(_PARQUET_MAGIC):
        return
    if not data.startswith(_PARQUET_MAGIC):
        try:
            start = data[:60].decode("utf-8")
        except UnicodeDecodeError:
            looks = ""
        else:
            looks = f"; it begins as text: {shorten_repr(start, 60)}" if start.isprintable() or "\n" in start else ""
        raise HarnessError(f"{path}: not a Parquet file (no 'PAR1' at its start{looks}); set 'format' to what it is")
    raise HarnessError(f"{path}: not a complete Parquet file (no 'PAR1' at its end: truncated?)")


def _csv_rows(path: Path, text: str, sep: str, fmt: str, max_rows: int | None) -> list[dict[str, Any]]:
    """The rows of a CSV or TSV file, every cell the text as written; the header is the first non-blank line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header: list[str] | None = None
    rows: list[dict[str, Any]] = []
    separator = "comma" if sep == "," else "tab"
    line = 1
    try:
        for record in reader:
            first, line = line, reader.line_num + 1
            if not record:  # a blank line
                continue
            if header is None:
                header = _header(path, record, first)
                continue
            if len(record) > len(header):
                raise HarnessError(
                    f"{path}: line {first}: {len(record)} fields, but the header has {len(header)} (an extra "
                    f"{separator}, or a {separator} inside a field that is not in double quotes?)"
                )
            if len(record) < len(header):
                record += [""] * (len(header) - len(record))  # missing cells at the end of a row are empty
            rows.append(dict(zip(header, record, strict=True)))
            if max_rows is not None and len(rows) >= max_rows:
                break
    except csv.Error as exc:
        raise HarnessError(f"{path}: line {line}: not readable as {fmt.upper()} ({one_line(str(exc), 160)})") from None
    if header is None:
        raise HarnessError(f"{path}: empty file (no header), no rows")
    if not rows:
        raise HarnessError(f"{path}: header only, no rows (columns: {shorten(', '.join(header), 120)})")
    return rows


def _header(path: Path, record: list[str], line: int) -> list[str]:
    names = [name if name else f"Unnamed: {i}" for i, name in enumerate(record)]  # pandas' name for a blank
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in seen:
            raise HarnessError(
                f"{path}: line {line} (the header): columns {seen[name]} and {i} are both named {shorten_repr(name)}"
            )
        seen[name] = i
    return names


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    """One Parquet file's rows through ``datasets`` (one file at a time, so each row's file is known); an error is
    the reader's innermost cause, once (``datasets`` logs nothing here)."""
    import pyarrow.parquet as pq

    try:
        if pq.ParquetFile(path).metadata.num_rows == 0:
            return []  # said as "no rows" (datasets would say 'Instruction "train" corresponds to no data!')
    except Exception as exc:  # pyarrow's errors for a damaged file
        raise HarnessError(f"{path}: not a readable Parquet file: {_cause(exc)}") from None
    try:
        with _quiet_datasets() as datasets:
            dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
            return list(dataset.to_list())
    except Exception as exc:  # datasets and pyarrow raise many types; each is the file's fault here
        raise HarnessError(f"{path}: cannot read it as Parquet: {_cause(exc)}") from None


def _cause(exc: BaseException) -> str:
    """The innermost exception behind ``exc`` (``datasets`` wraps the reader's in ``DatasetGenerationError``)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    useful = [e for e in seen if type(e).__name__ != "DatasetGenerationError" and str(e).strip()] or seen
    inner = useful[-1]
    return f"{type(inner).__name__}: {one_line(str(inner), 200)}"


def _json_rows(path: Path, text: str, fmt: str, json_field: str | None) -> list[dict[str, Any]]:
    """The records of a JSON Lines file (one object a line) or a JSON file (a list of objects, or the list under
    ``json_field``), every value with the type the file writes (``1``, ``"1"`` and ``"01"`` stay three values).
    Every record gets every column any record has (a missing one is null), as a table's rows do."""
    records: list[Any]
    if fmt == "jsonl":
        records = _json_lines(path, text)
    else:
        try:
            document = _loads(text)
        except _JsonError as exc:
            if exc.extra_data and not json_field:  # JSON Lines in a .json file: read it as such
                records = _json_lines(path, text)
                return _union(records)
            raise HarnessError(f"{path}: {exc.where}not valid JSON ({exc.why})") from None
        records = _records(path, document, json_field)
    return _union(records)


class _JsonError(Exception):
    def __init__(self, why: str, where: str = "", extra_data: bool = False) -> None:
        super().__init__(why)
        self.why, self.where, self.extra_data = why, where, extra_data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise _JsonError(f"key {shorten_repr(key, 40)} is given twice in one object")
        record[key] = value
    return record


def _loads(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
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
        if not isinstance(document, dict):
            held = _json_type(document)
            raise HarnessError(
                f"{path}: data option 'json_field' ({json_field!r}): the file holds {held}, not an object"
            )
        if json_field not in document:
            keys = shorten(", ".join(map(str, document)), 120) or "none"
            raise HarnessError(
                f"{path}: data option 'json_field': no key {json_field!r} in the file (its keys: {keys})"
            )
        document, where = document[json_field], f"the value of data option 'json_field' ({json_field!r})"
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
        return [document]  # one object: one record
    if not isinstance(document, list):
        raise HarnessError(f"{path}: {where} holds {_json_type(document)}, not a list of records")
    for number, record in enumerate(document, start=1):
        if not isinstance(record, dict):
            raise HarnessError(f"{path}: record {number} of {where}: expected a JSON object, got {_json_type(record)}")
    return document


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


def _read_hub(hub: HubSpec, max_rows: int | None) -> Table:
    split = hub.split if max_rows is None else f"{hub.split}[:{max_rows}]"
    try:
        with _quiet_datasets(offline=not downloads_allowed()) as datasets:
            dataset = datasets.load_dataset(hub.name, hub.config, split=split, revision=hub.revision)
            rows = list(dataset.to_list())
            fingerprint = str(getattr(dataset, "_fingerprint", ""))
    except Exception as exc:
        offline = "" if downloads_allowed() else " (downloads are off: HARNESS_OFFLINE is set)"
        raise DataNotFoundError(f"hub data set {hub.label()}: {_cause(exc)}{offline}") from None
    identity = {"hub": hub.name, "config": hub.config, "split": hub.split, "revision": hub.revision}
    digest = hashlib.sha256(json.dumps({**identity, "fingerprint": fingerprint}, sort_keys=True).encode())
    source = {**identity, "fingerprint": fingerprint}
    label = f"hub {hub.name}" + (f" ({hub.config})" if hub.config else "") + f" {hub.split}"
    if not rows:
        raise HarnessError(f"hub data set {hub.label()}: no rows")
    return Table(rows, [(label, i) for i in range(1, len(rows) + 1)], "sha256:" + digest.hexdigest(), source)


@contextlib.contextmanager
def _quiet_datasets(offline: bool = False) -> Iterator[Any]:
    """``datasets`` without its progress bars and logging (its errors are reported here, once, as one line), and
    offline when the harness is."""
    import datasets
    import huggingface_hub.constants as hub_constants

    datasets.disable_progress_bars()
    logger = logging.getLogger("datasets")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    saved = (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)
    if offline:
        datasets.config.HF_HUB_OFFLINE = True
        hub_constants.HF_HUB_OFFLINE = True
    try:
        yield datasets
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved
        logger.setLevel(max(level, logging.ERROR))


def _apply_join(table: Table, join: JoinSpec, data_dir: Path) -> None:
    paths = resolve_paths(join.files, data_dir, "join.files")
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
        if join.key not in row:
            raise HarnessError(f"{table.where(index)}: data option 'join.key': no column {join.key!r}")
        match = by_key.get(key_text(row[join.key]))
        if match is None:
            raise HarnessError(
                f"{table.where(index)}: column {join.key!r}: {shorten_repr(row[join.key])} has no row in {paths[0]} "
                "(keys are compared as written: 01 is not 1)"
            )
        for column, value in match[1].items():
            if column != join.key:
                if column in row:
                    raise HarnessError(
                        f"{paths[0]}: column {column!r} is in both tables (only the key '{join.key}' may be)"
                    )
                row[column] = value
    # Both tables' identities (each hashed as it was read; the files are not read again).
    table.data_hash = "sha256:" + hashlib.sha256((table.data_hash + other.data_hash).encode()).hexdigest()
    table.source["join"] = {"files": [str(p) for p in paths], "key": join.key}


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
