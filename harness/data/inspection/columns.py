"""Each column of a data file summarised: a type guessed from its cells, how many distinct values it has, examples,
and how long its texts are; and the numbered column families (``answer_1``, ``answer_2``, ...) among the names.

Why the type is a guess and never applied: the loaders read every CSV cell as written (``file_rows.py``), so the
guess only informs what the inspection proposes (a column of whole numbers may be counts; a column of one-word texts
may be cloze responses). Values are compared as the loaders compare them: ``1`` and ``"1"`` are two values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.data.tables.cells import is_empty
from harness.errors import shorten_repr

TEXT = "text"
WHOLE = "whole number"
NUMBER = "number"
LIST = "list"
MAPPING = "mapping"
EMPTY = "empty"

_WHOLE_TEXT = re.compile(r"^[+-]?\d+$")
_NUMBER_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
#: The last run of digits in a column's name: what a numbered family's ``*`` stands for.
_LAST_DIGITS = re.compile(r"^(.*?)(\d+)(\D*)$")
#: Examples shown per column, and how long each may be.
N_EXAMPLES = 2
EXAMPLE_CHARS = 28


def value_kind(value: Any) -> str:
    """One cell's type: a CSV cell is text, so a number is recognised by how it is written (``007`` is a whole
    number here, though the loaders keep it as the text ``007``)."""
    if is_empty(value):
        return EMPTY
    if isinstance(value, bool):
        return TEXT
    if isinstance(value, int):
        return WHOLE
    if isinstance(value, float):
        return WHOLE if value.is_integer() else NUMBER
    if isinstance(value, (list, tuple)):
        return LIST
    if isinstance(value, Mapping):
        return MAPPING
    if isinstance(value, str):
        text = value.strip()
        if _WHOLE_TEXT.match(text):
            return WHOLE
        if _NUMBER_TEXT.match(text):
            return NUMBER
    return TEXT


def number_of(value: Any) -> float | None:
    """The number a cell holds (JSON number or number written as text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and _NUMBER_TEXT.match(value.strip()):
        return float(value)
    return None


def value_key(value: Any) -> Any:
    """A hashable stand-in that keeps types apart (``1`` and ``"1"`` are two values, as for the loaders)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, Mapping)):
        return ("json", json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))
    return (type(value).__name__, value)


def words(value: Any) -> int:
    return len(str(value).split())


@dataclass(frozen=True)
class Column:
    """What one column holds."""

    name: str
    kind: str
    distinct: int
    n_empty: int
    examples: tuple[str, ...]
    #: Over the column's non-empty text cells: the share with at most one word, and the mean number of words.
    one_word: float = 0.0
    mean_words: float = 0.0

    @property
    def scalar(self) -> bool:
        return self.kind in (TEXT, WHOLE, NUMBER)

    def line(self, width: int) -> str:
        empty = f" ({self.n_empty:,} empty)" if self.n_empty and self.kind != EMPTY else ""
        shown = ", ".join(self.examples)
        return f"{self.name:<{width}}  {self.kind:<12}  {self.distinct:>9,}  {shown}{empty}"


def column_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every column any row has, in first-seen order (CSV rows all have the header's)."""
    names: dict[str, None] = {}
    for row in rows[:1000]:
        names.update(dict.fromkeys(row))
    for row in rows[1000:]:
        if len(row) > len(names):
            names.update(dict.fromkeys(row))
    return list(names)


def summarise(rows: Sequence[Mapping[str, Any]], name: str) -> Column:
    """One column over every row."""
    kinds: set[str] = set()
    seen: dict[Any, Any] = {}
    n_empty = one = total_words = n_text = 0
    for row in rows:
        value = row.get(name)
        kind = value_kind(value)
        if kind == EMPTY:
            n_empty += 1
            continue
        kinds.add(kind)
        key = value_key(value)
        if key not in seen:
            seen[key] = value
        if kind == TEXT:
            n = words(value)
            n_text += 1
            one += n <= 1
            total_words += n
    examples = tuple(shown(v) for v in list(seen.values())[:N_EXAMPLES])
    return Column(
        name,
        _column_kind(kinds),
        len(seen),
        n_empty,
        examples,
        one / n_text if n_text else 0.0,
        total_words / n_text if n_text else 0.0,
    )


def shown(value: Any) -> str:
    """An example value, quoted as it is typed (``'007'`` is text), cut to ``EXAMPLE_CHARS``."""
    if isinstance(value, str):
        return repr(value if len(value) <= EXAMPLE_CHARS else value[: EXAMPLE_CHARS - 1] + "…")
    return shorten_repr(value, EXAMPLE_CHARS)


def _column_kind(kinds: set[str]) -> str:
    if not kinds:
        return EMPTY
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds == {WHOLE, NUMBER}:
        return NUMBER
    return TEXT


def families(names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Numbered column families of two columns or more, by the pattern the loaders take (``answer_*``): each
    column's last run of digits is the number (``Q5_1`` is in ``Q5_*``), and the key is the digits as written."""
    found: dict[str, dict[str, str]] = {}
    for name in names:
        match = _LAST_DIGITS.match(name)
        if match and "*" not in name:
            prefix, digits, suffix = match.groups()
            found.setdefault(f"{prefix}*{suffix}", {})[digits] = name
    return {
        pattern: dict(sorted(members.items(), key=lambda kv: (int(kv[0]), kv[0])))
        for pattern, members in found.items()
        if len(members) >= 2
    }


def family_kind(columns: Mapping[str, Column], members: Mapping[str, str]) -> str:
    """The type of a family's columns together (empty columns do not count)."""
    kinds = {columns[c].kind for c in members.values()} - {EMPTY}
    return _column_kind(kinds)
