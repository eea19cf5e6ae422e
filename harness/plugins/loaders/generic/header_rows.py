"""``header_rows``: rows under a CSV file's header that label its columns instead of holding data.

Why: survey tools write more than one header row. A Qualtrics export has the question ids as its header, the
question texts in the second row and import ids (``{"ImportId":"QID1"}``) in the third; read as data, those two rows
would be two participants who answered every question with its own text. ``header_rows: [question, import_id]``
names those rows: they are taken out of every file (data rows are then numbered from the first participant), and
each gives every column a label. The ``participants`` shape puts the labels of an item's response column in each of
its answers (``question``: the question's text), so a template can build the item's text from it.

Every file must label a column the same way (a second export of the same survey does): a column labelled
differently in two files is one line naming both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.api import HarnessError, shorten_repr

#: The formats with header rows.
TEXT_TABLES = ("csv", "tsv")


def header_rows_option(value: Any) -> tuple[str, ...]:
    """Converter for ``header_rows``: the names of the rows under the header, in file order."""
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        if len(set(value)) != len(value):
            raise ValueError(f"every row needs its own name, got {shorten_repr(value)}")
        return tuple(value)
    raise ValueError(f"expected a list of names, one per row under the header, got {shorten_repr(value)}")


header_rows_option.type_name = "list of names"  # type: ignore[attr-defined]


def take_labels(
    rows: list[dict[str, Any]], origins: list[tuple[str, int]], formats: Sequence[str], names: tuple[str, ...]
) -> tuple[list[dict[str, Any]], list[tuple[str, int]], dict[str, dict[str, str]]]:
    """The data rows (renumbered from 1 in each file) and the labels the first ``len(names)`` rows of each file
    give its columns."""
    wrong = sorted(set(formats) - set(TEXT_TABLES))
    if wrong:
        raise HarnessError(f"data option 'header_rows': for CSV and TSV files, not {', '.join(wrong)}")
    labels: dict[str, dict[str, str]] = {name: {} for name in names}
    given: dict[tuple[str, str], str] = {}
    kept_rows: list[dict[str, Any]] = []
    kept_origins: list[tuple[str, int]] = []
    for row, (file, number) in zip(rows, origins, strict=True):
        if number <= len(names):
            name = names[number - 1]
            for column, label in row.items():
                text = "" if label is None else str(label)
                before = labels[name].setdefault(column, text)
                if before != text:
                    raise HarnessError(
                        f"{file}: header row {number + 1} ({name}): column {column!r} is labelled "
                        f"{shorten_repr(text, 60)}, but {given[(name, column)]} labels it {shorten_repr(before, 60)}"
                    )
                given.setdefault((name, column), file)
            continue
        kept_rows.append(row)
        kept_origins.append((file, number - len(names)))
    short = sorted({file for file, _ in origins} - {file for file, _ in kept_origins})
    if short:
        raise HarnessError(
            f"{short[0]}: no data rows under its {1 + len(names)} header rows (data option 'header_rows': "
            f"{', '.join(names)})"
        )
    return kept_rows, kept_origins, labels
