"""The rows of a generic task's data: local files or a Hugging Face hub data set, read through ``datasets``.

Why ``datasets``: it is the field's reader for these formats (JSON Lines, JSON, CSV/TSV, Parquet, hub data sets),
with its own cache, so a large file is parsed once and a hub data set downloaded once. Two things are added on top:

* every row keeps where it came from (``FILE: row N``, rows counted from 1, a CSV's header not counted), so that a
  bad value is one line naming the file, the row and the column;
* the data's identity: a hash of the bytes of every local file read, or the hub data set's name, configuration,
  split, revision and ``datasets`` fingerprint, recorded in the results so that changed data never reuses stored
  responses.

CSV and TSV cells are read as written: only an empty cell is empty (``NA``, ``null`` and ``None`` are words a
participant may have typed), and a column's type is inferred by pandas (numbers stay numbers, so templates can do
arithmetic on them). ``join`` adds the columns of a second table to every row by a key column (a responses table
beside a passages table), and ``filter`` keeps the rows for which a template is true.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import downloads_allowed, hash_files
from harness.errors import DataNotFoundError, HarnessError, one_line, shorten_repr
from harness.options import Option, Options, one_of, optional
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template

FORMATS = ("auto", "csv", "tsv", "json", "jsonl", "parquet")
_BY_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet"}
_BUILDER = {"csv": "csv", "tsv": "csv", "json": "json", "jsonl": "json", "parquet": "parquet"}


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

#: Where the rows come from: the options every generic loader shares.
SOURCE_OPTIONS = Options(
    Option("files", optional(_paths), None, "data files: paths under the data root (or absolute), globs allowed"),
    Option("format", one_of(*FORMATS), "auto", "auto: by each file's extension", " | ".join(FORMATS)),
    Option("json_field", optional(str), None, "JSON files: the key whose value is the list of records", "str"),
    Option("hub", optional(_hub), None, "a Hugging Face hub data set instead of files"),
    Option("join", optional(_join), None, "add the columns of another table by a key column"),
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
        for number, row in enumerate(_file_rows(path, chosen, json_field), start=1):
            if max_rows is not None and number > max_rows:
                break
            rows.append(row)
            origins.append((str(path), number))
    source = {"files": [str(p) for p in paths], "format": sorted(set(formats))}
    return Table(rows, origins, hash_files(paths), source)


def _file_rows(path: Path, fmt: str, json_field: str | None) -> list[dict[str, Any]]:
    """One file's rows through ``datasets`` (one file at a time, so each row's file is known)."""
    kwargs: dict[str, Any] = {}
    if fmt in ("csv", "tsv"):
        kwargs = {"sep": "\t" if fmt == "tsv" else ",", "keep_default_na": False, "na_filter": False}
    if fmt in ("json", "jsonl") and json_field:
        kwargs["field"] = json_field
    try:
        with _quiet_datasets() as datasets:
            dataset = datasets.load_dataset(_BUILDER[fmt], data_files=str(path), split="train", **kwargs)
            return list(dataset.to_list())
    except Exception as exc:  # datasets and pyarrow raise many types; each is the file's fault here
        raise HarnessError(
            f"{path}: cannot read it as {fmt}: {type(exc).__name__}: {one_line(str(exc), 200)}"
        ) from None


def _read_hub(hub: HubSpec, max_rows: int | None) -> Table:
    split = hub.split if max_rows is None else f"{hub.split}[:{max_rows}]"
    try:
        with _quiet_datasets(offline=not downloads_allowed()) as datasets:
            dataset = datasets.load_dataset(hub.name, hub.config, split=split, revision=hub.revision)
            rows = list(dataset.to_list())
            fingerprint = str(getattr(dataset, "_fingerprint", ""))
    except Exception as exc:
        offline = "" if downloads_allowed() else " (downloads are off: HARNESS_OFFLINE is set)"
        raise DataNotFoundError(
            f"hub data set {hub.label()}: {type(exc).__name__}: {one_line(str(exc), 200)}{offline}"
        ) from None
    identity = {"hub": hub.name, "config": hub.config, "split": hub.split, "revision": hub.revision}
    digest = hashlib.sha256(json.dumps({**identity, "fingerprint": fingerprint}, sort_keys=True).encode())
    source = {**identity, "fingerprint": fingerprint}
    label = f"hub {hub.name}" + (f" ({hub.config})" if hub.config else "") + f" {hub.split}"
    return Table(rows, [(label, i) for i in range(1, len(rows) + 1)], "sha256:" + digest.hexdigest(), source)


@contextlib.contextmanager
def _quiet_datasets(offline: bool = False) -> Iterator[Any]:
    """``datasets`` without its progress bars and info logging, and offline when the harness is."""
    import datasets
    import huggingface_hub.constants as hub_constants

    datasets.disable_progress_bars()
    logging.getLogger("datasets").setLevel(logging.ERROR)
    saved = (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)
    if offline:
        datasets.config.HF_HUB_OFFLINE = True
        hub_constants.HF_HUB_OFFLINE = True
    try:
        yield datasets
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved


def _apply_join(table: Table, join: JoinSpec, data_dir: Path) -> None:
    paths = resolve_paths(join.files, data_dir, "join.files")
    other = _read_files(paths, join.format, None, None)
    by_key: dict[str, tuple[int, dict[str, Any]]] = {}
    for index, row in enumerate(other.rows):
        if join.key not in row:
            raise HarnessError(
                f"{other.where(index)}: data option 'join.key': no column {join.key!r} in the joined table"
            )
        key = _key(row[join.key])
        if key in by_key:
            raise HarnessError(
                f"{other.where(index)}: column {join.key!r}: {shorten_repr(row[join.key])} also on "
                f"{other.where(by_key[key][0])} (a joined table needs one row per key)"
            )
        by_key[key] = (index, row)
    for index, row in enumerate(table.rows):
        if join.key not in row:
            raise HarnessError(f"{table.where(index)}: data option 'join.key': no column {join.key!r}")
        match = by_key.get(_key(row[join.key]))
        if match is None:
            raise HarnessError(
                f"{table.where(index)}: column {join.key!r}: {shorten_repr(row[join.key])} has no row in {paths[0]}"
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


def _key(value: Any) -> str:
    """A join key as text, so that ``1`` in one table matches ``"1"`` in another (CSV and JSON disagree on types)."""
    return str(value).strip()


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
    table.source["n_rows_read"] = len(table.rows)
    table.source["filter"] = keep.given
    table.rows, table.origins = kept_rows, kept_origins
