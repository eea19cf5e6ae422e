"""``harness data inspect FILE``: a hand-made file of each shape (and the real Provo table when present) is
inspected, its guessed shape checked, its blanks filled as docs/your-data.md tells the user to (each ``FILL-ME``
replaced by a column name or a template, by plain string replacement), and the task file must then pass
``harness validate``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.registry.manager import get_registry
from tests.helpers import MTURK, REPO, jsonl, shared_data_dir, write

BLANK = "FILL-ME"


def inspect(cli: Any, path: Path, root: Path, *extra: str) -> str:
    return str(cli("data", "inspect", str(path), "--data-dir", str(root), *extra).stdout)


def line_of(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def fill(text: str, answers: dict[str, str]) -> str:
    """Each blank replaced by the answer for its key, as the docs say: ``context: "FILL-ME"`` becomes
    ``context: "sentence"``. Every blank must have an answer and every answer a blank."""
    out, used = [], set()
    for line in text.splitlines():
        if BLANK in line and not line.lstrip().startswith("#"):
            key = line.split(":", 1)[0].strip()
            assert key in answers, f"a blank for {key!r}: {line}"
            line = line.replace(BLANK, answers[key])
            used.add(key)
        out.append(line)
    assert used == set(answers), f"blanks filled: {sorted(used)}, answers given: {sorted(answers)}"
    return "\n".join(out) + "\n"


def validates(cli: Any, text: str, root: Path, task_file: Path) -> str:
    task_file.write_text(text, encoding="utf-8")
    result = cli("validate", str(task_file), "--data-dir", str(root), check=False)
    assert result.returncode == 0, f"{result.stderr}\n{text}"
    return str(result.stdout)


# ------------------------------------------------------------------------------------------------ hand-made files


def long_file(root: Path) -> Path:
    rows = ["sentence,position,context,word,guess,n"]
    for sentence, position, context, word, guesses in [
        ("s1", 1, "The cat sat on the", "mat", {"mat": 5, "floor": 3, "?": 1}),
        ("s1", 2, "She drank a cup of", "tea", {"tea": 6, "coffee": 4}),
        ("s2", 1, "He opened the", "door", {"door": 7, "window": 2}),
        ("s2", 2, "Please pass the", "salt", {"salt": 8, "pepper": 1}),
    ]:
        rows += [f"{sentence},{position},{context},{word},{g},{n}" for g, n in guesses.items()]
    return write(root, "cloze/norms.csv", "\n".join(rows) + "\n")


def list_file(root: Path) -> Path:
    return jsonl(
        root,
        "refs.jsonl",
        [
            {
                "id": f"x{i}",
                "source": f"Sentence number {i} is rather long and complicated.",
                "references": [f"Sentence {i} is long.", f"It is sentence {i}.", f"Number {i} is hard."],
            }
            for i in range(6)
        ],
    )


def mapping_file(root: Path) -> Path:
    votes = [{"e": 7, "n": 2, "c": 1}, {"c": 9, "n": 1}, {"n": 5, "e": 4, "c": 1}, {"e": 3, "c": 3}]
    return jsonl(
        root,
        "nli/pairs.jsonl",
        [
            {"pair_id": f"p{i}", "premise": f"A man number {i} sleeps in the park.", "votes": votes[i % 4]}
            for i in range(12)
        ],
    )


def parallel_lists_file(root: Path) -> Path:
    return jsonl(
        root,
        "parallel.jsonl",
        [
            {"item": i, "context": f"The thing number {i} was", "answers": ["big", "small", "red"], "counts": [5, 3, 1]}
            for i in range(5)
        ],
    )


def parallel_families_file(root: Path) -> Path:
    rows = ["item,context,answer_1,answer_2,answer_3,count_1,count_2,count_3"]
    rows += [f"i{i},The thing number {i} was,big,small,,5,3," for i in range(5)]
    return write(root, "families.csv", "\n".join(rows) + "\n")


SHAPE_CASES: list[tuple[str, Callable[[Path], Path], str, str, dict[str, str]]] = [
    ("long", long_file, "long: rows repeat (sentence, position) 9 rows -> 4 groups", "generic_cloze", {}),
    ("list", list_file, "list: 'references' holds a list of 3.0 responses", "generic_generation", {}),
    ("mapping", mapping_file, "mapping: 'votes' holds {response: number} (counts)", "generic_choice", {}),
    (
        "parallel lists",
        parallel_lists_file,
        "parallel: list columns 'answers' (texts) and 'counts'",
        "generic_cloze",
        {},
    ),
    (
        "parallel families",
        parallel_families_file,
        "parallel: numbered columns 'answer_*' (texts) and 'count_*'",
        "generic_cloze",
        {},
    ),
]


@pytest.mark.parametrize(
    ("make", "evidence", "loader", "answers"), [case[1:] for case in SHAPE_CASES], ids=[case[0] for case in SHAPE_CASES]
)
def test_each_shape_is_guessed_and_its_task_file_validates(
    cli: Any, tmp_path: Path, make: Callable[[Path], Path], evidence: str, loader: str, answers: dict[str, str]
) -> None:
    root = tmp_path / "data"
    path = make(root)
    text = inspect(cli, path, root)
    assert line_of(text, "# shape: ").startswith(f"# shape: {evidence}")
    assert line_of(text, "loader: ").startswith(f"loader: {loader}  # guess: ")
    assert line_of(text, "  files: ").startswith(f"  files: {path.relative_to(root).as_posix()}  #")
    checked = validates(cli, fill(text, answers), root, tmp_path / "task.yaml")
    assert checked.startswith("ok: ")


def test_the_long_guess_names_the_key_the_responses_and_their_counts(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    task = yaml.safe_load(inspect(cli, long_file(root), root))
    assert task["data"]["group_by"] == ["sentence", "position"]
    assert task["data"]["human"] == {"shape": "long", "responses": "guess", "counts": "n"}
    assert (task["data"]["context"], task["data"]["target"]) == ("context", "word")
    assert task["request"] == "sample_words"


def test_a_mapping_of_few_labels_is_a_choice_task_over_those_labels(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    task = yaml.safe_load(inspect(cli, mapping_file(root), root))
    assert task["data"]["options"] == ["c", "e", "n"]
    assert (task["data"]["id"], task["data"]["text"]) == ("pair_id", "premise")


def test_a_list_of_records_with_counts_is_parallel_counts_per_option(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    options = [{"text": "Yes", "human_count": 7}, {"text": "No", "human_count": 3}]
    items = [{"item_id": i, "scenario": f"Is sentence number {i} coherent?", "options": options} for i in range(4)]
    path = jsonl(root, "items.jsonl", items)
    text = inspect(cli, path, root)
    task = yaml.safe_load(text)
    assert task["loader"] == "generic_choice"
    assert task["data"]["options"] == "{{ options | map(attribute='text') | list }}"
    assert task["data"]["human"] == {
        "shape": "parallel",
        "counts": "{{ options | map(attribute='human_count') | list }}",
    }
    validates(cli, fill(text, {}), root, tmp_path / "task.yaml")


def test_a_json_object_of_records_keyed_by_id_is_read_with_json_key(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    pairs = {f"{i:02d}": {"premise": f"A man number {i} sleeps.", "votes": {"e": 7, "n": 2, "c": 1}} for i in range(12)}
    path = write(root, "keyed.json", json.dumps(pairs))
    text = inspect(cli, path, root)
    assert line_of(text, "  json_key: id  # guess: ")
    data = yaml.safe_load(text)["data"]
    assert (data["id"], data["human"]) == ("id", {"shape": "mapping", "responses": "votes"})
    assert "make 12 instances" in validates(cli, fill(text, {}), root, tmp_path / "task.yaml")
    named = yaml.safe_load(inspect(cli, path, root, "--json-key", "pair"))["data"]
    assert (named["json_key"], named["id"]) == ("pair", "pair")


# -------------------------------------------------------------------------------------------------- participants


QUALTRICS = (
    "StartDate,Status,Finished,ResponseId,Q1,Q2\r\n"
    "Start Date,Response Type,Finished,Response ID,"
    "Next word: The children went outside to,Next word: She washed the\r\n"
    '"{""ImportId"":""startDate""}","{""ImportId"":""status""}","{""ImportId"":""finished""}",'
    '"{""ImportId"":""_recordId""}","{""ImportId"":""QID1_TEXT""}","{""ImportId"":""QID2_TEXT""}"\r\n'
    "2024-05-01 10:10,IP Address,True,R_1a,play,dishes\r\n"
    "2024-05-01 10:11,IP Address,True,R_2b,Play,plates\r\n"
    "2024-05-01 10:12,Survey Preview,True,R_3c,x,x\r\n"
    "2024-05-01 10:13,IP Address,False,R_4d,run,\r\n"
)

WIDE = """\
participant_id,age,word_1,word_2,word_3,rt_1,rt_2,rt_3
P1,21,dog,cat,house,301,402,503
P2,34,dog,mouse,home,311,412,513
P3,28,wolf,cat,house,321,422,523
"""


def test_an_mturk_batch_file_is_participants_with_its_inputs_paired_and_rejections_filtered(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    path = write(root, "mturk/batch.csv", MTURK)
    text = inspect(cli, path, root)
    assert "a Mechanical Turk batch results file" in line_of(text, "# shape: participants: ")
    data = yaml.safe_load(text)["data"]
    assert data["human"] == {
        "shape": "participants",
        "participant": "WorkerId",
        "responses": "Answer.sentence*",
        "item_columns": {"sentence": "Input.sentence*"},
    }
    assert data["filter"] == "{{ AssignmentStatus != 'Rejected' }}"
    # HITs show different sentences in the same slots: an item is its sentence.
    assert (data["group_by"], data["context"]) == (["sentence"], "sentence")
    checked = validates(cli, fill(text, {}), root, tmp_path / "task.yaml")
    assert "make 4 instances" in checked


def test_a_qualtrics_export_gets_its_header_rows_and_its_question_texts_as_the_context(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    path = write(root, "survey.csv", QUALTRICS)
    text = inspect(cli, path, root)
    assert "2 rows under the header label the columns" in text.splitlines()[0]
    assert "a Qualtrics export" in line_of(text, "# shape: participants: ")
    data = yaml.safe_load(text)["data"]
    assert data["header_rows"] == ["question", "import_id"]
    assert data["human"] == {"shape": "participants", "participant": "ResponseId", "responses": "Q*"}
    assert data["filter"] == "{{ Finished == 'True' and Status != 'Survey Preview' }}"
    assert data["context"] == "question"
    checked = validates(cli, fill(text, {}), root, tmp_path / "task.yaml")
    assert "make 2 instances" in checked


def test_a_wide_file_with_a_participant_column_is_participants_and_its_context_a_blank(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "data"
    path = write(root, "wide.csv", WIDE)
    text = inspect(cli, path, root)
    assert line_of(text, "# shape: ").startswith(
        "# shape: participants: one row per participant ('participant_id', 3 rows, all different), one column per "
        "item ('word_*': 3 columns)"
    )
    # rt_* are numbers beside word_*, but not counts: no parallel guess.
    assert yaml.safe_load(text)["data"]["human"]["responses"] == "word_*"
    assert line_of(text, '  context: "FILL-ME"  # FILL: ')
    # The file has no item texts; each answer's row has the item's key (item), which a template can use.
    validates(cli, fill(text, {"context": "Item {{ item }}:"}), root, tmp_path / "task.yaml")


# ------------------------------------------------------------------------------------------------- packed cells

PACKED_CSV = """\
item,context,word,answers,n_responses
1,The cat sat on the,mat,"mat, ""well, then"", Mat. , , floor ",5
2,She drank a cup of,tea,"tea,coffee, tea,",4
3,He opened the,door,"door, window, door",3
"""


def test_comma_packed_cells_are_a_packed_list_with_their_number_of_people(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = write(root, "packed.csv", PACKED_CSV)
    text = inspect(cli, path, root)
    assert line_of(text, "# shape: ").startswith("# shape: list, packed: 'answers' holds pieces split at a comma")
    human = yaml.safe_load(text)["data"]["human"]
    assert human == {"shape": "list", "responses": "answers", "packed": ",", "n_people": "n_responses"}
    validates(cli, fill(text, {}), root, tmp_path / "task.yaml")


def test_json_lists_written_as_text_are_a_packed_list(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = write(root, "json_cells.csv", 'item,context,answers\n1,The cat sat on the,"[""mat"", ""rug""]"\n')
    text = inspect(cli, path, root)
    assert yaml.safe_load(text)["data"]["human"] == {"shape": "list", "responses": "answers", "packed": "json"}
    validates(cli, fill(text, {}), root, tmp_path / "task.yaml")


def test_sentences_with_commas_are_not_packed_cells(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    rows = ["item,context,guess"] + [f'{i},"Well, after dinner, the man number {i} went",home' for i in range(4)]
    rows += [f'{i},"Well, after dinner, the man number {i} went",out' for i in range(4)]
    text = inspect(cli, write(root, "sentences.csv", "\n".join(rows) + "\n"), root)
    assert line_of(text, "# shape: ").startswith("# shape: long: rows repeat 'item'")


# -------------------------------------------------------------------------------------------------- the real data


def test_the_provo_table_is_long_by_text_and_word(cli: Any, tmp_path: Path) -> None:
    data = shared_data_dir()
    path = data / "provo" / "provo_cloze_responses.csv"
    if not path.is_file():
        pytest.skip(f"Provo data not found under {data}")
    text = inspect(cli, path, data)
    assert line_of(text, "# shape: ") == (
        "# shape: long: rows repeat (text_id, word_num) 39,784 rows -> 2,687 groups; 'response' is short text, "
        "'response_count' whole numbers"
    )
    task = yaml.safe_load(text)
    assert task["data"]["files"] == "provo/provo_cloze_responses.csv"
    assert task["data"]["target"] == "target_word"
    assert task["loader"] == "generic_cloze"
    # The context may come from the passages instead: proposed as a comment, with the table's key and position.
    assert line_of(text, "  # passages: ").startswith(
        '  # passages: {files: "passages/*.txt", key: text_id, position: word_num, word: target_word}  # or, '
    )
    # The table holds no context: it is in the passages table, as docs/your-data.md shows: the blank's line becomes
    # a join and the passages (examples/your-data/provo-long.yaml reads Provo the same way).
    blank = line_of(text, '  context: "FILL-ME"')
    filled = text.replace(
        blank + "\n",
        "  join: {files: provo/provo_passages.csv, key: text_id}\n"
        "  passages: {column: passage, position: word_num, word: target_word}\n",
    )
    assert "make 4 instances" in validates(cli, filled, data, tmp_path / "provo.yaml")
    loaded = get_registry().loader("generic_cloze")(yaml.safe_load(filled)["data"], data)
    assert len(loaded.instances) == 2687
    first = loaded.instances[0]
    assert (first.id, first.context, first.target) == ("1-2", "There", "are")


# ------------------------------------------------------------------------------------------------------ the command


def test_a_blank_left_unfilled_is_named_by_validate(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = write(root, "bare.csv", "item,guess,n\n1,dog,3\n1,cat,2\n2,tea,4\n2,coffee,1\n")
    text = inspect(cli, path, root)
    assert line_of(text, "# The task file below: ").startswith('# The task file below: replace each "FILL-ME" (1 in')
    (tmp_path / "task.yaml").write_text(text)
    result = cli("validate", str(tmp_path / "task.yaml"), "--data-dir", str(root), check=False)
    assert result.returncode == 2
    assert "field 'context': no column 'FILL-ME'" in result.stderr


def test_output_writes_the_task_file_and_keeps_an_existing_one(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = long_file(root)
    out = tmp_path / "my-task.yaml"
    shown = cli("data", "inspect", str(path), "--data-dir", str(root), "--output", str(out)).stdout
    assert f"harness validate {out} --data-dir {root}" in shown
    assert "task:" not in shown
    assert out.read_text() == inspect(cli, path, root)
    out.write_text("my filled task")
    again = cli("data", "inspect", str(path), "--data-dir", str(root), "--output", str(out), check=False)
    assert again.returncode == 2
    assert again.stderr == f"error: --output {out}: the file exists (your filled blanks?); --force replaces it\n"
    assert out.read_text() == "my filled task"
    cli("data", "inspect", str(path), "--data-dir", str(root), "--output", str(out), "--force")
    assert out.read_text().startswith("# harness data inspect: ")


def test_files_is_relative_to_the_data_root_or_absolute(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    root = tmp_path / "data"
    path = long_file(root)
    outside = write(tmp_path / "elsewhere", "norms.csv", path.read_text())
    assert yaml.safe_load(inspect(cli, outside, root))["data"]["files"] == outside.as_posix()
    monkeypatch.chdir(tmp_path)  # a path under the data root, not under the current folder
    task = yaml.safe_load(cli("data", "inspect", "cloze/norms.csv", "--data-dir", str(root)).stdout)
    assert task["data"]["files"] == "cloze/norms.csv"
    missing = cli("data", "inspect", "cloze/none.csv", "--data-dir", str(root), check=False)
    assert missing.stderr == (
        f"error: cloze/none.csv: no such file (looked in {tmp_path} and under the data root {root})\n"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.csv", None, "missing.csv: no such file"),
        ("extra.csv", "a,b\n1,2,3\n", "extra.csv: line 2: 3 fields, but the header has 2 (an extra comma"),
        ("empty.csv", "", "empty.csv: empty file (0 bytes), no rows"),
        ("notes.txt", "a,b\n", "notes.txt: cannot tell the format from the extension .txt: set 'format'"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_line(
    cli: Any, tmp_path: Path, name: str, content: str | None, message: str
) -> None:
    if content is not None:
        write(tmp_path, name, content)
    result = cli("data", "inspect", str(tmp_path / name), "--data-dir", str(tmp_path), check=False)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and not result.stdout


def test_a_file_of_no_known_shape_leaves_the_shape_blank(cli: Any, tmp_path: Path) -> None:
    path = write(tmp_path, "plain.csv", "a,b\n1,x\n2,y\n")
    text = inspect(cli, path, tmp_path)
    assert line_of(text, "# shape: ").startswith("# shape: not recognised (")
    assert yaml.safe_load(text)["data"]["human"] == {"shape": BLANK, "responses": BLANK}


def test_a_jspsych_export_of_trials_is_long_with_its_participant_column(cli: Any, tmp_path: Path) -> None:
    rows = ["subject,trial_type,stimulus,response,rt"]
    for person, words in (("s1", ("mat", "tea")), ("s2", ("rug", "tea")), ("s3", ("mat", "coffee"))):
        rows.append(f"{person},instructions,Welcome,,3000")
        sentences = ("The cat sat on the", "She drank a cup of")
        rows += [f"{person},cloze,{s},{w},2000" for s, w in zip(sentences, words, strict=True)]
    path = write(tmp_path, "jspsych.csv", "\n".join(rows) + "\n")
    text = inspect(cli, path, tmp_path)
    human = yaml.safe_load(text)["data"]["human"]
    assert human == {"shape": "long", "responses": "response", "participant": "subject"}
    assert "one row per answer of each 'subject'" in line_of(text, "# shape: ")
    validates(cli, text, tmp_path, tmp_path / "jspsych.yaml")


def test_a_pcibex_results_file_gives_its_answer_element_as_the_long_shape(cli: Any, tmp_path: Path) -> None:
    root = REPO / "examples" / "raw-shapes" / "data"
    text = inspect(cli, root / "pcibex" / "results.csv", root, "--format", "pcibex")
    data = yaml.safe_load(text)["data"]
    # The TextInput 'answer' rows' Final values, grouped by the logged item, one per logged participant ID.
    assert data["filter"] == "{{ PennElementName == 'answer' and Parameter == 'Final' }}"
    assert data["group_by"] == ["item"] and data["context"] == "sentence"
    assert data["human"] == {"shape": "long", "responses": "Value", "participant": "ID"}
    assert "make 3 instances" in validates(cli, text, root, tmp_path / "pcibex.yaml")
