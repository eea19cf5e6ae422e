"""The rounds file of ``harness human-perplexity``: one judged pair per JSON line (docs/human-perplexity.md), read
and checked field by field and position by position, so that a bad round is a one-line error naming the file, the
line and the field; and written back in the same format (``dumps_round``)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, shorten, shorten_repr
from harness.files import parse_json_line, read_utf8

#: The answers the paper's judges chose from (11 values; the authors' ``percentages_1``): the probability, in
#: percent, that the given token is the true one: 1%, 10%, 20%, ..., 90%, 99%.
ALLOWED_ANSWERS: tuple[float, ...] = (0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99)

#: Fields every round must have, and what each holds (also the order they are checked in).
REQUIRED_FIELDS: dict[str, str] = {
    "position_id": "which (context, true token) the round belongs to",
    "context": "the text shown before the two tokens",
    "true_token": "the token that really follows the context, as shown",
    "sampled_token": "the token drawn from the generator, as shown",
    "generator_prob": "G(sampled_token | context), in (0, 1]",
    "judgment": "the stated probability that true_token is the true one, in [0, 1]",
}
#: Optional fields: who judged, the generator's probability of the true token (for the paper's generator-relative
#: report), and free-form metadata the estimator ignores.
OPTIONAL_FIELDS: dict[str, str] = {
    "judge": "who judged (a string)",
    "generator_true_prob": "G(true_token | context), in (0, 1]; the same on every round of a position",
    "meta": "a JSON object, kept and ignored",
}


class RoundsError(HarnessError):
    """A rounds file holds a bad round; the message names the file, the line and the field."""


@dataclass(frozen=True)
class Round:
    """One judged pair, with where it was read from (so a later error can still name the file and line)."""

    position_id: str
    context: str
    true_token: str
    sampled_token: str
    generator_prob: float
    judgment: float
    judge: str | None = None
    generator_true_prob: float | None = None
    #: The round's ``meta`` object, kept for the caller (the estimator never reads it).
    meta: dict[str, Any] | None = None
    source: str = "<rounds>"
    line: int = 0

    def where(self, field: str) -> str:
        """``FILE: line N: field 'F'``, the prefix of every message about this round."""
        return f"{self.source}: line {self.line}: field '{field}'"


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: ``a string``, ``an integer``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a number", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__
    )


def _string(record: dict[str, Any], field: str, where: str, *, non_empty: bool = False) -> str:
    value = record[field]
    if not isinstance(value, str):
        raise RoundsError(f"{where}: field '{field}': expected a string, got {_kind(value)} {shorten_repr(value)}")
    if non_empty and not value:
        raise RoundsError(f"{where}: field '{field}': expected a non-empty string")
    return value


def _probability(record: dict[str, Any], field: str, where: str, *, zero_allowed: bool) -> float:
    """A number in ``[0, 1]`` (``zero_allowed``) or ``(0, 1]``: booleans, strings, NaN and infinities refused."""
    value = record[field]
    expected = f"a probability in {'[0, 1]' if zero_allowed else '(0, 1]'}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RoundsError(f"{where}: field '{field}': expected {expected}, got {_kind(value)} {shorten_repr(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0.0 or number > 1.0 or (number == 0.0 and not zero_allowed):
        raise RoundsError(f"{where}: field '{field}': expected {expected}, got {shorten_repr(value)}")
    return number


def parse_round(record: Any, source: str, line: int) -> Round:
    """One round from a parsed JSON line; every problem is a :class:`RoundsError` naming file, line and field."""
    where = f"{source}: line {line}"
    if not isinstance(record, dict):
        raise RoundsError(f"{where}: expected a JSON object (one round), got {_kind(record)}")
    accepted = [*REQUIRED_FIELDS, *OPTIONAL_FIELDS]
    for field in record:
        if field not in accepted:
            raise RoundsError(f"{where}: field '{shorten(field, 40)}': unknown field (accepted: {', '.join(accepted)})")
    for field, meaning in REQUIRED_FIELDS.items():
        if field not in record:
            raise RoundsError(f"{where}: field '{field}': missing ({meaning})")
    judge = record.get("judge")
    if judge is not None:
        judge = _string(record, "judge", where)
    true_prob = None
    if record.get("generator_true_prob") is not None:
        true_prob = _probability(record, "generator_true_prob", where, zero_allowed=False)
    meta = record.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise RoundsError(f"{where}: field 'meta': expected a JSON object, got {_kind(meta)}")
    return Round(
        position_id=_string(record, "position_id", where, non_empty=True),
        context=_string(record, "context", where),
        true_token=_string(record, "true_token", where),
        sampled_token=_string(record, "sampled_token", where),
        generator_prob=_probability(record, "generator_prob", where, zero_allowed=False),
        judgment=_probability(record, "judgment", where, zero_allowed=True),
        judge=judge,
        generator_true_prob=true_prob,
        meta=meta,
        source=source,
        line=line,
    )


def check_positions(rounds: Sequence[Round]) -> None:
    """Every round of a position must show the same context and true token (a position *is* that pair), and give
    ``generator_true_prob`` alike: the same value on each of its rounds, or on none of them."""
    first: dict[str, Round] = {}
    for r in rounds:
        head = first.setdefault(r.position_id, r)
        if head is r:
            continue
        for field in ("context", "true_token", "generator_true_prob"):
            if getattr(r, field) != getattr(head, field):
                raise RoundsError(
                    f"{r.where(field)}: differs from line {head.line}, the first round of position "
                    f"'{shorten(r.position_id, 40)}' (every round of a position shows the same context and true token"
                    f"{' and gives the same generator_true_prob' if field == 'generator_true_prob' else ''})"
                )
    given = [r for r in first.values() if r.generator_true_prob is not None]
    if given and len(given) != len(first):
        lacking = next(r for r in first.values() if r.generator_true_prob is None)
        raise RoundsError(
            f"{lacking.where('generator_true_prob')}: missing here but given on line {given[0].line}; give it for "
            "every position or for none"
        )


def read_rounds(path: Path) -> list[Round]:
    """Every round of a JSON-lines rounds file (blank lines skipped), checked field by field and position by
    position. A bad line is a one-line :class:`RoundsError` naming the file, the line and the field."""
    path = Path(path)
    text = read_utf8(path, "rounds file")
    rounds = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = parse_json_line(line, path, line_no)
        except HarnessError as exc:
            raise RoundsError(str(exc)) from None
        rounds.append(parse_round(record, str(path), line_no))
    if not rounds:
        raise RoundsError(f"{path}: no rounds (expected one JSON object per line; see docs/human-perplexity.md)")
    check_positions(rounds)
    return rounds


def dumps_round(r: Round) -> str:
    """One round as a line of the rounds format (the optional fields only when set): how rounds files are written."""
    record: dict[str, Any] = {
        "position_id": r.position_id,
        "context": r.context,
        "true_token": r.true_token,
        "sampled_token": r.sampled_token,
        "generator_prob": r.generator_prob,
        "judgment": r.judgment,
    }
    if r.judge is not None:
        record["judge"] = r.judge
    if r.generator_true_prob is not None:
        record["generator_true_prob"] = r.generator_true_prob
    if r.meta is not None:
        record["meta"] = r.meta
    return json.dumps(record, ensure_ascii=False)
