"""Packed cells (every response of an instance in one cell, ``human.packed``) and JSON objects keyed by id
(``json_key``), on small hand-made files whose counts are checked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import HarnessError
from harness.instances import ClozeInstance, GenerationInstance
from harness.options import OptionError
from tests.helpers import load, write

# Row 1's cell, as a CSV writer quotes it: mat | well, then | Mat. | (empty) | floor  -> 5 people, one without an
# answer. Row 2: tea | coffee | tea | (empty: the stray comma at the end) -> 4 people, one without an answer.
PACKED_CSV = """item,context,word,answers,n_responses
1,The cat sat on the,mat,"mat, ""well, then"", Mat. , , floor ",5
2,She drank a cup of,tea,"tea,coffee, tea,",4
"""
PACKED = {"shape": "list", "responses": "answers", "packed": ","}
CLOZE = {"files": "packed.csv", "id": "item", "context": "context", "target": "word"}


def test_comma_packed_cells_split_as_csv_rows_with_empty_pieces_counted_as_no_answer(tmp_path: Path) -> None:
    write(tmp_path, "packed.csv", PACKED_CSV)
    data = load("generic_cloze", {**CLOZE, "human": {**PACKED, "n_people": "n_responses"}}, tmp_path)
    first, second = data.instances
    assert isinstance(first, ClozeInstance)
    # "mat" and "Mat. " are one word; the quoted "well, then" is one response (its comma is not a boundary).
    assert first.human_counts == {"mat": 2, "floor": 1, "well then": 1}
    assert first.meta == {"n_human_raw": 4, "n_human_dropped": 0, "n_human_missing": 1, "n_unique_raw": 4}
    assert second.human_counts == {"tea": 2, "coffee": 1}
    assert second.meta == {"n_human_raw": 3, "n_human_dropped": 0, "n_human_missing": 1, "n_unique_raw": 2}
    # 2 cells, 5 + 4 pieces, one empty piece in each.
    assert data.source["packed"] == {"separator": ",", "n_cells": 2, "n_pieces": 9, "n_empty_pieces": 2}


def test_an_empty_piece_is_no_answer_even_when_no_answer_does_not_list_the_empty_text(tmp_path: Path) -> None:
    write(tmp_path, "packed.csv", PACKED_CSV)
    options = {**CLOZE, "human": PACKED, "normalise": {"no_answer": ["?"]}}
    first, second = load("generic_cloze", options, tmp_path).instances
    assert first.meta["n_human_missing"] == 1 and first.meta["n_human_dropped"] == 0
    assert second.meta["n_human_missing"] == 1 and "" not in second.human_counts


def test_every_cell_with_the_wrong_number_of_pieces_is_one_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "packed.csv",
        "item,context,answers,n_responses\n"
        '1,The cat sat on the,"mat, rug, mat",3\n'
        '2,She drank a cup of,"tea, coffee, tea, milk",5\n'  # 4 pieces, 5 people said
        '3,Over the,"hill, moon, fence,",3\n',  # the stray comma: a fourth, empty piece
    )
    options = {**CLOZE, "human": {**PACKED, "n_people": "n_responses"}}
    del options["target"]
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", options, tmp_path)
    assert str(caught.value) == (
        "loader 'generic_cloze': 2 bad rows:\n"
        f"{path}: row 2: field 'human.responses' (column 'answers'): 4 pieces, but column 'n_responses' says 5\n"
        f"{path}: row 3: field 'human.responses' (column 'answers'): 4 pieces, but column 'n_responses' says 3"
    )
    # A number for every cell: only row 1 holds 3 pieces.
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", {**options, "human": {**PACKED, "n_people": 3}}, tmp_path)
    assert str(caught.value).splitlines()[1:] == [
        f"{path}: row 2: field 'human.responses' (column 'answers'): 4 pieces, but n_people is 3",
        f"{path}: row 3: field 'human.responses' (column 'answers'): 4 pieces, but n_people is 3",
    ]


def test_more_wrong_cells_than_are_listed_are_counted(tmp_path: Path) -> None:
    rows = "".join(f'{k},Context {k},"a, b",3\n' for k in range(1, 26))
    write(tmp_path, "many.csv", "item,context,answers,n\n" + rows)
    options = {"files": "many.csv", "id": "item", "context": "context", "human": {**PACKED, "n_people": "n"}}
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", options, tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0] == "loader 'generic_cloze': 25 bad rows (the first 20 follow):"
    assert len(lines) == 21 and lines[-1].endswith(
        "row 20: field 'human.responses' (column 'answers'): 2 pieces, but column 'n' says 3"
    )


def test_semicolons_pipes_and_tabs_split_the_same_way(tmp_path: Path) -> None:
    # dog | "a; b" quoted | (empty) | Dog  -> dog 2, "a b" 1, one without an answer.
    write(tmp_path, "semi.csv", 'item,context,answers\n1,The,"dog; ""a; b"";; Dog"\n')
    write(tmp_path, "pipe.csv", "item,context,answers\n1,The,dog| a; b || Dog \n")
    write(tmp_path, "tab.csv", 'item,context,answers\n1,The,"dog\ta; b\t\tDog"\n')
    for file, separator in (("semi.csv", ";"), ("pipe.csv", "|"), ("tab.csv", "\t")):
        options = {"files": file, "id": "item", "context": "context", "human": {**PACKED, "packed": separator}}
        data = load("generic_cloze", options, tmp_path)
        (inst,) = data.instances
        assert inst.human_counts == {"dog": 2, "a b": 1}, file
        assert inst.meta["n_human_missing"] == 1, file
        assert data.source["packed"] == {"separator": separator, "n_cells": 1, "n_pieces": 4, "n_empty_pieces": 1}


def test_json_packed_lists_and_lists_already_in_the_file(tmp_path: Path) -> None:
    write(tmp_path, "json.csv", 'item,context,answers,n\n1,The,"[""dog"", ""Dog"", """", null]",4\n')
    options = {"files": "json.csv", "id": "item", "context": "context"}
    human = {"shape": "list", "responses": "answers", "packed": "json", "n_people": "n"}
    (inst,) = load("generic_cloze", {**options, "human": human}, tmp_path).instances
    assert inst.human_counts == {"dog": 2} and inst.meta["n_human_missing"] == 2
    # A JSON Lines file whose cell is a list already: taken as it is; the text beside it is parsed.
    records = [
        {"item": "1", "context": "The", "answers": ["dog", "cat"], "n": 2},
        {"item": "2", "context": "A", "answers": '["cow"]', "n": 1},
    ]
    write(tmp_path, "lists.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    data = load("generic_cloze", {**options, "files": "lists.jsonl", "human": human}, tmp_path)
    assert [i.human_counts for i in data.instances] == [{"cat": 1, "dog": 1}, {"cow": 1}]
    assert data.source["packed"] == {"separator": "json", "n_cells": 2, "n_pieces": 3, "n_empty_pieces": 0}


def test_json_packed_cells_that_are_not_the_expected_json_are_one_line_each(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.csv",
        'item,context,answers\n1,The,"[""dog"", ""cat""]"\n2,A,[dog]\n3,B,"{""dog"": 3}"\n',
    )
    human = {"shape": "list", "responses": "answers", "packed": "json"}
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", {"files": "bad.csv", "id": "item", "context": "context", "human": human}, tmp_path)
    assert str(caught.value).splitlines()[1:] == [
        f"{path}: row 2: field 'human.responses' (column 'answers'): not valid JSON (Expecting value at character 1): "
        "'[dog]'",
        f"{path}: row 3: field 'human.responses' (column 'answers'): expected a JSON list, got {{'dog': 3}}",
    ]


def test_json_packed_mappings(tmp_path: Path) -> None:
    # dog 3 + Dog 1 are one word; the empty key is one person without an answer.
    write(tmp_path, "map.csv", 'item,context,answers\n1,The,"{""dog"": 3, ""Dog"": ""1"", """": 1, ""cat"": 2}"\n')
    human = {"shape": "mapping", "responses": "answers", "packed": "json"}
    data = load("generic_cloze", {"files": "map.csv", "id": "item", "context": "context", "human": human}, tmp_path)
    (inst,) = data.instances
    assert inst.human_counts == {"dog": 4, "cat": 2}
    assert inst.meta == {"n_human_raw": 6, "n_human_dropped": 0, "n_human_missing": 1, "n_unique_raw": 3}
    assert data.source["packed"] == {"separator": "json", "n_cells": 1, "n_pieces": 4, "n_empty_pieces": 1}
    path = write(tmp_path, "dup.csv", 'item,context,answers\n1,The,"{""dog"": 3, ""dog"": 1}"\n')
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", {"files": "dup.csv", "id": "item", "context": "context", "human": human}, tmp_path)
    assert str(caught.value) == (
        f"loader 'generic_cloze': {path}: row 1: field 'human.responses' (column 'answers'): not valid JSON (key 'dog' "
        """is given twice in one object): '{"dog": 3, "dog": 1}'"""
    )


def test_parallel_packed_cells_split_responses_and_counts_alike(tmp_path: Path) -> None:
    # dog 3 | "hot, dog" 2 | (no answer) 1
    path = write(
        tmp_path,
        "pairs.csv",
        'item,context,words,n\n1,The,"dog, ""hot, dog"", ","3, 2, 1"\n2,A,"cat, cow","4, 1, 1"\n',
    )
    human = {"shape": "parallel", "responses": "words", "counts": "n", "packed": ","}
    options = {"files": "pairs.csv", "id": "item", "context": "context", "human": human, "filter": "{{ item == '1' }}"}
    (inst,) = load("generic_cloze", options, tmp_path).instances
    assert inst.human_counts == {"dog": 3, "hot dog": 2}
    assert inst.meta["n_human_missing"] == 1 and inst.meta["n_human_raw"] == 5
    del options["filter"]
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", options, tmp_path)
    assert str(caught.value) == (
        f"loader 'generic_cloze': {path}: row 2: fields 'human.responses' and 'human.counts': 2 responses but 3 numbers"
    )


def test_a_generation_task_with_packed_references(tmp_path: Path) -> None:
    write(tmp_path, "refs.tsv", "id\tsource\trefs\ns1\tHallo Welt\tHello world| Hi, world ||Hello world\n")
    human = {"shape": "list", "responses": "refs", "packed": "|", "n_people": 4}
    data = load("generic_generation", {"files": "refs.tsv", "id": "id", "source": "source", "human": human}, tmp_path)
    (inst,) = data.instances
    assert isinstance(inst, GenerationInstance)
    assert inst.references == ("Hello world", "Hi, world", "Hello world")
    assert inst.meta == {"n_human_missing": 1}


def test_cells_that_cannot_be_split_and_options_that_do_not_fit(tmp_path: Path) -> None:
    path = write(tmp_path, "q.csv", 'item,context,answers\n1,The,"dog, ""well, then"\n2,A,"a, b\nc"\n')
    options = {"files": "q.csv", "id": "item", "context": "context", "human": PACKED}
    with pytest.raises(HarnessError) as caught:
        load("generic_cloze", options, tmp_path)
    assert str(caught.value).splitlines()[1:] == [
        f"{path}: row 1: field 'human.responses' (column 'answers'): cannot split the cell at ',' (unexpected end of "
        "data; a double quote that is not closed?): 'dog, \"well, then'",
        f"{path}: row 2: field 'human.responses' (column 'answers'): a line break outside double quotes (pieces are "
        "separated by ','): 'a, b\\nc'",
    ]
    refused = {
        "long": ({"shape": "long", "responses": "r", "packed": ","}, "shape long has one response per row"),
        "mapping": ({"shape": "mapping", "responses": "r", "packed": ","}, "shape mapping reads a JSON object"),
        "family": (
            {"shape": "parallel", "responses": "a_*", "counts": "n_*", "packed": ","},
            "numbered column families (answer_*) hold one answer per cell",
        ),
        "tab": ({"shape": "list", "responses": "r", "packed": "tab"}, "expected one separator character"),
        "quote": ({"shape": "list", "responses": "r", "packed": '"'}, "cannot separate responses"),
        "people": ({"shape": "list", "responses": "r", "n_people": 3}, "'n_people' goes with proportions"),
    }
    for human, message in refused.values():
        with pytest.raises(OptionError) as refusal:
            load("generic_cloze", {**options, "human": human}, tmp_path)
        assert message in str(refusal.value), human


PACKED_TASK = """\
task: packed-cloze
version: 1
loader: generic_cloze
data:
  files: packed.csv
  id: item
  context: context
  target: word
  human: {shape: list, responses: answers, packed: ",", n_people: n_responses}
request: sample_words
params: {n_samples: 20}
scorers: [tvd, top1, entropy]
"""


def test_a_packed_task_runs_end_to_end_on_the_mock_model(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write(data, "packed.csv", PACKED_CSV)
    task_file = write(tmp_path, "packed.yaml", PACKED_TASK)
    checked = cli("validate", str(task_file), "--data-dir", str(data))
    assert "make 2 instances" in checked.stdout
    runs = tmp_path / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(data), "--output-dir", str(runs))
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    source = results["data_sources"]["packed-cloze"]
    assert source["packed"] == {"separator": ",", "n_cells": 2, "n_pieces": 9, "n_empty_pieces": 2}
    samples = [
        json.loads(line)
        for line in next((runs / "mock__test").glob("samples_packed-cloze_*.jsonl")).read_text().splitlines()
    ]
    assert [s["human"]["counts"] for s in samples] == [{"mat": 2, "floor": 1, "well": 1}, {"tea": 2, "coffee": 1}]
    assert "tvd" in results["metrics"]["packed-cloze"]
    bad = write(tmp_path, "bad.yaml", PACKED_TASK.replace("n_people: n_responses", "n_people: 4"))
    result = cli("validate", str(bad), "--data-dir", str(data), check=False)
    assert result.returncode == 2
    assert (
        f"{data / 'packed.csv'}: row 1: field 'human.responses' (column 'answers'): 5 pieces, but n_people is 4"
        in result.stderr
    )


# ---------------------------------------------------------------------------------------------- keyed by id

KEYED = {
    "01": {"premise": "A man sleeps.", "hypothesis": "A person rests.", "gold": "e", "votes": {"e": 7, "n": 2, "c": 1}},
    "1": {"premise": "It rains.", "hypothesis": "The street is dry.", "gold": "c", "votes": {"c": 9, "n": 1}},
    "item3": {"premise": "A dog barks.", "hypothesis": "It is hungry.", "gold": "n", "votes": {"n": 5, "e": 4, "c": 1}},
}

KEYED_TASK = """\
task: keyed-nli
version: 1
loader: generic_choice
data:
  files: pairs.json
  json_key: pair
  id: pair
  text: "Premise: {{ premise }}\\nHypothesis: {{ hypothesis }}"
  options: {e: entailment, n: neutral, c: contradiction}
  target: gold
  meta: [pair]
  human: {shape: mapping, responses: votes}
request: multiple_choice
params: {option_orders: 2}
scorers: [mcq_human, mcq_string]
"""


def test_json_records_keyed_by_id_read_as_rows_with_the_key_as_a_column(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write(data, "pairs.json", json.dumps(KEYED))
    task_file = write(tmp_path, "keyed.yaml", KEYED_TASK)
    runs = tmp_path / "runs"
    cli("run", "--tasks", str(task_file), "--model", "mock:test", "--data-dir", str(data), "--output-dir", str(runs))
    results = json.loads((runs / "mock__test" / "results.json").read_text())
    # The people's share of the target: 7/10, 9/10, 5/10.
    assert results["metrics"]["keyed-nli"]["human/acc"]["value"] == pytest.approx(0.7)
    samples = [
        json.loads(line)
        for line in next((runs / "mock__test").glob("samples_keyed-nli_*.jsonl")).read_text().splitlines()
    ]
    assert sorted(s["id"] for s in samples) == ["01", "1", "item3"]
    # Through the loader: the key is the first column, as written ("01" and "1" are two ids).
    options = {
        "files": "pairs.json",
        "json_key": "pair",
        "id": "pair",
        "text": "premise",
        "options": ["e", "n", "c"],
        "meta": ["pair"],
        "human": {"shape": "mapping", "responses": "votes"},
    }
    loaded = load("generic_choice", options, data)
    assert [i.id for i in loaded.instances] == ["01", "1", "item3"]
    assert [i.meta["pair"] for i in loaded.instances] == ["01", "1", "item3"]
    assert [i.human_counts for i in loaded.instances] == [(7, 2, 1), (0, 1, 9), (4, 5, 1)]
    # Under json_field too.
    write(data, "wrapped.json", json.dumps({"version": 2, "items": KEYED}))
    wrapped = load("generic_choice", {**options, "files": "wrapped.json", "json_field": "items"}, data)
    assert [i.id for i in wrapped.instances] == ["01", "1", "item3"]


def test_an_object_of_objects_without_json_key_and_bad_keyed_values_are_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "pairs.json", json.dumps(KEYED))
    options = {"files": "pairs.json", "text": "premise", "options": ["e", "n", "c"]}
    options["human"] = {"shape": "mapping", "responses": "votes"}
    with pytest.raises(HarnessError) as caught:
        load("generic_choice", options, tmp_path)
    assert str(caught.value) == (
        f"{path}: the file holds an object whose 3 values are all objects (keys 01, 1, item3): records keyed by id? "
        "set 'json_key: id' to read each value as a row with its key in column 'id' (or, if it is one record, write "
        "it in a list: [{...}])"
    )
    bad = write(tmp_path, "bad.json", json.dumps({"a": {"premise": "x", "votes": {"e": 1}}, "b": [1, 2], "c": "no"}))
    with pytest.raises(HarnessError) as caught:
        load("generic_choice", {**options, "files": "bad.json", "json_key": "id"}, tmp_path)
    assert str(caught.value) == f"{bad}: key 'b': expected a JSON object (a record), got a list (and 1 more bad key)"
    with pytest.raises(HarnessError) as caught:
        load("generic_choice", {**options, "json_key": "premise"}, tmp_path)
    assert str(caught.value) == (
        f"{path}: key '01': the record already has a column 'premise' (data option 'json_key' puts the key there: "
        "name another column) (and 2 more bad keys)"
    )


def test_packed_votes_per_option_and_spaces_after_a_closing_quote(tmp_path: Path) -> None:
    write(tmp_path, "votes.csv", 'item,text,votes\n1,I won!,"7; 2; 1"\n2,Lost.,0;7;3\n')
    human = {"shape": "parallel", "counts": "votes", "packed": ";"}
    options = {"files": "votes.csv", "id": "item", "text": "text", "options": ["happy", "sad", "angry"], "human": human}
    data = load("generic_choice", options, tmp_path)
    assert [i.human_counts for i in data.instances] == [(7, 2, 1), (0, 7, 3)]
    assert data.source["packed"] == {"separator": ";", "n_cells": 2, "n_pieces": 6, "n_empty_pieces": 0}
    # Hand-written cells put spaces after a closing quote: `"well, then" , cat` is two responses.
    write(tmp_path, "spaced.csv", 'item,context,answers\n1,The,"""well, then"" , cat , ""a, b""  "\n')
    (inst,) = load(
        "generic_cloze", {"files": "spaced.csv", "id": "item", "context": "context", "human": PACKED}, tmp_path
    ).instances
    assert inst.human_counts == {"a b": 1, "cat": 1, "well then": 1}
    assert inst.meta["n_human_raw"] == 3 and inst.meta["n_human_missing"] == 0
