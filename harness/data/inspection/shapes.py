"""Guesses of the shapes one row per instance (or per response) can take: ``mapping``, ``list``, ``parallel`` (two
list columns, or numbered column families) and ``long`` (rows repeat a key).

Why these tests and in this order: a column of mappings or of lists says its shape by its cells alone, so those
come first; numbered families need two families that pair up; ``long`` is what is left when rows repeat a key, and
needs the most searching (which columns make the key). Each guess keeps its evidence, one line, so that the user
can see why and correct it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from harness.data.inspection.columns import (
    EMPTY,
    LIST,
    MAPPING,
    NUMBER,
    TEXT,
    WHOLE,
    Column,
    families,
    family_kind,
    number_of,
    value_key,
    value_kind,
)
from harness.data.inspection.guess import (
    COUNT_NAMES,
    ID_NAMES,
    OPTION_NAMES,
    PARTICIPANT_NAMES,
    PERSON_NAMES,
    RESPONSE_NAMES,
    SHARE_NAMES,
    TURN_NAMES,
    WEAK_RESPONSE_NAMES,
    Guess,
    listed,
    prefer,
    short_or_long,
)
from harness.data.tables.cells import is_empty

#: Rows searched for the key of a long file (the groups are then counted over every row).
KEY_SEARCH_ROWS = 5000
#: Columns tried as parts of a long file's key (those with the fewest distinct values).
KEY_CANDIDATES = 10
#: A key whose groups are more than this share of the rows does not make rows repeat (a near-unique key leaves
#: few groups with two rows, so few columns get the chance to vary inside one).
REPEATS = 0.8
#: The name of a record's answer, when it is plainly one.
_PLAIN_ANSWER = re.compile(r"^(text|option|answer|response|label|choice|word)$", re.I)
#: Responses kept to judge their length.
SAMPLE = 5000


def one_row_shapes(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """A shape whose instance is one row and whose cells say so: a mapping column, two parallel list columns, or a
    list column."""
    return _mapping(rows, columns) or _parallel_lists(rows, columns) or _records(rows, columns) or _list(rows, columns)


def _mapping(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    found = [c for c in columns.values() if c.kind == MAPPING]
    for column in found:
        numbers = [number_of(v) for row in rows for v in _values(row.get(column.name))]
        if not numbers or any(n is None for n in numbers):
            continue
        whole = all(n is not None and n.is_integer() for n in numbers)
        human: dict[str, Any] = {"shape": "mapping", "responses": column.name}
        what = "counts"
        if not whole:
            human["values"] = "proportions"
            what = "proportions"
        keys = [k for row in rows[:SAMPLE] for k in _keys(row.get(column.name))]
        return Guess(
            "mapping",
            f"mapping: {column.name!r} holds {{response: number}} ({what}) in every row; {len(rows):,} rows, one "
            "instance each",
            human,
            responses=keys,
            per_instance=_others(columns, {column.name}),
        )
    return None


def _values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, Mapping) else []


def _keys(value: Any) -> list[Any]:
    return list(value) if isinstance(value, Mapping) else []


def _elements(rows: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    return [e for row in rows[:SAMPLE] if isinstance(row.get(name), (list, tuple)) for e in row[name]]


def _parallel_lists(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    lists = [c for c in columns.values() if c.kind == LIST]
    texts = [c for c in lists if _element_kind(rows, c.name) == TEXT]
    numbers = [c for c in lists if _element_kind(rows, c.name) in (WHOLE, NUMBER)]
    for answers in texts:
        for counts in sorted(numbers, key=lambda c: not (COUNT_NAMES.search(c.name) or SHARE_NAMES.search(c.name))):
            pairs = [(r.get(answers.name), r.get(counts.name)) for r in rows]
            both = [(a, n) for a, n in pairs if isinstance(a, (list, tuple)) and isinstance(n, (list, tuple))]
            if not both or sum(len(a) == len(n) for a, n in both) < 0.9 * len(both):
                continue
            key = "counts" if _element_kind(rows, counts.name) == WHOLE else "proportions"
            guess = Guess(
                "parallel",
                f"parallel: list columns {answers.name!r} (texts) and {counts.name!r} ({key}) have the same length in "
                f"every row; {len(rows):,} rows, one instance each",
                {"shape": "parallel", "responses": answers.name, key: counts.name},
                responses=_elements(rows, answers.name),
                per_instance=_others(columns, {answers.name, counts.name}),
            )
            if OPTION_NAMES.search(answers.name):
                guess.options, guess.options_why = answers.name, f"the list column {answers.name!r}"
            return guess
    return None


def _records(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """A list column of records, each an answer (or option) with its number of people: ``[{text: .., count: ..}]``
    read by templates (``{{ options | map(attribute='count') | list }}``)."""
    for column in (c for c in columns.values() if c.kind == LIST):
        records = _elements(rows, column.name)
        if not records or not all(isinstance(r, Mapping) for r in records):
            continue
        kinds: dict[str, set[str]] = {}
        for record in records:
            for key, value in record.items():
                kinds.setdefault(str(key), set()).add(value_kind(value))
        texts = [k for k, found in kinds.items() if found - {EMPTY} == {TEXT}]
        numbers = [k for k, found in kinds.items() if found - {EMPTY} <= {WHOLE} and COUNT_NAMES.search(k)]
        shares = [k for k, found in kinds.items() if found - {EMPTY} <= {WHOLE, NUMBER} and SHARE_NAMES.search(k)]
        text = next((k for k in texts if _PLAIN_ANSWER.match(k)), None) or next(
            (k for p in (RESPONSE_NAMES, OPTION_NAMES, WEAK_RESPONSE_NAMES) for k in texts if p.search(k)), None
        )
        if text is None or not (numbers or shares):
            continue
        key, weights = ("counts", numbers[0]) if numbers else ("proportions", shares[0])
        name = column.name if column.name.isidentifier() else f"row[{column.name!r}]"
        answers = f"{{{{ {name} | map(attribute={text!r}) | list }}}}"
        numbers_of = f"{{{{ {name} | map(attribute={weights!r}) | list }}}}"
        human: dict[str, Any] = {"shape": "parallel", "responses": answers, key: numbers_of}
        guess = Guess(
            "parallel",
            f"parallel: {column.name!r} holds a list of records, each {text!r} with its {weights!r}; {len(rows):,} "
            "rows, one instance each",
            human,
            responses=[r.get(text) for r in records],
            per_instance=_others(columns, {column.name}),
        )
        if OPTION_NAMES.search(column.name):
            del human["responses"]  # one number per option, in option order
            guess.options, guess.options_why = answers, f"the records of {column.name!r}"
        return guess
    return None


def _element_kind(rows: Sequence[Mapping[str, Any]], name: str) -> str:
    kinds = {value_kind(e) for e in _elements(rows, name) if not is_empty(e)}
    if kinds <= {WHOLE}:
        return WHOLE if kinds else ""
    if kinds <= {WHOLE, NUMBER}:
        return NUMBER
    return TEXT if kinds <= {TEXT, WHOLE, NUMBER} else ""


def _list(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    lists = [c for c in columns.values() if c.kind == LIST and _element_kind(rows, c.name) in (TEXT, WHOLE, NUMBER)]
    turns = [c for c in lists if TURN_NAMES.search(c.name) and not RESPONSE_NAMES.search(c.name)]
    candidates = [c for c in lists if c not in turns] or lists
    if not candidates:
        return None
    chosen = prefer(candidates, RESPONSE_NAMES)
    assert chosen is not None
    lengths = [len(row[chosen.name]) for row in rows if isinstance(row.get(chosen.name), (list, tuple))]
    mean = sum(lengths) / len(lengths) if lengths else 0.0
    others = f" (other list columns: {listed([c.name for c in lists if c is not chosen])})" if len(lists) > 1 else ""
    guess = Guess(
        "list",
        f"list: {chosen.name!r} holds a list of {mean:.1f} responses on average{others}; {len(rows):,} rows, one "
        "instance each",
        {"shape": "list", "responses": chosen.name},
        responses=_elements(rows, chosen.name),
        per_instance=_others(columns, {chosen.name}),
    )
    if turns and chosen not in turns:
        guess.data["turns"] = (turns[0].name, "guess: the dialogue's turns (a list column); or 'source: COLUMN'")
    return guess


def parallel_families(
    rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column], named_only: bool = False
) -> Guess | None:
    """Numbered families of answers and of numbers with the same numbers (``answer_*`` beside ``count_*``);
    ``named_only``: only numbers whose name says counts or shares (``rt_*`` beside ``word_*`` may be a
    participant's reaction times)."""
    found = families(list(columns))
    texts = {p: m for p, m in found.items() if family_kind(columns, m) == TEXT}
    numbers = {p: m for p, m in found.items() if family_kind(columns, m) in (WHOLE, NUMBER)}
    if named_only:
        numbers = {p: m for p, m in numbers.items() if COUNT_NAMES.search(p) or SHARE_NAMES.search(p)}
    for pattern, members in sorted(texts.items(), key=lambda pm: -len(pm[1])):
        matching = [p for p, m in numbers.items() if set(m) == set(members)]
        if not matching:
            continue
        weights = sorted(matching, key=lambda p: not (COUNT_NAMES.search(p) or SHARE_NAMES.search(p)))[0]
        whole = family_kind(columns, numbers[weights]) == WHOLE
        key = "counts" if whole else "proportions"
        answers = [row.get(c) for row in rows[:SAMPLE] for c in members.values() if not is_empty(row.get(c))]
        guess = Guess(
            "parallel",
            f"parallel: numbered columns {pattern!r} (texts) and {weights!r} ({key}) pair up ({len(members)} each); "
            f"{len(rows):,} rows, one instance each",
            {"shape": "parallel", "responses": pattern, key: weights},
            responses=answers,
            per_instance=_others(columns, set(members.values()) | set(numbers[weights].values())),
        )
        if OPTION_NAMES.search(pattern):
            guess.options = list_template(list(members.values()))
            guess.options_why = f"the numbered columns {pattern!r}"
        return guess
    return None


def list_template(names: Sequence[str]) -> str:
    """A template listing columns' values, empty ones left out: ``{{ [option_1, option_2] | select | list }}``."""
    parts = [n if n.isidentifier() else f"row[{n!r}]" for n in names]
    return "{{ [" + ", ".join(parts) + "] | select | list }}"


def _others(columns: Mapping[str, Column], used: set[str]) -> list[str]:
    return [c.name for c in columns.values() if c.scalar and c.name not in used]


# ------------------------------------------------------------------------------------------------------------ long


def long_shape(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """Rows that repeat a key: the key that leaves the fewest columns varying inside its groups (those are the
    response and its numbers), and among the varying columns the response and its counts."""
    found = _best_key(rows, columns)
    if found is None:
        return None
    key, varying = found
    groups = len({tuple(value_key(row.get(c)) for c in key) for row in rows})
    if groups >= len(rows):
        return None
    key = _with_parents(rows, columns, key, varying, groups)
    changing = [columns[c] for c in columns if c in varying]
    response = _response(changing)
    if response is None:
        return None
    numbers = [c for c in changing if c is not response and c.kind in (WHOLE, NUMBER)]
    counts = [c for c in numbers if c.kind == WHOLE and COUNT_NAMES.search(c.name)]
    shares = [c for c in numbers if SHARE_NAMES.search(c.name) and _within_one(rows, c.name)]
    human: dict[str, Any] = {"shape": "long", "responses": response.name}
    said = [f"{response.name!r} is {_described(response)}"]
    if counts:
        human["counts"] = counts[0].name
        said.append(f"{counts[0].name!r} whole numbers")
    elif shares:
        human["proportions"] = shares[0].name
        said.append(f"{shares[0].name!r} proportions")
    else:
        person = _person_per_row(rows, changing, key)
        if person is not None:
            human["participant"] = person
            said.append(f"one row per answer of each {person!r}")
    shown = f"({listed(key)})" if len(key) > 1 else repr(key[0])
    per_instance = [c for c in columns if c not in varying and c not in key and columns[c].scalar] + list(key)
    guess = Guess(
        "long",
        f"long: rows repeat {shown} {len(rows):,} rows -> {groups:,} groups; " + ", ".join(said),
        human,
        responses=[row.get(response.name) for row in rows[:SAMPLE]],
        group_by=list(key),
        per_instance=per_instance,
    )
    answered = {tuple(value_key(row.get(c)) for c in key) for row in rows if not is_empty(row.get(response.name))}
    if len(answered) < groups:
        # Groups without one response (a trial export's instructions and fixations): not instances.
        empty = groups - len(answered)
        guess.data["filter"] = (
            f"{{{{ {response.name} | trim != '' }}}}",
            f"guess: {empty} of the {groups} groups {'has' if empty == 1 else 'have'} no response at all "
            "(instructions?); this leaves out every row without one",
        )
    return guess


def _person_per_row(rows: Sequence[Mapping[str, Any]], changing: Sequence[Column], key: Sequence[str]) -> str | None:
    """A column named like a participant's id that names a different person on every row of an instance (one row
    per answer, as jsPsych and Gorilla export trials): the long shape's ``participant``."""
    for column in changing:
        if column.scalar and PARTICIPANT_NAMES.match(column.name):
            pairs = [(tuple(value_key(row.get(c)) for c in key), value_key(row.get(column.name))) for row in rows]
            if all(not is_empty(row.get(column.name)) for row in rows) and len(set(pairs)) == len(pairs):
                return column.name
    return None


def _described(column: Column) -> str:
    if column.kind == TEXT:
        return short_or_long(column)
    return f"{column.kind}s ({column.distinct:,} values)"


def _within_one(rows: Sequence[Mapping[str, Any]], name: str) -> bool:
    numbers = [number_of(row.get(name)) for row in rows[:SAMPLE]]
    return all(n is None or 0 <= n <= 1 for n in numbers)


def _response(changing: list[Column]) -> Column | None:
    """The column of responses among those that vary inside a group: text first (by its name, else the one with
    the most values), never a person's id."""
    usable = [c for c in changing if not PERSON_NAMES.search(c.name) and not ID_NAMES.match(c.name)]
    texts = sorted((c for c in usable if c.kind == TEXT), key=lambda c: -c.distinct)
    if texts:
        return prefer(texts, RESPONSE_NAMES, OPTION_NAMES, WEAK_RESPONSE_NAMES)
    few = [c for c in usable if c.kind in (WHOLE, NUMBER) and not COUNT_NAMES.search(c.name)]
    few = [c for c in few if not SHARE_NAMES.search(c.name)]
    return prefer(few, RESPONSE_NAMES)


def _best_key(
    rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]
) -> tuple[tuple[str, ...], set[str]] | None:
    """The key (one to three columns) whose groups leave the fewest columns varying, at least one of them text or
    a rating: first among keys with an id (whole numbers, an id's name), then among the others; ties go to fewer
    key columns, then to columns that look like keys (short codes)."""
    sample = rows[:KEY_SEARCH_ROWS]
    n = len(sample)
    scalar = [c for c in columns.values() if c.scalar]
    distinct = {c.name: len({value_key(row.get(c.name)) for row in sample}) for c in scalar}
    keys = [c for c in scalar if 1 < distinct[c.name] < n and _may_be_key(c)]
    candidates = sorted(keys, key=lambda c: distinct[c.name])
    candidates = candidates[:KEY_CANDIDATES]
    best: tuple[tuple[float, int, int, float], tuple[str, ...], set[str]] | None = None
    for size in (1, 2, 3):
        if size == 3 and best is not None:
            break
        for combo in combinations(candidates, size):
            names = tuple(c.name for c in combo)
            groups, varying = _varying(sample, names, [c.name for c in scalar if c.name not in names])
            if groups > REPEATS * n or not varying or _response([columns[v] for v in varying]) is None:
                continue
            looks = [_key_likeness(c) for c in combo]
            score = (-(max(looks) // 1), len(varying), size, -sum(looks) / size)
            if best is None or score < best[0]:
                best = (score, tuple(c.name for c in sorted(combo, key=lambda c: list(columns).index(c.name))), varying)
    return None if best is None else (best[1], best[2])


def _with_parents(
    rows: Sequence[Mapping[str, Any]],
    columns: Mapping[str, Column],
    key: tuple[str, ...],
    varying: set[str],
    groups: int,
) -> tuple[str, ...]:
    """The key with the ids it lies under (``text_id`` above ``word_num``): id columns constant inside its groups
    with fewer values than groups. They change no group, but a position is a position in its text, and a file with
    more texts would need them."""
    parents = [
        c.name
        for c in columns.values()
        if c.name not in key
        and c.name not in varying
        and c.scalar
        and _may_be_key(c)
        and _key_likeness(c) == 1.0
        and 1 < c.distinct < groups
    ]
    if not parents or len(key) >= 3:
        return key
    chosen = set(key) | set(parents[: 3 - len(key)])
    return tuple(c for c in columns if c in chosen)


def _may_be_key(column: Column) -> bool:
    """Not a column of numbers of people, of shares, of fractions, of people's ids (a person's answers to several
    items vary inside an item's group; they do not make it), of responses or of options."""
    return column.kind != NUMBER and not any(
        p.search(column.name) for p in (COUNT_NAMES, SHARE_NAMES, PERSON_NAMES, RESPONSE_NAMES, OPTION_NAMES)
    )


def _key_likeness(column: Column) -> float:
    if column.kind == WHOLE or ID_NAMES.match(column.name):
        return 1.0
    return 0.5 if column.kind == TEXT and column.mean_words <= 1 else 0.0


def _varying(rows: Sequence[Mapping[str, Any]], key: tuple[str, ...], others: list[str]) -> tuple[int, set[str]]:
    """How many groups the key makes, and which other columns take more than one value inside a group."""
    first: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    varying: set[str] = set()
    steady = list(others)
    for row in rows:
        k = tuple(value_key(row.get(c)) for c in key)
        seen = first.get(k)
        if seen is None:
            first[k] = row
            continue
        moved = [c for c in steady if row.get(c) != seen.get(c)]
        if moved:
            varying.update(moved)
            steady = [c for c in steady if c not in varying]
    return len(first), varying
