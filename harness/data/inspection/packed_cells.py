"""Guesses of packed cells: every response of an instance written in one text cell, joined by a separator
(``dog, cat, , mouse``) or as JSON (``["dog", "cat"]``, ``{"dog": 3}``), which the loaders split with
``human.packed``.

Why the tests are strict for commas: a comma is also punctuation, so a column of sentences has commas in most
cells. A comma-packed column needs short pieces (a word or two each); a semicolon, a pipe or a tab is rarely
prose, so pieces of any length count. A cell is split as the loaders split it: as a CSV row at the separator,
quotes protecting a separator inside a piece, an empty piece kept (a person without an answer).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.data.inspection.columns import TEXT, WHOLE, Column, number_of, words
from harness.data.inspection.guess import RESPONSE_NAMES, Guess, prefer
from harness.data.tables.cells import is_empty

#: Separators tried, most telling first.
SEPARATORS = ("|", ";", "\t", ",")
#: The share of a column's non-empty cells that must hold the separator (or be JSON).
MOSTLY = 0.8
#: Comma-packed pieces are at most this many words on average.
COMMA_WORDS = 2.0
#: Cells looked at.
SAMPLE = 2000
_NAMES = {"|": "a pipe", ";": "a semicolon", "\t": "a tab", ",": "a comma"}


def split(text: str, separator: str) -> list[str] | None:
    """The pieces of a cell, or None when it cannot be split (an unclosed quote, a line break)."""
    text = text.strip()
    if not text:
        return []
    try:
        records = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=separator, skipinitialspace=True)]
    except csv.Error:
        return None
    records = [r for r in records if r]
    return [p.strip() for p in records[0]] if len(records) == 1 else None


def json_cell(text: str) -> Any:
    """A cell's JSON list or object, else None."""
    text = text.strip()
    if not text.startswith(("[", "{")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (list, dict)) else None


def _cells(rows: Sequence[Mapping[str, Any]], name: str) -> list[str]:
    return [str(row[name]) for row in rows[:SAMPLE] if not is_empty(row.get(name))]


def packing(rows: Sequence[Mapping[str, Any]], column: Column) -> tuple[str, list[list[Any]]] | None:
    """How a text column packs its cells (``json`` or a separator) and the pieces of each cell looked at."""
    if column.kind != TEXT:
        return None
    cells = _cells(rows, column.name)
    if not cells:
        return None
    parsed = [json_cell(c) for c in cells]
    if sum(isinstance(v, list) for v in parsed) >= MOSTLY * len(cells):
        return "json", [v for v in parsed if isinstance(v, list)]
    for separator in SEPARATORS:
        holding = [c for c in cells if separator in c.strip()]
        if len(holding) < MOSTLY * len(cells):
            continue
        pieces = [split(c, separator) for c in cells]
        found = [p for p in pieces if p is not None]
        if len(found) < MOSTLY * len(cells):
            continue
        flat = [p for cell in found for p in cell if p]
        mean = sum(words(p) for p in flat) / len(flat) if flat else 0.0
        if separator == "," and mean > COMMA_WORDS:
            continue
        return separator, found
    return None


def packed_shape(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """A text column of packed cells: JSON objects of numbers (shape mapping), two packed columns of the same
    lengths, answers and numbers (shape parallel), or one of responses (shape list)."""
    objects = [c for c in columns.values() if c.kind == TEXT and _json_objects(rows, c.name)]
    if objects:
        column = objects[0]
        return Guess(
            "mapping",
            f"mapping, packed: {column.name!r} holds {{response: number}} as JSON text in every row; {len(rows):,} "
            "rows, one instance each",
            {"shape": "mapping", "responses": column.name, "packed": "json"},
            responses=[k for c in _cells(rows, column.name) for k in (json_cell(c) or {})],
            per_instance=_others(columns, {column.name}),
        )
    packed = {c.name: found for c in columns.values() if (found := packing(rows, c)) is not None}
    if not packed:
        return None
    numbers = {n for n, (_, cells) in packed.items() if _all_numbers(cells)}
    answers = [columns[n] for n in packed if n not in numbers]
    if not answers:
        return None
    chosen = prefer(answers, RESPONSE_NAMES)
    assert chosen is not None
    separator, cells = packed[chosen.name]
    lengths = [len(c) for c in cells]
    for other in sorted(numbers):
        if packed[other][0] == separator and [len(c) for c in packed[other][1]] == lengths:
            whole = all(number_of(p) is not None and float(p).is_integer() for c in packed[other][1] for p in c if p)
            key = "counts" if whole else "proportions"
            return Guess(
                "parallel",
                f"parallel, packed: {chosen.name!r} (texts) and {other!r} ({key}) hold pieces split at "
                f"{_NAMES.get(separator, 'json')} with the same number in every row; {len(rows):,} rows",
                {"shape": "parallel", "responses": chosen.name, key: other, "packed": separator},
                responses=[p for c in cells for p in c],
                per_instance=_others(columns, {chosen.name, other}),
            )
    human: dict[str, Any] = {"shape": "list", "responses": chosen.name, "packed": separator}
    how = "JSON lists as text" if separator == "json" else f"pieces split at {_NAMES[separator]}"
    said = ""
    n_people = _n_people(rows, columns, chosen.name, separator)
    if n_people:
        human["n_people"] = n_people
        said = f"; {n_people!r} gives each cell's number of pieces"
    mean = sum(lengths) / len(lengths)
    return Guess(
        "list",
        f"list, packed: {chosen.name!r} holds {how} ({mean:.1f} on average){said}; {len(rows):,} rows, one "
        "instance each",
        human,
        responses=[p for c in cells for p in c],
        per_instance=_others(columns, {chosen.name} | ({n_people} if n_people else set())),
    )


def _json_objects(rows: Sequence[Mapping[str, Any]], name: str) -> bool:
    cells = _cells(rows, name)
    parsed = [json_cell(c) for c in cells]
    objects = [v for v in parsed if isinstance(v, dict)]
    return (
        bool(cells)
        and len(objects) >= MOSTLY * len(cells)
        and all(number_of(n) is not None for v in objects for n in v.values())
    )


def _all_numbers(cells: list[list[Any]]) -> bool:
    pieces = [p for c in cells for p in c if not is_empty(p)]
    return bool(pieces) and all(number_of(p) is not None for p in pieces)


def _n_people(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column], name: str, separator: str) -> str:
    """A whole-number column that says how many pieces every cell holds (``n_people`` checks each cell)."""
    counted = []
    for row in rows:
        value = row.get(name)
        if is_empty(value):
            counted.append(0)
            continue
        pieces = json_cell(str(value)) if separator == "json" else split(str(value), separator)
        counted.append(-1 if pieces is None else len(pieces))
    for column in columns.values():
        if column.name != name and column.kind == WHOLE:
            numbers = [number_of(row.get(column.name)) for row in rows]
            if numbers == [float(c) for c in counted]:
                return column.name
    return ""


def _others(columns: Mapping[str, Column], used: set[str]) -> list[str]:
    return [c.name for c in columns.values() if c.scalar and c.name not in used]
