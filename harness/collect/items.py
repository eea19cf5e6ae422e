"""A study's items: what one participant does in one go (a passage, a sentence, a text of the guessing game, a
which-one round), made once from the study's texts and kept in the database, so that a restarted server serves
exactly the items it served before.

An item has ``n_steps`` steps (a passage cloze: one per word guessed); ``view`` is what the participant's page
shows at a step and ``target`` what the true answer was, shown as feedback after the answer is stored.

Why a texts file's cells may be as long as the file (``MAX_TEXTS_BYTES``): a passage is one cell of a CSV or TSV
file, one string of a JSON line or one line of a .txt file, and a passage longer than the csv module's own field
limit (128 KiB) read from a .txt file must read from a CSV too. The limit is raised for the read only and put back
after, and the file is read in strict quoting, so a quote never closed is an error naming its line rather than the
rest of the file taken as one passage; every error of the csv module is one line naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.collect.study import CatchItem, Study
from harness.data.tables.file_rows import csv_records
from harness.errors import HarnessError, shorten_repr
from harness.files import decode_utf8, read_bytes
from harness.options import positive_int

#: Item roles: ``main`` items are assigned for coverage and exported; ``practice`` items come first and are never
#: exported; ``catch`` items are attention checks shown between main items.
ROLES = ("main", "practice", "catch")
MAX_TEXTS_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Text:
    """One text of the study: its id, the text, and how many people should see it (None: the study's number)."""

    text_id: str
    text: str
    participants: int | None = None


@dataclass(frozen=True)
class Item:
    """One item. ``payload`` is JSON (stored as it is); its layout depends on the study kind and the role."""

    item_id: str
    role: str
    payload: dict[str, Any]
    n_steps: int


# ------------------------------------------------------------------------------------------------ reading texts


def read_texts(study: Study, data_dir: str | None) -> list[Text]:
    """The study's texts, in the file's order; ids must be unique and texts non-empty."""
    source = study.texts
    if source.task is not None:
        pairs = [Text(text_id, text) for text_id, text in texts_from_task(source.task, data_dir)]
        where = f"task {source.task}"
    else:
        assert source.file is not None
        pairs = _texts_from_file(source.file, source.id_field, source.text_field, source.participants_field)
        where = str(source.file)
    seen: set[str] = set()
    for entry in pairs:
        if entry.text_id in seen:
            raise HarnessError(f"{where}: text id {shorten_repr(entry.text_id)} is given twice")
        seen.add(entry.text_id)
        if not entry.text.strip():
            raise HarnessError(f"{where}: text {shorten_repr(entry.text_id)} is empty")
    if not pairs:
        raise HarnessError(f"{where}: no texts")
    return pairs[: source.limit] if source.limit else pairs


def _texts_from_file(path: Path, id_field: str, text_field: str, participants_field: str | None) -> list[Text]:
    content = decode_utf8(read_bytes(path, "texts file", MAX_TEXTS_BYTES), path)
    suffix = path.suffix.lower()
    if suffix == ".txt":
        lines = [(i, line.strip()) for i, line in enumerate(content.splitlines(), start=1)]
        return [Text(str(i), line) for i, line in lines if line]
    rows: list[tuple[int, Any]] = []
    if suffix in (".jsonl", ".ndjson"):
        for number, line in enumerate(content.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append((number, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise HarnessError(f"{path}: line {number}: not JSON ({exc.msg})") from None
    elif suffix in (".csv", ".tsv"):
        rows = _csv_records(path, content, "\t" if suffix == ".tsv" else ",")
    else:
        raise HarnessError(f"{path}: expected a .csv, .tsv, .jsonl or .txt texts file")
    pairs = []
    for number, row in rows:
        if not isinstance(row, dict):
            raise HarnessError(f"{path}: line {number}: expected an object with '{id_field}' and '{text_field}'")
        for name in (id_field, text_field, participants_field):
            if name and row.get(name) in (None, ""):
                raise HarnessError(f"{path}: line {number}: field '{name}': missing")
        wanted = None
        if participants_field:
            try:
                wanted = positive_int(row[participants_field])
            except ValueError as exc:
                raise HarnessError(f"{path}: line {number}: field '{participants_field}': {exc}") from None
        pairs.append(Text(str(row[id_field]).strip(), str(row[text_field]).strip(), wanted))
    return pairs


def _csv_records(path: Path, content: str, delimiter: str) -> list[tuple[int, Any]]:
    """A CSV or TSV texts file's rows as ``(first line, {column: cell})``, blank lines skipped, the header the first
    row; a row's missing cells are absent and its extra cells ignored (as ``csv.DictReader`` reads them). Records
    come from the tables' reader (``csv_records``), in strict quoting, cells as long as the file may be."""
    fmt = "tsv" if delimiter == "\t" else "csv"
    records = csv_records(path, content, delimiter, fmt, strict=True, max_cell=MAX_TEXTS_BYTES)
    header: list[str] | None = None
    rows: list[tuple[int, Any]] = []
    for first, record in records:
        if header is None:
            header = record
        else:
            rows.append((first, dict(zip(header, record, strict=False))))
    return rows


def texts_from_task(task_name: str, data_dir: str | None) -> list[tuple[str, str]]:
    """A task's texts, read by its own loader: cloze positions grouped into passages by ``meta.text_id`` (the
    longest context plus its word: the passage up to its last cloze position), other cloze positions as their
    sentence, generation sources as they are, multiple-choice items as their text."""
    from harness.data.loaders import resolve_data_dir
    from harness.instances import ChoiceInstance, ClozeInstance, GenerationInstance
    from harness.registry.manager import get_registry
    from harness.registry.task_loading import resolve_tasks
    from harness.run.task_data import load_task_data

    registry = get_registry()
    task = resolve_tasks([task_name], {}, registry, expand_decoding=False)[0]
    instances = load_task_data(task, registry, resolve_data_dir(data_dir)[0], None).instances
    passages: dict[str, tuple[int, str]] = {}
    pairs: list[tuple[str, str]] = []
    for inst in instances:
        if isinstance(inst, ClozeInstance):
            sentence = f"{inst.context} {inst.target_raw or inst.target}".strip()
            text_id = inst.meta.get("text_id")
            if text_id is None:
                pairs.append((inst.id, sentence))
                continue
            key = str(text_id)
            if key not in passages or len(sentence) > passages[key][0]:
                passages[key] = (len(sentence), sentence)
        elif isinstance(inst, GenerationInstance):
            pairs.append((inst.id, inst.source))
        elif isinstance(inst, ChoiceInstance):
            pairs.append((inst.id, inst.scenario))
    return pairs + [(key, sentence) for key, (_, sentence) in passages.items()]


# ------------------------------------------------------------------------------------------------ building items


def build_items(study: Study, texts: Sequence[Text], prepare_game: GamePreparer | None = None) -> list[Item]:
    """Every item of the study: practice first, then the main items, then the attention checks.

    ``prepare_game`` makes the games' items (it needs the study's model: ``harness.collect.games``)."""
    if study.is_game:
        if prepare_game is None:
            raise HarnessError(f"{study.path}: the {study.kind} needs its model to prepare its items")
        return prepare_game(study, texts)
    items = [_practice_item(study, f"practice-{i}", p) for i, p in enumerate(study.practice)]
    for entry in texts:
        text_id, words = entry.text_id, entry.text.split()
        target_n = {"participants": entry.participants} if entry.participants else {}
        if study.kind == "passage_cloze":
            if len(words) < study.first_word:
                raise HarnessError(
                    f"{study.texts.describe()}: text {shorten_repr(text_id)}: fewer than {study.first_word} words "
                    f"(the study's first_word)"
                )
            items.append(_words_item(text_id, "main", words, study.first_word, **target_n))
        else:
            if len(words) < 2:
                raise HarnessError(
                    f"{study.texts.describe()}: text {shorten_repr(text_id)}: a sentence needs at least two words"
                )
            items.append(_words_item(text_id, "main", words, len(words), **target_n))
    items += [catch_item(f"check-{i}", c) for i, c in enumerate(study.attention_checks)]
    return items


#: Makes a game's items from the study and its texts (it loads the study's model).
GamePreparer = Callable[[Study, Sequence[Text]], list[Item]]


def _words_item(item_id: str, role: str, words: list[str], first: int, **extra: Any) -> Item:
    """A cloze item: one step per word guessed, from word number ``first`` to the last (a sentence: the last)."""
    payload = {"text_id": item_id, "words": words, "first": first, **extra}
    return Item(item_id, role, payload, len(words) - first + 1)


def _practice_item(study: Study, item_id: str, practice: CatchItem) -> Item:
    """A cloze practice text, played as the study's items are (a passage from ``first_word``, at least word 2)."""
    words = practice.text.split()
    if len(words) < 2:
        raise HarnessError(f"{study.path}: practice item {item_id}: needs at least two words")
    first = max(min(study.first_word, len(words)), 2) if study.kind == "passage_cloze" else len(words)
    return _words_item(item_id, "practice", words, first)


def catch_item(item_id: str, check: CatchItem) -> Item:
    """An attention check: one step. Which-one checks carry their two tokens; the others their accepted answers."""
    payload: dict[str, Any]
    if check.true_token:
        payload = {"context": check.text, "true_token": check.true_token, "sampled_token": check.sampled_token}
    else:
        payload = {"context": check.text, "answers": list(check.answers)}
    return Item(item_id, "catch", payload, 1)


# ------------------------------------------------------------------------------------------------ steps


def view(item: Item, step: int) -> dict[str, Any]:
    """What the participant's page shows at ``step``: the text so far (``context``, or ``tokens`` for the
    next-token game so token boundaries can be drawn), or the two tokens of a which-one round."""
    p = item.payload
    if "words" in p:  # cloze kinds, and their practice items
        word_num = p["first"] + step
        return {"context": " ".join(p["words"][: word_num - 1]), "position": word_num}
    if "tokens" in p:  # the next-token game
        index = p["positions"][step]
        return {"tokens": p["tokens"][:index], "position": index}
    if "true_token" in p:  # which-one rounds and which-one checks: the order is the server's (per participant)
        return {"context": p["context"], "pair": [p["true_token"], p["sampled_token"]]}
    return {"context": p["context"]}  # a cloze or next-token attention check


def target(item: Item, step: int) -> str | None:
    """The true answer at ``step`` (shown after the answer is stored); None for attention checks and rounds."""
    p = item.payload
    if "words" in p:
        return str(p["words"][p["first"] + step - 1])
    if "tokens" in p:
        return str(p["tokens"][p["positions"][step]])
    return None


def passes_check(item: Item, answer: str, judgment: float | None) -> bool:
    """Whether an attention check's answer is right: a listed word (case-folded, outer space ignored), or for the
    which-one game a judgment giving the true token more than 50%."""
    p = item.payload
    if "true_token" in p:
        return judgment is not None and judgment > 0.5
    return answer.strip().casefold() in {a.strip().casefold() for a in p.get("answers", [])}
