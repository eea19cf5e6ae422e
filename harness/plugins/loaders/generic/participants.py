"""The ``participants`` shape: one row per participant, one column per item, as crowdsourcing platforms and survey
tools export raw answers (Mechanical Turk batch results, Qualtrics, Prolific, Gorilla, jsPsych, PCIbex).

Why a reshape of the table rather than one more way of reading a row: every row of such a file feeds many
instances, which grouping rows cannot express. So the participants' rows are turned into one row per (participant,
item) answer, after ``columns`` and ``filter`` have seen the participant's row (a rejected assignment, a failed
attention check) and before ``join`` (a table of items by key). Each new row holds:

* the participant's own columns (``WorkerId``, ``AssignmentStatus``, ...), every item column left out;
* ``item``: the item's key, as written (``01`` for ``Answer.sentence01``; the column's name when the items are a
  list of columns);
* each ``item_columns`` name: the value of the paired column with the same key (``Input.sentence01``);
* each ``header_rows`` name (Qualtrics' question text and import id): the label the response column has there;
* ``response``: the participant's answer.

Then the rows are grouped into instances by ``group_by`` (by default ``item``) and each answer counts once: the
counts are numbers of people, so the split-half human control splits the participants. An empty cell is an item
the participant was not shown (or left blank): it is not an answer and is counted in the data source record
(``participants.n_empty``). A participant's id must be given, and one participant answers an instance once:
the same id twice in one instance (a resubmitted assignment) is an error naming both rows, since counting a person
twice makes people agree with themselves. Each instance records the ids of the participants whose answer counts
(``meta.participants``, in the order of the answers, a "no answer" of the task's normalisation left out): a
generation task's ``i``-th reference is the ``i``-th participant's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.api import HarnessError, Option, Options, optional, shorten, shorten_repr
from harness.data.tables.cells import is_empty
from harness.plugins.loaders.generic.fields import family, family_keys
from harness.plugins.loaders.generic.table import Table, bad_rows, key_text

#: The columns the reshape adds (beside the ``item_columns`` and ``header_rows`` names).
ITEM = "item"
RESPONSE = "response"


@dataclass(frozen=True)
class ParticipantsSpec:
    """Where each participant's answers are: the id column, the item columns, and columns paired with them."""

    participant: str
    #: A column family (``Answer.sentence*``) or a list of columns (each column's name is its item's key).
    responses: str | tuple[str, ...]
    #: ``{name: family}``: each item's value from the column of that family with the item's key.
    item_columns: dict[str, str] = field(default_factory=dict)


def _family(value: Any, name: str) -> str:
    if not isinstance(value, str) or family(value) is None:
        raise ValueError(
            f"'{name}': expected a column family with one '*' (Answer.sentence*), got {shorten_repr(value)}"
        )
    return value


def _responses(value: Any) -> str | tuple[str, ...]:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        if len(set(value)) != len(value):
            raise ValueError(f"a column is listed twice in {shorten_repr(value)}")
        return tuple(value)
    return _family(value, "responses")


_responses.type_name = "family (Answer.q*) | list of columns"  # type: ignore[attr-defined]


def _item_columns(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"expected {{name: column family}}, got {shorten_repr(value)}")
    for name, pattern in value.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"expected names as keys, got {shorten_repr(name)}")
        _family(pattern, f"item_columns.{name}")
    return dict(value)


_item_columns.type_name = "{name: column family}"  # type: ignore[attr-defined]

OPTIONS = Options(
    Option("shape", str, None, "participants", "str"),
    Option("participant", str, None, "the column holding each participant's id (required)", "str"),
    Option("responses", optional(_responses), None, "one column per item: a family (Answer.q*) or a list"),
    Option("item_columns", optional(_item_columns), None, "columns paired with each item's: {name: family}"),
)


def participants_option(value: Mapping[str, Any]) -> ParticipantsSpec:
    """The ``human`` mapping of shape ``participants``, checked."""
    parsed = OPTIONS.parse(value, "human")
    if not isinstance(parsed["participant"], str) or not parsed["participant"].strip():
        raise ValueError("shape participants: 'participant' is required (the column of each participant's id)")
    if parsed["responses"] is None:
        raise ValueError("shape participants: 'responses' is required (one column per item: Answer.q* or a list)")
    if isinstance(parsed["responses"], tuple) and parsed["item_columns"]:
        raise ValueError("shape participants: 'item_columns' pairs column families; 'responses' is a list of columns")
    return ParticipantsSpec(parsed["participant"], parsed["responses"], parsed["item_columns"] or {})


def _keyed(pattern: str, columns: list[str]) -> dict[str, str]:
    """The columns of a family by key as written (``Answer.sentence01`` is ``'01'``), in the keys' number order."""
    return dict(sorted(family_keys(pattern, columns).items(), key=lambda kv: (int(kv[0]), kv[0])))


@dataclass(frozen=True)
class Layout:
    """Which column holds what: each item's response column, its paired columns, and the participant's columns."""

    items: dict[str, str]
    paired: dict[str, dict[str, str]]
    kept: list[str]


def layout(spec: ParticipantsSpec, columns: list[str], labels: Mapping[str, Any], where: str) -> Layout:
    """The item columns of a file's header, checked: every item has its paired columns, no added column is one of
    the participant's, and the participant's id column is there."""
    shown = shorten(", ".join(columns), 160)
    if spec.participant not in columns:
        raise HarnessError(f"{where}: field 'human.participant': no column {spec.participant!r} (columns: {shown})")
    if isinstance(spec.responses, tuple):
        missing = [c for c in spec.responses if c not in columns]
        if missing:
            raise HarnessError(f"{where}: field 'human.responses': no column {missing[0]!r} (columns: {shown})")
        items = {c: c for c in spec.responses}
    else:
        items = _keyed(spec.responses, columns)
        if not items:
            raise HarnessError(
                f"{where}: field 'human.responses': no column matches {spec.responses!r} (columns: {shown})"
            )
    paired: dict[str, dict[str, str]] = {}
    for name, pattern in spec.item_columns.items():
        found = _keyed(pattern, columns)
        lacking = [k for k in items if k not in found]
        if lacking:
            raise HarnessError(
                f"{where}: field 'human.item_columns.{name}': item {lacking[0]!r} ({items[lacking[0]]}) has no column "
                f"matching {pattern!r} with its key (found: {shorten(', '.join(found.values()), 100) or 'none'})"
            )
        paired[name] = {k: found[k] for k in items}
    used = set(items.values()) | {c for by_key in paired.values() for c in by_key.values()}
    if spec.participant in used:
        raise HarnessError(f"{where}: field 'human.participant': {spec.participant!r} is also an item column")
    kept = [c for c in columns if c not in used]
    added = [ITEM, RESPONSE, *paired, *labels]
    for name in added:
        if name in kept:
            raise HarnessError(
                f"{where}: shape participants adds the column {name!r} to each answer, but the file has a column "
                f"{name!r} of its own; rename it (or the item_columns / header_rows name)"
            )
    if len(set(added)) != len(added):
        raise HarnessError(f"{where}: shape participants: the names {', '.join(added)} must differ")
    return Layout(items, paired, kept)


def reshape(table: Table, spec: ParticipantsSpec) -> None:
    """The participants' rows as one row per (participant, item) answer, in file order (a participant's answers
    in item order); every row without a participant id is reported, one line each."""
    layouts: dict[tuple[str, ...], Layout] = {}
    rows: list[dict[str, Any]] = []
    origins: list[tuple[str, int]] = []
    cells: list[str] = []
    problems: list[str] = []
    seen: set[str] = set()
    n_empty = 0
    for index, row in enumerate(table.rows):
        names = tuple(str(c) for c in row)
        if names not in layouts:
            layouts[names] = layout(spec, list(names), table.labels, table.origins[index][0])
        lay = layouts[names]
        ident = row[spec.participant]
        if is_empty(ident) or isinstance(ident, (list, dict)):
            problems.append(
                f"{table.where(index)}: field 'human.participant' (column {spec.participant!r}): expected the "
                f"participant's id, got {shorten_repr(ident)}"
            )
            continue
        seen.add(key_text(ident))
        base = {c: row[c] for c in lay.kept}
        for key, column in lay.items.items():
            answer = row[column]
            if is_empty(answer):
                n_empty += 1
                continue
            answered = dict(base)
            answered[ITEM] = key
            for name, by_key in lay.paired.items():
                answered[name] = row[by_key[key]]
            for name, by_column in table.labels.items():
                answered[name] = by_column.get(column, "")
            answered[RESPONSE] = answer
            rows.append(answered)
            origins.append(table.origins[index])
            cells.append(column)
    if problems:
        raise bad_rows(problems, "shape participants")
    if not rows:
        files = ", ".join(sorted({label for label, _ in table.origins})[:2])
        raise HarnessError(f"{files}: shape participants: every item cell of the {len(table.rows)} rows is empty")
    table.source["participants"] = {
        "column": spec.participant,
        "n_participants": len(seen),
        "n_rows": len(table.rows),
        "n_answers": len(rows),
        "n_empty": n_empty,
    }
    table.rows, table.origins, table.cells = rows, origins, cells


def answered_once(table: Table, rows: tuple[int, ...], column: str) -> tuple[list[tuple[int, str]], list[str]]:
    """One instance's answers as ``(row, participant's id)`` in order, and a line for each id that answers it again."""
    first: dict[str, int] = {}
    answers: list[tuple[int, str]] = []
    problems: list[str] = []
    for index in rows:
        row = table.rows[index]
        if column not in row or is_empty(row[column]) or isinstance(row[column], (list, dict)):
            got = f"no column {column!r}" if column not in row else f"got {shorten_repr(row[column])}"
            problems.append(f"{table.where(index)}: field 'human.participant': expected the participant's id, {got}")
            continue
        ident = key_text(row[column])
        if ident in first:
            problems.append(
                f"{table.where(index)}: field 'human.participant': participant {ident!r} answers this instance again "
                f"(first on {table.where(first[ident])}); one person counts once"
            )
            continue
        first[ident] = index
        answers.append((index, ident))
    return answers, problems
