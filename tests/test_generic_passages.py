"""``generic_cloze``'s ``passages`` option: contexts and corpus words read from a study's passages (text files, a
mapping of text id to file, or a column), every bad position reported, and a task run end to end on them.

The passages are written here by hand: one clean copy, and one with what real copies carry (a byte order mark,
CRLF line ends, a non-breaking space, a stray NEL between two words, a zero-width space inside a word); both must
give the same contexts, character for character. The expected contexts are written out by hand below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.data.loaders import LoadedData
from harness.errors import HarnessError
from harness.plugins.loaders.generic.passages import tokens_of
from harness.plugins.loaders.generic.table import MAX_REPORTED
from harness.registry.manager import get_registry

CLEAN = {
    "1": "The old man walked to the harbour.\nHe paused — then smiled at the sea.\n",
    "2": "Rain fell all night.\n",
}
# The same passages as a careless copy: BOM, CRLF, NBSP for a space, NEL for a space, a zero-width space in a word.
DIRTY = {
    "1": "\ufeffThe old\u00a0man walked to the har\u200bbour.\r\nHe paused\u0085— then smiled at the sea.\r\n",
    "2": "\ufeffRain fell\r\nall night.\r\n",
}
# (text_id, word_num, target_word, {response: count}); word 11 of text 1 is "then" when every token counts.
POSITIONS = [
    (1, 3, "man", {"man": 6, "boy": 2}),
    (1, 7, "harbour", {"harbour": 5, "sea": 3}),
    (1, 11, "then", {"then": 4, "he": 4}),
    (2, 2, "fell", {"fell": 4, "came": 1}),
]
# By hand: the tokens before each word, joined by single spaces (the line end after "harbour." is one space).
CONTEXTS = {
    "1-3": "The old",
    "1-7": "The old man walked to the",
    "1-11": "The old man walked to the harbour. He paused —",
    "2-2": "Rain",
}


def write_positions(path: Path, positions: list[tuple[int, int, str, dict[str, int]]] = POSITIONS) -> Path:
    lines = ["text_id,word_num,target_word,response,n"]
    for text_id, word_num, word, counts in positions:
        lines += [f"{text_id},{word_num},{word},{response},{n}" for response, n in counts.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_passages(folder: Path, texts: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for ident, body in texts.items():
        (folder / f"text_{ident}.txt").write_bytes(body.encode("utf-8"))  # bytes: no newline translation


def options(**passages: Any) -> dict[str, Any]:
    return {
        "files": "study/positions.csv",
        "group_by": ["text_id", "word_num"],
        "id": "{{ text_id }}-{{ word_num }}",
        "passages": {"key": "text_id", "position": "word_num", **passages},
        "human": {"shape": "long", "responses": "response", "counts": "n"},
    }


def load(data_options: dict[str, Any], root: Path) -> LoadedData:
    return get_registry().loader("generic_cloze")(data_options, root)


def load_error(data_options: dict[str, Any], root: Path) -> str:
    with pytest.raises(HarnessError) as caught:
        load(data_options, root)
    return str(caught.value)


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """``study/positions.csv``, the clean passages in ``study/clean/`` and the careless copy in ``study/dirty/``."""
    write_positions(tmp_path / "study" / "positions.csv")
    write_passages(tmp_path / "study" / "clean", CLEAN)
    write_passages(tmp_path / "study" / "dirty", DIRTY)
    return tmp_path


def test_a_careless_copy_of_the_passages_gives_the_clean_copys_contexts(study: Path) -> None:
    clean = load(options(files="study/clean/*.txt", id="text_*.txt", word="target_word"), study)
    dirty = load(options(files="study/dirty/*.txt", id="text_*.txt", word="target_word"), study)
    assert {i.id: i.context for i in clean.instances} == CONTEXTS
    assert dirty.instances == clean.instances
    first = clean.instances[1]
    assert (first.id, first.target_raw, first.target) == ("1-7", "harbour.", "harbour")
    assert first.human_counts == {"harbour": 5, "sea": 3}
    # The passages' bytes are part of the data's identity; the source says what was read.
    assert dirty.data_hash != clean.data_hash
    assert clean.source["passages"] == {
        "files": [str(study / "study" / "clean" / "text_1.txt"), str(study / "study" / "clean" / "text_2.txt")],
        "counting": "whitespace",
        "n_passages": 2,
    }


def test_the_hash_changes_with_a_passage_files_bytes(study: Path) -> None:
    before = load(options(files="study/clean/*.txt", id="text_*.txt"), study).data_hash
    (study / "study" / "clean" / "text_2.txt").write_text("Rain fell all night long.\n")
    after = load(options(files="study/clean/*.txt", id="text_*.txt"), study)
    assert after.data_hash != before
    assert [i.context for i in after.instances] == list(CONTEXTS.values())  # the same words before each position


def test_tokens_treat_every_white_space_as_one_separator_and_drop_invisible_characters() -> None:
    text = "a\u3000b\u2028c\u2029d\te\rf\u00a0\u00a0g\u0085h wo\u200brd\u2060s \u200dx \U0001f469\u200d\U0001f4bb"
    assert tokens_of(text) == ("a", "b", "c", "d", "e", "f", "g", "h", "words", "x", "\U0001f469\u200d\U0001f4bb")


def test_the_alphanumeric_rule_skips_a_lone_dash_but_keeps_it_in_the_context(study: Path) -> None:
    # Word 10 is "—" when every token counts, "then" when only tokens with a letter or digit do.
    write_positions(study / "study" / "positions.csv", [(1, 10, "then", {"then": 3}), (1, 11, "smiled", {"ran": 1})])
    loaded = load(
        options(files="study/clean/*.txt", id="text_*.txt", counting="alphanumeric", word="target_word"), study
    )
    assert [(i.id, i.context, i.target_raw) for i in loaded.instances] == [
        ("1-10", "The old man walked to the harbour. He paused —", "then"),
        ("1-11", "The old man walked to the harbour. He paused — then", "smiled"),
    ]
    assert loaded.source["passages"]["counting"] == "alphanumeric"
    # Counting every token, the same rows point one word earlier: both are mismatches, each one line.
    message = load_error(options(files="study/clean/*.txt", id="text_*.txt", word="target_word"), study)
    positions = study / "study" / "positions.csv"
    assert message == (
        "loader 'generic_cloze': 2 bad rows:\n"
        f"{positions}: row 1: field 'passages.word': text 1 word 10: the passage has '—', the data 'then' "
        "(column 'target_word')\n"
        f"{positions}: row 2: field 'passages.word': text 1 word 11: the passage has 'then', the data 'smiled' "
        "(column 'target_word')"
    )


def test_a_mapping_of_text_id_to_file(study: Path) -> None:
    (study / "study" / "clean" / "text_1.txt").rename(study / "study" / "intro.txt")
    (study / "study" / "clean" / "text_2.txt").rename(study / "study" / "second.txt")
    loaded = load(options(files={1: "study/intro.txt", 2: "study/second.txt"}, word="target_word"), study)
    assert {i.id: i.context for i in loaded.instances} == CONTEXTS
    assert loaded.source["passages"]["files"] == [
        str(study / "study" / "intro.txt"),
        str(study / "study" / "second.txt"),
    ]


def test_the_passage_from_a_column_of_a_joined_table(study: Path) -> None:
    table = study / "study" / "passages.csv"
    cells = {k: v.replace('"', '""') for k, v in DIRTY.items()}  # CSV cells: the careless copy, newlines and all
    table.write_bytes(f'text_id,passage\n1,"{cells["1"]}"\n2,"{cells["2"]}"\n'.encode())
    data = {k: v for k, v in options(column="passage", word="target_word").items()}
    data["join"] = {"files": "study/passages.csv", "key": "text_id"}
    del data["passages"]["key"]
    loaded = load(data, study)
    assert {i.id: i.context for i in loaded.instances} == CONTEXTS
    assert loaded.source["passages"] == {"column": "passage", "counting": "whitespace", "n_passages": 2}
    # The passage column is in the table, so the table's hash (with the joined file's) is the data's hash.
    assert loaded.data_hash == load({**data, "passages": {**data["passages"], "word": None}}, study).data_hash


def test_an_unknown_text_id_and_a_position_beyond_the_passage_are_one_line_each(study: Path) -> None:
    write_positions(
        study / "study" / "positions.csv",
        [
            (2, 4, "night", {"night": 2}),
            (3, 1, "Snow", {"snow": 1}),
            (2, 5, "long", {"long": 1}),
            (1, 0, "x", {"y": 1}),
        ],
    )
    message = load_error(options(files="study/clean/*.txt", id="text_*.txt", word="target_word"), study)
    positions = study / "study" / "positions.csv"
    passage = study / "study" / "clean" / "text_2.txt"
    assert message == (
        "loader 'generic_cloze': 3 bad rows:\n"
        f"{positions}: row 2: field 'passages.key': text id '3' has no passage (passages: 1, 2; ids are compared "
        "as written: 01 is not 1)\n"
        f"{positions}: row 3: field 'passages.position': text 2 has no word 5: its words are 1 to 4 (counting: "
        f"whitespace; {passage})\n"
        f"{positions}: row 4: field 'passages.position': text 1 has no word 0: its words are 1 to 15 (counting: "
        f"whitespace; {study / 'study' / 'clean' / 'text_1.txt'})"
    )


def test_context_and_passages_are_exclusive_and_one_is_needed(study: Path) -> None:
    both = {**options(files="study/clean/*.txt", id="text_*.txt"), "context": "text_id"}
    assert load_error(both, study) == (
        "data options of loader 'generic_cloze': give 'context' or 'passages', not both (with 'passages' the "
        "context is the passage's words before the position)"
    )
    neither = {k: v for k, v in options().items() if k != "passages"}
    assert load_error(neither, study) == (
        "data options of loader 'generic_cloze': 'context' is required, or 'passages' to read it from the study's "
        "passages (see docs/your-data.md)"
    )
    no_key = options(files="study/clean/*.txt")
    del no_key["passages"]["key"]
    assert load_error(no_key, study) == (
        "data options of loader 'generic_cloze': option 'passages': 'key' is required with 'files': the rows' "
        "column naming the passage (its text id)"
    )


def test_passage_files_that_cannot_be_read_or_named_are_one_line(study: Path) -> None:
    folder = study / "study" / "clean"
    (folder / "notes.txt").write_text("not a passage")
    assert load_error(options(files="study/clean/*.txt", id="text_*.txt"), study) == (
        f"{folder / 'notes.txt'}: data option 'passages.id': the name 'notes.txt' does not match 'text_*.txt' "
        "(* stands for the text id; narrow 'passages.files' to the passages)"
    )
    (folder / "notes.txt").unlink()
    (folder / "text_2.txt").write_bytes("Rain fell all night.".encode("utf-16"))
    assert load_error(options(files="study/clean/*.txt", id="text_*.txt"), study) == (
        f"{folder / 'text_2.txt'}: UTF-16 text (it starts with the UTF-16 byte order mark FF FE), not UTF-8; "
        "save it as UTF-8"
    )
    # "Rain fell all night in Malm" is 27 bytes: the ö is byte 27 from 0.
    (folder / "text_2.txt").write_bytes("Rain fell all night in Malmö.".encode("latin-1"))
    assert load_error(options(files="study/clean/*.txt", id="text_*.txt"), study) == (
        f"{folder / 'text_2.txt'}: line 1: not UTF-8 (byte 0xf6 at byte offset 27; Latin-1 or Windows-1252?); "
        "save it as UTF-8"
    )


def test_an_explicit_target_overrides_the_passages_word(study: Path) -> None:
    loaded = load({**options(files="study/clean/*.txt", id="text_*.txt"), "target": "target_word"}, study)
    assert [(i.target_raw, i.target) for i in loaded.instances] == [
        ("man", "man"),
        ("harbour", "harbour"),
        ("then", "then"),
        ("fell", "fell"),
    ]
    assert loaded.instances[1].context == "The old man walked to the"


TASK = """\
task: passages-cloze
version: 1
loader: generic_cloze
data:
  files: study/positions.csv
  group_by: [text_id, word_num]
  id: "{{ text_id }}-{{ word_num }}"
  passages:
    files: "study/dirty/*.txt"
    id: "text_*.txt"
    key: text_id
    position: word_num
    word: target_word
  human: {shape: long, responses: response, counts: n}
request: sample_words
params: {n_samples: 20}
scorers: [tvd, top1, entropy]
"""


def test_a_task_over_passage_files_validates_and_runs_with_the_mock_model(cli: Any, study: Path) -> None:
    task_file = study / "passages-cloze.yaml"
    task_file.write_text(TASK)
    checked = cli("validate", str(task_file), "--data-dir", str(study))
    assert "make 4 instances" in checked.stdout
    runs = study / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(study), "--output-dir", str(runs))
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    assert results["data_sources"]["passages-cloze"]["passages"]["n_passages"] == 2
    assert "tvd" in results["metrics"]["passages-cloze"]
    samples = [
        json.loads(line)
        for line in next((runs / "mock__test").glob("samples_passages-cloze_*.jsonl")).read_text().splitlines()
    ]
    # The model was asked for the word after each context read from the careless copy, as the clean copy prints it.
    assert {s["id"]: s["arguments"]["context"] for s in samples} == CONTEXTS
    assert [s["target"] for s in samples] == ["man", "harbour", "then", "fell"]
    assert [s["human"]["counts"] for s in samples][:2] == [{"man": 6, "boy": 2}, {"harbour": 5, "sea": 3}]


def test_every_mismatch_is_counted_and_the_first_ones_listed(tmp_path: Path) -> None:
    write_passages(tmp_path / "study" / "long", {"7": " ".join(f"w{n}" for n in range(1, 31))})
    write_positions(tmp_path / "study" / "positions.csv", [(7, n, "x", {"x": 1}) for n in range(1, 26)])
    message = load_error(options(files="study/long/text_*.txt", id="text_*.txt", word="target_word"), tmp_path)
    lines = message.splitlines()
    assert lines[0] == f"loader 'generic_cloze': 25 bad rows (the first {MAX_REPORTED} follow):"
    assert len(lines) == 1 + MAX_REPORTED
    assert lines[2] == (
        f"{tmp_path / 'study' / 'positions.csv'}: row 2: field 'passages.word': text 7 word 2: the passage has 'w2', "
        "the data 'x' (column 'target_word')"
    )


def test_a_bad_passages_option_is_one_line_under_the_loaders_name(study: Path) -> None:
    assert load_error(options(files="study/clean/*.txt", counting="words"), study) == (
        "data options of loader 'generic_cloze': option 'passages': option 'counting': expected one of "
        "'whitespace', 'alphanumeric', got 'words'"
    )
