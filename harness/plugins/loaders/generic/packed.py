"""Packed cells: every response of an instance written in one cell (``human.packed``), split into its pieces.

Researchers often keep all the responses to one position in one spreadsheet cell: joined by commas (a response
with a comma in it then in double quotes, as a CSV writer quotes it: ``dog, "well, then", cat, , mouse``), by
semicolons or pipes, or as a JSON string (``["dog", "cat"]``, ``{"dog": 3}``). Why the ``csv`` module splits the
text instead of ``str.split``: a comma inside a quoted response is part of the response, not a boundary, and
that is what the researcher's own CSV tool meant when it wrote the cell.

An empty piece (``dog, , cat``) is a person who gave no answer: it stays ``""`` so that the loaders count it as no
answer (``n_human_missing``), never dropped and never a word. So is the empty last piece of a cell that ends with
the separator (``a, b, c,``): such a cell holds one piece more than it looks, and ``n_people`` (the number of
pieces each cell must hold) is what catches a wrong count. An empty cell holds no pieces at all (0 people).

What was split is counted (cells, pieces, empty pieces) and recorded in the data source (``LoadedData.source``),
so that a reader of the results sees how many people gave no answer by the packing alone.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness.api import DuplicateKeyError, shorten_repr, unique_keys
from harness.plugins.loaders.generic.fields import Field, RowError

JSON = "json"
#: Separators that cannot be one: the quote protects a separator inside a response, and a line break ends a row.
_REFUSED = {'"': "the double quote protects separators inside a response", "\n": "a line break", "\r": "a line break"}
_WHITESPACE = " \t\r\n\f\v"


@dataclass
class PackedCount:
    """How many cells of responses one load read through the packing (``human.responses``, or ``counts`` alone for
    multiple choice), and their pieces; a ``parallel`` task's counts cells are not counted twice."""

    n_cells: int = 0
    n_pieces: int = 0
    n_empty_pieces: int = 0


@dataclass(frozen=True)
class Packed:
    """How a cell packs its responses: ``separator`` is one character, or ``json``.

    ``count`` is the tally of the load that parsed this option (a task's options are parsed afresh by every
    load, so the tally is that load's), read into the data source by ``GenericLoader.load``."""

    separator: str
    count: PackedCount = field(default_factory=PackedCount, compare=False, repr=False)

    def describe(self) -> dict[str, Any]:
        return {
            "separator": self.separator,
            "n_cells": self.count.n_cells,
            "n_pieces": self.count.n_pieces,
            "n_empty_pieces": self.count.n_empty_pieces,
        }

    def pieces(self, value: Any, where: str, name: str, *, responses: bool = True) -> list[Any]:
        """A list cell's pieces: a list as it is (a JSON file's), text split (or parsed as a JSON list).
        ``responses``: the cell holds the responses (counted), not their numbers."""
        if isinstance(value, (list, tuple)):
            found = list(value)
        elif value is None or (isinstance(value, str) and not value.strip(_blank_for(self.separator))):
            found = []
        elif not isinstance(value, str):
            raise RowError(f"{where}: {name}: expected {self._what('list')} or a list, got {shorten_repr(value)}")
        elif self.separator == JSON:
            found = _json_cell(value, list, where, name)
        else:
            found = split_cell(value, self.separator, where, name)
        if responses:
            self._tally(found)
        return found

    def mapping(self, value: Any, where: str, name: str) -> dict[Any, Any]:
        """A mapping cell (``{response: number}``): an object as it is, text parsed as a JSON object."""
        if isinstance(value, dict):
            found = value
        elif value is None or (isinstance(value, str) and not value.strip()):
            found = {}
        elif not isinstance(value, str):
            raise RowError(f"{where}: {name}: expected {self._what('mapping')}, got {shorten_repr(value)}")
        else:
            found = _json_cell(value, dict, where, name)
        self._tally(list(found))
        return found

    def _what(self, shape: str) -> str:
        if self.separator == JSON:
            return f"a JSON {'list' if shape == 'list' else 'object'} as text"
        return f"text packed with {self.separator!r}"

    def _tally(self, pieces: list[Any]) -> None:
        self.count.n_cells += 1
        self.count.n_pieces += len(pieces)
        self.count.n_empty_pieces += sum(1 for p in pieces if p is None or (isinstance(p, str) and not p.strip()))


def packed_option(value: Any) -> Packed:
    """Converter for ``human.packed``: one character (``","``, ``";"``, ``"|"``, ``"\\t"``) or ``json``."""
    if value == JSON:
        return Packed(JSON)
    if not isinstance(value, str) or len(value) != 1:
        raise ValueError(
            f'expected one separator character ("," ";" "|", or "\\t" in double quotes for a tab) or json, got '
            f"{shorten_repr(value)}"
        )
    if value in _REFUSED:
        raise ValueError(f"{value!r} cannot separate responses ({_REFUSED[value]})")
    return Packed(value)


packed_option.type_name = '"," | ";" | "|" | "\\t" | json'  # type: ignore[attr-defined]


def check_packed(packed: Packed, shape: str, families: bool) -> None:
    """Which shapes a packed cell fits (``ValueError`` for ``human_option``); ``families``: numbered columns given."""
    if shape == "long":
        raise ValueError(
            "'packed': shape long has one response per row; packed cells are for shape list, mapping "
            "(packed: json) or parallel (list columns)"
        )
    if shape == "mapping" and packed.separator != JSON:
        raise ValueError(
            f"'packed': shape mapping reads a JSON object ({{\"dog\": 3}}: packed: json), not text "
            f"split at {packed.separator!r}"
        )
    if families:
        raise ValueError(
            "'packed': numbered column families (answer_*) hold one answer per cell; packed cells are "
            "two list columns (responses: answers, counts: n)"
        )


def check_pieces(found: int, expected: int | None, n_people: Field | int, where: str, name: str) -> None:
    """``n_people`` with packed cells of shape list: the cell must hold exactly that many pieces, empty ones (no
    answer) included; one line naming the cell (and where the number came from), so that every wrong cell is listed
    (a stray separator at a cell's end is an extra, empty piece: only this count catches it)."""
    if found == expected:
        return
    if isinstance(n_people, int):
        says = "n_people is"
    else:
        says = f"column {n_people.column!r} says" if n_people.column is not None else "field 'human.n_people' says"
    raise RowError(f"{where}: {name}: {found} piece{'' if found == 1 else 's'}, but {says} {expected}")


def split_cell(text: str, separator: str, where: str, name: str) -> list[str]:
    """The pieces of ``text``, split as a CSV row at ``separator`` (``skipinitialspace``; double quotes protect a
    separator inside a piece), every piece stripped; an empty piece stays ``""``."""
    text = text.strip(_blank_for(separator))
    if not text:
        return []
    try:
        records = _records(text, separator)
    except csv.Error as first:
        if separator in _WHITESPACE:
            raise _unsplittable(text, separator, where, name, first) from None
        # Spaces after a closing quote ("well, then" , cat) are the usual hand-written slip: drop them, then retry.
        eased = re.sub(r'"[ \t]+(?=' + re.escape(separator) + r"|$)", '"', text)
        try:
            records = _records(eased, separator)
        except csv.Error:
            raise _unsplittable(text, separator, where, name, first) from None
    records = [r for r in records if r]
    if len(records) > 1:
        raise RowError(
            f"{where}: {name}: a line break outside double quotes (pieces are separated by {separator!r}): "
            f"{shorten_repr(text, 60)}"
        )
    return [piece.strip() for piece in records[0]] if records else []


def _records(text: str, separator: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, skipinitialspace=True, strict=True)
    return list(reader)


def _unsplittable(text: str, separator: str, where: str, name: str, exc: csv.Error) -> RowError:
    hint = "; a double quote that is not closed?" if "end of data" in str(exc) else ""
    return RowError(f"{where}: {name}: cannot split the cell at {separator!r} ({exc}{hint}): {shorten_repr(text, 60)}")


def _blank_for(separator: str) -> str:
    """White space around a cell, less the separator itself (a tab-packed cell may end in an empty piece)."""
    return _WHITESPACE.replace(separator, "")


def _json_cell(text: str, expected: type, where: str, name: str) -> Any:
    what = "a JSON list" if expected is list else "a JSON object"
    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKeyError as exc:
        raise RowError(f"{where}: {name}: not valid JSON ({exc}): {shorten_repr(text, 60)}") from None
    except json.JSONDecodeError as exc:
        raise RowError(
            f"{where}: {name}: not valid JSON ({exc.msg} at character {exc.pos}): {shorten_repr(text, 60)}"
        ) from None
    except RecursionError:
        raise RowError(f"{where}: {name}: not valid JSON (nested too deeply)") from None
    if not isinstance(value, expected):
        raise RowError(f"{where}: {name}: expected {what}, got {shorten_repr(value, 60)}")
    return value
