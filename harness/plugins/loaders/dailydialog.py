"""DailyDialog++ (Sai et al., 2020): dialogue contexts with 5 human-written relevant next turns each.

The release (``iitmnlp/DailyDialog-plusplus``, ``dataset/{dev,test}.json``) is JSON Lines, one context per line,
with ``id``, ``context`` (the turns, earliest first), ``positive_responses`` (5 relevant replies written by
people: the multiple human references) and two lists of negative responses, which are not read. Each context
becomes a :class:`GenerationInstance` with ``turns`` and an empty ``source``.

For ``dev``, the release also has ``dataset/test-v1.0.json`` (the website's SQuAD-style file), which groups the
same 1,028 contexts under 10 DailyDialog topics. When it is there, each dev instance gets ``meta["topic"]``, so
results can be broken down by topic. Its response ids are ``<dev id>p<k>``; a topic is attached only where the
file's positive responses equal the dev record's, so a mismatched copy can never label the wrong context
(``source["n_topic_mismatches"]`` counts any that were skipped).

Text is kept as released apart from stripping whitespace at both ends (no string in the release has any). No
download is attempted: the provenance notes name the repository, not a download address.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.api import (
    DataNotFoundError,
    GenerationInstance,
    HarnessError,
    Instance,
    LoadedData,
    Option,
    Options,
    hash_files,
    one_of,
    shorten_repr,
    takes_options,
)
from harness.plugins.loaders.option_types import folder
from harness.plugins.loaders.text_files import file_lines, json_value, jsonl_records, read_utf8

LOADER = "dailydialog_pp"
DEFAULT_PATH = "dailydialog-plusplus"
SPLITS = ("dev", "test")
TOPICS_FILE = "test-v1.0.json"
RESPONSE_ID_RE = re.compile(r"^(\d+)([pra])(\d+)$")
REPO_URL = "https://github.com/iitmnlp/DailyDialog-plusplus"
#: The ``data:`` options of a DailyDialog++ task.
OPTIONS = Options(
    Option("path", folder, DEFAULT_PATH, "folder under the data root", "str"),
    Option("split", one_of(*SPLITS), "dev", "dev (the study's) or test", " | ".join(SPLITS)),
)


@takes_options(OPTIONS)
def load_dailydialog_pp(options: Mapping[str, Any], data_dir: Path) -> LoadedData:
    """Load one DailyDialog++ split from ``data_dir / path / dataset``.

    Options: ``path`` (default ``dailydialog-plusplus``); ``split`` (``dev``, the default and the split
    Giulianelli et al. (2023) used, or ``test``). ``train`` is not offered: it is the split models are tuned
    on, and its file was not available where this loader was written, so it could not be checked.
    """
    split, sub = options["split"], options["path"]
    path = data_dir / sub / "dataset" / f"{split}.json"
    if not path.is_file():
        raise DataNotFoundError(
            f"DailyDialog++ {split} data not found: looked for {path}. Get it with 'harness data fetch "
            f"dailydialog-plusplus' (official dataset/{split}.json of {REPO_URL}), or use --data-dir DIR or "
            f"HARNESS_DATA_DIR=DIR (files in DIR/{sub}/dataset/)."
        )

    records = _read_split(path)
    files = [path]
    source_info: dict[str, Any] = {"dataset": "dailydialog-plusplus", "split": split, "format": "official"}
    topics: dict[int, str] = {}
    topics_path = path.parent / TOPICS_FILE
    if split == "dev" and topics_path.is_file():
        positives = {number: refs for number, _, refs in records}
        topics, mismatches = _read_topics(topics_path, positives)
        files.append(topics_path)
        source_info["n_with_topic"] = len(topics)
        source_info["n_topic_mismatches"] = mismatches

    instances: list[Instance] = [
        GenerationInstance(
            id=str(number),
            source="",
            turns=turns,
            references=refs,
            language="en",
            meta={"topic": topics[number]} if number in topics else {},
        )
        for number, turns, refs in records
    ]
    source_info["files"] = [str(p) for p in files]
    source_info["n_contexts"] = len(instances)
    return LoadedData(instances=instances, data_hash=hash_files(files), source=source_info)


# ------------------------------------------------------------------------------------------------------ readers

_Record = tuple[int, tuple[str, ...], tuple[str, ...]]  # id, context turns, positive responses


def _read_split(path: Path) -> list[_Record]:
    """``{split}.json``: one JSON object per line. Only ``id``, ``context`` and ``positive_responses`` are read."""
    records: list[_Record] = []
    for where, record in jsonl_records(path, file_lines(path), ("id", "context", "positive_responses")):
        number = record["id"]
        turns = _utterances(record["context"], where, "context")
        refs = _utterances(record["positive_responses"], where, "positive_responses")
        records.append((number, turns, refs))
    return records


def _utterances(value: object, where: str, name: str) -> tuple[str, ...]:
    """A non-empty list of non-empty strings, each stripped at both ends."""
    if not isinstance(value, list) or not value:
        raise HarnessError(
            f"{where}: field '{name}': expected a non-empty list of strings, got {shorten_repr(value, 60)}"
        )
    out = []
    for k, item in enumerate(value):
        if not isinstance(item, str):
            raise HarnessError(f"{where}: field '{name}[{k}]': expected a string, got {shorten_repr(item, 60)}")
        text = item.strip()
        if not text:
            raise HarnessError(f"{where}: field '{name}[{k}]': empty utterance")
        out.append(text)
    return tuple(out)


def _read_topics(path: Path, positives: dict[int, tuple[str, ...]]) -> tuple[dict[int, str], int]:
    """dev id -> topic title from the website file, and how many of its contexts did not match a dev record.

    The file is ``{"data": [{"title": topic, "paragraphs": [{"context": ..., "responses": [{"text", "id",
    "label"}]}]}]}``; the number before ``p``/``a``/``r`` in a response id is the dev record's id.
    """
    text = read_utf8(path, "data file")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError):  # a 5,000-digit number, or nesting too deep
        document = json_value(text, str(path))
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise HarnessError(f"{path}: field 'data': expected a list of topics")
    topics: dict[int, str] = {}
    mismatches = 0
    for t, topic in enumerate(data):
        where = f"{path}: field 'data[{t}]"
        if not isinstance(topic, dict) or not isinstance(topic.get("title"), str):
            raise HarnessError(f"{where}.title': expected a string")
        paragraphs = topic.get("paragraphs")
        if not isinstance(paragraphs, list):
            raise HarnessError(f"{where}.paragraphs': expected a list")
        for p, paragraph in enumerate(paragraphs):
            responses = paragraph.get("responses") if isinstance(paragraph, dict) else None
            if not isinstance(responses, list) or not responses:
                raise HarnessError(f"{where}.paragraphs[{p}].responses': expected a non-empty list")
            ids: set[int] = set()
            positive: list[str] = []
            for r, response in enumerate(responses):
                field = f"{where}.paragraphs[{p}].responses[{r}]"
                if not isinstance(response, dict) or not all(
                    isinstance(response.get(k), str) for k in ("text", "id", "label")
                ):
                    raise HarnessError(f"{field}': expected an object with string 'text', 'id' and 'label'")
                match = RESPONSE_ID_RE.match(response["id"])
                if match is None:
                    raise HarnessError(
                        f"{field}.id': expected '<context id>p|a|r<k>', got {shorten_repr(response['id'])}"
                    )
                ids.add(int(match.group(1)))
                if response["label"].startswith("1"):
                    positive.append(response["text"].strip())
            number = ids.pop() if len(ids) == 1 else None
            if number is not None and positives.get(number) == tuple(positive):
                topics[number] = topic["title"]
            else:
                mismatches += 1
    return topics, mismatches
