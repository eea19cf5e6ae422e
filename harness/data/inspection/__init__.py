"""``harness data inspect FILE``: one data file read as the generic loaders read it, its columns summarised, the
shape of its human productions guessed, and a task file written for it with the blanks marked.

Why it reads through the loaders' own reader (``file_rows``): the cells it summarises are the cells a task will
see (CSV cells as text, exactly as written), and a file that cannot be read fails with the same one line as
``harness validate`` would give. The pieces: ``columns`` (what each column holds), ``guess`` (what a guess holds,
and the names that hint at a column's role), ``wide`` (one row per participant), ``shapes`` (one row per instance,
or per response), ``packed_cells`` (every response in one text cell), ``skeleton`` (the task file), and this
module, which puts them together and finds the file.

The whole output is a task file: the inspection is written as comments above the skeleton, so that
``harness data inspect norms.csv > task.yaml`` keeps both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data.inspection.columns import Column, column_names, summarise
from harness.data.inspection.guess import Guess
from harness.data.inspection.packed_cells import packed_shape
from harness.data.inspection.pcibex import pcibex_shape
from harness.data.inspection.shapes import long_shape, one_row_shapes, parallel_families
from harness.data.inspection.skeleton import BLANK, skeleton
from harness.data.inspection.wide import header_rows, participants_shape, wide_shape
from harness.data.tables.file_rows import file_format, file_rows
from harness.errors import HarnessError

__all__ = ["BLANK", "Inspection", "find_file", "inspect_file"]


@dataclass(frozen=True)
class Inspection:
    """What ``harness data inspect`` prints: the report (as comments) and the task file."""

    report: list[str]
    task: list[str]
    shape: str
    loader: str
    n_blanks: int

    def next_steps(self, task_file: str, data_root: Path, called: str = "") -> list[str]:
        """What to do with the task file: its blanks to fill, its guesses to check, the command that checks it;
        ``called``: how the first line names the file (default: its name)."""
        if self.n_blanks:
            todo = (
                f'replace each "{BLANK}" ({self.n_blanks} in all) as its "# FILL:" comment says (a column name, or '
                'a template over the row), check each "# guess", then:'
            )
        else:
            todo = 'no blanks to fill: check each "# guess", then:'
        return [
            f"The task file {called or task_file}: {todo}",
            f"  harness validate {task_file} --data-dir {data_root}",
        ]

    def text(self, data_root: Path) -> str:
        """The whole output: the report and the next steps as comments, then the task file."""
        comments = [*self.report, "", *self.next_steps("TASK.yaml", data_root, "below")]
        return "\n".join([*(f"# {line}".rstrip() for line in comments), *self.task]) + "\n"


def find_file(given: str, data_root: Path) -> tuple[Path, str]:
    """The file the user named (relative to the current folder, else to the data root) and the path a task file
    gives for it: relative to the data root when it is under it, else absolute."""
    path = Path(given).expanduser()
    if not path.is_absolute() and not path.exists() and (data_root / path).exists():
        path = data_root / path
    if not path.is_file():
        where = "" if path.is_absolute() else f" (looked in {Path.cwd()} and under the data root {data_root})"
        raise HarnessError(f"{given}: {'not a file' if path.exists() else 'no such file'}{where}")
    absolute = Path(os.path.abspath(path))
    for root, file in ((Path(os.path.abspath(data_root)), absolute), (data_root.resolve(), path.resolve())):
        if file.is_relative_to(root):
            return path, file.relative_to(root).as_posix()
    return path, absolute.as_posix()


def inspect_file(
    path: Path,
    files: str,
    data_root: Path,
    fmt: str = "auto",
    json_field: str | None = None,
    json_key: str | None = None,
) -> Inspection:
    """Read ``path`` and guess; ``files`` is the path the task file names (``find_file``); ``fmt``, ``json_field``
    and ``json_key`` are the data options of the same names (a JSON object of objects is read with ``json_key: id``
    when none is given, as its error message proposes)."""
    fmt = file_format(path, fmt)
    notes: dict[str, str] = {"files": "under the data root (--data-dir, HARNESS_DATA_DIR), or absolute"}
    try:
        rows = file_rows(path, fmt, json_field, json_key=json_key)
    except HarnessError as exc:
        if fmt != "json" or json_key or "set 'json_key: id'" not in str(exc):
            raise
        json_key = "id"  # an object of records keyed by id: each value a row, its key in column 'id'
        rows = file_rows(path, fmt, json_field, json_key=json_key)
        notes["json_key"] = "guess: the file is an object of records keyed by id; each key goes in this column"
    labels: list[dict[str, Any]] = []
    names_of_labels = header_rows(rows) if fmt in ("csv", "tsv") else ()
    if names_of_labels:
        labels, rows = rows[: len(names_of_labels)], rows[len(names_of_labels) :]
        if not rows:
            raise HarnessError(f"{path}: no data rows under its {1 + len(labels)} header rows")
    names = column_names(rows)
    columns = {name: summarise(rows, name) for name in names}
    guess = _guess(rows, columns, labels)
    source: dict[str, Any] = {"files": files, "format": fmt}
    if json_field:
        source["json_field"] = json_field
    if json_key:
        source["json_key"] = json_key
    task, loader, why = skeleton(guess, columns, source, notes, path.stem, len(rows))
    n_blanks = sum(BLANK in line and not line.lstrip().startswith("#") for line in task)
    under = f", {len(labels)} rows under the header label the columns" if labels else ""
    report = [
        f"harness data inspect: {path} ({fmt}, {len(rows):,} rows, {len(names)} columns{under})",
        "",
        *_table(list(columns.values())),
        "",
        f"shape: {guess.evidence}" if guess else f"shape: not recognised ({_nothing})",
        f"loader: {loader}: {why}",
    ]
    return Inspection(report, task, guess.shape if guess else "", loader, n_blanks)


_nothing = (
    "no column of lists or mappings, no numbered columns that pair up, no participant column beside numbered "
    "answer columns, no rows that repeat a key"
)


def _guess(rows: list[dict[str, Any]], columns: dict[str, Column], labels: list[dict[str, Any]]) -> Guess | None:
    """The first shape that fits, from the most telling evidence to the least: an export's own columns (PCIbex's
    element rows, MTurk's and Qualtrics' families), a cell
    that holds every response (a list or mapping, then text packed with a separator or as JSON), numbered families
    that pair up, a participant column beside answer columns, and rows that repeat a key."""
    return (
        pcibex_shape(rows, columns)
        or participants_shape(rows, columns, labels)
        or one_row_shapes(rows, columns)
        or packed_shape(rows, columns)
        or parallel_families(rows, columns, named_only=True)
        or wide_shape(rows, columns)
        or parallel_families(rows, columns)
        or long_shape(rows, columns)
    )


def _table(columns: list[Column]) -> list[str]:
    width = max([len("column"), *(len(c.name) for c in columns)])
    width = min(width, 40)
    head = f"{'column':<{width}}  {'type':<12}  {'distinct':>9}  examples"
    return [head, *(c.line(width) for c in columns)]
