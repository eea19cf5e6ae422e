"""The rows of a PCIbex (PennController for Ibex) results file, each cell as written.

Why a reader of its own: a PCIbex results file is not one CSV table. It has no header row; comment lines name the
columns instead, in blocks that start with ``# Columns below this comment are as follows:`` followed by one
``# N. Name.`` line per column, and a new block starts wherever the trials that follow log other columns (a trial
that ``.log("item", ...)`` has more columns than the instructions before it). Other comment lines (``# Results on
...``, ``# USER AGENT: ...``, an empty ``#``) say when and how a participant's results arrived. Read as CSV, every
block after the first would be misnamed or refused.

So each data line is named by the block above it (its trailing period dropped: ``# 11. Value.`` is ``Value``),
every row gets every column any block has (a column its block lacks is empty, as a CSV row's missing cells are),
and the cells are text as written (``NULL`` stays ``NULL``: PCIbex writes it for a value it did not log). A data
line before any block, or with more fields than its block names, and the older Ibex layout (``# The lines below
this comment are in groups of N``) are one line naming the file and the line.

The participant is usually a column the experiment logged (``.log("ID", getVar("ID"))``, or Prolific's id from the
URL), else ``MD5 hash of participant's IP address``; a task reads the rows as the ``long`` shape with that column as
``participant`` and a ``filter`` on the element and parameter that hold the answers (``docs/your-data.md``).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, one_line, shorten, shorten_repr

_BLOCK = "# Columns below this comment are as follows:"
_IBEX_GROUPS = "# The lines below this comment are in groups of"
#: ``# 11. Value.``: a column's number and name.
_COLUMN = re.compile(r"^#\s*(\d+)\.\s(.*)$")


def pcibex_rows(path: Path, text: str, max_rows: int | None = None) -> list[dict[str, Any]]:
    """Every data line of ``text`` as a row named by its block of column comments (``max_rows``: the first ones)."""
    names: list[str] | None = None
    naming = False
    rows: list[tuple[int, list[str], list[str]]] = []
    columns: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            if line.startswith(_IBEX_GROUPS):
                raise HarnessError(
                    f"{path}: line {number}: the older Ibex layout (lines in groups); read by format 'pcibex' are "
                    "PennController results, one block of column comments above its lines"
                )
            if line.strip() == _BLOCK:
                names, naming = [], True
                continue
            match = _COLUMN.match(line)
            if naming and match is not None:
                assert names is not None
                _name(path, number, names, int(match.group(1)), match.group(2))
                continue
            naming = False
            continue
        naming = False
        if not line.strip():
            continue
        if names is None:
            raise HarnessError(
                f"{path}: line {number}: a data line before any '{_BLOCK}' block: not a PCIbex results file? "
                f"({shorten(line, 60)})"
            )
        if not names:
            raise HarnessError(f"{path}: line {number}: the column block above this line names no column")
        cells = _cells(path, number, line)
        if len(cells) > len(names):
            raise HarnessError(
                f"{path}: line {number}: {len(cells)} fields, but the block of column comments above it names "
                f"{len(names)} (a comma inside a field that is not in double quotes?)"
            )
        rows.append((number, names, cells))
        columns.update(dict.fromkeys(names))
        if max_rows is not None and len(rows) >= max_rows:
            break
    return [{c: "" for c in columns} | dict(zip(block, cells, strict=False)) for _, block, cells in rows]


def _name(path: Path, number: int, names: list[str], position: int, text: str) -> None:
    """Add column ``position``'s name (its one trailing period dropped) to the block being read."""
    if position != len(names) + 1:
        raise HarnessError(
            f"{path}: line {number}: column {position} follows column {len(names)} in its block (a damaged file?)"
        )
    name = text.strip()
    name = name[:-1] if name.endswith(".") else name
    if not name or name in names:
        raise HarnessError(
            f"{path}: line {number}: column {position} is named {shorten_repr(name)}, "
            + ("an empty name" if not name else f"as column {names.index(name) + 1} of its block is")
        )
    names.append(name)


def _cells(path: Path, number: int, line: str) -> list[str]:
    try:
        return next(csv.reader(io.StringIO(line, newline=""), strict=True))
    except (csv.Error, StopIteration) as exc:
        raise HarnessError(f"{path}: line {number}: not readable as CSV ({one_line(str(exc), 120)})") from None
