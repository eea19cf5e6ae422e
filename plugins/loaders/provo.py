"""Provo Corpus predictability norms (Luke & Christianson, 2018) as next-word cloze instances.

Two kinds of input are read, so that the harness works both with the official release and with the derived
tables that are all some environments have (see ``docs/data.md``):

* the official OSF release ``Provo_Corpus-Predictability_Norms.csv`` (or the seed repository's TSV copy
  ``Provo_Corpus.tsv``): one row per position and distinct response, with the passage text on every row;
* the derived tables ``provo_positions.jsonl`` (one record per position) or ``provo_cloze_responses.csv`` +
  ``provo_passages.csv`` (long format), which hold the human data the seed paper (Ilia & Aziz, 2024) used.

The official file is turned into positions exactly as the seed code ``preprocess_provo_corpus()`` did, so both
kinds of input give the same instances: responses are summed per (Text_ID, Word_Number, Response), the context
is the first ``Word_Number - 1`` space-separated tokens of the passage and the target is token ``Word_Number``.
Human responses are then normalised with :func:`harness.text.normalise_word`, the function model words go
through, so that the two are comparable.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from harness.data import LoadedData, downloads_allowed, hash_files, takes_options
from harness.errors import DataNotFoundError, HarnessError
from harness.instances import ClozeInstance, Instance
from harness.options import Option, Options, one_of, optional
from harness.text import normalise_word
from plugins.loaders import downloads
from plugins.loaders.option_types import count, flag, folder, integers

OFFICIAL_CSV = "Provo_Corpus-Predictability_Norms.csv"
SEED_TSV = "Provo_Corpus.tsv"
POSITIONS_JSONL = "provo_positions.jsonl"
RESPONSES_CSV = "provo_cloze_responses.csv"
PASSAGES_CSV = "provo_passages.csv"

OSF_PROJECT_URL = "https://osf.io/sjefs/"
#: OSF file GUID of ``Provo_Corpus-Predictability_Norms.csv`` in the project above. Not checked from this
#: environment (no network); it is the address several public pipelines fetch the norms from, e.g.
#: ``bnicenboim/pangoling`` (``data-raw/DATASET.R``) and two Makefile/shell set-ups that save it as
#: ``provo_norms.csv``. The header check in :func:`_download_official` guards against it serving something else.
OSF_NORMS_URL = "https://osf.io/e4a2m/download"
DOWNLOAD_TIMEOUT_S = 20.0  # per socket operation
DOWNLOAD_DEADLINE_S = 180.0  # whole transfer; the file is a few tens of MB
DOWNLOAD_MAX_BYTES = 200 * 1024 * 1024

FORMATS = ("auto", "official", "positions_jsonl", "long_csv")
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

#: Characters that are Mac-Roman punctuation bytes read as Latin-1 (``doesnÕt`` is ``doesn’t``). Kept by default,
#: as the seed did; ``repair_mac_roman: true`` maps them back.
MAC_ROMAN_REPAIRS = str.maketrans({"Õ": "’", "Ô": "‘", "Ò": "“", "Ó": "”", "Ñ": "—", "Ð": "–"})


@dataclass
class _Position:
    """One cloze position as the file has it, before normalisation (responses keep their printed form)."""

    text_id: int
    word_num: int
    context: str
    target_raw: str
    responses: dict[str, int] = field(default_factory=dict)
    n_missing: int = 0


#: The ``data:`` options of a Provo task.
OPTIONS = Options(
    Option("path", folder, "provo", "folder under the data root", "str"),
    Option("format", one_of(*FORMATS), "auto", "auto: the first format found", " | ".join(FORMATS)),
    Option("text_ids", optional(integers), None, "passage ids to keep (null: all)", "list of int"),
    Option("max_word_num", optional(count), None, "keep positions up to this word number (null: all)", "int >= 1"),
    Option("repair_mac_roman", flag, False, "map Mac-Roman artefacts such as Õ back to punctuation", "bool"),
)

# --------------------------------------------------------------------------------------------------- entry point


@takes_options(OPTIONS)
def load_provo(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load the Provo cloze positions found under ``data_dir / options["path"]`` (default ``provo``).

    Options: ``path``; ``format`` (``auto``, ``official``, ``positions_jsonl``, ``long_csv``; ``auto`` prefers
    the official release, then the JSONL, then the long CSV); ``text_ids`` (list of passage ids to keep);
    ``max_word_num`` (keep positions up to this word number; word 1 never has cloze data);
    ``repair_mac_roman`` (map ``Õ`` and friends back to the punctuation they were, default false).
    """
    fmt = options.get("format", "auto")
    if fmt not in FORMATS:
        raise HarnessError(f"provo data option 'format': expected one of {', '.join(FORMATS)}, got {fmt!r}")
    text_ids = _int_list_option(options, "text_ids")
    max_word_num = _int_option(options, "max_word_num")
    repair = options.get("repair_mac_roman", False)
    if not isinstance(repair, bool):
        raise HarnessError(f"provo data option 'repair_mac_roman': expected true or false, got {repair!r}")
    root = data_dir / str(options.get("path", "provo"))

    downloaded_from: str | None = None
    chosen = _choose_format(fmt, root)
    download_note = ""
    if chosen is None and fmt in ("auto", "official"):
        if downloads_allowed():
            try:
                _download_official(root)
                downloaded_from = OSF_NORMS_URL
                chosen = ("official", [root / OFFICIAL_CSV])
            except (OSError, HarnessError) as exc:  # urllib's errors are OSErrors
                download_note = f" Downloading {OSF_NORMS_URL} failed ({downloads.one_line(exc)})."
        else:
            download_note = " Downloads are off (HARNESS_OFFLINE is set)."
    if chosen is None:
        raise DataNotFoundError(_not_found_message(fmt, root, options.get("path", "provo")) + download_note)

    found_format, files = chosen
    source: dict[str, Any] = {"dataset": "provo", "format": found_format, "files": [str(p) for p in files]}
    if found_format == "official":
        positions = _read_official(files[0], source)
    elif found_format == "positions_jsonl":
        positions = _read_positions_jsonl(files[0])
    else:
        positions = _read_long_csv(files[0], files[1])
    if downloaded_from:
        source["downloaded_from"] = downloaded_from

    source["n_positions_in_file"] = len(positions)
    present_ids = {p.text_id for p in positions}
    if text_ids is not None:
        unknown = sorted(set(text_ids) - present_ids)
        if unknown:
            raise HarnessError(f"provo data option 'text_ids': no passage with id {unknown} in {files[0]}")
        positions = [p for p in positions if p.text_id in set(text_ids)]
        source["text_ids"] = sorted(set(text_ids))
    if max_word_num is not None:
        positions = [p for p in positions if p.word_num <= max_word_num]
        source["max_word_num"] = max_word_num
    source["repair_mac_roman"] = repair

    positions.sort(key=lambda p: (p.text_id, p.word_num))
    instances: list[Instance] = [_to_instance(p, repair) for p in positions]
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source)


def _to_instance(pos: _Position, repair: bool) -> ClozeInstance:
    """Normalise one position. Responses that normalise to the same word are merged; empty ones are dropped,
    because a model word can never be empty, so they could never be matched."""
    fix = (lambda s: s.translate(MAC_ROMAN_REPAIRS)) if repair else (lambda s: s)
    counts: dict[str, int] = {}
    dropped = 0
    for response, n in pos.responses.items():
        word = normalise_word(fix(response))
        if word:
            counts[word] = counts.get(word, 0) + n
        else:
            dropped += n
    ordered = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    target_raw = fix(pos.target_raw)
    return ClozeInstance(
        id=f"{pos.text_id}-{pos.word_num}",
        context=fix(pos.context),
        target=normalise_word(target_raw),
        target_raw=target_raw,
        human_counts=ordered,
        meta={
            "text_id": pos.text_id,
            "word_num": pos.word_num,
            "n_human_raw": sum(pos.responses.values()),
            "n_human_dropped": dropped,
            "n_human_missing": pos.n_missing,
            "n_unique_raw": len(pos.responses),
        },
    )


# ------------------------------------------------------------------------------------------------ finding files


def _candidates(root: Path) -> dict[str, list[Path]]:
    return {
        "official": [root / OFFICIAL_CSV, root / SEED_TSV],
        "positions_jsonl": [root / POSITIONS_JSONL],
        "long_csv": [root / RESPONSES_CSV, root / PASSAGES_CSV],
    }


def _choose_format(fmt: str, root: Path) -> tuple[str, list[Path]] | None:
    """The format to read and its files, or None. The official CSV wins over the TSV copy of it."""
    cands = _candidates(root)
    order = ["official", "positions_jsonl", "long_csv"] if fmt == "auto" else [fmt]
    for name in order:
        paths = cands[name]
        if name == "official":
            for p in paths:
                if p.is_file():
                    return name, [p]
        elif all(p.is_file() for p in paths):
            return name, paths
    return None


def _not_found_message(fmt: str, root: Path, sub: object) -> str:
    cands = _candidates(root)
    order = ["official", "positions_jsonl", "long_csv"] if fmt == "auto" else [fmt]
    looked = []
    for name in order:
        paths = cands[name]
        looked.append(" or ".join(map(str, paths)) if name == "official" else " + ".join(map(str, paths)))
    return (
        f"Provo data not found (format {fmt}): looked for {'; '.join(looked)}. "
        f"Point the harness at a copy with --data-dir DIR or HARNESS_DATA_DIR=DIR, with the files in DIR/{sub}/. "
        f"The official release is {OFFICIAL_CSV} in the OSF project {OSF_PROJECT_URL} ({OSF_NORMS_URL})."
    )


# ---------------------------------------------------------------------------------------------------- download


def _open_url(url: str, timeout: float) -> BinaryIO:
    """Open ``url`` for reading; a seam so tests can serve bytes without a network."""
    return downloads.open_url(url, timeout, "variability-harness (provo loader)")


def _download_official(root: Path) -> Path:
    """Fetch the official norms CSV into ``root``, atomically: a partial or wrong file never takes its name."""
    return downloads.fetch_atomic(
        OSF_NORMS_URL,
        root / OFFICIAL_CSV,
        opener=_open_url,
        timeout=DOWNLOAD_TIMEOUT_S,
        max_bytes=DOWNLOAD_MAX_BYTES,
        deadline=downloads.Deadline.after(DOWNLOAD_DEADLINE_S),
        what="the norms file",
        check=_check_norms_header,
        prefix=".provo-download-",
        chunk_size=1 << 16,
    )


def _check_norms_header(path: Path) -> None:
    """OSF answers some failures with an HTML page and status 200, so the header decides what was fetched."""
    text, _ = _decode(path.read_bytes()[:65536])
    header = _header_fields(text.splitlines()[0] if text else "")
    missing = [c for c in OFFICIAL_COLUMNS if c not in header]
    if missing:
        raise HarnessError(f"the response is not the norms CSV (no column {', '.join(missing)})")


# ------------------------------------------------------------------------------------------------------ readers


def _decode(data: bytes) -> tuple[str, str]:
    """Text and encoding name. The OSF file is not UTF-8 (Windows-1252 per the pipelines that read it, with
    Mac-Roman bytes inside); cp1252 before Latin-1 so that 0x80-0x9F become punctuation, not control chars."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding), "utf-8" if encoding == "utf-8-sig" else encoding
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1"), "latin-1"


def _header_fields(line: str) -> list[str]:
    delimiter = "\t" if line.count("\t") > line.count(",") else ","
    return [c.strip().lstrip("\ufeff") for c in next(csv.reader([line], delimiter=delimiter), [])]


def _parse_int(value: str | None, path: Path, line: int, column: str) -> int:
    """An integer field; ``3.0`` is accepted because spreadsheet and pandas exports write counts that way."""
    text = (value or "").strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if number.is_integer():
        return int(number)
    raise HarnessError(f"{path}: line {line}: field '{column}': expected an integer, got {value!r}")


def _csv_rows(text: str, path: Path, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and (line number, row) pairs; a missing column or a short row is an error naming file and line."""
    first_line = text.split("\n", 1)[0]
    delimiter = "\t" if first_line.count("\t") > first_line.count(",") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = [c.strip().lstrip("\ufeff") for c in next(reader, [])]
    missing = [c for c in required if c not in header]
    if missing:
        raise HarnessError(f"{path}: line 1: missing column '{missing[0]}' (columns: {', '.join(header) or 'none'})")
    index = {name: i for i, name in enumerate(header)}
    rows: list[tuple[int, dict[str, str]]] = []
    for values in reader:
        if not values or all(not v.strip() for v in values):
            continue
        for name in required:
            if index[name] >= len(values):
                raise HarnessError(f"{path}: line {reader.line_num}: field '{name}': missing (row too short)")
        row = {name: values[i] for name, i in index.items() if i < len(values)}
        rows.append((reader.line_num, row))
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


def _read_official(path: Path, source: dict[str, Any]) -> list[_Position]:
    """The OSF norms (CSV) or the seed's TSV copy, grouped as the seed's ``preprocess_provo_corpus()`` did."""
    text, encoding = _decode(path.read_bytes())
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
            count = 0 if _is_missing(count_text) else _parse_int(count_text, path, line, "Response_Count")
            missing[key] = missing.get(key, 0) + count
            continue
        count = _parse_int(row["Response_Count"], path, line, "Response_Count")
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
        positions.append(_Position(text_id, word_num, context, target, bucket, missing.get(key, 0)))
    if mismatches:
        # The norms' own Word column is a diagnostic only (it has spreadsheet artefacts such as TRUE for "true").
        source["word_column_mismatches"] = {"count": len(mismatches), "first": sorted(mismatches)[:20]}
    return positions


def _read_positions_jsonl(path: Path) -> list[_Position]:
    """``provo_positions.jsonl``: one JSON object per position with its context and response counts."""
    positions: dict[tuple[int, int], _Position] = {}
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarnessError(f"{path}: line {line_no}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise HarnessError(f"{path}: line {line_no}: expected a JSON object")
            for name in POSITIONS_FIELDS:
                if name not in record:
                    raise HarnessError(f"{path}: line {line_no}: field '{name}': missing")
            text_id = _json_int(record["text_id"], path, line_no, "text_id")
            word_num = _json_int(record["word_num"], path, line_no, "word_num")
            for name in ("context", "target_word"):
                if not isinstance(record[name], str):
                    raise HarnessError(f"{path}: line {line_no}: field '{name}': expected a string")
            human = record["human_responses"]
            if not isinstance(human, dict):
                raise HarnessError(f"{path}: line {line_no}: field 'human_responses': expected an object")
            bucket: dict[str, int] = {}
            for response, count in human.items():
                n = _json_int(count, path, line_no, f"human_responses.{response}")
                if not _is_missing(response):
                    bucket[response] = bucket.get(response, 0) + n
            if "total_response_count" in record:
                total = _json_int(record["total_response_count"], path, line_no, "total_response_count")
                if total != sum(bucket.values()):
                    raise HarnessError(
                        f"{path}: line {line_no}: field 'total_response_count': {total} is not the sum of "
                        f"'human_responses' ({sum(bucket.values())})"
                    )
            key = (text_id, word_num)
            if key in positions:
                raise HarnessError(f"{path}: line {line_no}: field 'word_num': position {text_id}-{word_num} repeated")
            positions[key] = _Position(text_id, word_num, record["context"], record["target_word"], bucket)
    return list(positions.values())


def _json_int(value: object, path: Path, line: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise HarnessError(f"{path}: line {line}: field '{name}': expected an integer, got {value!r}")
    return value


def _read_long_csv(responses_path: Path, passages_path: Path) -> list[_Position]:
    """``provo_cloze_responses.csv`` (one row per response) with contexts rebuilt from ``provo_passages.csv``."""
    _, passage_rows = _csv_rows(passages_path.read_text(encoding="utf-8"), passages_path, PASSAGES_COLUMNS)
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

    _, rows = _csv_rows(responses_path.read_text(encoding="utf-8"), responses_path, RESPONSES_COLUMNS)
    positions: dict[tuple[int, int], _Position] = {}
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
            pos = positions[key] = _Position(text_id, word_num, context, target)
        if row["target_word"] != pos.target_raw:
            raise HarnessError(
                f"{responses_path}: line {line}: field 'target_word': {row['target_word']!r} but word {word_num} of "
                f"passage {text_id} in {passages_path.name} is {pos.target_raw!r}"
            )
        response = row["response"]
        count = _parse_int(row["response_count"], responses_path, line, "response_count")
        if not _is_missing(response):
            pos.responses[response] = pos.responses.get(response, 0) + count
        if row.get("total_response_count", "").strip():
            total = _parse_int(row["total_response_count"], responses_path, line, "total_response_count")
            totals.setdefault(key, (total, line))
    for key, (total, line) in totals.items():
        actual = sum(positions[key].responses.values())
        if total != actual:
            raise HarnessError(
                f"{responses_path}: line {line}: field 'total_response_count': {total} is not the sum of the "
                f"position's response counts ({actual})"
            )
    return list(positions.values())


# ------------------------------------------------------------------------------------------------------ options


def _int_option(options: Mapping[str, Any], name: str) -> int | None:
    value = options.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HarnessError(f"provo data option '{name}': expected a positive integer, got {value!r}")
    return value


def _int_list_option(options: Mapping[str, Any], name: str) -> list[int] | None:
    value = options.get(name)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise HarnessError(f"provo data option '{name}': expected a list of integers, got {value!r}")
    return list(value)
