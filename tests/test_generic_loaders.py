"""The generic loaders on small hand-made files in every shape human productions come in, checked by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.errors import DataNotFoundError, HarnessError
from harness.instances import ChoiceInstance, ClozeInstance, GenerationInstance
from harness.options import OptionError
from tests.helpers import jsonl, load, write

# ---------------------------------------------------------------------------------------------------- cloze shapes

LONG_CSV = """item,context,word,response,n
1,The cat sat on the,mat,mat,3
1,The cat sat on the,mat,Mat.,1
1,The cat sat on the,mat,floor,2
2,She drank a cup of,tea,tea,4
1,The cat sat on the,mat,?,1
2,She drank a cup of,tea,NA,1
"""


def test_long_format_groups_rows_by_key_and_merges_what_the_word_rule_merges(tmp_path: Path) -> None:
    write(tmp_path, "cloze.csv", LONG_CSV)
    options = {
        "files": "cloze.csv",
        "group_by": "item",
        "context": "context",
        "target": "word",
        "meta": ["item"],
        "human": {"shape": "long", "responses": "response", "counts": "n"},
        "normalise": {"no_answer": ["", "?"]},
    }
    data = load("generic_cloze", options, tmp_path)
    first, second = data.instances
    assert isinstance(first, ClozeInstance)
    assert first.id == "1" and first.context == "The cat sat on the" and first.target == "mat"
    # "mat" 3 + "Mat." 1 are one word; "?" is no answer (dropped, counted); rows of item 2 in between are fine.
    assert first.human_counts == {"mat": 4, "floor": 2}
    assert list(first.human_counts) == ["mat", "floor"]
    # CSV cells are text as written: the item column's 1 is "1".
    assert first.meta == {"item": "1", "n_human_raw": 6, "n_human_dropped": 0, "n_human_missing": 1, "n_unique_raw": 3}
    # "NA" is a word someone may type: only the task's no_answer list makes a response no answer.
    assert second.human_counts == {"tea": 4, "na": 1}
    assert data.source["files"] == [str(tmp_path / "cloze.csv")]
    assert data.data_hash.startswith("sha256:")


def test_list_mapping_and_parallel_shapes_give_the_same_instance(tmp_path: Path) -> None:
    base = {"id": "id", "context": "ctx", "target": "gold"}
    jsonl(tmp_path, "list.jsonl", [{"id": "a", "ctx": "I like", "gold": "tea", "guesses": ["tea", "Tea", "coffee"]}])
    jsonl(tmp_path, "map.jsonl", [{"id": "a", "ctx": "I like", "gold": "tea", "guesses": {"tea": 2, "coffee": 1}}])
    jsonl(
        tmp_path, "pairs.jsonl", [{"id": "a", "ctx": "I like", "gold": "tea", "words": ["tea", "coffee"], "n": [2, 1]}]
    )
    write(
        tmp_path,
        "family.csv",
        "id,ctx,gold,answer_1,count_1,answer_2,count_2,answer_3,count_3\na,I like,tea,tea,2,coffee,1,,\n",
    )
    shapes = {
        "list.jsonl": {"shape": "list", "responses": "guesses"},
        "map.jsonl": {"shape": "mapping", "responses": "guesses"},
        "pairs.jsonl": {"shape": "parallel", "responses": "words", "counts": "n"},
        "family.csv": {"shape": "parallel", "responses": "answer_*", "counts": "count_*"},
    }
    for file, human in shapes.items():
        (inst,) = load("generic_cloze", {**base, "files": file, "human": human}, tmp_path).instances
        assert inst.human_counts == {"tea": 2, "coffee": 1}, file
        assert inst.counts_known, file


def test_parquet_and_json_with_a_records_field(tmp_path: Path) -> None:
    import datasets

    rows = {"id": ["x", "y"], "ctx": ["Once upon a", "In the"], "guesses": [["time", "time", "day"], ["end"]]}
    datasets.Dataset.from_dict(rows).to_parquet(str(tmp_path / "cloze.parquet"))
    write(
        tmp_path,
        "cloze.json",
        json.dumps({"version": 2, "data": [{"id": "x", "ctx": "Once upon a", "guesses": ["time", "time", "day"]}]}),
    )
    human = {"shape": "list", "responses": "guesses"}
    parquet = load("generic_cloze", {"files": "cloze.parquet", "id": "id", "context": "ctx", "human": human}, tmp_path)
    assert [i.human_counts for i in parquet.instances] == [{"time": 2, "day": 1}, {"end": 1}]
    from_json = load(
        "generic_cloze",
        {"files": "cloze.json", "json_field": "data", "id": "id", "context": "ctx", "human": human},
        tmp_path,
    )
    assert from_json.instances[0] == parquet.instances[0]
    # No target given: the instance has none (scorers that need the corpus word say so).
    assert parquet.instances[0].target == "" and parquet.instances[0].target_raw == ""


def test_proportions_become_counts_only_when_the_number_of_people_recovers_them(tmp_path: Path) -> None:
    records = [
        {"id": "whole", "ctx": "A", "words": ["b", "c"], "p": [0.75, 0.25], "n": 4},
        {"id": "unwhole", "ctx": "A", "words": ["b", "c"], "p": [0.7, 0.3], "n": 4},
    ]
    jsonl(tmp_path, "p.jsonl", records)
    human = {"shape": "parallel", "responses": "words", "proportions": "p", "n_people": "n"}
    whole, unwhole = load(
        "generic_cloze", {"files": "p.jsonl", "id": "id", "context": "ctx", "human": human}, tmp_path
    ).instances
    assert whole.human_counts == {"b": 3, "c": 1} and whole.counts_known
    # 0.7 * 4 = 2.8 people: not recoverable, so the proportions stay and the counts are unknown.
    assert unwhole.human_counts == pytest.approx({"b": 0.7, "c": 0.3}) and not unwhole.counts_known
    without_n = {"shape": "parallel", "responses": "words", "proportions": "p"}
    data = load("generic_cloze", {"files": "p.jsonl", "id": "id", "context": "ctx", "human": without_n}, tmp_path)
    assert [i.counts_known for i in data.instances] == [False, False]
    assert data.source["proportions_only"] == {"n": 2, "reasons": ["proportions without the number of people"]}
    assert data.instances[0].human()["counts_known"] is False


def test_normalisation_case_punctuation_replacements_and_no_answer(tmp_path: Path) -> None:
    jsonl(tmp_path, "g.jsonl", [{"id": 1, "ctx": "The", "g": ["colour", "Color", "US", "us", "?", "idk", "U.S."]}])
    write(tmp_path, "spelling.csv", "variant,response\ncolour,color\nUS,united-states\n")
    human = {"shape": "list", "responses": "g"}
    base = {"files": "g.jsonl", "id": "id", "context": "ctx", "human": human}
    # Case kept for the lookups: "US" and "U.S." (punctuation removed first) are the country, "us" the pronoun.
    kept = {"case": "keep", "no_answer": ["?", "idk"], "replacements": "spelling.csv"}
    (inst,) = load("generic_cloze", {**base, "normalise": kept}, tmp_path).instances
    assert inst.human_counts == {"color": 2, "united-states": 2, "us": 1}
    assert inst.meta["n_human_missing"] == 2
    folded = {"no_answer": ["?", "IDK"], "replacements": {"colour": "color", "us": "united-states"}}
    (inst,) = load("generic_cloze", {**base, "normalise": folded}, tmp_path).instances
    assert inst.human_counts == {"united-states": 3, "color": 2}


# -------------------------------------------------------------------------------------------- generation, choice


def test_generation_template_over_two_fields_and_long_references_with_counts(tmp_path: Path) -> None:
    write(
        tmp_path,
        "refs.tsv",
        "sid\tsrc\tctx\tref\tn\n7\tHallo Welt\tgreeting\tHello world\t2\n7\tHallo Welt\tgreeting\tHi world\t1\n",
    )
    options = {
        "files": "refs.tsv",
        "group_by": "sid",
        "source": "{{ src }} ({{ ctx }})",
        "language": "en",
        "human": {"shape": "long", "responses": "ref", "counts": "n"},
    }
    (inst,) = load("generic_generation", options, tmp_path).instances
    assert isinstance(inst, GenerationInstance)
    assert inst.id == "7" and inst.source == "Hallo Welt (greeting)"
    assert inst.references == ("Hello world", "Hello world", "Hi world")


def test_generation_keeps_the_order_and_duplicates_of_references(tmp_path: Path) -> None:
    jsonl(tmp_path, "r.jsonl", [{"id": 0, "s": "x", "a": "one", "b": ["two", "one", " three "]}])
    options = {"files": "r.jsonl", "id": "id", "source": "s", "human": {"shape": "list", "responses": "{{ [a] + b }}"}}
    (inst,) = load("generic_generation", options, tmp_path).instances
    assert inst.references == ("one", "two", "one", "three")


def test_choice_with_a_fixed_label_set_whose_keys_differ_from_the_text(tmp_path: Path) -> None:
    write(
        tmp_path,
        "nli.csv",
        "pair,premise,hypothesis,gold,label\n"
        + "".join(f"p1,A man sleeps.,A person rests.,e,{x}\n" for x in "eeeenc")
        + "p2,It rains.,It is dry.,c,c\n",
    )
    options = {
        "files": "nli.csv",
        "group_by": "pair",
        "text": "Premise: {{ premise }}\nHypothesis: {{ hypothesis }}",
        "options": {"e": "entailment", "n": "neutral", "c": "contradiction"},
        "target": "gold",
        "human": {"shape": "long", "responses": "label"},
    }
    first, second = load("generic_choice", options, tmp_path).instances
    assert isinstance(first, ChoiceInstance)
    assert first.options == ("entailment", "neutral", "contradiction")
    assert first.scenario == "Premise: A man sleeps.\nHypothesis: A person rests."
    assert first.human_counts == (4, 1, 1) and first.target == 0
    assert second.human_counts == (0, 0, 1) and second.target == 2
    assert first.item_id == 1 and second.item_id == 2


def test_choice_counts_per_option_as_a_list_or_a_numbered_family(tmp_path: Path) -> None:
    jsonl(tmp_path, "c.jsonl", [{"q": "Pick", "opts": ["A", "B", "C"], "counts": [5, 0, 2], "t": 2}])
    write(tmp_path, "c.csv", "q,o1,o2,o3,count_1,count_2,count_3,t\nPick,A,B,C,5,0,2,2\n")
    listed = {
        "files": "c.jsonl",
        "text": "q",
        "options": "opts",
        "target_index": "{{ t }}",
        "human": {"shape": "parallel", "counts": "counts"},
    }
    family = {
        "files": "c.csv",
        "text": "q",
        "options": "{{ [o1, o2, o3] }}",
        "target_index": "{{ t }}",
        "human": {"shape": "parallel", "counts": "count_*"},
    }
    (a,) = load("generic_choice", listed, tmp_path).instances
    (b,) = load("generic_choice", family, tmp_path).instances
    assert a.human_counts == b.human_counts == (5, 0, 2)
    assert a.target == b.target == 2 and a.options == b.options == ("A", "B", "C")


# ---------------------------------------------------------------------------------------------------------- hub


def hub_folder(root: Path) -> Path:
    """A data set in the hub's repository layout (data files and a README with configurations), built locally."""
    import datasets

    repo = root / "me" / "cloze-norms"
    (repo / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(
        {"ctx": ["It was a dark and stormy"], "guesses": [["night", "night", "day"]]}
    ).to_parquet(str(repo / "data" / "test-00000-of-00001.parquet"))
    (repo / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: data/test-*.parquet\n---\n"
    )
    return repo


def test_a_hub_layout_data_set_is_read_by_name_split_and_configuration(tmp_path: Path) -> None:
    repo = hub_folder(tmp_path)
    options = {
        "hub": {"name": str(repo), "split": "test", "config": "default"},
        "context": "ctx",
        "human": {"shape": "list", "responses": "guesses"},
    }
    data = load("generic_cloze", options, tmp_path)
    (inst,) = data.instances
    assert inst.id == "1" and inst.human_counts == {"night": 2, "day": 1}
    assert data.source["hub"] == str(repo) and data.source["split"] == "test" and data.source["fingerprint"]
    assert data.source["config"] == "default" and data.source["revision"] is None


def test_an_uncached_hub_data_set_offline_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    options = {
        "hub": {"name": "nobody/no-such-norms", "split": "test"},
        "context": "c",
        "human": {"shape": "list", "responses": "g"},
    }
    with pytest.raises(DataNotFoundError) as err:
        load("generic_cloze", options, tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("hub data set nobody/no-such-norms, split test:")
    assert "HARNESS_OFFLINE" in message


# ------------------------------------------------------------------------------------------------------ errors


def test_every_bad_row_is_one_line_naming_the_file_row_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.csv", "id,ctx,r,n\na,The,x,2\nb,The,y,two\nc,The,z,1.5\n")
    options = {
        "files": "bad.csv",
        "id": "id",
        "context": "ctx",
        "human": {"shape": "long", "responses": "r", "counts": "n"},
    }
    with pytest.raises(HarnessError) as err:
        load("generic_cloze", options, tmp_path)
    lines = str(err.value).splitlines()
    assert lines[0] == "loader 'generic_cloze': 2 bad rows:"
    assert lines[1] == (
        f"{path}: row 2: field 'human.counts' (column 'n'): expected a count (a whole number >= 0), got 'two'"
    )
    assert lines[2] == (
        f"{path}: row 3: field 'human.counts' (column 'n'): expected a count (a whole number >= 0), got '1.5'"
    )


def test_a_missing_column_and_a_misspelt_template_name_are_named(tmp_path: Path) -> None:
    path = jsonl(tmp_path, "m.jsonl", [{"id": 1, "ctx": "A", "g": ["b"]}])
    human = {"shape": "list", "responses": "g"}
    with pytest.raises(
        HarnessError,
        # One bad row is one line.
        match=re.escape(f"loader 'generic_cloze': {path}: row 1: field 'context': no column 'context' ")
        + r"\(columns: id, ctx, g\)$",
    ):
        load("generic_cloze", {"files": "m.jsonl", "context": "context", "human": human}, tmp_path)
    with pytest.raises(
        HarnessError,
        match=r"row 1: field 'context': template '\{\{ ctxt \}\}' failed: UndefinedError: 'ctxt' is undefined",
    ):
        load("generic_cloze", {"files": "m.jsonl", "context": "{{ ctxt }}", "human": human}, tmp_path)


def test_templates_run_in_the_sandbox(tmp_path: Path) -> None:
    jsonl(tmp_path, "s.jsonl", [{"ctx": "A", "g": ["b"]}])
    human = {"shape": "list", "responses": "g"}
    escape = "{{ ctx.__class__.__mro__[1].__subclasses__() }}"
    with pytest.raises(HarnessError, match="field 'context': template"):
        load("generic_cloze", {"files": "s.jsonl", "context": escape, "human": human}, tmp_path)
    mutate = "{{ g.append('x') }}"
    with pytest.raises(HarnessError, match="refused by the sandbox|failed"):
        load("generic_cloze", {"files": "s.jsonl", "context": mutate, "human": human}, tmp_path)


def test_option_errors_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="option 'human': shape long: 'responses' is required"):
        load("generic_cloze", {"files": "x.csv", "context": "c", "human": {"shape": "long"}}, tmp_path)
    with pytest.raises(OptionError, match="option 'context': not a valid Jinja2 template"):
        load(
            "generic_cloze",
            {"files": "x.csv", "context": "{{ a", "human": {"shape": "list", "responses": "g"}},
            tmp_path,
        )
    with pytest.raises(HarnessError, match="'context' is required"):
        load("generic_cloze", {"files": "x.csv", "human": {"shape": "list", "responses": "g"}}, tmp_path)
    with pytest.raises(DataNotFoundError, match=r"data option 'files': .*x\.csv not found"):
        load(
            "generic_cloze", {"files": "x.csv", "context": "c", "human": {"shape": "list", "responses": "g"}}, tmp_path
        )


def test_the_data_hash_follows_the_bytes_of_every_file_read(tmp_path: Path) -> None:
    write(tmp_path, "cloze.csv", LONG_CSV)
    options = {
        "files": "cloze.csv",
        "group_by": "item",
        "context": "context",
        "human": {"shape": "long", "responses": "response", "counts": "n"},
    }
    before = load("generic_cloze", options, tmp_path).data_hash
    write(tmp_path, "spelling.yaml", "floor: ground\n")
    with_spelling = load(
        "generic_cloze", {**options, "normalise": {"replacements": "spelling.yaml"}}, tmp_path
    ).data_hash
    write(tmp_path, "cloze.csv", LONG_CSV.replace("floor,2", "floor,3"))
    after = load("generic_cloze", options, tmp_path).data_hash
    assert len({before, with_spelling, after}) == 3


def test_choice_list_of_choices_with_option_keys_and_proportions_without_people(tmp_path: Path) -> None:
    jsonl(
        tmp_path,
        "q.jsonl",
        [
            {"q": "Best?", "opts": ["Red", "Blue"], "keys": ["r", "b"], "picks": ["r", "R", "b", "", "r"], "t": "b"},
            {"q": "Worst?", "opts": ["Red", "Blue"], "keys": ["r", "b"], "shares": [0.2, 0.8], "t": "r"},
        ],
    )
    listed = {
        "files": "q.jsonl",
        "text": "q",
        "options": "opts",
        "option_keys": "keys",
        "target": "t",
        "filter": "{{ picks is defined and picks is not none }}",
        "human": {"shape": "list", "responses": "picks"},
        "normalise": {"case": "fold"},
    }
    (first,) = load("generic_choice", listed, tmp_path).instances
    # "R" is "r" once case is folded; the empty choice is no answer (dropped, counted).
    assert first.human_counts == (3, 1) and first.target == 1 and first.meta == {"n_human_missing": 1}
    shares = {
        "files": "q.jsonl",
        "text": "q",
        "options": "opts",
        "target_index": "{{ 0 }}",
        "filter": "{{ shares is defined and shares is not none }}",
        "human": {"shape": "parallel", "proportions": "shares"},
    }
    (second,) = load("generic_choice", shares, tmp_path).instances
    assert second.human_counts == pytest.approx((0.2, 0.8)) and not second.counts_known
