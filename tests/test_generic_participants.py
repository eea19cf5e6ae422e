"""The ``participants`` shape (one row per participant, one column per item) and ``header_rows``: hand-made
Mechanical Turk, Qualtrics and Prolific-style exports read as cloze, generation and multiple-choice tasks."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.plugins.loaders.generic.choice import load_generic_choice
from harness.plugins.loaders.generic.cloze import load_generic_cloze
from harness.plugins.loaders.generic.generation import load_generic_generation
from tests.helpers import MTURK, write

MTURK_DATA = {
    "files": "batch.csv",
    "filter": "{{ AssignmentStatus != 'Rejected' }}",
    "human": {
        "shape": "participants",
        "participant": "WorkerId",
        "responses": "Answer.sentence*",
        "item_columns": {"sentence": "Input.sentence*"},
    },
    "group_by": "sentence",
    "context": "sentence",
}


def test_an_mturk_batch_file_is_one_instance_per_sentence_and_one_answer_per_worker(tmp_path: Path) -> None:
    write(tmp_path, "batch.csv", MTURK)
    loaded = load_generic_cloze(MTURK_DATA, tmp_path)
    got = {i.context: (i.human_counts, i.meta["participants"]) for i in loaded.instances}
    # Checked by hand: W3 is filtered out; "Mat." is "mat" after the cloze normalisation; W4's empty cell is no answer.
    assert got == {
        "The cat sat on the": ({"mat": 2}, ["W1", "W2"]),
        "She drank a cup of": ({"coffee": 1, "tea": 1}, ["W1", "W2"]),
        "I went to the": ({"park": 1, "store": 1}, ["W1", "W4"]),
        "He opened the": ({"door": 1}, ["W1"]),
    }
    assert [i.id for i in loaded.instances] == list(got)
    assert loaded.source["participants"] == {
        "column": "WorkerId",
        "n_participants": 3,
        "n_rows": 4,
        "n_answers": 7,
        "n_empty": 1,
    }
    assert loaded.source["n_rows_read"] == 5


def test_a_participant_answering_an_instance_twice_is_refused_naming_both_rows(tmp_path: Path) -> None:
    write(tmp_path, "batch.csv", MTURK + "H1,W2,Approved,The cat sat on the,She drank a cup of,rug,milk\n")
    with pytest.raises(HarnessError) as caught:
        load_generic_cloze(MTURK_DATA, tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0].endswith("2 bad rows:")
    assert lines[1].endswith(
        "batch.csv: row 6, column 'Answer.sentence01': field 'human.participant': participant 'W2' answers this "
        f"instance again (first on {tmp_path / 'batch.csv'}: row 2, column 'Answer.sentence01'); one person counts once"
    )
    assert "row 6, column 'Answer.sentence02'" in lines[2]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"participant": "Worker"}, "field 'human.participant': no column 'Worker'"),
        ({"responses": "Reply.sentence*"}, "field 'human.responses': no column matches 'Reply.sentence*'"),
        (
            {"item_columns": {"sentence": "Input.sentence*", "HITId": "Input.sentence*"}},
            "shape participants adds the column 'HITId' to each answer, but the file has a column 'HITId'",
        ),
        (
            {"item_columns": {"sentence": "Input.text*"}},
            "field 'human.item_columns.sentence': item '01' (Answer.sentence01) has no column matching 'Input.text*'",
        ),
    ],
)
def test_a_wrong_participants_mapping_is_one_line(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    write(tmp_path, "batch.csv", MTURK)
    options = {**MTURK_DATA, "human": {**MTURK_DATA["human"], **change}}
    with pytest.raises(HarnessError) as caught:
        load_generic_cloze(options, tmp_path)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_row_without_a_participant_id_is_named(tmp_path: Path) -> None:
    write(tmp_path, "batch.csv", MTURK.replace("H2,W4,", "H2,,"))
    with pytest.raises(HarnessError, match=r"batch.csv: row 5: field 'human.participant' \(column 'WorkerId'\): "):
        load_generic_cloze(MTURK_DATA, tmp_path)


def qualtrics(rows: list[list[str]]) -> str:
    """A Qualtrics CSV export: ids, question texts, import ids, then one row per response."""
    header = ["StartDate", "Finished", "ResponseId", "Q1", "Q2", "attn"]
    texts = [
        "Start Date",
        "Finished",
        "Response ID",
        "Type the next word: The children went outside to",
        "Type the next word: My favourite colour is",
        "Attention check: type blue",
    ]
    imports = [json.dumps({"ImportId": i}) for i in ("startDate", "finished", "_recordId", "QID1", "QID2", "QID3")]
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([header, texts, imports, *rows])
    return out.getvalue()


QUALTRICS_DATA = {
    "files": "survey.csv",
    "header_rows": ["question", "import_id"],
    "filter": "{{ Finished == 'True' and attn | lower == 'blue' }}",
    "human": {"shape": "participants", "participant": "ResponseId", "responses": ["Q1", "Q2"]},
    "id": "{{ import_id | replace('{\"ImportId\": \"', '') | replace('\"}', '') }}",
    "context": "{{ question.split(': ', 1)[1] }}",
}


def test_a_qualtrics_export_skips_its_two_extra_header_rows_and_reads_the_question_text(tmp_path: Path) -> None:
    write(
        tmp_path,
        "survey.csv",
        qualtrics(
            [
                ["2024-05-01", "True", "R_1", "play", "blue", "blue"],
                ["2024-05-01", "True", "R_2", "Play!", "green", "Blue"],
                ["2024-05-01", "False", "R_3", "run", "", ""],
                ["2024-05-02", "True", "R_4", "school", "red", "red"],
                ["2024-05-02", "True", "R_5", "play", "blue", "blue"],
            ]
        ),
    )
    loaded = load_generic_cloze(QUALTRICS_DATA, tmp_path)
    got = {i.id: (i.context, i.human_counts, i.meta["participants"]) for i in loaded.instances}
    # R_3 did not finish, R_4 failed the attention check.
    assert got == {
        "QID1": ("The children went outside to", {"play": 3}, ["R_1", "R_2", "R_5"]),
        "QID2": ("My favourite colour is", {"blue": 2, "green": 1}, ["R_1", "R_2", "R_5"]),
    }
    assert loaded.source["header_rows"] == ["question", "import_id"]
    assert loaded.source["n_rows_read"] == 5


def test_header_rows_are_not_counted_as_rows(tmp_path: Path) -> None:
    write(tmp_path, "survey.csv", qualtrics([["2024-05-01", "True", "R_1", "play", "blue", "blue"]] * 2))
    with pytest.raises(HarnessError) as caught:
        load_generic_cloze(QUALTRICS_DATA, tmp_path)
    # The second participant is row 2 (the file's line 5), as a spreadsheet user counts responses.
    assert "survey.csv: row 2, column 'Q1': field 'human.participant': participant 'R_1' answers" in str(caught.value)


def test_header_rows_are_for_csv_files(tmp_path: Path) -> None:
    write(tmp_path, "survey.jsonl", json.dumps({"ResponseId": "R_1", "Q1": "play"}) + "\n")
    options = {**QUALTRICS_DATA, "files": "survey.jsonl"}
    with pytest.raises(HarnessError, match="data option 'header_rows': for CSV and TSV files, not jsonl"):
        load_generic_cloze(options, tmp_path)


def test_a_prolific_export_of_choices_is_a_multiple_choice_task(tmp_path: Path) -> None:
    rows = ["participant_id,status,item_1,item_2"]
    choices = [("a", "b"), ("a", "b"), ("b", "b"), ("a", "c"), ("c", "b")]
    rows += [f"P{n},APPROVED,{one},{two}" for n, (one, two) in enumerate(choices, start=1)]
    write(tmp_path, "prolific.csv", "\n".join(rows) + "\n")
    write(tmp_path, "items.csv", "item,question,gold\n1,Is it raining?,a\n2,Is the sun out?,b\n")
    options = {
        "files": "prolific.csv",
        "join": {"files": "items.csv", "key": "item"},
        "human": {"shape": "participants", "participant": "participant_id", "responses": "item_*"},
        "text": "question",
        "options": {"a": "yes", "b": "no", "c": "cannot tell"},
        "target": "gold",
    }
    loaded = load_generic_choice(options, tmp_path)
    # Counted by hand, in option order a, b, c.
    assert [(i.id, i.scenario, i.human_counts, i.target) for i in loaded.instances] == [
        ("1", "Is it raining?", (3, 1, 1), 0),
        ("2", "Is the sun out?", (0, 4, 1), 1),
    ]
    assert loaded.instances[1].meta["participants"] == ["P1", "P2", "P3", "P4", "P5"]


def test_translations_by_participant_are_references_in_participant_order(tmp_path: Path) -> None:
    rows = [
        {"pid": "t1", "src_1": "Guten Morgen.", "src_2": "Danke.", "tr_1": "Good morning.", "tr_2": "Thanks."},
        {"pid": "t2", "src_1": "Guten Morgen.", "src_2": "Danke.", "tr_1": "Morning!", "tr_2": "Thank you."},
        {"pid": "t3", "src_1": "Guten Morgen.", "src_2": "Danke.", "tr_1": "", "tr_2": "Cheers."},
        {"pid": "t4", "src_1": "Guten Morgen.", "src_2": "Danke.", "tr_1": "?", "tr_2": "Many thanks."},
    ]
    write(tmp_path, "translators.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    options = {
        "files": "translators.jsonl",
        "human": {
            "shape": "participants",
            "participant": "pid",
            "responses": "tr_*",
            "item_columns": {"source_text": "src_*"},
        },
        "source": "source_text",
        "normalise": {"no_answer": ["?"]},
    }
    loaded = load_generic_generation(options, tmp_path)
    # t3 left the first empty (not an answer), t4 wrote "?" (no answer): the ids stay aligned with the references.
    assert [(i.id, i.source, i.references, i.meta["participants"]) for i in loaded.instances] == [
        ("1", "Guten Morgen.", ("Good morning.", "Morning!"), ["t1", "t2"]),
        ("2", "Danke.", ("Thanks.", "Thank you.", "Cheers.", "Many thanks."), ["t1", "t2", "t3", "t4"]),
    ]
    assert loaded.instances[0].meta["n_human_missing"] == 1


PEOPLE_TASK = """\
task: people-cloze
version: 1
loader: generic_cloze
data:
{data}
request: sample_words
params: {{n_samples: 20}}
scorers: [{{name: human_control, args: {{n_splits: 20}}}}, entropy]
"""


def test_the_split_half_human_control_splits_the_participants_of_a_wide_file(cli: Any, tmp_path: Path) -> None:
    """The same answers as one row per participant and as a long table of counts give the same human control: the
    split-half control is computed from the participants, one count each."""
    words = {
        "1": ["mat"] * 9 + ["floor"] * 6 + ["rug"] * 3 + ["bed"] * 2,
        "2": ["tea"] * 11 + ["coffee"] * 7 + ["milk"] * 2,
    }
    contexts = {"1": "The cat sat on the", "2": "She drank a cup of"}
    wide = ["person,ctx_1,ctx_2,word_1,word_2"]
    wide += [f"p{k},{contexts['1']},{contexts['2']},{words['1'][k]},{words['2'][k]}" for k in range(20)]
    long = ["item,context,guess,n"]
    for item, guesses in words.items():
        long += [f"{item},{contexts[item]},{g},{guesses.count(g)}" for g in dict.fromkeys(guesses)]
    write(tmp_path, "wide.csv", "\n".join(wide) + "\n")
    write(tmp_path, "long.csv", "\n".join(long) + "\n")
    wide_data = (
        "  files: wide.csv\n  context: ctx\n  human: {shape: participants, participant: person, responses: word_*,"
        " item_columns: {ctx: ctx_*}}"
    )
    long_data = (
        "  files: long.csv\n  group_by: item\n  context: context\n  human: {shape: long, responses: guess, counts: n}"
    )
    results = {}
    for name, data in (("wide", wide_data), ("long", long_data)):
        task = write(tmp_path, f"{name}.yaml", PEOPLE_TASK.format(data=data))
        out = tmp_path / f"runs-{name}"
        cli("run", "--tasks", str(task), "--human-only", "--data-dir", str(tmp_path), "--output-dir", str(out))
        results[name] = json.loads((out / "human" / "results.json").read_text())
    wide_metrics = results["wide"]["metrics"]["people-cloze"]
    long_metrics = results["long"]["metrics"]["people-cloze"]
    # The split-half TVD between two halves of the 20 participants: above 0 (they disagree), the same both ways.
    assert 0.05 < wide_metrics["tvd_human_halves"]["value"] < 0.6
    for key in ("tvd_human_halves", "entropy_human"):
        assert wide_metrics[key]["value"] == pytest.approx(long_metrics[key]["value"], abs=1e-12)
    assert results["wide"]["data_sources"]["people-cloze"]["participants"]["n_participants"] == 20


JSPSYCH = """\
subject,trial_index,trial_type,stimulus,response,rt
s1,0,instructions,Welcome,,3000
s1,1,cloze,The cat sat on the,mat,2100
s1,2,cloze,She drank a cup of,tea,1900
s2,0,instructions,Welcome,,2500
s2,1,cloze,The cat sat on the,rug,2400
s2,2,cloze,She drank a cup of,tea,1800
s3,1,cloze,She drank a cup of,coffee,2000
"""

JSPSYCH_DATA = {
    "files": "jspsych.csv",
    "filter": "{{ trial_type == 'cloze' }}",
    "group_by": "stimulus",
    "context": "stimulus",
    "human": {"shape": "long", "responses": "response", "participant": "subject"},
}


def test_a_jspsych_export_of_trials_is_the_long_shape_with_its_participants(tmp_path: Path) -> None:
    write(tmp_path, "jspsych.csv", JSPSYCH)
    loaded = load_generic_cloze(JSPSYCH_DATA, tmp_path)
    assert [(i.id, i.human_counts, i.meta["participants"]) for i in loaded.instances] == [
        ("The cat sat on the", {"mat": 1, "rug": 1}, ["s1", "s2"]),
        ("She drank a cup of", {"tea": 2, "coffee": 1}, ["s1", "s2", "s3"]),
    ]


def test_a_trial_repeated_by_one_participant_is_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        "jspsych.csv",
        JSPSYCH + "s3,2,cloze,She drank a cup of,milk,2000\n,3,cloze,The cat sat on the,bed,900\n",
    )
    with pytest.raises(HarnessError) as caught:
        load_generic_cloze(JSPSYCH_DATA, tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0].endswith("2 bad rows:")
    assert lines[1].endswith("jspsych.csv: row 9: field 'human.participant': expected the participant's id, got ''")
    assert "jspsych.csv: row 8: field 'human.participant': participant 's3' answers this instance again" in lines[2]


def test_a_participant_column_goes_with_one_row_per_answer(tmp_path: Path) -> None:
    write(tmp_path, "jspsych.csv", JSPSYCH)
    options = {**JSPSYCH_DATA, "human": {**JSPSYCH_DATA["human"], "counts": "rt"}}
    with pytest.raises(HarnessError, match="'participant' is for shape long with one row per answer"):
        load_generic_cloze(options, tmp_path)


def test_join_by_matches_a_key_written_another_way_and_names_a_row_without_one(tmp_path: Path) -> None:
    write(tmp_path, "wide.csv", "pid,1_Irony,2_Irony\np1,a,b\np2,a,a\n")
    write(tmp_path, "codes.csv", "Question,text\nX1_Irony,Is it raining?\nX2_Irony,Is it sunny?\n")
    options = {
        "files": "wide.csv",
        "human": {"shape": "participants", "participant": "pid", "responses": "*_Irony"},
        "join": {"files": "codes.csv", "key": "Question", "by": "X{{ item }}_Irony"},
        "text": "text",
        "options": {"a": "yes", "b": "no"},
    }
    loaded = load_generic_choice(options, tmp_path)
    assert [(i.id, i.scenario, i.human_counts) for i in loaded.instances] == [
        ("1", "Is it raining?", (2, 0)),
        ("2", "Is it sunny?", (1, 1)),
    ]
    assert loaded.source["join"]["by"] == "X{{ item }}_Irony"
    write(tmp_path, "codes.csv", "Question,text\nX1_Irony,Is it raining?\n")
    with pytest.raises(HarnessError) as caught:
        load_generic_choice(options, tmp_path)
    assert str(caught.value).endswith(
        "wide.csv: row 1, column '2_Irony': data option 'join.by' (X{{ item }}_Irony): 'X2_Irony' has no row in "
        f"{tmp_path / 'codes.csv'} (keys are compared as written: 01 is not 1)"
    )
