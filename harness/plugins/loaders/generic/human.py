"""The shapes human productions come in, read into one form: each response with its count (or proportion).

Real data sets give the people's answers in one of these shapes (``human.shape`` in a task file):

* ``long``: one row per response (or per distinct response, with its ``counts`` column), rows grouped into
  instances by ``group_by``;
* ``list``: a column holding the list of responses, one per person;
* ``mapping``: a column holding ``{response: count}`` (``values: proportions`` when the numbers are shares);
* ``parallel``: answers and their ``counts`` (or ``proportions``) side by side, either as two list columns or as
  numbered column families (``answer_*`` beside ``share_*``: ``answer_1`` goes with ``share_1``); empty cells are
  ignored. For multiple choice, ``counts`` alone (a list column, or ``count_*``) gives one count per option;
* ``participants``: one row per participant, one column per item (crowdsourcing and survey exports): the rows are
  reshaped into one row per answer and read as ``long`` (``participants.py``).

A list, mapping or parallel column may hold an instance's responses packed in one cell (``packed``: ``dog, cat``
split at a separator, or JSON text): ``packed.py``.

Proportions become counts only where the number of people is known (``n_people``) and every proportion times it
is a whole number (within ``WHOLE_TOLERANCE``); otherwise the instance keeps the proportions and says that its
counts are unknown (``counts_known: false``), so that no metric that draws individual people invents them.

Numbers that cannot be right are errors naming the file, the row and the column, never read as something else: a
count that is not a whole number from 0 to ``MAX_COUNT``, a proportion outside 0..1, an instance's proportions
summing to more than 1 beyond rounding (``SUM_TOLERANCE``) or giving more people than ``n_people``, and a number
in a numbered family (``share_2``) whose answer (``answer_2``) is empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.api import Option, Options, one_of, optional, shorten_repr
from harness.data.tables.cells import is_empty
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template, family, family_columns
from harness.plugins.loaders.generic.packed import Packed, check_packed, check_pieces, packed_option
from harness.plugins.loaders.generic.participants import RESPONSE, ParticipantsSpec, participants_option

SHAPES = ("long", "list", "mapping", "parallel", "participants")
#: How far from a whole number a proportion times the number of people may be and still be read as a count
#: (proportions are usually printed with 2 to 6 decimals: 0.33 * 3 = 0.99).
WHOLE_TOLERANCE = 0.05
#: The largest count of people one response may have: more is not a count of people (a misread cell, an id).
MAX_COUNT = 10**9
#: The most people one instance may have in all: what a draw of people from counts can take (numpy's multivariate
#: hypergeometric draws take totals below 10^9; ``harness.scorers.distributions.MAX_DRAWN``).
MAX_PEOPLE = 10**9 - 1
#: How far above 1 one instance's proportions may sum and still be read as shares rounded when printed.
SUM_TOLERANCE = 0.02


@dataclass(frozen=True)
class HumanSpec:
    """Where an instance's human productions are, as the task file's ``human`` mapping says."""

    shape: str
    responses: Field | str | None = None
    counts: Field | str | None = None
    proportions: Field | str | None = None
    n_people: Field | int | None = None
    values: str = "counts"
    #: Every response of an instance in one cell, split at a separator or parsed as JSON (``packed.py``).
    packed: Packed | None = None
    #: Shape ``participants``: where each participant's answers are (the rows are reshaped into one per answer,
    #: which is then read as shape ``long``: ``participants.py``).
    participants: ParticipantsSpec | None = None
    #: The column of each answer's participant (shape ``participants``, or ``long`` with one row per answer, as
    #: jsPsych and Gorilla export trials): each instance records its participants, and a person counts once.
    participant: str | None = None

    def weights(self) -> Field | str | None:
        return self.counts if self.counts is not None else self.proportions

    def uses_proportions(self) -> bool:
        return self.proportions is not None or (self.shape == "mapping" and self.values == "proportions")


def _column_template_or_family(name: str) -> Any:
    by_field = column_or_template(name, native=True)

    def convert(value: Any) -> Field | str:
        if isinstance(value, str) and "*" in value and "{" not in value:
            if family(value) is None:
                raise ValueError(f"a numbered column family has one '*' (answer_*), got {shorten_repr(value)}")
            return value
        return by_field(value)

    convert.type_name = "column | template | family (answer_*)"  # type: ignore[attr-defined]
    return convert


def _people(value: Any) -> Field | int:
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_COUNT:
            raise ValueError(f"expected a number of people from 1 to {MAX_COUNT}, got {shorten_repr(value)}")
        return value
    return column_or_template("human.n_people", native=True)(value)


_people.type_name = "int | column | template"  # type: ignore[attr-defined]

HUMAN_OPTIONS = Options(
    Option("shape", one_of(*SHAPES), None, "long | list | mapping | parallel (required)", " | ".join(SHAPES)),
    Option("responses", optional(_column_template_or_family("human.responses")), None, "the responses"),
    Option("counts", optional(_column_template_or_family("human.counts")), None, "how many gave each response"),
    Option("proportions", optional(_column_template_or_family("human.proportions")), None, "shares instead"),
    Option("n_people", optional(_people), None, "the number of people, to recover counts from proportions"),
    Option("values", one_of("counts", "proportions"), "counts", "mapping shape: what the numbers are"),
    Option("packed", optional(packed_option), None, "every response in one cell: a separator, or json"),
    Option("participant", optional(str), None, "shape long, a row per answer: the participant's id column", "str"),
)


def human_option(value: Any) -> HumanSpec:
    """Converter for the ``human`` data option: one shape and the keys it needs, checked together."""
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping {{shape, responses, counts, ...}}, got {shorten_repr(value)}")
    if value.get("shape") == "participants":
        spec = participants_option(value)
        responses = Field("human.responses", column=RESPONSE, given=RESPONSE)
        return HumanSpec("participants", responses, participants=spec, participant=spec.participant)
    p = HUMAN_OPTIONS.parse(value, "human")
    shape = p["shape"]
    if shape is None:
        raise ValueError(f"'shape' is required ({' | '.join(SHAPES)})")
    if p["counts"] is not None and p["proportions"] is not None:
        raise ValueError("give 'counts' or 'proportions', not both")
    pieces = p["packed"] is not None and shape == "list"  # n_people: the pieces each packed cell must hold
    if p["n_people"] is not None and p["proportions"] is None and p["values"] != "proportions" and not pieces:
        raise ValueError(
            "'n_people' goes with proportions (the counts already say how many people), or with packed cells of "
            "shape list (the pieces each cell must hold)"
        )
    if shape != "parallel" and p["responses"] is None:
        raise ValueError(f"shape {shape}: 'responses' is required")
    for key in ("responses", "counts", "proportions"):
        if isinstance(p[key], str) and shape != "parallel":
            raise ValueError(f"'{key}': numbered column families ({p[key]}) are for shape parallel")
    if shape in ("list", "mapping") and (p["counts"] is not None or p["proportions"] is not None):
        raise ValueError(f"shape {shape}: the responses column holds everything (no 'counts' or 'proportions')")
    if shape == "parallel" and p["counts"] is None and p["proportions"] is None:
        raise ValueError("shape parallel: give 'counts' or 'proportions' beside 'responses'")
    if shape != "mapping" and "values" in value:
        raise ValueError("'values' is for shape mapping")
    if p["packed"] is not None:
        check_packed(p["packed"], shape, any(isinstance(p[k], str) for k in ("responses", "counts", "proportions")))
    if p["participant"] is not None and (shape != "long" or p["counts"] is not None or p["proportions"] is not None):
        raise ValueError("'participant' is for shape long with one row per answer (no 'counts' or 'proportions')")
    weights = (p["counts"], p["proportions"], p["n_people"], p["values"])
    return HumanSpec(shape, p["responses"], *weights, packed=p["packed"], participant=p["participant"])


human_option.type_name = "{shape, responses, counts | proportions, n_people, values, packed, participant}"  # type: ignore


@dataclass
class Productions:
    """One instance's responses with their numbers, in the data's order, before normalisation."""

    #: ``(response, count or proportion)`` in the data's order; the same response may come more than once (a
    #: generation data set's identical references are kept where they are). A response is a text (cloze,
    #: generation) or an option key (choice).
    items: list[tuple[Any, float]] = field(default_factory=list)
    proportions: bool = False
    n_people: int | None = None
    #: Where the numbers were read (the instance's first row) and from which field or columns, for messages.
    where: str = ""
    label: str = ""

    def add(self, response: Any, weight: float) -> None:
        self.items.append((response, weight))

    def read_at(self, where: str, label: str) -> None:
        """Record where the numbers come from (the first row read wins)."""
        if not self.where:
            self.where, self.label = where, label


def read_row(spec: HumanSpec, row: Mapping[str, Any], where: str, into: Productions) -> None:
    """Add one row's productions to ``into`` (a long-format group calls this once per row)."""
    into.proportions = spec.uses_proportions()
    into.read_at(where, weights_label(spec))
    n = None if spec.packed is not None and spec.shape == "list" else people(spec, row, where)  # pieces, not people
    if n is not None:
        if into.n_people is not None and n != into.n_people:
            raise RowError(
                f"{where}: field 'human.n_people': {n}, but an earlier row of the instance gave {into.n_people}"
            )
        into.n_people = n
    if spec.shape in ("long", "participants"):
        assert isinstance(spec.responses, Field)
        response = spec.responses.value(row, where)
        weights = spec.weights()
        assert not isinstance(weights, str)  # human_option keeps numbered families to shape parallel
        weight = 1.0 if weights is None else _number(weights.value(row, where), where, label(weights), into.proportions)
        into.add(_text_or_none(response), weight)
    elif spec.shape == "list":
        assert isinstance(spec.responses, Field)
        responses = _sequence(spec, spec.responses, row, where)
        if spec.packed is not None and spec.n_people is not None:
            check_pieces(len(responses), people(spec, row, where), spec.n_people, where, label(spec.responses))
        for response in responses:
            into.add(_text_or_none(response), 1.0)
    elif spec.shape == "mapping":
        assert isinstance(spec.responses, Field)
        mapping = spec.responses.value(row, where)
        if spec.packed is not None:
            mapping = spec.packed.mapping(mapping, where, label(spec.responses))
        if not isinstance(mapping, Mapping):
            raise RowError(
                f"{where}: field 'human.responses': expected a mapping of response to number, got "
                f"{shorten_repr(mapping)}"
            )
        for response, number in mapping.items():
            if number is None:  # a key other rows have (Arrow gives every row the union of keys)
                continue
            into.add(
                _text_or_none(response),
                _number(number, where, f"field 'human.responses[{response!r}]'", into.proportions),
            )
    else:
        _read_parallel(spec, row, where, into)


def people(spec: HumanSpec, row: Mapping[str, Any], where: str) -> int | None:
    """The number of people the row's proportions are shares of, when the task file names it."""
    if spec.n_people is None:
        return None
    if isinstance(spec.n_people, int):
        return spec.n_people
    return _whole(spec.n_people.value(row, where), where, label(spec.n_people))


def _read_parallel(spec: HumanSpec, row: Mapping[str, Any], where: str, into: Productions) -> None:
    weights = spec.weights()
    assert weights is not None
    name = _name(weights)
    if spec.responses is None:
        raise RowError(f"{where}: field '{name}': numbers alone (one per option) are for multiple choice")
    if isinstance(weights, str) != isinstance(spec.responses, str):
        raise RowError(f"{where}: fields 'human.responses' and '{name}': pair two column families or two list columns")
    if isinstance(weights, str) and isinstance(spec.responses, str):
        numbers_by = family_columns(weights, list(row))
        answers_by = family_columns(spec.responses, list(row))
        if not numbers_by:
            raise RowError(
                f"{where}: field '{name}': no column matches {weights!r} (columns: {', '.join(map(str, row))})"
            )
        if set(answers_by) != set(numbers_by):
            raise RowError(
                f"{where}: numbered columns {spec.responses!r} ({sorted(answers_by)}) and {weights!r} "
                f"({sorted(numbers_by)}) do not pair up"
            )
        for k, column in numbers_by.items():
            answer, number = row[answers_by[k]], row[column]
            if is_empty(answer) and is_empty(number):
                continue  # an unused slot of the family
            if is_empty(number):
                raise RowError(f"{where}: column {column!r}: empty, but its answer {shorten_repr(answer)} is not")
            value = _number(number, where, f"column {column!r}", into.proportions)
            if is_empty(answer):
                if value == 0:
                    continue  # an unused slot whose number is written as 0
                raise RowError(
                    f"{where}: column {answers_by[k]!r}: empty, but its number {column!r} is {shorten_repr(number)} "
                    "(a number needs its answer; an empty answer is not 'no answer' here)"
                )
            into.add(_text_or_none(answer), value)
        return
    assert isinstance(weights, Field) and isinstance(spec.responses, Field)
    numbers = _sequence(spec, weights, row, where, responses=False)
    answers = _sequence(spec, spec.responses, row, where)
    if len(answers) != len(numbers):
        raise RowError(
            f"{where}: fields 'human.responses' and '{name}': {len(answers)} responses but {len(numbers)} numbers"
        )
    for k, (answer, number) in enumerate(zip(answers, numbers, strict=True)):
        if is_empty(answer) and is_empty(number):
            continue
        into.add(_text_or_none(answer), _number(number, where, f"field '{name}[{k}]'", into.proportions))


def option_counts(spec: HumanSpec, row: Mapping[str, Any], where: str) -> list[float] | None:
    """Multiple choice with ``counts`` (or ``proportions``) alone: one number per option, in option order."""
    if spec.shape != "parallel" or spec.responses is not None:
        return None
    weights = spec.weights()
    assert weights is not None
    proportions = spec.uses_proportions()
    if isinstance(weights, str):
        columns = family_columns(weights, list(row))
        if not columns:
            raise RowError(f"{where}: field '{_name(weights)}': no column matches {weights!r}")
        return [_number(row[c], where, f"column {c!r}", proportions) for c in columns.values() if not is_empty(row[c])]
    return [
        _number(n, where, f"field '{_name(weights)}[{k}]'", proportions)
        for k, n in enumerate(_sequence(spec, weights, row, where))  # one cell per item: counted as the responses
    ]


def _name(source: Field | str) -> str:
    return source.name if isinstance(source, Field) else source


def label(source: Field) -> str:
    """A field as messages name it: ``field 'human.counts' (column 'n')`` when it is a column."""
    column = f" (column {source.column!r})" if source.column is not None and source.column != source.name else ""
    return f"field '{source.name}'{column}"


def weights_label(spec: HumanSpec) -> str:
    """Where an instance's numbers come from, for messages about them all (their sum)."""
    weights = spec.weights()
    if weights is None:
        return label(spec.responses) if isinstance(spec.responses, Field) else "field 'human.responses'"
    return f"columns {weights!r}" if isinstance(weights, str) else label(weights)


def _sequence(spec: HumanSpec, source: Field, row: Mapping[str, Any], where: str, responses: bool = True) -> list[Any]:
    """A list column's value: the list itself, or the pieces of a packed cell (``responses``: counted as such)."""
    value = source.value(row, where)
    if spec.packed is not None:
        return spec.packed.pieces(value, where, label(source), responses=responses)
    if isinstance(value, (list, tuple)):
        return list(value)
    raise RowError(f"{where}: field '{source.name}': expected a list, got {shorten_repr(value)}")


def _text_or_none(value: Any) -> Any:
    """A response as read: text stays text, exactly as written (``007``, ``3.50``); a JSON number becomes its text
    (``1``, ``1.0``), as an option key written in the task file does; empty becomes ``""``."""
    if is_empty(value):
        return ""
    return value if isinstance(value, str) else str(value)


def _number(value: Any, where: str, name: str, proportion: bool) -> float:
    """A count (a whole number from 0 to ``MAX_COUNT``) or a proportion (0 <= p <= 1); numbers written as text (a
    CSV cell) are read too. ``name`` is how the message names the source: ``field 'x' (column 'n')``."""
    what = "a proportion between 0 and 1" if proportion else "a count (a whole number >= 0)"
    number: float
    if isinstance(value, bool):
        raise RowError(f"{where}: {name}: expected {what}, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise RowError(f"{where}: {name}: expected {what}, got {shorten_repr(value)}") from None
    else:
        raise RowError(f"{where}: {name}: expected {what}, got {shorten_repr(value)}")
    if (
        not math.isfinite(number)
        or number < 0
        or (proportion and number > 1 + 1e-9)
        or (not proportion and not number.is_integer())
    ):
        raise RowError(f"{where}: {name}: expected {what}, got {shorten_repr(value)}")
    if not proportion and number > MAX_COUNT:
        raise RowError(
            f"{where}: {name}: {shorten_repr(value)} is more than {MAX_COUNT:,} people, not a count of people "
            "(counts above that are refused)"
        )
    return number


def _whole(value: Any, where: str, name: str) -> int:
    number = _number(value, where, name, proportion=False)
    if number < 1:
        raise RowError(f"{where}: {name}: expected a positive number of people, got {shorten_repr(value)}")
    return int(number)


@dataclass(frozen=True)
class Counted:
    """Productions after reading their numbers: counts of people, or proportions when counts cannot be recovered."""

    items: list[tuple[Any, float]]
    counts_known: bool
    #: Why the counts are unknown (empty when known).
    reason: str = ""


def recover_counts(found: Productions) -> Counted:
    """Counts as whole numbers when they are, or can be recovered from proportions and the number of people."""
    items = found.items
    if not found.proportions:
        in_all = sum(int(w) for _, w in items)
        if in_all > MAX_PEOPLE:
            # Each count is at most MAX_COUNT; their sum is capped too (MAX_PEOPLE), so that no scorer that splits or
            # draws people (the human control, the oracle ECE) stops mid-scoring on an instance it cannot draw from.
            raise RowError(
                f"{found.where}: {found.label}: the instance's counts add up to {in_all:,} people, more than "
                f"{MAX_PEOPLE:,}: not counts of people"
            )
        return Counted([(r, float(int(w))) for r, w in items], True)
    total = sum(w for _, w in items)
    if total <= 0:
        return Counted(items, False, "every proportion is 0")
    if total > 1 + SUM_TOLERANCE:
        shown = " + ".join(f"{w:g}" for _, w in items[:6]) + (" + ..." if len(items) > 6 else "")
        raise RowError(
            f"{found.where}: {found.label}: the instance's proportions sum to {total:g} ({shown}), more than 1: not "
            "shares of one group of people"
        )
    shares = [(r, w / total) for r, w in items]
    n_people = found.n_people
    if n_people is None:
        return Counted(shares, False, "proportions without the number of people")
    scaled = [(r, w * n_people) for r, w in items]
    if all(abs(v - round(v)) <= WHOLE_TOLERANCE for _, v in scaled):
        counts = [(r, float(round(v))) for r, v in scaled]
        people = sum(c for _, c in counts)
        if people > n_people:
            raise RowError(
                f"{found.where}: {found.label}: the proportions give {people:g} people, more than n_people ({n_people})"
            )
        return Counted(counts, True)
    return Counted(shares, False, f"proportions times the number of people ({n_people}) are not whole numbers")
