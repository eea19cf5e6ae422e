"""Reading the Provo files, in each of their three formats, into raw cloze positions.

One reader per format: :func:`read_official` (the OSF norms CSV or the seed's TSV copy of it),
:func:`read_positions_jsonl` (``provo_positions.jsonl``) and :func:`read_long_csv` (``provo_cloze_responses.csv``
with ``provo_passages.csv``). Each gives :class:`Position` records with the responses in their printed form;
normalising them into instances is :mod:`harness.plugins.loaders.provo_instances`'s job. Every malformed row is an error
naming the file, line and field.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api import (
    HarnessError,
    check_no_nul,
    normalise_word,
    one_line,
    read_bytes,
    read_utf8,
    shorten,
    shorten_repr,
)
from harness.plugins.loaders.text_files import MAX_DATA_INT, file_lines, json_int, jsonl_records

OFFICIAL_COLUMNS = ("Text_ID", "Text", "Word_Number", "Response", "Response_Count")
RESPONSES_COLUMNS = ("text_id", "word_num", "target_word", "response", "response_count")
PASSAGES_COLUMNS = ("text_id", "passage")
POSITIONS_FIELDS = ("text_id", "word_num", "context", "target_word", "human_responses")

#: Strings pandas reads as NaN by default. The seed read the norms with pandas, so a response spelled like this
#: became NaN there, and NaN responses got a count of 0 (``NaN == NaN`` is false). Treating exactly these as
#: missing reproduces the seed's data.
PANDAS_NA_STRINGS = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA",
     "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip


@dataclass
class Position:
    """One cloze position as the file has it, before normalisation (responses keep their printed form)."""

    text_id: int
    word_num: int
    context: str
    target_raw: str
    responses: dict[str, int] = field(default_factory=dict)
    n_missing: int = 0
    #: Where the position was first read (``PATH: line N``), for the errors about it found later.
    where: str = ""


def decode(data: bytes) -> tuple[str, str]:
    """Text and encoding name. The OSF file is not UTF-8 (Windows-1252 per the pipelines that read it, with
    Mac-Roman bytes inside); cp1252 before Latin-1 so that 0x80-0x9F become punctuation, not control chars."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding), "utf-8" if encoding == "utf-8-sig" else encoding
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1"), "latin-1"


def header_fields(line: str) -> list[str]:
    delimiter = "\t" if line.count("\t") > line.count(",") else ","
    return [c.strip().lstrip("\ufeff") for c in next(csv.reader([line], delimiter=delimiter), [])]


def _parse_int(value: str | None, path: Path, line: int, column: str, low: int = 1) -> int:
    """An integer field from ``low`` to ``MAX_DATA_INT``; ``3.0`` is accepted because spreadsheet and pandas exports
    write counts that way."""
    text = (value or "").strip()
    try:
        number: float = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            number = float("nan")
    where = f"{path}: line {line}: field '{column}'"
    if not (abs(number) <= MAX_DATA_INT and float(number).is_integer()):  # NaN and infinities fail too
        raise HarnessError(f"{where}: expected an integer, got {shorten_repr(value)}")
    if not low <= number <= MAX_DATA_INT:
        raise HarnessError(f"{where}: expected an integer from {low} to {MAX_DATA_INT}, got {shorten_repr(value)}")
    return int(number)


def _count(value: str | None, path: Path, line: int, column: str) -> int:
    """A response count: an integer from 0 (a negative count would silently subtract people)."""
    return _parse_int(value, path, line, column, low=0)


def _csv_rows(text: str, path: Path, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and (line number, row) pairs; a missing column, a short row or a cell the csv module cannot read
    (a quote never closed, a cell over its field size limit) is an error naming file and line."""
    first_line = text.split("\n", 1)[0]
    delimiter = "\t" if first_line.count("\t") > first_line.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows: list[tuple[int, dict[str, str]]] = []
    try:
        header = [c.strip().lstrip("\ufeff") for c in next(reader, [])]
        missing = [c for c in required if c not in header]
        if missing:
            shown = one_line(", ".join(header), 200) or "none"
            raise HarnessError(f"{path}: line 1: missing column '{missing[0]}' (columns: {shown})")
        index = {name: i for i, name in enumerate(header)}
        start = reader.line_num + 1
        for values in reader:
            line, start = start, reader.line_num + 1
            if not values or all(not v.strip() for v in values):
                continue
            if any("\n" in v or "\r" in v for v in values):
                # No cell of these files holds a line break; a quote opened and never closed makes one, and would
                # otherwise silently swallow the rows after it.
                raise HarnessError(f"{path}: line {line}: a line break inside a cell (a quote never closed?)")
            for name in required:
                if index[name] >= len(values):
                    raise HarnessError(f"{path}: line {line}: field '{name}': missing (row too short)")
            row = {name: values[i] for name, i in index.items() if i < len(values)}
            rows.append((line, row))
    except csv.Error as exc:
        line = max(1, reader.line_num)
        raise HarnessError(f"{path}: line {line}: not readable as CSV ({one_line(str(exc), 120)})") from None
    return header, rows


def _is_missing(response: str) -> bool:
    return response.strip() == "" or response in PANDAS_NA_STRINGS


def _position_tokens(tokens: list[str], word_num: int, path: Path, line: int, column: str) -> tuple[str, str]:
    """Context and target by the seed's rule (``text.split(' ')``, 1-based word numbers)."""
    if not 1 <= word_num <= len(tokens):
        raise HarnessError(
            f"{path}: line {line}: field '{column}': word {word_num} is outside the passage's {len(tokens)} words"
        )
    return " ".join(tokens[: word_num - 1]), tokens[word_num - 1]


def read_official(path: Path, source: dict[str, Any]) -> list[Position]:
    """The OSF norms (CSV) or the seed's TSV copy, grouped as the seed's ``preprocess_provo_corpus()`` did."""
    data = read_bytes(path, "data file")
    check_no_nul(data, path)
    text, encoding = decode(data)
    source["encoding"] = encoding
    _, rows = _csv_rows(text, path, OFFICIAL_COLUMNS)
    texts: dict[int, set[str]] = {}
    first_line: dict[tuple[int, int], int] = {}
    responses: dict[tuple[int, int], dict[str, int]] = {}
    missing: dict[tuple[int, int], int] = {}
    norms_words: dict[tuple[int, int], str] = {}
    for line, row in rows:
        text_id = _parse_int(row["Text_ID"], path, line, "Text_ID")
        word_num = _parse_int(row["Word_Number"], path, line, "Word_Number")
        key = (text_id, word_num)
        texts.setdefault(text_id, set()).add(row["Text"])
        first_line.setdefault(key, line)
        if "Word" in row:
            norms_words.setdefault(key, row["Word"])
        bucket = responses.setdefault(key, {})
        response = row["Response"]
        if _is_missing(response):
            # The seed counted these as 0 (see PANDAS_NA_STRINGS); a count that is itself NA is 0 too.
            count_text = row["Response_Count"]
            count = 0 if _is_missing(count_text) else _count(count_text, path, line, "Response_Count")
            missing[key] = missing.get(key, 0) + count
            continue
        count = _count(row["Response_Count"], path, line, "Response_Count")
        bucket[response] = bucket.get(response, 0) + count

    # The seed took ``groupby('Text_ID')['Text'].max()``: if rows of one passage disagree, the largest text wins.
    differing = sorted(tid for tid, variants in texts.items() if len(variants) > 1)
    if differing:
        source["texts_differing_within_passage"] = differing
    tokens_by_text = {tid: max(variants).split(" ") for tid, variants in texts.items()}

    positions = []
    mismatches = []
    for key, bucket in responses.items():
        text_id, word_num = key
        context, target = _position_tokens(tokens_by_text[text_id], word_num, path, first_line[key], "Word_Number")
        if key in norms_words and normalise_word(norms_words[key]) != normalise_word(target):
            mismatches.append(f"{text_id}-{word_num}")
        where = f"{path}: line {first_line[key]}"
        positions.append(Position(text_id, word_num, context, target, bucket, missing.get(key, 0), where))
    if mismatches:
        # The norms' own Word column is a diagnostic only (it has spreadsheet artefacts such as TRUE for "true").
        source["word_column_mismatches"] = {"count": len(mismatches), "first": sorted(mismatches)[:20]}
    return positions


def read_positions_jsonl(path: Path) -> list[Position]:
    """``provo_positions.jsonl``: one JSON object per position with its context and response counts."""
    positions: dict[tuple[int, int], Position] = {}
    for where, record in jsonl_records(path, file_lines(path), POSITIONS_FIELDS, unique_id=False):
        text_id = json_int(record["text_id"], where, "text_id", low=1)
        word_num = json_int(record["word_num"], where, "word_num", low=1)
        for name in ("context", "target_word"):
            if not isinstance(record[name], str):
                raise HarnessError(f"{where}: field '{name}': expected a string")
        human = record["human_responses"]
        if not isinstance(human, dict):
            raise HarnessError(f"{where}: field 'human_responses': expected an object")
        bucket: dict[str, int] = {}
        for response, count in human.items():
            n = json_int(count, where, f"human_responses.{shorten(response, 40)}", low=0)
            if not _is_missing(response):
                bucket[response] = bucket.get(response, 0) + n
        if "total_response_count" in record:
            total = json_int(record["total_response_count"], where, "total_response_count", low=0)
            if total != sum(bucket.values()):
                raise HarnessError(
                    f"{where}: field 'total_response_count': {total} is not the sum of "
                    f"'human_responses' ({sum(bucket.values())})"
                )
        key = (text_id, word_num)
        if key in positions:
            raise HarnessError(f"{where}: field 'word_num': position {text_id}-{word_num} repeated")
        positions[key] = Position(text_id, word_num, record["context"], record["target_word"], bucket, where=where)
    return list(positions.values())


def read_long_csv(responses_path: Path, passages_path: Path) -> list[Position]:
    """``provo_cloze_responses.csv`` (one row per response) with contexts rebuilt from ``provo_passages.csv``."""
    _, passage_rows = _csv_rows(read_utf8(passages_path, "data file"), passages_path, PASSAGES_COLUMNS)
    tokens_by_text: dict[int, list[str]] = {}
    for line, row in passage_rows:
        text_id = _parse_int(row["text_id"], passages_path, line, "text_id")
        tokens = row["passage"].split(" ")
        if "n_words" in row and _parse_int(row["n_words"], passages_path, line, "n_words") != len(tokens):
            raise HarnessError(
                f"{passages_path}: line {line}: field 'n_words': {row['n_words']} but the passage has "
                f"{len(tokens)} space-separated words"
            )
        tokens_by_text[text_id] = tokens

    _, rows = _csv_rows(read_utf8(responses_path, "data file"), responses_path, RESPONSES_COLUMNS)
    positions: dict[tuple[int, int], Position] = {}
    totals: dict[tuple[int, int], tuple[int, int]] = {}  # key -> (stated total, line it was stated on)
    for line, row in rows:
        text_id = _parse_int(row["text_id"], responses_path, line, "text_id")
        word_num = _parse_int(row["word_num"], responses_path, line, "word_num")
        key = (text_id, word_num)
        pos = positions.get(key)
        if pos is None:
            if text_id not in tokens_by_text:
                raise HarnessError(f"{responses_path}: line {line}: field 'text_id': {text_id} not in {passages_path}")
            context, target = _position_tokens(tokens_by_text[text_id], word_num, responses_path, line, "word_num")
            where = f"{responses_path}: line {line}"
            pos = positions[key] = Position(text_id, word_num, context, target, where=where)
        if row["target_word"] != pos.target_raw:
            raise HarnessError(
                f"{responses_path}: line {line}: field 'target_word': {shorten_repr(row['target_word'])} but word "
                f"{word_num} of passage {text_id} in {passages_path.name} is {shorten_repr(pos.target_raw)}"
            )
        response = row["response"]
        count = _count(row["response_count"], responses_path, line, "response_count")
        if not _is_missing(response):
            pos.responses[response] = pos.responses.get(response, 0) + count
        if row.get("total_response_count", "").strip():
            total = _count(row["total_response_count"], responses_path, line, "total_response_count")
            totals.setdefault(key, (total, line))
    for key, (total, line) in totals.items():
        actual = sum(positions[key].responses.values())
        if total != actual:
            raise HarnessError(
                f"{responses_path}: line {line}: field 'total_response_count': {total} is not the sum of the "
                f"position's response counts ({actual})"
            )
    return list(positions.values())
