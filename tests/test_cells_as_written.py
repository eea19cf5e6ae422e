"""The generic loaders trust nothing they have not seen (issue 43): CSV cells are read as written (option keys,
ids, responses and targets compared as the file writes them; numbers converted where a field needs one), numbers
that cannot be right are refused with the file, row and column, and a file the reader cannot read is one line with
the real cause, naming the task file. Each value below is worked out by hand."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from harness.data.tables.file_rows import file_rows
from harness.errors import HarnessError
from harness.instances import ChoiceInstance, ClozeInstance
from harness.plugins.loaders.generic.table import convert, key_text
from tests.conftest import run_main
from tests.helpers import load, write


def error_of(loader: str, options: dict[str, Any], root: Path) -> str:
    with pytest.raises(HarnessError) as err:
        load(loader, options, root)
    return str(err.value)


# ------------------------------------------------------------------------------------------------ cells as written

RATINGS = "item,text,rating\n" + "".join(
    f"{item},How good is {item}?,{rating}\n"
    for item, ratings in (("a", ["5.0", "5.0", "4.0", "1.0"]), ("b", ["2.0", "2.0", "3.0"]))
    for rating in ratings
)
RATING_OPTIONS = {f"{k}.0": text for k, text in enumerate(["awful", "bad", "fair", "good", "great"], start=1)}


def test_ratings_written_as_decimals_match_option_keys_written_the_same_way(tmp_path: Path) -> None:
    write(tmp_path, "ratings.csv", RATINGS)
    options = {
        "files": "ratings.csv",
        "group_by": "item",
        "text": "text",
        "options": RATING_OPTIONS,
        "human": {"shape": "long", "responses": "rating"},
    }
    a, b = load("generic_choice", options, tmp_path).instances
    assert isinstance(a, ChoiceInstance)
    assert a.options == ("awful", "bad", "fair", "good", "great")
    assert a.human_counts == (1, 0, 0, 1, 2) and b.human_counts == (0, 2, 1, 0, 0)
    # Written as 5 instead, the rating is not the key 5.0: refused, naming the row, never read as another number.
    write(tmp_path, "ratings.csv", RATINGS.replace(",5.0\n", ",5\n", 1))
    message = error_of("generic_choice", options, tmp_path)
    assert message == (
        f"loader 'generic_choice': {tmp_path / 'ratings.csv'}: row 1: field 'human.responses': '5' is not an option "
        "key (keys: 1.0, 2.0, 3.0, 4.0, 5.0)"
    )


def test_a_ratings_task_scores_the_people_as_written(tmp_path: Path) -> None:
    data = tmp_path / "data"
    rows = ["item,text,rating,gold"] + [f"{line},5.0" for line in RATINGS.splitlines()[1:]]
    write(data, "ratings.csv", "\n".join(rows) + "\n")
    task = tmp_path / "ratings.yaml"
    options = ", ".join(f"'{k}': {v}" for k, v in RATING_OPTIONS.items())
    task.write_text(
        "task: ratings\nversion: 1\nloader: generic_choice\ndata:\n  files: ratings.csv\n  group_by: item\n"
        f"  text: text\n  options: {{{options}}}\n  target: gold\n  human: {{shape: long, responses: rating}}\n"
        "request: multiple_choice\nscorers: [mcq_human]\n"
    )
    out = tmp_path / "runs"
    run_main("run", "--tasks", str(task), "--human-only", "--data-dir", str(data), "--output-dir", str(out))
    metrics = json.loads((out / "human" / "results.json").read_text())["metrics"]["ratings"]
    # The people's share choosing the target 5.0: 2 of 4 for a, 0 of 3 for b; the mean is 0.25.
    assert metrics["human/acc"]["value"] == pytest.approx(0.25)


def test_ids_01_and_1_are_two_instances_and_keys_keep_their_zeros(tmp_path: Path) -> None:
    write(tmp_path, "c.csv", "id,ctx,g\n01,The,cat\n1,A,dog\n001,An,owl\n")
    options = {"files": "c.csv", "id": "id", "context": "ctx", "human": {"shape": "long", "responses": "g"}}
    data = load("generic_cloze", options, tmp_path)
    assert [i.id for i in data.instances] == ["01", "1", "001"]
    grouped = load("generic_cloze", {**options, "group_by": "id"}, tmp_path)
    assert [(i.id, i.human_counts) for i in grouped.instances] == [
        ("01", {"cat": 1}),
        ("1", {"dog": 1}),
        ("001", {"owl": 1}),
    ]


def test_json_values_keep_their_types_and_1_and_text_1_are_not_merged(tmp_path: Path) -> None:
    rows = [{"id": 1, "ctx": "The", "g": ["cat"]}, {"id": "1", "ctx": "A", "g": ["dog"]}]
    write(tmp_path, "j.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    options = {"files": "j.jsonl", "group_by": "id", "context": "ctx", "human": {"shape": "list", "responses": "g"}}
    # Two groups (a number and a text), whose ids as text are both 1: refused as a duplicate, never merged.
    message = error_of("generic_cloze", options, tmp_path)
    assert message.endswith(
        "row 2: field 'id': '1' is also the id of " + f"{tmp_path / 'j.jsonl'}: row 1 (ids must be unique)"
    )
    assert key_text(1) == "1" and key_text("1") == "1" and key_text(1.0) == "1.0" and key_text(True) == "true"


def test_a_collect_export_round_trips_answers_as_written_and_scores_a_correct_answer_correct(tmp_path: Path) -> None:
    from harness.collect.export import export_study
    from tests.test_collect_export import make_study, take_part

    study = "study: digits\nkind: passage_cloze\nparticipants_per_item: 2\nitems_per_participant: 1\n"
    flow = make_study(tmp_path, study, "id,text\n01,Bond 007 3.50\n")
    take_part(flow, "p1", ["007", "3.50"])
    take_part(flow, "p2", ["007", "3.5"])
    out = tmp_path / "export"
    export_study(flow, out, hash_ids=False)
    rows = (out / "responses.csv").read_text().splitlines()
    # By position, then as received: p1's and p2's answers at word 2, then at word 3.
    assert [row.split(",")[:6] for row in rows[1:]] == [
        ["01", "2", "Bond", "007", "007", "p1"],
        ["01", "2", "Bond", "007", "007", "p2"],
        ["01", "3", "Bond 007", "3.50", "3.50", "p1"],
        ["01", "3", "Bond 007", "3.50", "3.5", "p2"],
    ]
    task = out / "digits.yaml"
    import yaml

    config = yaml.safe_load(task.read_text())
    instances = load(config["loader"], config["data"], out).instances
    by_id = {i.id: i for i in instances if isinstance(i, ClozeInstance)}
    # The text id 01 stays 01; 007 stays 007; 3.50 and 3.5 are two answers, and only 3.50 is the word.
    assert sorted(by_id) == ["01-2", "01-3"]
    assert by_id["01-2"].target_raw == "007" and by_id["01-2"].human_counts == {"007": 2}
    assert by_id["01-3"].target_raw == "3.50" and by_id["01-3"].meta == {
        **by_id["01-3"].meta,
        "text_id": "01",
        "word_num": 3,
    }
    assert by_id["01-3"].human_counts == {"350": 1, "35": 1} and by_id["01-3"].target == "350"
    runs = tmp_path / "runs"
    run_main("run", "--tasks", str(task), "--human-only", "--data-dir", str(out), "--output-dir", str(runs))
    metrics = json.loads((runs / "human" / "results.json").read_text())["metrics"]["digits"]
    # Correct guesses: 2 of 2 at 007, 1 of 2 at 3.50 (3.5 is not what was written): (1 + 0.5) / 2.
    assert metrics["top1_human_guess"]["value"] == pytest.approx(0.75)


def test_a_field_that_needs_a_number_converts_the_text_where_it_is_used(tmp_path: Path) -> None:
    write(tmp_path, "c.csv", "q,o1,o2,o3,count_1,count_2,count_3,t,num\nPick,A,B,C,5,0,2,2,7\n")
    options = {
        "files": "c.csv",
        "text": "q",
        "options": "{{ [o1, o2, o3] }}",
        "target_index": "t",
        "item_id": "num",
        "human": {"shape": "parallel", "counts": "count_*"},
    }
    (item,) = load("generic_choice", options, tmp_path).instances
    assert item.target == 2 and item.item_id == 7 and item.human_counts == (5, 0, 2)
    write(tmp_path, "c.csv", "q,o1,o2,o3,count_1,count_2,count_3,t,num\nPick,A,B,C,5,0,2,two,7\n")
    assert error_of("generic_choice", options, tmp_path).endswith(
        "c.csv: row 1: field 'target_index': expected an index from 0 to 2, got 'two'"
    )


def test_the_columns_option_declares_types_for_templates(tmp_path: Path) -> None:
    write(tmp_path, "p.csv", "pos,passage,g,w\n3,The cat sat down,sat,1.5\n2,The cat sat down,cat,\n")
    base = {"files": "p.csv", "id": "{{ passage[:3] }}-{{ pos }}", "human": {"shape": "long", "responses": "g"}}
    arithmetic = "{{ passage.split(' ')[:pos - 1] | join(' ') }}"
    # As text, pos - 1 fails, naming the field, the file and the row; | int or 'columns' make it a number.
    message = error_of("generic_cloze", {**base, "context": arithmetic}, tmp_path)
    assert "p.csv: row 1: field 'context': template" in message and "TypeError" in message
    piped = load("generic_cloze", {**base, "context": "{{ passage.split(' ')[:pos | int - 1] | join(' ') }}"}, tmp_path)
    typed = load(
        "generic_cloze",
        {**base, "context": arithmetic, "columns": {"pos": "int", "w": "float"}, "meta": ["pos", "w"]},
        tmp_path,
    )
    assert [i.context for i in piped.instances] == [i.context for i in typed.instances] == ["The cat", "The"]
    # An empty cell of a typed column is null, and a null meta value is left out.
    assert [i.meta.get("w") for i in typed.instances] == [1.5, None]
    assert typed.instances[0].meta["pos"] == 3
    assert convert("007", "int") == 7 and convert("3.50", "float") == 3.5 and convert(7, "text") == "7"
    assert convert("2.0", "int") == 2 and convert("", "int") is None
    with pytest.raises(ValueError, match="expected a whole number, got '2.5'"):
        convert("2.5", "int")


def test_join_keys_are_compared_as_written(tmp_path: Path) -> None:
    write(tmp_path, "r.csv", "text_id,g\n01,cat\n")
    write(tmp_path, "p.csv", "text_id,passage\n1,The\n")
    options = {
        "files": "r.csv",
        "join": {"files": "p.csv", "key": "text_id"},
        "context": "passage",
        "human": {"shape": "long", "responses": "g"},
    }
    assert "column 'text_id': '01' has no row in" in error_of("generic_cloze", options, tmp_path)
    write(tmp_path, "p.jsonl", json.dumps({"text_id": 1, "passage": "The"}) + "\n")
    write(tmp_path, "r.csv", "text_id,g\n1,cat\n")
    (inst,) = load("generic_cloze", {**options, "join": {"files": "p.jsonl", "key": "text_id"}}, tmp_path).instances
    assert inst.context == "The"  # the JSON number 1 is written 1, as the CSV's


# ------------------------------------------------------------------------------------- numbers that cannot be


def test_proportions_summing_over_one_and_more_people_than_n_people_are_refused(tmp_path: Path) -> None:
    header = "ctx,answer_1,share_1,answer_2,share_2,answer_3,share_3\n"
    human = {"shape": "parallel", "responses": "answer_*", "proportions": "share_*", "n_people": 10}
    options = {"files": "s.csv", "context": "ctx", "human": human}
    path = write(tmp_path, "s.csv", header + "The,cat,0.8,dog,0.7,cow,0.5\n")
    assert error_of("generic_cloze", options, tmp_path) == (
        f"loader 'generic_cloze': {path}: row 1: columns 'share_*': the instance's proportions sum to 2 "
        "(0.8 + 0.7 + 0.5), more than 1: not shares of one group of people"
    )
    # Rounded shares of 3 people sum to 1.01: read as 1, 1, 1 out of 3.
    write(tmp_path, "s.csv", header + "The,cat,0.34,dog,0.33,cow,0.34\n")
    (inst,) = load("generic_cloze", {**options, "human": {**human, "n_people": 3}}, tmp_path).instances
    assert inst.human_counts == {"cat": 1, "cow": 1, "dog": 1} and inst.counts_known
    # 0.5, 0.5 and 0.02 of 50 people are 25 + 25 + 1 = 51 people.
    write(tmp_path, "s.csv", header + "The,cat,0.5,dog,0.5,cow,0.02\n")
    assert error_of("generic_cloze", {**options, "human": {**human, "n_people": 50}}, tmp_path).endswith(
        "row 1: columns 'share_*': the proportions give 51 people, more than n_people (50)"
    )


def test_a_share_without_its_answer_is_an_error_and_a_zero_without_one_an_unused_slot(tmp_path: Path) -> None:
    header = "ctx,answer_1,share_1,answer_2,share_2\n"
    options = {
        "files": "s.csv",
        "context": "ctx",
        "human": {"shape": "parallel", "responses": "answer_*", "proportions": "share_*"},
    }
    path = write(tmp_path, "s.csv", header + "The,cat,0.7,,0.3\n")
    assert error_of("generic_cloze", options, tmp_path) == (
        f"loader 'generic_cloze': {path}: row 1: column 'answer_2': empty, but its number 'share_2' is '0.3' "
        "(a number needs its answer; an empty answer is not 'no answer' here)"
    )
    write(tmp_path, "s.csv", header + "The,cat,1.0,,0\n")
    (inst,) = load("generic_cloze", options, tmp_path).instances
    assert inst.human_counts == {"cat": 1.0}


def test_counts_must_be_counts_of_people(tmp_path: Path) -> None:
    options = {"files": "n.csv", "context": "ctx", "human": {"shape": "long", "responses": "r", "counts": "n"}}
    for cell, expected in [
        ("1e30", "'1e30' is more than 1,000,000,000 people, not a count of people (counts above that are refused)"),
        ("nan", "expected a count (a whole number >= 0), got 'nan'"),
        ("-3", "expected a count (a whole number >= 0), got '-3'"),
    ]:
        path = write(tmp_path, "n.csv", f"ctx,r,n\nThe,cat,{cell}\n")
        assert error_of("generic_cloze", options, tmp_path) == (
            f"loader 'generic_cloze': {path}: row 1: field 'human.counts' (column 'n'): {expected}"
        )
    write(tmp_path, "n.csv", "ctx,r,n\nThe,cat,999999999\n")
    (inst,) = load("generic_cloze", options, tmp_path).instances
    assert inst.human_counts == {"cat": 999_999_999}
    # One instance's people in all are capped as well: what a draw of people from counts can take.
    write(tmp_path, "n.csv", "ctx,r,n\nThe,cat,999999999\nThe,dog,1\n")
    assert error_of("generic_cloze", {**options, "group_by": "ctx"}, tmp_path).endswith(
        "field 'human.counts' (column 'n'): the instance's counts add up to 1,000,000,000 people, more than "
        "999,999,999: not counts of people"
    )


def test_every_bad_row_of_one_instance_is_listed(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", "item,ctx,r,n\n1,The,cat,two\n1,The,dog,-1\n1,The,owl,3\n2,A,x,1.5\n")
    options = {
        "files": "b.csv",
        "group_by": "item",
        "context": "ctx",
        "human": {"shape": "long", "responses": "r", "counts": "n"},
    }
    lines = error_of("generic_cloze", options, tmp_path).splitlines()
    field = "field 'human.counts' (column 'n'): expected a count (a whole number >= 0), got"
    assert lines == [
        "loader 'generic_cloze': 3 bad rows:",
        f"{path}: row 1: {field} 'two'",
        f"{path}: row 2: {field} '-1'",
        f"{path}: row 4: {field} '1.5'",
    ]


# ---------------------------------------------------------------------------------------------- the reader's errors


def test_file_errors_name_the_file_and_the_real_cause(tmp_path: Path) -> None:
    cases: list[tuple[str, bytes, str, str]] = [
        ("a.csv", "x,y\ncaf\xe9,1\n".encode("latin-1"), "csv", "line 2: not UTF-8 (byte 0xe9 at byte offset 7;"),
        (
            "b.csv",
            "x,y\n1,2\n".encode("utf-16"),
            "csv",
            "UTF-16 text (it starts with the UTF-16 byte order mark FF FE)",
        ),
        ("c.csv", b"x,y\n1,2,3\n", "csv", "line 2: 3 fields, but the header has 2 (an extra comma"),
        ("d.csv", b"x,y\n", "csv", "header only, no rows (columns: x, y)"),
        ("e.csv", b"", "csv", "empty file (0 bytes), no rows"),
        ("f.jsonl", b'{"x": 1}\n{"x": \n', "jsonl", "line 2: not valid JSON (Expecting value)"),
        ("g.parquet", b"x,y\n1,2\n", "parquet", "not a Parquet file (no 'PAR1' at its start"),
        ("h.jsonl", b"\n", "jsonl", "empty file (only white space), no rows"),
        ("i.json", b"[]", "json", "no rows (an empty list of records)"),
    ]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": pa.array([], pa.string())}), str(tmp_path / "zero.parquet"))
    cases.append(("zero.parquet", (tmp_path / "zero.parquet").read_bytes(), "parquet", "no rows (a table of 0 rows)"))
    for name, data, fmt, expected in cases:
        path = write(tmp_path, name, data)
        with pytest.raises(HarnessError) as err:
            file_rows(path, fmt)
        assert str(err.value).startswith(f"{path}: {expected}"), str(err.value)
        assert "\n" not in str(err.value)


def test_cells_keep_their_spaces_quotes_and_words_like_na(tmp_path: Path) -> None:
    path = write(tmp_path, "q.csv", '\ufeffa,b,c\n" x ","1,5",NA\n\n007,,null\n')
    assert file_rows(path, "csv") == [{"a": " x ", "b": "1,5", "c": "NA"}, {"a": "007", "b": "", "c": "null"}]
    assert file_rows(path, "csv", max_rows=1) == [{"a": " x ", "b": "1,5", "c": "NA"}]


def test_nothing_from_the_datasets_logger_and_one_line_naming_the_task_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    write(data, "g.jsonl", '{"ctx": "The", "g": ["cat"]}\n{"ctx": "A", "g": ["dog"]\n')
    task = tmp_path / "task.yaml"
    task.write_text(
        "task: toy\nversion: 1\nloader: generic_cloze\ndata: {files: g.jsonl, context: ctx, human: {shape: list, "
        "responses: g}}\nrequest: sample_words\nscorers: [tvd]\n"
    )
    with caplog.at_level(logging.DEBUG, logger="datasets"):
        result = run_main(
            "run", "--tasks", str(task), "--human-only", "--data-dir", str(data), "--output-dir", str(tmp_path / "o"),
            check=False,
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {task}: {data / 'g.jsonl'}: line 2: not valid JSON (Expecting ',' delimiter): "
        '{"ctx": "A", "g": ["dog"]\n'
    )
    assert not [r for r in caplog.records if r.name.startswith("datasets") and r.levelno >= logging.WARNING]
    checked = run_main("validate", str(task), "--data-dir", str(data), check=False)
    assert checked.stderr.startswith(f"error: {task}: {data / 'g.jsonl'}: line 2: not valid JSON")


# ----------------------------------------------------------------------------------------------------- data fetch


@pytest.mark.parametrize("how", ["a file in the way", "permission"])
def test_data_fetch_into_a_folder_that_cannot_be_written_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    root = tmp_path / "data"
    if how == "a file in the way":
        (tmp_path / "blocker").write_text("")
        root = tmp_path / "blocker" / "data"
        folder = root / "asset" / "dataset"
        why = "Not a directory"
    else:
        folder, why = root / "asset" / "dataset", "Permission denied"

        def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
            raise PermissionError(13, "Permission denied", str(self))

        monkeypatch.setattr(Path, "mkdir", refuse)
    # The mirror is a closed port: nothing may be fetched, and the folder fails before any transfer is tried.
    result = run_main("data", "fetch", "asset", "--data-dir", str(root), "--mirror", "http://127.0.0.1:9", check=False)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: cannot write into {folder} (under the data root {root}): {why}; nothing was fetched (choose a data "
        "root you can write: --data-dir DIR or HARNESS_DATA_DIR=DIR)\n"
    )


def test_a_native_template_of_one_value_keeps_text_as_written() -> None:
    from harness.plugins.loaders.generic.fields import column_or_template

    one = column_or_template("meta", native=True)("{{ t }}")
    assert [one.value({"t": cell}, "f: row 1") for cell in ("3.50", "007", "[1]", "1.0")] == [
        "3.50",
        "007",
        "[1]",
        "1.0",
    ]
    assert one.value({"t": 7}, "f: row 1") == 7  # a JSON number stays a number
    # Several pieces still build a Python value (a list of options from two columns).
    both = column_or_template("options", native=True)("[{{ a | tojson }}, {{ b | tojson }}]")
    assert both.value({"a": "3.50", "b": "007"}, "f: row 1") == ["3.50", "007"]


def test_a_json_key_given_twice_is_refused_not_overwritten(tmp_path: Path) -> None:
    options = {"files": "d.jsonl", "context": "ctx", "human": {"shape": "mapping", "responses": "votes"}}
    path = write(tmp_path, "d.jsonl", '{"ctx": "The", "votes": {"cat": 2}, "votes": {"dog": 9}}\n')
    assert error_of("generic_cloze", options, tmp_path) == (
        f"{path}: line 1: not valid JSON (key 'votes' is given twice in one object): "
        '{"ctx": "The", "votes": {"cat": 2}, "votes": {"dog": 9}}'
    )
