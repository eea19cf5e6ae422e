"""One local data file's rows: its bytes checked, then read by its format (CSV and TSV as text, Parquet through
``datasets``, JSON and JSON Lines by ``json_rows.py``), every failure one line.

Apart from ``table.py`` because reading one file is a job of its own, with its own rules (what the bytes may be,
how each reader's errors become one line), while ``table.py`` puts the rows of files or a hub data set together
(globs, ``join``, ``filter``, column types, the data's identity).

Every file that cannot be read is one line naming the file, the line or row where known, and the real cause (not
UTF-8, UTF-16, an extra field, a broken JSON row, not a Parquet file, empty, a header without rows), never the
reader's own log lines or its generic "An error occurred while generating the dataset" (``quiet_datasets`` keeps
``datasets`` quiet, ``innermost_cause`` finds the reader's own error behind its wrappers).

Why CSV cells are text, exactly as written: a type inferred from a column's cells changes what people wrote
(ratings ``1.0``..``5.0`` become ``1``..``5``, an answer ``007`` becomes ``7``, the ids ``01`` and ``1`` become
one), and then option keys, targets and ids written as the file writes them no longer match. Only an empty cell
is empty (``NA``, ``null`` and ``None`` are words a participant may have typed). A field that needs a number
(counts, proportions, ``n_people``, ``target_index``) converts the text where it is used, naming the file, row and
column when it is not a number; the ``columns`` option (``table.py``) declares a column's type for every use
(templates that do arithmetic). JSON and Parquet values keep the types the file gives them (why JSON is not read
through ``datasets``: ``json_rows.py``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.data.tables.json_rows import json_rows
from harness.data.tables.pcibex import pcibex_rows
from harness.errors import HarnessError, one_line, shorten, shorten_repr

FORMATS = ("auto", "csv", "tsv", "json", "jsonl", "parquet", "pcibex")
_BY_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".json": "json", ".jsonl": "jsonl", ".parquet": "parquet"}
#: Byte-order marks of encodings that are not UTF-8, longest first (UTF-32 LE starts with UTF-16 LE's mark).
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_PARQUET_MAGIC = b"PAR1"


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


def file_rows(
    path: Path, fmt: str, json_field: str | None = None, max_rows: int | None = None, json_key: str | None = None
) -> list[dict[str, Any]]:
    """One file's rows (CSV and TSV cells as text, exactly as written); a file that cannot be read is one line
    naming it, the line or row where known, and the cause. ``json_key``: a JSON file's records keyed by id."""
    if json_key is not None and fmt != "json":
        raise HarnessError(
            f"{path}: data option 'json_key' is for a JSON file holding an object of records keyed by id; this file "
            f"is read as {fmt.upper()}"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    if not data.strip():
        raise HarnessError(f"{path}: empty file ({'0 bytes' if not data else 'only white space'}), no rows")
    if fmt == "parquet":
        _check_parquet(path, data)
    else:
        _refuse_other_boms(path, data)
    if fmt in ("csv", "tsv"):
        rows = _csv_rows(path, _utf8(path, data), "\t" if fmt == "tsv" else ",", fmt, max_rows)
    elif fmt in ("json", "jsonl"):
        rows = json_rows(path, _utf8(path, data), fmt, json_field, json_key)
    elif fmt == "pcibex":
        rows = pcibex_rows(path, _utf8(path, data), max_rows)
    else:
        rows = _parquet_rows(path)
    if not rows:
        raise HarnessError(f"{path}: no rows ({_why_no_rows(fmt, json_field)})")
    return rows


def _why_no_rows(fmt: str, json_field: str | None) -> str:
    if fmt == "json" and json_field:
        return f"the list under data option 'json_field' ({json_field!r}) is empty"
    return {
        "json": "an empty list of records",
        "jsonl": "no records",
        "parquet": "a table of 0 rows",
        "pcibex": "no data lines under its column comments",
    }.get(fmt, "nothing to read")


def utf8_text(path: Path, data: bytes) -> str:
    """A text file's bytes (a passage, not a table) as UTF-8 text by the rules a table's bytes follow: a UTF-8
    byte-order mark dropped; UTF-16 or UTF-32 (by its mark, or NUL bytes), bytes that are not UTF-8 and NUL bytes
    are each one line naming the file and the line."""
    _refuse_other_boms(path, data)
    return _utf8(path, data)


def _refuse_other_boms(path: Path, data: bytes) -> None:
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            raise HarnessError(
                f"{path}: {encoding} text (it starts with the {encoding} byte order mark "
                f"{mark.hex(' ').upper()}), not UTF-8; save it as UTF-8"
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


def csv_records(
    path: Path, text: str, sep: str, fmt: str, *, strict: bool = False, max_cell: int | None = None
) -> Iterator[tuple[int, list[str]]]:
    """A CSV or TSV text's non-blank records, each with the line it starts on; any error of the csv module is one
    ``HarnessError`` naming the file and that line. ``strict``: the csv module's strict quoting (a quote never
    closed is an error, not the rest of the file in one cell). ``max_cell``: the longest cell read (the csv
    module's own limit, 128 KiB, is raised to it for this read only)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=strict)
    limit = csv.field_size_limit()
    if max_cell is not None:
        csv.field_size_limit(max(limit, max_cell))
    line = 1
    try:
        for record in reader:
            first, line = line, reader.line_num + 1
            if record:  # not a blank line
                yield first, record
    except csv.Error as exc:
        raise HarnessError(f"{path}: line {line}: not readable as {fmt.upper()} ({one_line(str(exc), 160)})") from None
    finally:
        csv.field_size_limit(limit)


def _csv_rows(path: Path, text: str, sep: str, fmt: str, max_rows: int | None) -> list[dict[str, Any]]:
    """The rows of a CSV or TSV file, every cell the text as written; the header is the first non-blank line."""
    header: list[str] | None = None
    rows: list[dict[str, Any]] = []
    separator = "comma" if sep == "," else "tab"
    records = csv_records(path, text, sep, fmt)
    for first, record in records:
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
        raise HarnessError(f"{path}: not a readable Parquet file: {innermost_cause(exc)}") from None
    try:
        with quiet_datasets() as datasets:
            dataset = datasets.load_dataset("parquet", data_files=str(path), split="train")
            return list(dataset.to_list())
    except Exception as exc:  # datasets and pyarrow raise many types; each is the file's fault here
        raise HarnessError(f"{path}: cannot read it as Parquet: {innermost_cause(exc)}") from None


def innermost_cause(exc: BaseException) -> str:
    """The innermost exception behind ``exc`` (``datasets`` wraps the reader's in ``DatasetGenerationError``)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    useful = [e for e in seen if type(e).__name__ != "DatasetGenerationError" and str(e).strip()] or seen
    inner = useful[-1]
    return f"{type(inner).__name__}: {one_line(str(inner), 200)}"


@contextlib.contextmanager
def quiet_datasets(offline: bool = False) -> Iterator[Any]:
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
