"""The task file a guess leads to: every field the inspection could fill, each guess marked ``# guess``, and every
blank the user must fill written as ``"FILL-ME"`` with a ``# FILL:`` comment saying what goes there.

Why one placeholder in quotes: ``"FILL-ME"`` is valid YAML wherever a column name goes, so the file parses as it
is, and a blank left unfilled makes ``harness validate`` name the field (``no column 'FILL-ME'``) instead of a
YAML error. Values are written as JSON (a subset of YAML), so a column named ``1.0``, ``007`` or ``Answer.q*``
stays the text it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.data.inspection.columns import TEXT, WHOLE, Column, words
from harness.data.inspection.guess import ID_NAMES, TARGET_NAMES, Guess
from harness.data.tables.cells import is_empty

BLANK = "FILL-ME"
CLOZE, GENERATION, CHOICE = "generic_cloze", "generic_generation", "generic_choice"
#: At most this many distinct responses (each given at least ``CHOICE_REPEATS`` times on average) read as options.
CHOICE_VALUES = 10
CHOICE_REPEATS = 10
#: Strings written without quotes when YAML reads them back unchanged (no ``yes``, ``1.0``, ``null``).
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
#: A name a word's position in a passage often has.
_POSITION_NAMES = re.compile(r"num|pos|index|idx|word|token", re.I)
#: The share of one-word responses above which the task is a cloze task.
ONE_WORD = 0.8

_REQUESTS: dict[str, tuple[str, dict[str, Any], list[Any]]] = {
    CLOZE: (
        "sample_words",
        {"n_samples": 1000},
        ["tvd", {"name": "human_control", "args": {"n_splits": 10}}, "top1", "entropy", "ece"],
    ),
    GENERATION: (
        "generate",
        {"n_samples": 10, "max_new_tokens": 100, "stop": ["\n"]},
        ["lexical", "syntactic", "semantic"],
    ),
    CHOICE: ("multiple_choice", {"option_orders": 5}, ["mcq_human", "mcq_string", "mcq_label"]),
}


@dataclass
class Line:
    """One key of the task file: a value (or a block of keys), and a comment."""

    key: str
    value: Any = None
    note: str = ""
    block: list[Line] = field(default_factory=list)
    #: Written as a comment: an optional field the user may add.
    optional: bool = False


def flow(value: Any) -> str:
    """A value in YAML flow style: a string plain when YAML reads it back as the same string (``text_id``), else as
    a JSON string (``"1.0"``, ``"yes"``, ``"Answer.q*"``); lists and mappings in brackets and braces."""
    if isinstance(value, str):
        if value != BLANK and _PLAIN.match(value) and yaml.safe_load(value) == value:
            return value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{flow(str(k))}: {flow(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(flow(v) for v in value) + "]"


def render(lines: Sequence[Line], indent: int = 0) -> list[str]:
    out: list[str] = []
    pad = " " * indent
    for line in lines:
        note = f"  # {line.note}" if line.note else ""
        if line.block:
            out.append(f"{pad}{line.key}:{note}")
            out.extend(render(line.block, indent + 2))
        elif line.optional:
            out.append(f"{pad}# {line.key}: {line.value}{note}")
        else:
            out.append(f"{pad}{line.key}: {flow(line.value)}{note}")
    return out


def choose_loader(guess: Guess | None) -> tuple[str, str, list[str] | None]:
    """The loader, why, and the options when they are the responses' few values."""
    if guess is None or not guess.responses:
        return CLOZE, "no responses recognised: generic_generation or generic_choice may fit better", None
    if guess.options is not None:
        return CHOICE, f"the options are in {guess.options_why}", None
    responses = [r if isinstance(r, str) else json.dumps(r) for r in guess.responses if not is_empty(r)]
    distinct = sorted(set(responses))
    if distinct and len(distinct) <= CHOICE_VALUES and len(responses) >= CHOICE_REPEATS * len(distinct):
        return CHOICE, f"the {len(responses):,} responses take only {len(distinct)} values", distinct
    share = sum(words(r) <= 1 for r in responses) / len(responses) if responses else 0.0
    if share >= ONE_WORD:
        return CLOZE, f"{share:.0%} of the responses are one word (generic_generation for longer texts)", None
    mean = sum(words(r) for r in responses) / len(responses) if responses else 0.0
    return GENERATION, f"the responses are {mean:.1f} words long on average ({share:.0%} are one word)", None


def task_name(stem: str) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", stem.lower()).strip("-._")
    return (name or "my-task")[:60]


def skeleton(
    guess: Guess | None,
    columns: Mapping[str, Column],
    source: Mapping[str, Any],
    notes: Mapping[str, str],
    stem: str,
    n_rows: int,
) -> tuple[list[str], str, str]:
    """The task file's lines, the loader and why it was chosen. ``source``: the data options saying where the rows
    are (``files``, ``format``, ``json_field``, ``json_key``), with a comment for some in ``notes``."""
    loader, why, options = choose_loader(guess)
    data = [Line(key, value, notes.get(key, "")) for key, value in source.items()]
    if guess is not None:
        data += [Line(key, value, note) for key, (value, note) in guess.data.items() if key != "turns"]
        if guess.group_by:
            data.append(Line("group_by", guess.group_by, "guess: the rows with the same key are one instance"))
    data += _fields(loader, guess, columns, options, n_rows, source.get("json_key"))
    data.append(_human(guess))
    request, params, scorers = _REQUESTS[loader]
    lines = [
        Line("task", task_name(stem), "guess: from the file's name"),
        Line("version", 1),
        Line("loader", loader, f"guess: {why}"),
        Line("data", block=data),
        Line("request", request),
        Line("params", params),
        Line("scorers", scorers),
    ]
    return render(lines), loader, why


def _human(guess: Guess | None) -> Line:
    if guess is None:
        return Line(
            "human",
            block=[
                Line("shape", BLANK, "FILL: long, list, mapping, parallel or participants (docs/your-data.md)"),
                Line("responses", BLANK, "FILL: the column holding the responses"),
            ],
        )
    keys = [Line(k, v) for k, v in guess.human.items()]
    keys[0].note = f"guess: {guess.shape} (see the shape line above)"
    return Line("human", block=keys)


def _texts(guess: Guess | None, columns: Mapping[str, Column]) -> list[str]:
    """Per-instance columns that hold text of several words, longest first (where a context or input is)."""
    if guess is None:
        return []
    found = [c for c in guess.per_instance if c in columns and columns[c].kind == TEXT and columns[c].mean_words >= 2]
    found.sort(key=lambda c: -columns[c].mean_words)
    after = [c for c in guess.per_instance if c not in columns]  # named by a reshape (participants): texts
    return after + found


def _fields(
    loader: str,
    guess: Guess | None,
    columns: Mapping[str, Column],
    options: list[str] | None,
    n_rows: int,
    keyed: str | None,
) -> list[Line]:
    """The loader's own fields; ``keyed``: the ``json_key`` column (an id by construction)."""
    texts = _texts(guess, columns)
    lines: list[Line] = []
    one_row = guess is not None and guess.group_by is None and guess.shape != "participants"
    named = [c for c in (guess.per_instance if guess else []) if c in columns and ID_NAMES.match(c)]
    ids = [c for c in [*([keyed] if keyed else []), *named] if columns[c].distinct == n_rows and not columns[c].n_empty]
    if one_row and ids:
        lines.append(Line("id", ids[0], "guess: one value per row"))
    if loader == CLOZE:
        lines.append(_text_field("context", texts, "the text before the word people guessed"))
        targets = [
            c
            for c in (guess.per_instance if guess else [])
            if c in columns and columns[c].kind == TEXT and columns[c].one_word >= ONE_WORD and TARGET_NAMES.search(c)
        ]
        if targets:
            lines.append(Line("target", targets[0], "guess: the word that followed (optional)"))
        else:
            lines.append(Line("target", "COLUMN", "optional: the word that followed", optional=True))
        if not texts and guess is not None and guess.group_by:
            lines.extend(_passages(guess.group_by, columns, targets[0] if targets else None))
    elif loader == GENERATION:
        if guess is not None and "turns" in guess.data:
            value, note = guess.data["turns"]
            lines.append(Line("turns", value, note))
        else:
            lines.append(_text_field("source", texts, "the input people responded to"))
    else:
        lines.append(_text_field("text", texts, "what the item asks"))
        if guess is not None and guess.options is not None:
            lines.append(Line("options", guess.options, f"guess: {guess.options_why}"))
        elif options is not None:
            lines.append(Line("options", options, "guess: the values the responses take"))
        else:
            lines.append(Line("options", BLANK, "FILL: a list column, a list [a, b, c] or a mapping {key: text}"))
        lines.append(
            Line("target", "COLUMN", "optional: the target option's key (else a label distribution)", optional=True)
        )
    return lines


def _passages(group_by: list[str], columns: Mapping[str, Column], target: str | None) -> list[Line]:
    """A table of (text id, position) without the text: the context may come from the passages instead (an
    optional line, since their files are not in the table)."""
    if len(group_by) != 2 or not all(c in columns for c in group_by):
        return []
    positions = [c for c in group_by if columns[c].kind == WHOLE and _POSITION_NAMES.search(c)]
    position = positions[-1] if positions else group_by[-1]
    if columns[position].kind != WHOLE:
        return []
    key = next(c for c in group_by if c != position)
    found = {"files": "passages/*.txt", "key": key, "position": position, **({"word": target} if target else {})}
    note = 'or, instead of context: the passages themselves (docs/your-data.md, "Passages in text files")'
    return [Line("passages", flow(found), note, optional=True)]


def _text_field(key: str, texts: list[str], what: str) -> Line:
    if texts:
        return Line(key, texts[0], f"guess: {what}")
    return Line(
        key,
        BLANK,
        f"FILL: {what}: a column, or a template over the row (docs/your-data.md)",
    )
