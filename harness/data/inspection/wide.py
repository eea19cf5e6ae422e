"""Guesses of the ``participants`` shape: one row per participant, one column per item, as Mechanical Turk batch
results, Qualtrics exports and other wide files give raw answers.

Why three recognisers: each export says what it is in its own way. A batch results file has ``WorkerId``,
``AssignmentStatus`` and the ``Input.*`` and ``Answer.*`` column families (the HIT's inputs beside the worker's
answers); a Qualtrics export has ``ResponseId``, ``Q*`` columns and two rows under the header (question texts, then
import ids written as JSON); any other wide file has a participant's id column (unique in every row) beside a
numbered family of answer columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.data.inspection.columns import (
    NUMBER,
    TEXT,
    WHOLE,
    Column,
    families,
    family_kind,
)
from harness.data.inspection.guess import (
    COUNT_NAMES,
    ID_NAMES,
    PARTICIPANT_NAMES,
    SHARE_NAMES,
    Guess,
    listed,
)
from harness.data.tables.cells import is_empty

#: The columns the ``participants`` shape adds to each answer (``plugins/loaders/generic/participants.py``; the
#: tests validate the skeletons written with them).
ITEM, RESPONSE = "item", "response"
#: What the rows under a Qualtrics header are called in the skeleton (``header_rows``).
QUALTRICS_LABELS = ("question", "import_id")
#: An import id cell: ``{"ImportId":"QID1"}``.
_IMPORT_ID = re.compile(r'^\s*\{\s*"ImportId"\s*:')
#: Names a Qualtrics participant column has.
_QUALTRICS_IDS = ("ResponseId", "ResponseID", "_recordId")
#: Answers kept to judge their length.
SAMPLE = 5000


def header_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The names of the rows under the header that label columns (a Qualtrics export's question texts and import
    ids: the second row under the header holds ``{"ImportId": ...}`` in most cells), else none."""
    if len(rows) < 3:
        return ()
    cells = [v for v in rows[1].values() if isinstance(v, str) and v.strip()]
    if cells and sum(bool(_IMPORT_ID.match(v)) for v in cells) >= 0.5 * len(cells):
        return QUALTRICS_LABELS
    return ()


def participants_shape(
    rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column], labels: Sequence[Mapping[str, Any]]
) -> Guess | None:
    """A batch results file or a survey export (recognised by its own columns); ``labels`` are the rows under the
    header that ``header_rows`` names."""
    if "WorkerId" in columns:
        found = _mturk(rows, columns)
        if found is not None:
            return found
    qualtrics = next((c for c in _QUALTRICS_IDS if c in columns), None)
    if qualtrics is not None and labels:
        return _qualtrics(rows, columns, labels, qualtrics)
    return None


def wide_shape(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    """Any wide file: a column of participants' ids (one per row) beside a numbered family of answer columns."""
    ids = [
        c
        for c in columns.values()
        if PARTICIPANT_NAMES.match(c.name) and c.scalar and c.distinct == len(rows) and not c.n_empty
    ]
    if not ids:
        return None
    pattern, members = _answers(columns)
    if pattern is None:
        return None
    return _guess(
        rows,
        columns,
        f"participants: one row per participant ({ids[0].name!r}, {len(rows):,} rows, all different), one column "
        f"per item ({pattern!r}: {len(members)} columns)",
        ids[0].name,
        pattern,
        members,
    )


def _answers(columns: Mapping[str, Column], prefix: str = "") -> tuple[str | None, dict[str, str]]:
    """The largest numbered family of answers (text, or ratings) whose pattern starts with ``prefix``; not one of
    counts or shares."""
    found = {
        p: m
        for p, m in families(list(columns)).items()
        if p.startswith(prefix)
        and family_kind(columns, m) in (TEXT, WHOLE, NUMBER)
        and not COUNT_NAMES.search(p)
        and not SHARE_NAMES.search(p)
    }
    if not found:
        return None, {}
    pattern = max(found, key=lambda p: (family_kind(columns, found[p]) == TEXT, len(found[p])))
    return pattern, found[pattern]


def _mturk(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column]) -> Guess | None:
    pattern, members = _answers(columns, "Answer.")
    if pattern is None:
        return None
    paired: dict[str, str] = {}
    for family, found in families(list(columns)).items():
        if family.startswith("Input.") and set(members) <= set(found):
            name = _item_name(family, list(columns) + list(paired))
            if name:
                paired[name] = family
    said = f" beside {listed(list(paired.values()))}" if paired else ""
    guess = _guess(
        rows,
        columns,
        f"participants: a Mechanical Turk batch results file: one row per assignment ('WorkerId', {len(rows):,} "
        f"rows), one column per item ({pattern!r}: {len(members)} columns){said}",
        "WorkerId",
        pattern,
        members,
        paired,
    )
    if "AssignmentStatus" in columns:
        guess.data["filter"] = (
            "{{ AssignmentStatus != 'Rejected' }}",
            "guess: leaves out rejected assignments (a filter sees the participant's row)",
        )
    return guess


def _item_name(family: str, taken: list[str]) -> str:
    """``Input.sentence*`` -> ``sentence``: the name of an item's value in the reshaped rows (never one of the
    file's own columns or the names the reshape adds)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", family.removeprefix("Input.").replace("*", "")).strip("_")
    if not name or name[0].isdigit() or name in ("id", "item"):
        name = f"item_{name}" if name else ""
    if not name or name in taken or name in (ITEM, RESPONSE):
        return ""
    return name


def _qualtrics(
    rows: Sequence[Mapping[str, Any]], columns: Mapping[str, Column], labels: Sequence[Mapping[str, Any]], ident: str
) -> Guess | None:
    pattern, members = _answers(columns, "Q")
    if pattern is None:
        pattern, members = _answers(columns)
    if pattern is None:
        return None
    guess = _guess(
        rows,
        columns,
        f"participants: a Qualtrics export: question texts and import ids ({_import_id(labels, members)}) under the "
        f"header, one row per response ({ident!r}, {len(rows):,} rows), one column per question ({pattern!r}: "
        f"{len(members)} columns)",
        ident,
        pattern,
        members,
    )
    guess.data["header_rows"] = (list(QUALTRICS_LABELS), "guess: the rows under the header label each column")
    kept = _qualtrics_filter(rows)
    if kept:
        guess.data["filter"] = (kept, "guess: finished responses only, no survey previews")
    guess.per_instance = list(QUALTRICS_LABELS)
    return guess


def _qualtrics_filter(rows: Sequence[Mapping[str, Any]]) -> str:
    """Finished responses that are not the researcher's previews, as Qualtrics writes them (``Finished`` is
    ``True`` or ``1``; ``Status`` says ``Survey Preview``)."""
    finished = {row.get("Finished") for row in rows}
    tests = []
    if finished & {"True", "False"}:
        tests.append("Finished == 'True'")
    elif finished & {"1", "0"}:
        tests.append("Finished == '1'")
    if any(row.get("Status") == "Survey Preview" for row in rows):
        tests.append("Status != 'Survey Preview'")
    return "{{ " + " and ".join(tests) + " }}" if tests else ""


def _import_id(labels: Sequence[Mapping[str, Any]], members: Mapping[str, str]) -> str:
    if len(labels) < 2:
        return "none"
    first = next(iter(members.values()))
    try:
        found = json.loads(str(labels[1].get(first)))
    except ValueError:
        return "unreadable"
    return f"{first}: {found.get('ImportId')!r}" if isinstance(found, dict) else "unreadable"


def _guess(
    rows: Sequence[Mapping[str, Any]],
    columns: Mapping[str, Column],
    evidence: str,
    participant: str,
    pattern: str,
    members: Mapping[str, str],
    paired: Mapping[str, str] | None = None,
) -> Guess:
    human: dict[str, Any] = {"shape": "participants", "participant": participant, "responses": pattern}
    if paired:
        human["item_columns"] = dict(paired)
    answers = [row.get(c) for row in rows[:SAMPLE] for c in members.values() if not is_empty(row.get(c))]
    guess = Guess("participants", evidence, human, responses=answers, per_instance=[])
    if paired:
        # HITs show different items in the same slots: an item is what its paired columns say, not its slot.
        by_id = [n for n in paired if ID_NAMES.match(n) or n.endswith("id")]
        texts = sorted(paired, key=lambda n: -_mean_length(rows, paired[n], columns))
        guess.group_by = [by_id[0] if by_id else texts[0]]
        guess.per_instance = texts
    return guess


def _mean_length(rows: Sequence[Mapping[str, Any]], family: str, columns: Mapping[str, Column]) -> float:
    found = families(list(columns)).get(family, {})
    cells = [str(row.get(c)) for row in rows[:200] for c in found.values() if not is_empty(row.get(c))]
    return sum(len(c) for c in cells) / len(cells) if cells else 0.0
