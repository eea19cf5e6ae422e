"""What a guess of a file's human shape holds, and the column names that hint at a column's role.

Why names count at all: the same cells can be read two ways (a column of whole numbers is counts of people, or
worker ids, or word positions), and a column's name is often the only thing that tells them apart. A name only
breaks ties between columns whose cells already fit the role.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.data.inspection.columns import Column

#: A name a response column often has.
RESPONSE_NAMES = re.compile(
    r"response|answer|guess|completion|production|reference|choice|rating|judg|annotation|output", re.I
)
#: Names a response column may have, but so may other columns (a label's finer kind, the corpus word).
WEAK_RESPONSE_NAMES = re.compile(r"label|word|text", re.I)
#: A name a counts column often has.
COUNT_NAMES = re.compile(r"count|freq|votes|tally|^n$|^n_|_n$|^num_|^number_of|^times", re.I)
#: A name a proportions column often has.
SHARE_NAMES = re.compile(r"prop|share|percent|pct|^p$|^p_|ratio|fraction", re.I)
#: A name a participant's id column often has.
PARTICIPANT_NAMES = re.compile(
    r"^(participant|subject|subj|worker|respondent|annotator|rater|user|person|ppt|pid|sid)"
    r"([ _.-]?(id|code|number|no|num))?$"
    r"|^response[ _.-]?id$|^_?record[ _.-]?id$",
    re.I,
)
#: Names that say a column is a person's id (never a response).
PERSON_NAMES = re.compile(r"worker|participant|subject|annotator|rater|respondent|user|^pid$|^ppt", re.I)
#: A name an options column (or family) often has.
OPTION_NAMES = re.compile(r"option|choice|alternative|candidate", re.I)
#: A name a cloze target (the word that followed) often has.
TARGET_NAMES = re.compile(r"target|correct|gold|expected|original|truth|actual|word$", re.I)
#: A name a dialogue's turns often have.
TURN_NAMES = re.compile(r"turns|context|history|dialog|conversation", re.I)
#: A name an instance's id often has.
ID_NAMES = re.compile(r"^(id|item|item_?id|uid|key|idx|index|.*_id)$", re.I)


@dataclass
class Guess:
    """One guess of the shape: the ``human`` mapping (and the data options it needs), with its evidence."""

    shape: str
    #: The evidence, one line: ``long: rows repeat (text_id, word_num) ...``.
    evidence: str
    #: The task file's ``human`` mapping.
    human: dict[str, Any]
    #: Responses read from the data (a sample), to choose the loader by their length.
    responses: list[Any] = field(default_factory=list)
    #: ``group_by`` (long format), else None.
    group_by: list[str] | None = None
    #: Columns with one value per instance: where the context, source, text or target may be.
    per_instance: list[str] = field(default_factory=list)
    #: Data options the shape needs beside ``human`` (``header_rows``, ``filter``), with a comment each.
    data: dict[str, tuple[Any, str]] = field(default_factory=dict)
    #: A column the options are in, or a template listing them, when the data has option columns.
    options: Any = None
    #: Why the options were chosen.
    options_why: str = ""


def named(columns: Iterable[Column], pattern: re.Pattern[str]) -> list[Column]:
    return [c for c in columns if pattern.search(c.name)]


def prefer(columns: Sequence[Column], *patterns: re.Pattern[str]) -> Column | None:
    """The first column a pattern names (patterns in order of preference), else the first column."""
    for pattern in patterns:
        hits = named(columns, pattern)
        if hits:
            return hits[0]
    return columns[0] if columns else None


def listed(names: Sequence[str]) -> str:
    return ", ".join(names)


def short_or_long(column: Column) -> str:
    """How a response column reads in the evidence line."""
    if column.one_word >= 0.8:
        return "short text"
    return f"text (mean {column.mean_words:.1f} words)"
