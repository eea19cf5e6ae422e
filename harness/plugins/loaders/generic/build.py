"""What the three generic loaders share: grouping rows into instances, ids, meta, human productions, and how bad
rows are reported (each one line naming the file, the row and the field; all of them, up to ``MAX_REPORTED``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.api import HarnessError, Instance, LoadedData, Option, Options, optional, shorten_repr
from harness.plugins.loaders.generic.fields import Field, RowError, column_or_template, is_template
from harness.plugins.loaders.generic.human import HumanSpec, Productions, human_option, read_row
from harness.plugins.loaders.generic.normalise import Normaliser, build_normaliser, normaliser_option
from harness.plugins.loaders.generic.participants import ITEM, answered_once, reshape
from harness.plugins.loaders.generic.table import SOURCE_OPTIONS, Table, bad_rows, key_text, read_table

T = TypeVar("T")


def _group_by(value: Any) -> Field | tuple[str, ...]:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    if isinstance(value, str) and value and not is_template(value):
        return (value,)
    return column_or_template("group_by")(value)


_group_by.type_name = "column | list of columns | template"  # type: ignore[attr-defined]


def _meta(value: Any) -> dict[str, Field]:
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return {v: Field(f"meta.{v}", column=v, given=v) for v in value}
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: column_or_template(f"meta.{k}", native=True)(v) for k, v in value.items()}
    raise ValueError(
        f"expected a list of columns or a mapping of name to column or template, got {shorten_repr(value)}"
    )


_meta.type_name = "list of columns | {name: column | template}"  # type: ignore[attr-defined]

#: Options every generic loader has beside where the rows come from (``table.SOURCE_OPTIONS``).
COMMON_OPTIONS = Options(
    Option(
        "id", optional(column_or_template("id")), None, "the instance id (default: the group key, or the row number)"
    ),
    Option("group_by", optional(_group_by), None, "long format: rows with the same key are one instance"),
    Option("meta", optional(_meta), None, "columns kept in each instance's record (samples_<task>.jsonl)"),
    Option("human", optional(human_option), None, "where the human productions are (required): see docs/your-data.md"),
    Option("normalise", optional(normaliser_option()), None, "response normalisation: case, punctuation, ..."),
)


#: Every generic loader's options before its own: where the rows come from, then the shared fields.
BASE_OPTIONS = SOURCE_OPTIONS | COMMON_OPTIONS


@dataclass(frozen=True)
class Group:
    """The rows of one instance (one row unless ``group_by`` is given)."""

    table: Table
    rows: tuple[int, ...]
    #: The instance's default id: the group key, or the row number.
    key: str

    @property
    def where(self) -> str:
        return self.table.where(self.rows[0])

    def first(self) -> Mapping[str, Any]:
        return self.table.rows[self.rows[0]]

    def same(self, field: Field | None) -> Any:
        """The field's value, which every row of the group must agree on (a passage's context, an item's text)."""
        if field is None:
            return None
        value = field.value(self.first(), self.where)
        for index in self.rows[1:]:
            other = field.value(self.table.rows[index], self.table.where(index))
            if other != value:
                raise RowError(
                    f"{self.table.where(index)}: field '{field.name}': {shorten_repr(other, 60)}, but the first row "
                    f"of its instance ({self.where}) gave {shorten_repr(value, 60)}"
                )
        return value

    def productions(self, spec: HumanSpec) -> Productions:
        """The human productions of every row; every bad row of the group is reported, not only the first."""
        found = Productions()
        problems: list[str] = []
        for index in self.rows:
            try:
                read_row(spec, self.table.rows[index], self.table.where(index), found)
            except RowError as exc:
                problems.append(str(exc))
        if problems:
            raise GroupErrors(problems)
        return found


class GroupErrors(RowError):
    """Several rows of one instance are bad: each is listed (``build_all``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def groups(table: Table, group_by: Field | tuple[str, ...] | None) -> list[Group]:
    """Rows grouped by key in first-seen order (a long file need not be sorted), or one group per row.

    Keys are compared as read: CSV cells as written (``01`` and ``1`` are two keys); JSON values with their types
    (``1`` and ``"1"`` are two keys, and as default ids both are ``1``, which ``build_all`` refuses as a duplicate
    instead of merging them)."""
    if group_by is None:
        return [Group(table, (i,), str(table.origins[i][1])) for i in range(len(table.rows))]
    keyed: dict[tuple[Any, ...], list[int]] = {}
    names: dict[tuple[Any, ...], str] = {}
    for index, row in enumerate(table.rows):
        where = table.where(index)
        if isinstance(group_by, Field):
            values: tuple[Any, ...] = (group_by.value(row, where),)
        else:
            missing = [c for c in group_by if c not in row]
            if missing:
                raise RowError(
                    f"{where}: field 'group_by': no column {missing[0]!r} (columns: {', '.join(map(str, row))})"
                )
            values = tuple(row[c] for c in group_by)
        key = tuple((type(v).__name__, key_text(v)) for v in values)
        keyed.setdefault(key, []).append(index)
        names.setdefault(key, "-".join(str(v) for v in values))
    return [Group(table, tuple(rows), names[key]) for key, rows in keyed.items()]


def instance_id(id_field: Field | None, group: Group) -> str:
    """The instance's id as written (``01`` stays ``01``; a JSON number is its digits)."""
    if id_field is None:
        return group.key
    value = group.same(id_field)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RowError(f"{group.where}: field 'id': empty")
    if isinstance(value, (list, tuple, dict)):
        raise RowError(f"{group.where}: field 'id': expected text or a number, got {shorten_repr(value)}")
    return str(value)


def whole_number(value: Any, where: str, name: str, what: str = "a whole number") -> int:
    """A field that needs a whole number (``target_index``, ``item_id``): a number, or text that is one (CSV cells
    are text); anything else is one line naming the file, row and field."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise RowError(f"{where}: field '{name}': expected {what}, got {shorten_repr(value)}")


def meta_of(meta: dict[str, Field] | None, group: Group) -> dict[str, Any]:
    """The meta columns' values; a null value is left out (JSON records give every row the union of keys)."""
    values = {name: group.same(field) for name, field in (meta or {}).items()}
    return {name: value for name, value in values.items() if value is not None}


def text(value: Any, where: str, name: str, *, required: bool = True) -> str:
    """A field's value as text: strings as they are, numbers as written; lists and mappings are errors."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise RowError(f"{where}: field '{name}': empty")
        return ""
    if isinstance(value, (list, tuple, dict)):
        raise RowError(f"{where}: field '{name}': expected text, got {shorten_repr(value)}")
    return value if isinstance(value, str) else str(value)


def build_all(items: list[Group], build: Callable[[Group], T], loader: str) -> list[T]:
    """``build`` on every group; every bad row is reported (one line each), not only the first."""
    built: list[T] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for group in items:
        try:
            instance = build(group)
        except GroupErrors as exc:
            problems.extend(exc.problems)
            continue
        except RowError as exc:
            problems.append(str(exc))
            continue
        ident = getattr(instance, "id", None)
        if isinstance(ident, str):
            if ident in seen:
                problems.append(
                    f"{group.where}: field 'id': {ident!r} is also the id of {seen[ident]} (ids must be unique)"
                )
                continue
            seen[ident] = group.where
        built.append(instance)
    if problems:
        raise bad_rows(problems, f"loader '{loader}'")
    return built


def require(parsed: Mapping[str, Any], names: tuple[str, ...], loader: str) -> None:
    """Options a loader cannot do without (declared optional so that their absence is this clear message)."""
    missing = [n for n in names if parsed.get(n) is None]
    if missing:
        raise HarnessError(f"data options of loader '{loader}': '{missing[0]}' is required (see docs/your-data.md)")


def with_extra_files(data_hash: str, normaliser: Normaliser) -> str:
    """The data's hash, with the replacements file's when there is one (it changes the human data)."""
    if normaliser.replacements_sha256 is None:
        return data_hash
    return "sha256:" + hashlib.sha256((data_hash + normaliser.replacements_sha256).encode()).hexdigest()


#: Rows of each file ``harness validate`` reads to check a mapping.
PREVIEW_ROWS = 50


class Tally:
    """What a loader records about its instances beside them: how many give only proportions of people, and why."""

    def __init__(self) -> None:
        self.proportions_only = 0
        self.reasons: set[str] = set()
        self.numbered = 0

    def counted(self, known: bool, reason: str) -> None:
        if not known:
            self.proportions_only += 1
            self.reasons.add(reason)

    def next_number(self) -> int:
        """The next instance's number from 1 (a default item number)."""
        self.numbered += 1
        return self.numbered


#: ``build(group, parsed options, normaliser, tally)``: one instance from one group of rows.
Build = Callable[[Group, Mapping[str, Any], Normaliser, Tally], Instance]


@dataclass(frozen=True)
class GenericLoader:
    """What the three generic loaders share: options, reading, grouping, reporting bad rows, the data source record.

    Each loader gives its name, options, normalisation defaults, the options it cannot do without, a check of the
    parsed options together (``check``) and ``build``, which turns one group of rows into one instance."""

    name: str
    options: Options
    defaults: Normaliser
    required: tuple[str, ...]
    build: Build
    check: Callable[[Mapping[str, Any]], None] | None = None

    def load(self, options: Mapping[str, Any], data_dir: Path, max_rows: int | None = None) -> LoadedData:
        """The instances of a task's ``data`` mapping as given (checked and defaulted here)."""
        parsed = self.options.parse(options, f"data options of loader '{self.name}'")
        return self.load_parsed(parsed, data_dir, max_rows)

    def load_parsed(self, parsed: Mapping[str, Any], data_dir: Path, max_rows: int | None = None) -> LoadedData:
        """The instances of what ``self.options.parse`` returned (what ``takes_options`` hands the loader)."""
        require(parsed, self.required, self.name)
        if self.check is not None:
            self.check(parsed)
        human: HumanSpec = parsed["human"]
        by_person = human.participants
        person = human.participant
        table = read_table(
            parsed,
            data_dir,
            self.name,
            max_rows=max_rows,
            reshape=None if by_person is None else (lambda t: reshape(t, by_person)),
        )
        normaliser = build_normaliser(parsed["normalise"], self.defaults, data_dir)
        tally = Tally()

        def one(group: Group) -> Instance:
            if person is None:
                return self.build(group, parsed, normaliser, tally)
            answers, problems = answered_once(table, group.rows, person)
            if problems:
                raise GroupErrors(problems)
            instance = self.build(group, parsed, normaliser, tally)
            # The people whose answer counts, in answer order (a generation task's references are in this order).
            responses = human.responses
            assert isinstance(responses, Field)
            ids = [
                who
                for index, who in answers
                if normaliser.apply(str(responses.value(table.rows[index], table.where(index)))) is not None
            ]
            meta = {**getattr(instance, "meta", {}), "participants": ids}
            return dataclasses.replace(instance, meta=meta)  # type: ignore[call-arg]

        group_by = parsed["group_by"] if parsed["group_by"] is not None or by_person is None else (ITEM,)
        instances = build_all(groups(table, group_by), one, self.name)
        source = {
            "loader": self.name,
            **table.source,
            "normalise": normaliser.describe(),
            "n_instances": len(instances),
        }
        if tally.proportions_only:
            source["proportions_only"] = {"n": tally.proportions_only, "reasons": sorted(tally.reasons)}
        if human.packed is not None:  # how many cells were split, and their empty pieces (no answers)
            source["packed"] = human.packed.describe()
        return LoadedData(instances, with_extra_files(table.data_hash, normaliser), source)

    def check_data(
        self,
        options: Mapping[str, Any],
        data_dir: Path,
        prepare: Callable[[LoadedData], LoadedData] | None = None,
    ) -> str:
        """``harness validate``'s check: the same reading and mapping, on the first ``PREVIEW_ROWS`` rows of a file,
        then ``prepare`` (the request kind's ``prepare_data``: the word rule, which may refuse the data)."""
        loaded = self.load(options, data_dir, PREVIEW_ROWS)
        files = loaded.source.get("files") or [loaded.source.get("hub", "")]
        shown = ", ".join(str(f) for f in files[:2]) + (f" and {len(files) - 2} more" if len(files) > 2 else "")
        summary = f"the first {PREVIEW_ROWS} rows of {shown} make {len(loaded.instances)} instances"
        people = loaded.source.get("participants")
        if isinstance(people, dict):
            summary += (
                f" from {people['n_answers']} answers of {people['n_participants']} participants"
                f" ({people['n_empty']} empty {'cell' if people['n_empty'] == 1 else 'cells'})"
            )
        if prepare is not None:
            words = prepare(loaded).source.get("words")
            if isinstance(words, dict) and words.get("n_cut"):
                summary += f"; the word rule cuts {words['n_cut']} of {words['n_responses']} responses to a first word"
        return summary
