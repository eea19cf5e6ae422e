"""A PCIbex results file (``format: pcibex``): the long shape of the answers its trials logged.

Why a guess of its own: every event of every trial is a row (a trial's start and end, each key press, each
element's value), so the rows repeat many keys and the generic long guess picks the wrong one. The answers are the
rows of one answer element (a ``TextInput``'s ``Final`` value, a ``Scale``'s or ``DropDown``'s choice): the
guess keeps those with a ``filter``, reads ``Value``, groups by the item column the experiment logged (else the
trial's ``Label``), and names the participant by a logged id column (else the hash of the IP address PCIbex
records).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from harness.data.inspection.columns import TEXT, Column, value_key
from harness.data.inspection.guess import ID_NAMES, PARTICIPANT_NAMES, Guess
from harness.data.tables.cells import is_empty

#: The columns every PennController row has.
PENN = ("PennElementType", "PennElementName", "Parameter", "Value")
#: Element types whose value is a participant's answer.
ANSWER_TYPES = ("TextInput", "Scale", "DropDown", "Selector", "Key", "Controller")
#: The column PCIbex fills with a hash of the participant's IP address.
IP_HASH = "MD5 hash of participant's IP address"


def pcibex_shape(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """The answers of the most frequent answer element of a PCIbex results file, as the long shape."""
    if not all(c in columns for c in PENN):
        return None
    kinds = Counter(
        kind_of(row) for row in rows if row["PennElementType"] in ANSWER_TYPES and not is_empty(row["Value"])
    )
    if not kinds:
        return None
    (kind, name, parameter), _ = kinds.most_common(1)[0]
    answers = [row for row in rows if kind_of(row) == (kind, name, parameter)]
    logged = [c for c in columns if c not in PENN and _filled(answers, c)]
    people = [c for c in logged if PARTICIPANT_NAMES.match(c) or c.lower() in ("id", "prolific_id", "prolific_pid")]
    items = [c for c in logged if ID_NAMES.match(c) and c not in people]
    key = next((c for c in items if c.lower().startswith("item")), items[0] if items else "Label")
    person = next((c for c in [*people, IP_HASH] if c in columns and _once(answers, key, c)), None)
    human: dict[str, Any] = {"shape": "long", "responses": "Value"}
    if person is not None:
        human["participant"] = person
    guess = Guess(
        "long",
        f"long: a PCIbex results file; the answers are the {len(answers):,} '{name}' {kind} rows ({parameter}), "
        f"one instance per {key!r}" + (f", one answer per {person!r}" if person else ""),
        human,
        responses=[row.get("Value") for row in answers[:200]],
        group_by=[key],
        per_instance=[c for c in logged if c != person and _constant(answers, key, c) and columns[c].kind == TEXT],
    )
    guess.data["filter"] = (
        f"{{{{ PennElementName == {_quoted(name)} and Parameter == {_quoted(parameter)} }}}}",
        f"guess: the rows of the answer element '{name}' ({kind}); every other row is an event of a trial",
    )
    return guess


def kind_of(row: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """A row's element type, element name and parameter: which event of which element it records."""
    return row["PennElementType"], row["PennElementName"], row["Parameter"]


def _quoted(value: Any) -> str:
    """A Jinja2 string literal for ``value``."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _filled(rows: Sequence[Mapping[str, Any]], column: str) -> bool:
    return all(not is_empty(row.get(column)) and row.get(column) != "NULL" for row in rows)


def _once(rows: Sequence[Mapping[str, Any]], key: str, person: str) -> bool:
    pairs = [(value_key(row.get(key)), value_key(row.get(person))) for row in rows]
    return len(set(pairs)) == len(pairs)


def _constant(rows: Sequence[Mapping[str, Any]], key: str, column: str) -> bool:
    seen: dict[Any, Any] = {}
    for row in rows:
        if seen.setdefault(value_key(row.get(key)), value_key(row.get(column))) != value_key(row.get(column)):
            return False
    return True
